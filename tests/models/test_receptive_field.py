"""MAML and All-Graph-Finetune adapt on the receptive field of the support set."""
from __future__ import annotations

import dgl
import pytest
import torch

import gflkit  # noqa: F401  (DGL compat shim first)
from gflkit.config import EpisodeConfig
from gflkit.episodes import EpisodeSampler
from gflkit.graphs import GraphCache, prepare_graph, receptive_field
from gflkit.models.baselines import TRANSFER
from gflkit.models.baselines.common import support_targets


def _graph(n: int = 80, p: float = 0.05, seed: int = 0) -> dgl.DGLGraph:
    gen = torch.Generator().manual_seed(seed)
    src, dst = torch.nonzero(torch.rand(n, n, generator=gen) < p, as_tuple=True)
    g = dgl.graph((src, dst), num_nodes=n)  # directed on purpose: the field follows in-edges
    g.ndata["feat"] = torch.randn(n, 6, generator=gen)
    return prepare_graph(g)


@pytest.mark.parametrize("hops", [1, 2, 3])
def test_the_receptive_field_is_dgls_k_hop_in_subgraph(hops):
    g = _graph()
    nodes = torch.tensor([5, 3, 40, 3])
    field, where = receptive_field(g, nodes, hops)
    ref, ref_where = dgl.khop_in_subgraph(g, nodes.unique(), hops)
    assert torch.equal(field.ndata["feat"], ref.ndata["feat"])
    assert all(torch.equal(a, b) for a, b in zip(field.edges(), ref.edges()))
    assert torch.equal(field.ndata["feat"][where], g.ndata["feat"][nodes])


def test_no_field_without_the_stored_normalisation():
    g = dgl.graph(([0, 1], [1, 2]))
    g.ndata["feat"] = torch.ones(3, 2)
    assert receptive_field(g, torch.tensor([1]), 2) is None


def test_maml_adapts_on_the_field_as_on_the_whole_graph(small_family):
    torch.manual_seed(0)
    model = TRANSFER["maml"](small_family.feat_size, small_family.num_classes)
    sampler = EpisodeSampler(small_family, "train", EpisodeConfig(k_shot=5), seed=0)
    gid = sampler.graph_ids[0]
    g = GraphCache(small_family)[gid]
    ids, target = support_targets(sampler.episode(gid, 0))
    on_field, field_losses = model._adapt(g, ids, target, steps=4)
    bare = dgl.graph(g.edges(), num_nodes=g.num_nodes())  # no stored normalisation: the whole graph
    bare.ndata["feat"] = g.ndata["feat"]
    on_graph, graph_losses = model._adapt(bare, ids, target, steps=4)
    assert field_losses == pytest.approx(graph_losses, rel=1e-6)
    for name in on_field:
        torch.testing.assert_close(on_field[name], on_graph[name], rtol=1e-5, atol=1e-7)


def test_agf_finetunes_on_the_field_as_on_the_whole_graph(small_family):
    torch.manual_seed(0)
    model = TRANSFER["agf"](small_family.feat_size, small_family.num_classes, finetune_steps=5)
    assert model.adapts_in_threads and not TRANSFER["agf"](8, 4, dropout=0.5).adapts_in_threads
    sampler = EpisodeSampler(small_family, "test", EpisodeConfig(k_shot=5), seed=0)
    gid = sampler.graph_ids[0]
    g = GraphCache(small_family)[gid]
    ids, target = support_targets(sampler.episode(gid, 0))
    on_field = model._finetuned_logits(g, ids, target)
    bare = dgl.graph(g.edges(), num_nodes=g.num_nodes())  # no stored normalisation: the whole graph
    bare.ndata["feat"] = g.ndata["feat"]
    torch.testing.assert_close(on_field, model._finetuned_logits(bare, ids, target), rtol=1e-5, atol=1e-6)
