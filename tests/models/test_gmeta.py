"""G-Meta: local subgraphs against networkx, the meta-gradient, determinism, learning and the CLI."""
from __future__ import annotations

import dgl
import networkx as nx
import numpy as np
import pandas as pd
import pytest
import torch
from cli_helpers import csv_table, invoke

import gflkit  # noqa: F401  (DGL compat shim first)
from gflkit.config import EpisodeConfig, TrainConfig
from gflkit.episodes import Episode, EpisodeSampler
from gflkit.evaluation.scoring import graph_accuracies
from gflkit.graphs import GraphCache, prepare_graph
from gflkit.models.baselines import TRANSFER
from gflkit.models.baselines.gmeta import local_subgraphs, neighbourhood, neighbourhoods
from gflkit.names import display_name
from gflkit.prediction.class_scores import class_scores, shared_embeddings
from gflkit.training.meta import fit_transfer

EPISODES = EpisodeConfig(k_shot=10)
QUICK = TrainConfig(steps=20, meta_batch=3, eval_every=10, seed=0)
#: Fewer inner steps and smaller subgraphs than the defaults: the tests only need the mechanism.
LIGHT = {"inner_steps": 2, "test_steps": 5, "max_nodes": 32}


def _random_graph(n: int = 60, p: float = 0.08, seed: int = 0) -> tuple[dgl.DGLGraph, nx.Graph]:
    """A seeded undirected random graph (some isolated nodes, some hubs), prepared, and its networkx twin."""
    ref = nx.gnp_random_graph(n, p, seed=seed)
    hub_edges = [(0, v) for v in range(1, n, 2)]  # node 0 is a hub
    ref.add_edges_from(hub_edges)
    src, dst = (torch.tensor(x) for x in zip(*ref.edges()))
    g = dgl.graph((torch.cat([src, dst]), torch.cat([dst, src])), num_nodes=n)
    g.ndata["feat"] = torch.arange(n, dtype=torch.float32).unsqueeze(1)  # feature = node id
    return prepare_graph(g), ref


@pytest.mark.parametrize("hops", [1, 2, 3])
def test_uncapped_subgraphs_are_the_h_hop_neighbourhoods(hops):
    g, ref = _random_graph()
    centres = torch.arange(g.num_nodes())
    batch = local_subgraphs(g, centres, hops=hops, max_nodes=g.num_nodes())
    sizes = batch.graph.batch_num_nodes().tolist()
    parts = dgl.unbatch(batch.graph)
    for v, part, start, size in zip(centres.tolist(), parts, batch.centres.tolist(), sizes):
        ego = nx.ego_graph(ref, v, radius=hops)
        nodes = batch.nodes[start:start + size].tolist()
        assert nodes[0] == v and set(nodes) == set(ego) and len(nodes) == len(ego)
        assert batch.graph.ndata["feat"][start, 0] == v  # the centre's row holds its own features
        # the induced edges, each direction once, plus one self-loop per node
        s, d = part.edges()
        edges = {(nodes[a], nodes[b]) for a, b in zip(s.tolist(), d.tolist())}
        assert part.num_edges() == 2 * ego.number_of_edges() + len(nodes)
        assert edges == {(a, b) for a, b in ego.edges()} | {(b, a) for a, b in ego.edges()} | {(u, u) for u in nodes}


def test_the_cap_keeps_the_centre_and_the_nearest_hops_first():
    g, ref = _random_graph()
    batch = local_subgraphs(g, torch.arange(g.num_nodes()), hops=2, max_nodes=8)
    sizes = batch.graph.batch_num_nodes().tolist()
    assert max(sizes) <= 8 and batch.graph.ndata["feat"][batch.centres, 0].tolist() == list(range(g.num_nodes()))
    for v, start, size in zip(range(g.num_nodes()), batch.centres.tolist(), sizes):
        nodes = batch.nodes[start:start + size].tolist()
        dist = nx.single_source_shortest_path_length(ref, v, cutoff=2)
        assert nodes[0] == v and len(set(nodes)) == size and set(nodes) <= set(dist)
        assert size == min(8, len(dist))
        hop = [dist[u] for u in nodes]
        assert hop == sorted(hop)  # nearer hops fill the subgraph first
        if len([u for u in dist if dist[u] == 1]) >= 7:  # a hub: its first hop alone is sampled
            assert set(hop[1:]) == {1}
    # the hub's subgraph is the same whatever the chunk it is built in
    alone = local_subgraphs(g, torch.tensor([0]), hops=2, max_nodes=8)
    assert alone.nodes.tolist() == batch.nodes[: sizes[0]].tolist()


@pytest.mark.parametrize("hops,cap", [(1, 4), (2, 6), (2, 64), (3, 10)])
def test_the_neighbourhoods_of_many_centres_are_each_centres_own(hops, cap):
    """All centres at once give each centre's nodes in its order, capped hops drawn as for the centre alone."""
    g, _ = _random_graph(n=50, p=0.1, seed=3)
    indptr, indices, _ = (t.numpy() for t in g.adj_tensors("csc"))
    centres = np.array([0, 7, 3, 0, 49, 12])  # the hub, a repeat
    sizes, nodes = neighbourhoods(indptr, indices, centres, hops, cap)
    each = [neighbourhood(indptr, indices, int(c), hops, cap) for c in centres]
    assert sizes.tolist() == [len(e) for e in each]
    assert nodes.tolist() == np.concatenate(each).tolist()
    if cap < 20:
        assert sizes[0] == cap  # the hub's hop did not fit: drawn


def test_an_isolated_node_is_its_own_subgraph():
    g = dgl.graph(([0, 1], [1, 0]), num_nodes=3)
    g.ndata["feat"] = torch.eye(3)
    g = prepare_graph(g)
    batch = local_subgraphs(g, torch.tensor([2, 0]), hops=2, max_nodes=5)
    assert batch.graph.batch_num_nodes().tolist() == [1, 2] and batch.centres.tolist() == [0, 1]
    assert batch.nodes.tolist() == [2, 0, 1]


def test_forward_backward_reaches_every_weight(small_family):
    model = TRANSFER["gmeta"](small_family.feat_size, small_family.num_classes, **LIGHT)
    sampler = EpisodeSampler(small_family, "train", EPISODES, seed=0)
    cache = GraphCache(small_family)
    ids = sampler.graph_ids[:2]
    loss = model.step_loss([cache[i] for i in ids], [sampler.episode(i, 1) for i in ids], [None, None])
    assert loss.ndim == 0 and torch.isfinite(loss)
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("encoder", ["gcn", "gin"])
def test_the_second_order_meta_gradient_is_exact(encoder):
    g, _ = _random_graph(n=12, p=0.3)
    g.ndata["feat"] = torch.randn(12, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    ep = Episode(0, torch.tensor([[0, 1], [4, 5]]), torch.tensor([2, 3, 6, 7, 8]), torch.tensor([0, 0, 1, 1, 1]))
    torch.manual_seed(0)
    model = TRANSFER["gmeta"](5, 2, hidden_feats=4, out_feats=3, encoder=encoder, inner_steps=2, inner_lr=0.5,
                              first_order=False, train_queries=None).double()
    weight = next(model.encoder.conv1.parameters())
    (exact,) = torch.autograd.grad(model.step_loss([g], [ep], [None]), [weight])
    numeric = torch.zeros_like(weight)
    with torch.no_grad():
        for i in np.ndindex(*weight.shape):
            weight[i] += 1e-6
            up = model.step_loss([g], [ep], [None])
            weight[i] -= 2e-6
            numeric[i] = (up - model.step_loss([g], [ep], [None])) / 2e-6
            weight[i] += 1e-6
    torch.testing.assert_close(exact, numeric, atol=1e-6, rtol=1e-4)


def test_the_inner_loop_lowers_the_support_loss(small_family):
    model = TRANSFER["gmeta"](small_family.feat_size, small_family.num_classes, **LIGHT)
    sampler = EpisodeSampler(small_family, "test", EPISODES, seed=0)
    gid = sampler.graph_ids[0]
    _, losses = model.adapt(GraphCache(small_family)[gid], sampler.episode(gid, 0), steps=5)
    assert len(losses) == 5 and losses[-1] < losses[0]


def test_class_scores_take_any_classes_and_score_chosen_nodes(small_family):
    torch.manual_seed(0)
    model = TRANSFER["gmeta"](small_family.feat_size, small_family.num_classes, **LIGHT).eval()
    sampler = EpisodeSampler(small_family, "test", EPISODES, seed=0)
    gid = sampler.graph_ids[0]
    g, ep = GraphCache(small_family)[gid], sampler.episode(gid, 0)
    scores = class_scores(model, g, list(ep.support))
    assert scores.shape == (g.num_nodes(), ep.num_classes) and shared_embeddings(model, g) is None
    assert torch.equal(model.class_scores(g, list(ep.support), nodes=ep.query), scores[ep.query])
    # ragged support sets of more classes than the model was trained with: no head limits it
    ragged = [ep.support[0, :3], ep.support[1, :1], ep.support[2], ep.support[3, :2], ep.support[0, 3:5]]
    assert class_scores(model, g, ragged).shape == (g.num_nodes(), 5)
    assert model.embed(g).shape == (g.num_nodes(), 32)


@pytest.mark.slow
def test_two_fits_with_one_seed_are_identical(small_family):
    first = fit_transfer("gmeta", small_family, EPISODES, TrainConfig(steps=4, meta_batch=2, eval_every=2, seed=3),
                         options=LIGHT, progress=False)
    again = fit_transfer("gmeta", small_family, EPISODES, TrainConfig(steps=4, meta_batch=2, eval_every=2, seed=3),
                         options=LIGHT, progress=False)
    state = first.model.state_dict()
    for key, value in again.model.state_dict().items():
        assert torch.equal(value, state[key]), key
    sampler = EpisodeSampler(small_family, "test", EPISODES, seed=0)
    gid = sampler.graph_ids[0]
    g, ep = GraphCache(small_family)[gid], sampler.episode(gid, 0)
    assert torch.equal(first.model.class_scores(g, list(ep.support), nodes=ep.query),
                       again.model.class_scores(g, list(ep.support), nodes=ep.query))
    assert torch.equal(first.model.embed(g), again.model.embed(g))


@pytest.mark.slow
def test_gmeta_beats_chance_by_a_wide_margin(small_family):
    result = fit_transfer("gmeta", small_family, EPISODES, QUICK, options=LIGHT, progress=False)
    assert 1 <= result.best_step <= QUICK.steps
    sampler = EpisodeSampler(small_family, "test", EPISODES, seed=0)
    acc = np.mean(list(graph_accuracies(result.model, sampler).values()))
    assert acc > 0.45  # four classes: chance is 0.25


def test_the_display_name():
    assert display_name("gmeta") == "G-Meta"


@pytest.mark.slow
def test_cli_compare_gives_a_g_meta_row(root):
    table = csv_table(invoke("compare", "tiny", "--model", "gmeta", "--seed", "0", "--steps", "4", "--eval-every",
                             "2", "--k-shot", "5", "--no-majority", "--data-root", root))
    assert table["model"].tolist() == ["gmeta"] and 25 < table.loc[0, "accuracy"] <= 100
    assert display_name(table.loc[0, "model"]) == "G-Meta"
    pretty = invoke("compare", "tiny", "--model", "gmeta", "--seed", "0", "--steps", "4", "--eval-every", "2",
                    "--k-shot", "5", "--no-majority", "--format", "json", "--data-root", root)
    assert pretty.exit_code == 0, pretty.output


@pytest.mark.slow
def test_cli_train_evaluate_predict_embed(root, tmp_path):
    run = tmp_path / "gmeta"
    trained = csv_table(invoke("train", "tiny", "--model", "gmeta", "--steps", "4", "--eval-every", "2", "--k-shot",
                               "5", "--option", "inner_steps=2", "--run-dir", run, "--data-root", root))
    assert trained.loc[0, "model"] == "gmeta"
    again = csv_table(invoke("evaluate", run, "tiny", "--data-root", root))
    assert again.loc[0, "model"] == "gmeta" and again.loc[0, "accuracy"] == pytest.approx(trained.loc[0, "accuracy"])
    region = tmp_path / "region"
    exported = invoke("export-graph", "tiny:6", region, "--labels-per-class", "5", "--data-root", root)
    assert exported.exit_code == 0, exported.output
    g = gflkit.load_collection("tiny", root).graphs[6]
    np.save(region / "feat.npy", g.ndata["feat"].numpy())
    graph = ["--edges", region / "edges.csv", "--features", region / "feat.npy"]
    table = csv_table(invoke("predict", run, *graph, "--labels", region / "labels.csv"))
    truth = pd.read_csv(region / "nodes.csv")
    assert len(table) == len(truth) == g.num_nodes()
    assert np.allclose(table.filter(like="score_").to_numpy().sum(1), 1.0, atol=1e-3)
    emb = csv_table(invoke("embed", run, *graph))
    assert len(emb) == g.num_nodes() and emb.shape[1] == 1 + 32 and np.isfinite(emb.iloc[:, 1:].to_numpy()).all()


@pytest.mark.slow
def test_gmetas_own_budget_is_recorded_and_a_given_one_kept(root, tmp_path):
    """Left at their defaults, G-Meta trains with its own budget (3000 steps at most); the run folder
    records it, scores again from it, and a given --steps is kept."""
    import json

    run = tmp_path / "own"
    trained = csv_table(invoke("train", "tiny", "--model", "gmeta", "--eval-every", "2", "--patience", "1",
                               "--k-shot", "5", "--option", "inner_steps=2", "--run-dir", run, "--data-root", root))
    recorded = json.loads((run / "config.json").read_text())["train_config"]
    assert recorded["steps"] == 3000 and recorded["patience"] == 1 and recorded["lr"] == 0.001
    again = csv_table(invoke("evaluate", run, "tiny", "--data-root", root))
    assert again.loc[0, "accuracy"] == pytest.approx(trained.loc[0, "accuracy"])
    given = tmp_path / "given"
    csv_table(invoke("train", "tiny", "--model", "gmeta", "--steps", "2", "--eval-every", "2", "--k-shot", "5",
                     "--option", "inner_steps=2", "--run-dir", given, "--data-root", root))
    recorded = json.loads((given / "config.json").read_text())["train_config"]
    assert recorded["steps"] == 2 and recorded["patience"] == 20
