"""Transductive refinement: dense reference, clamped support, gain on a homophilous graph."""
from __future__ import annotations

import dgl
import numpy as np
import pytest
import torch

from gflkit.graphs import prepare_graph
from gflkit.config import EpisodeConfig, GFLConfig
from gflkit.episodes import EpisodeSampler
from gflkit.errors import GFLError
from gflkit.evaluation.scoring import graph_records
from gflkit.models.baselines import KNearestNeighbours, TransferHead
from gflkit.models.gfl import GFL
from gflkit.refine import RefineConfig, label_propagation, refine_scores


def _blocks(sizes=(40, 40, 40), p_in=0.15, p_out=0.005, seed=0) -> dgl.DGLGraph:
    """A homophilous stochastic block model with its block as label."""
    rng = np.random.default_rng(seed)
    label = np.repeat(np.arange(len(sizes)), sizes)
    n = label.size
    upper = np.triu(rng.random((n, n)) < np.where(label[:, None] == label[None, :], p_in, p_out), 1)
    src, dst = np.nonzero(upper)
    g = dgl.graph((np.concatenate([src, dst]), np.concatenate([dst, src])), num_nodes=n)
    g.ndata["feat"] = torch.zeros(n, 2)
    g.ndata["label"] = torch.from_numpy(label)
    return prepare_graph(g)


def _support(label: torch.Tensor, k: int = 3) -> torch.Tensor:
    """The first ``k`` nodes of each class, ``(C, K)``."""
    return torch.stack([torch.nonzero(label == c).squeeze(1)[:k] for c in range(int(label.max()) + 1)])


def _noisy_scores(label: torch.Tensor, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.nn.functional.one_hot(label).float() + 1.2 * torch.randn(label.shape[0], 3, generator=gen)


def test_label_propagation_matches_dense_reference():
    g = _blocks(sizes=(6, 7), p_in=0.6, p_out=0.1)
    probs = torch.softmax(torch.randn(13, 2, generator=torch.Generator().manual_seed(1)), 1)
    support, target = torch.tensor([0, 7]), torch.tensor([0, 1])
    src, dst = g.edges()
    adj = torch.zeros(13, 13)
    adj[dst, src] = 1.0  # g carries one self-loop per node
    deg = adj.sum(1)
    a_hat = adj / deg.sqrt()[:, None] / deg.sqrt()[None, :]
    y0 = probs.clone()
    y0[support] = torch.eye(2)[target]
    y = y0
    for _ in range(5):
        y = 0.7 * a_hat @ y + 0.3 * y0
        y[support] = torch.eye(2)[target]
    assert torch.allclose(label_propagation(g, probs, support, target, alpha=0.7, steps=5), y, atol=1e-6)



@pytest.mark.parametrize("method", ["lp", "cs"])
def test_problems_side_by_side_are_each_refined_as_alone(method):
    from gflkit.nn.conv import propagate
    from gflkit.refine import correct_and_smooth, stacked_rows

    g = _blocks()
    label = torch.arange(3).repeat_interleave(40)  # the blocks of _blocks()
    refine = label_propagation if method == "lp" else correct_and_smooth
    supports = [torch.tensor([0, 1, 40, 80, 81]), torch.tensor([2, 41, 42, 82]), torch.tensor([3, 43, 83, 84, 85])]
    probs = torch.stack([torch.softmax(_noisy_scores(label, seed), 1) for seed in range(3)], 1)  # (N, 3, C)
    together = refine(g, probs, stacked_rows(supports), torch.cat([label[s] for s in supports]), 0.8, 10)
    for f, s in enumerate(supports):
        alone = refine(g, probs[:, f].contiguous(), s, label[s], 0.8, 10)
        assert torch.allclose(together[:, f], alone, atol=1e-6)
    # one problem: the same bits as the update written out
    y0 = probs[:, 0].clone()
    y0[supports[0]] = torch.eye(3)[label[supports[0]]]
    y = y0
    for _ in range(10):
        y = 0.8 * propagate(g, y) + (1 - 0.8) * y0
        y[supports[0]] = torch.eye(3)[label[supports[0]]]
    assert torch.equal(label_propagation(g, probs[:, 0], supports[0], label[supports[0]], 0.8, 10), y)

@pytest.mark.parametrize("method", ["lp", "cs"])
def test_refinement_keeps_support_labels(method):
    g = _blocks()
    label = torch.tensor(np.repeat(np.arange(3), 40))
    support = _support(label)
    scores = _noisy_scores(label)
    scores[support.reshape(-1)] = -scores[support.reshape(-1)]  # the model gets some supports wrong
    refined = refine_scores(g, scores, support, RefineConfig(method, alpha=0.9, steps=20))
    nodes, target = support.reshape(-1), torch.arange(3).repeat_interleave(3)
    assert torch.equal(refined[nodes], torch.eye(3)[target])
    assert torch.equal(refined[nodes].argmax(1), target)


@pytest.mark.parametrize("method", ["lp", "cs"])
def test_refinement_improves_a_homophilous_graph(method):
    g = _blocks()
    label = torch.tensor(np.repeat(np.arange(3), 40))
    support = _support(label)
    query = torch.tensor(sorted(set(range(120)) - set(support.reshape(-1).tolist())))
    scores = _noisy_scores(label)
    before = (scores[query].argmax(1) == label[query]).float().mean()
    refined = refine_scores(g, scores, support, RefineConfig(method, alpha=0.8, steps=10))
    after = (refined[query].argmax(1) == label[query]).float().mean()
    assert before < 0.85 and after > before + 0.1, (float(before), float(after))


def test_no_refinement_is_identity_and_bad_settings_are_user_errors():
    g = _blocks(sizes=(5, 5))
    scores = torch.randn(10, 2)
    assert refine_scores(g, scores, torch.tensor([[0], [5]]), RefineConfig()) is scores
    with pytest.raises(GFLError, match="`refine_alpha="):
        RefineConfig("lp", alpha=1.0)
    with pytest.raises(GFLError, match="`refine='xx'`"):
        RefineConfig("xx")


@pytest.mark.parametrize("method", ["lp", "cs"])
def test_models_score_with_refinement(small_family, method):
    """GFL, a baseline with node scores and one with class predictions only, refined."""
    sampler = EpisodeSampler(small_family, "test", EpisodeConfig(k_shot=5), seed=0)
    torch.manual_seed(0)
    cfg = RefineConfig(method)
    models = [GFL(small_family.feat_size, GFLConfig()),
              TransferHead(small_family.feat_size, small_family.num_classes),
              KNearestNeighbours(small_family.feat_size, small_family.num_classes)]
    for model in models:
        recs = graph_records(model, sampler, 2, refine=cfg)
        assert len(recs) == 2 * len(sampler.graph_ids)
        assert recs["accuracy"].between(0, 1).all() and (recs["n"] > 0).all()


@pytest.mark.parametrize("name", ["agf", "matchingnet", "maml", "transfer-head"])
def test_class_scores_of_chosen_nodes_are_their_rows(small_family, name):
    """The scores of every node that refinement starts from hold the queries' scores."""
    from gflkit.graphs import GraphCache
    from gflkit.models.baselines import TRANSFER

    torch.manual_seed(0)
    model = TRANSFER[name](small_family.feat_size, small_family.num_classes).eval()
    sampler = EpisodeSampler(small_family, "test", EpisodeConfig(k_shot=5), seed=0)
    gid = sampler.graph_ids[0]
    g, ep = GraphCache(small_family)[gid], sampler.episode(gid, 0)
    torch.manual_seed(1)
    scores = model.class_scores(g, list(ep.support))
    assert scores.shape == (g.num_nodes(), small_family.num_classes)
    torch.manual_seed(1)
    assert torch.equal(model.class_scores(g, list(ep.support), nodes=ep.query), scores[ep.query])
