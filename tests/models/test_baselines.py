"""Per-graph baselines of Table 2 and the pieces the transfer baselines vote or match with."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import gflkit  # noqa: F401  (DGL compat shim first)
import dgl
from gflkit.config import EpisodeConfig
from gflkit.episodes import Episode, EpisodeSampler
from gflkit.evaluation.scoring import baseline_accuracies
from gflkit.models.baselines import PER_GRAPH
from gflkit.models.baselines.knn import knn_predict
from gflkit.models.baselines.lp import fit_predict_lp, propagate_labels, propagation_matrix
from gflkit.models.baselines.matchingnet import matching_log_probs, nearest_support
from gflkit.models.baselines.skipgram import context_pairs

# Mean query accuracy over the 8 small test graphs (episode 0, seed 0) is
# 40-55% for each baseline; 4 balanced classes make chance 25%.
CHANCE_MARGIN = 0.32


@pytest.fixture(scope="module")
def test_sampler(small_family):
    return EpisodeSampler(small_family, "test", EpisodeConfig(k_shot=10), seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lp", "planetoid", "deepwalk", "node2vec"])
def test_per_graph_baseline_beats_chance(test_sampler, name):
    acc = baseline_accuracies(PER_GRAPH[name], test_sampler, episodes=1, seed=0)
    assert np.mean(list(acc.values())) > CHANCE_MARGIN


@pytest.mark.slow
@pytest.mark.parametrize("name", ["planetoid", "deepwalk", "node2vec"])
def test_per_graph_baseline_is_deterministic(small_family, test_sampler, name):
    gid = test_sampler.graph_ids[0]
    g, ep = small_family.graphs[gid], test_sampler.episode(gid, 0)
    a = PER_GRAPH[name](g, ep, num_classes=4, seed=3)
    b = PER_GRAPH[name](g, ep, num_classes=4, seed=3)
    assert a.dtype == torch.int64 and a.shape == ep.query.shape
    assert torch.equal(a, b)


def _path_graph() -> dgl.DGLGraph:
    # 0-1-2-3-4-5 path plus a chord 1-4, and node 6 isolated; both directions stored
    src = torch.tensor([0, 1, 2, 3, 4, 1])
    dst = torch.tensor([1, 2, 3, 4, 5, 4])
    g = dgl.graph((torch.cat([src, dst]), torch.cat([dst, src])), num_nodes=7)
    g.ndata["feat"] = torch.tensor([[1.0, 0], [1, 0], [1, 0], [0, 1], [0, 1], [0, 1], [0.2, 1]])
    return g


@pytest.mark.parametrize("norm", ["rw", "sym"])
def test_label_propagation_matches_closed_form(norm):
    g = _path_graph()
    seeds, labels = np.array([0, 5]), np.array([0, 1])
    f = propagate_labels(propagation_matrix(g, norm), seeds, labels, 2, tol=1e-12, max_iter=10_000)
    # dense reference: A without loops, P = D^-1 A or D^-1/2 A D^-1/2, F_U = (I - P_UU)^-1 P_UL Y_L
    a = np.zeros((7, 7))
    for s, d in [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (1, 4)]:
        a[s, d] = a[d, s] = 1
    deg = a.sum(1)
    inv = np.divide(1, deg, out=np.zeros(7), where=deg > 0)
    p = np.diag(inv) @ a if norm == "rw" else np.diag(np.sqrt(inv)) @ a @ np.diag(np.sqrt(inv))
    unl = np.array([1, 2, 3, 4])  # the connected unlabelled nodes
    ref = np.linalg.solve(np.eye(4) - p[np.ix_(unl, unl)], p[np.ix_(unl, seeds)] @ np.eye(2)[labels])
    np.testing.assert_allclose(f[unl], ref, atol=1e-9)
    np.testing.assert_array_equal(f[seeds], np.eye(2)[labels])
    assert f[6].sum() == 0  # no label reaches the isolated node


def test_label_propagation_predicts_unreached_node_from_features():
    g = _path_graph()
    ep = Episode(graph_id=0, support=torch.tensor([[0], [5]]), query=torch.tensor([1, 3, 6]),
                 query_label=torch.tensor([0, 1, 1]))
    pred = fit_predict_lp(g, ep, num_classes=2)
    # harmonic scores: node 1 leans to class 0, node 3 to class 1; node 6 by its features
    assert pred.tolist() == [0, 1, 1]


def test_label_propagation_class_mass_normalisation():
    # A star: the hub's class floods the harmonic solution unless class mass is normalised.
    src = [0] * 8 + [9, 10]
    dst = list(range(1, 9)) + [10, 11]
    g = dgl.graph((torch.tensor(src + dst), torch.tensor(dst + src)), num_nodes=12)
    g = dgl.add_edges(g, torch.tensor([8, 9]), torch.tensor([9, 8]))
    g.ndata["feat"] = torch.ones(12, 2)
    ep = Episode(graph_id=0, support=torch.tensor([[0], [11]]), query=torch.arange(1, 11),
                 query_label=torch.zeros(10, dtype=torch.long))
    f = propagate_labels(propagation_matrix(g), np.array([0, 11]), np.array([0, 1]), 2)
    free = np.ones(12, dtype=bool)
    free[[0, 11]] = False
    expected = (f / f[free].sum(0, keepdims=True))[1:11].argmax(1)
    np.testing.assert_array_equal(fit_predict_lp(g, ep, num_classes=2).numpy(), expected)
    np.testing.assert_array_equal(fit_predict_lp(g, ep, num_classes=2, class_mass=False).numpy(), f[1:11].argmax(1))
    assert (expected != f[1:11].argmax(1)).any()  # the normalisation changes some predictions


def _brute_knn(q, s, y, k, num_classes):
    out = []
    for qi in q:
        sims = [float(qi @ si / (qi.norm() * si.norm())) for si in s]
        order = sorted(range(len(s)), key=lambda j: (-sims[j], j))[:k]
        votes = [sum(int(y[j]) == c for j in order) for c in range(num_classes)]
        best = max(votes)
        out.append(next(int(y[j]) for j in order if votes[int(y[j])] == best))
    return out


def test_knn_matches_brute_force_on_hand_written_embeddings():
    gen = torch.Generator().manual_seed(0)
    support = torch.randn(12, 3, generator=gen)
    label = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    query = torch.randn(30, 3, generator=gen)
    for k in (1, 2, 4, 5):
        assert knn_predict(query, support, label, 3, k).tolist() == _brute_knn(query, support, label, k, 3)
    # a tie (one vote each) goes to the class of the nearest neighbour
    s = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    assert knn_predict(torch.tensor([[1.0, 0.9]]), s, torch.tensor([0, 1]), 2, k=2).tolist() == [0]


def test_matching_network_matches_brute_force():
    support = torch.tensor([[[1.0, 0.0], [0.8, 0.6]], [[0.0, 1.0], [-0.6, 0.8]]])  # (C=2, K=2, d=2)
    query = torch.tensor([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5], [-1.0, 0.2]])
    scale = 3.0
    logp = matching_log_probs(query, support, scale)
    flat = support.reshape(4, 2)
    for i, q in enumerate(query):
        cos = torch.stack([q @ s / (q.norm() * s.norm()) for s in flat])
        att = torch.softmax(scale * cos, 0)
        ref = torch.stack([att[:2].sum(), att[2:].sum()])
        torch.testing.assert_close(logp[i].exp(), ref)
        assert nearest_support(query[i : i + 1], support).item() == int(cos.argmax()) // 2
    assert nearest_support(query, support).tolist() == [0, 1, 0, 1]


def test_context_pairs_drop_padding():
    traces = torch.tensor([[0, 1, 2, -1], [3, 3, 4, 5]])
    centre, context = context_pairs(traces, window=1)
    pairs = sorted(zip(centre.tolist(), context.tolist()))
    assert pairs == sorted([(0, 1), (1, 0), (1, 2), (2, 1), (3, 4), (4, 3), (4, 5), (5, 4)])


def test_linear_classifier_reaches_the_penalised_optimum():
    # The same objective in scikit-learn: C * sum(CE) + ||W||^2 / 2 = C * S * (mean CE + ||W||^2 / (2 C S)).
    linear_model = pytest.importorskip("sklearn.linear_model")
    from gflkit.models.baselines.common import fit_predict_linear

    gen = torch.Generator().manual_seed(0)
    n, f, c, wd = 300, 40, 4, 1e-3  # 40 support rows in 40 dimensions: nearly separable, slow for first-order steps
    y = torch.arange(n) % c
    x = torch.randn(n, f, generator=gen) + 0.8 * torch.nn.functional.one_hot(y, f).float()  # overlapping classes
    support, query = torch.arange(40), torch.arange(40, n)
    ours = fit_predict_linear(x, support, y[support], query, c, weight_decay=wd)
    ref = linear_model.LogisticRegression(C=1.0 / (2 * wd * len(support)), tol=1e-12, max_iter=100_000)
    ref.fit(x[support].double().numpy(), y[support].numpy())
    assert 0.3 < (ours == y[query]).float().mean() < 1.0  # a hard enough problem
    # 200 full-batch Adam steps (the former solver) disagree with the optimum on 7 of these 260 queries
    assert int((ours != torch.as_tensor(ref.predict(x[query].double().numpy()))).sum()) <= 1


def test_deepwalk_embedding_is_seeded_and_leaves_global_generators_alone():
    import random

    from gflkit.models.baselines.deepwalk import deepwalk_embedding

    g = _path_graph()  # node 6 is isolated: its walks stop at once, and it keeps its initial embedding
    torch.manual_seed(123)
    random.seed(123)
    before = (torch.rand(1), random.random())
    torch.manual_seed(123)
    random.seed(123)
    a = deepwalk_embedding(g, seed=4, dim=8, walk_length=6, window=2, walks_per_node=3)
    assert (torch.rand(1), random.random()) == before  # no global state consumed
    b = deepwalk_embedding(g, seed=4, dim=8, walk_length=6, window=2, walks_per_node=3)
    c = deepwalk_embedding(g, seed=5, dim=8, walk_length=6, window=2, walks_per_node=3)
    assert a.shape == (7, 8) and torch.equal(a, b) and not torch.equal(a, c)


def test_deepwalk_embedding_is_the_same_on_any_thread_count(torch_threads):
    from gflkit.models.baselines.deepwalk import deepwalk_embedding

    gen = torch.Generator().manual_seed(0)
    src, dst = torch.randint(0, 300, (2, 3000), generator=gen)
    g = dgl.graph((torch.cat([src, dst]), torch.cat([dst, src])), num_nodes=300)
    embeddings = []
    for threads in (1, 2, 3):
        torch_threads(threads)
        embeddings.append(deepwalk_embedding(g, seed=1, dim=16, walk_length=10))
    assert all(torch.equal(embeddings[0], e) for e in embeddings[1:])
    assert torch.get_num_threads() == 3
