"""Relation scores that carry information (gflkit.nn.relation): ppr against a dense inverse, the learned scorer."""
from __future__ import annotations

import dgl
import networkx as nx
import numpy as np
import pytest
import torch
from nn_graphs import _adj, _model_graph

from gflkit.config import GFLConfig
from gflkit.errors import GFLError
from gflkit.nn import GraphPrototype, PrototypeGNN, relation_weights, support_similarity
from gflkit.nn.relation import PPR_FLOOR, PPR_RESTART, PPR_TOL, RelationScorer, ppr_log_ratio, ppr_matrix

SUPPORT = [torch.tensor([[0, 4, 9], [2, 7, 13]]), torch.tensor([[1, 5, 10], [3, 6, 8]])]


def _dense_ppr(adj: np.ndarray, restart: float = PPR_RESTART) -> np.ndarray:
    """Column s: restart * (I - (1 - restart) W)^-1 e_s, W the column-stochastic random walk (exact inverse)."""
    deg = adj.sum(0)
    walk = adj / np.where(deg > 0, deg, 1)[None, :]
    n = adj.shape[0]
    return restart * np.linalg.inv(np.eye(n) - (1 - restart) * walk)


def _dense_log_ratio(adj: np.ndarray, support: torch.Tensor) -> np.ndarray:
    ppr, deg = _dense_ppr(adj), adj.sum(0)
    two_m = deg.sum()
    c, k = support.shape
    out = np.zeros((c, k, k))
    for ci in range(c):
        for i in range(k):
            for j in range(k):
                u, v = int(support[ci, i]), int(support[ci, j])
                ratio = (ppr[v, u] + ppr[u, v]) / ((deg[u] + deg[v]) / two_m)
                out[ci, i, j] = np.log(max(ratio, PPR_FLOOR))
    return out


def test_ppr_matrix_is_the_dense_inverse(pair):
    h = pair[0]
    g = _model_graph(h)
    sources = torch.tensor([0, 3, 7, 14])
    p = ppr_matrix(g, sources, tol=1e-13)
    assert p.dtype == torch.float64 and p.shape == (15, 4)
    ref = _dense_ppr(_adj(h).double().numpy())[:, sources.numpy()]
    np.testing.assert_allclose(p.numpy(), ref, rtol=0, atol=1e-11)
    # the default tolerance: within its documented L1 bound of the fixed point
    bound = PPR_TOL * (1 - PPR_RESTART) / PPR_RESTART
    assert float((ppr_matrix(g, sources) - torch.from_numpy(ref)).abs().sum(0).max()) <= bound
    np.testing.assert_allclose(p.sum(0).numpy(), 1.0, atol=1e-8)  # no dangling node: a distribution
    # and networkx's PageRank with the same restart
    nx_ppr = nx.pagerank(h, alpha=1 - PPR_RESTART, personalization={3: 1.0}, tol=1e-12)
    np.testing.assert_allclose(p[:, 1].numpy(), [nx_ppr[v] for v in range(15)], atol=1e-8)


def test_ppr_on_a_directed_graph_with_a_dangling_node_is_the_dense_inverse():
    """Mass that reaches a node without out-edges is lost, as in the inverse."""
    edges = [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4)]  # 4 -> nothing
    adj = np.zeros((5, 5))
    for u, v in edges:
        adj[v, u] = 1.0  # column u: where a walk at u goes
    src, dst = zip(*edges)
    g = dgl.add_self_loop(dgl.graph((torch.tensor(src), torch.tensor(dst)), num_nodes=5))
    p = ppr_matrix(g, torch.arange(5), tol=1e-13)
    np.testing.assert_allclose(p.numpy(), _dense_ppr(adj), atol=1e-11)
    assert float(p[:, 0].sum()) < 1.0


def test_ppr_log_ratio_matches_the_dense_reference_on_a_batch(pair):
    bg = dgl.batch([_model_graph(h) for h in pair])
    support = torch.stack([SUPPORT[0], SUPPORT[1] + 15])
    score = support_similarity(bg, support, "ppr")
    assert score.shape == (2, 2, 3, 3) and score.dtype == torch.float32
    for b, h in enumerate(pair):
        ref = _dense_log_ratio(_adj(h).double().numpy(), SUPPORT[b])
        np.testing.assert_allclose(score[b].numpy(), ref, rtol=0, atol=1e-3)  # default tolerance
        exact = ppr_log_ratio(bg, support, tol=1e-13)[b]
        np.testing.assert_allclose(exact.numpy(), ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(score[b], score[b].transpose(-1, -2))  # undirected: symmetric
    torch.testing.assert_close(support_similarity(bg, support, "combined"), score)


def test_ppr_log_ratio_is_zero_for_the_stationary_mass_and_floored_where_no_walk_reaches():
    # two components: supports in different components never meet
    h = nx.disjoint_union(nx.cycle_graph(40), nx.cycle_graph(6))
    g = _model_graph(h)
    score = ppr_log_ratio(g, torch.tensor([[[0, 20, 40, 1]]]))[0, 0]
    assert float(score[0, 2]) == pytest.approx(np.log(PPR_FLOOR))
    assert float(score[0, 1]) < np.log(0.01)  # opposite on a 40-cycle: far below the stationary mass
    assert float(score[0, 3]) > np.log(5.0)  # neighbours: far above it
    # a complete graph: every walk is near-stationary off its start, the ratio is close to 1
    g = _model_graph(nx.complete_graph(30))
    s = ppr_log_ratio(g, torch.tensor([[[0, 1, 2]]]))[0, 0]
    assert abs(float(s[0, 1])) < 0.2


def test_ppr_weights_use_the_sigmoid_and_threshold():
    score = torch.tensor([[0.0, np.log(10.0), np.log(0.1)], [np.log(10.0), 0.0, 0.0],
                          [np.log(0.1), 0.0, 0.0]], dtype=torch.float32).view(1, 1, 3, 3)
    w = relation_weights(score, "ppr", mu=0.5, mu0=0.1)[0, 0]
    torch.testing.assert_close(w[0, 1], torch.tensor(10 / 11))
    assert float(w[0, 2]) == pytest.approx(0.1)  # 1/11 < mu: mu0
    assert float(w[1, 2]) == 0.5 and float(w[0, 0]) == 1.0
    with pytest.raises(ValueError, match="learned"):
        relation_weights(score, "learned", 0.5, 0.1)


def _dense_scorer(scorer: RelationScorer, h: torch.Tensor, structure: torch.Tensor | None) -> torch.Tensor:
    """Loop reference of RelationScorer's weights."""
    a = 0.5 * (scorer.bilinear + scorer.bilinear.t())
    b, c, k, _ = h.shape
    out = torch.empty(b, c, k, k, dtype=h.dtype)
    for bi in range(b):
        for ci in range(c):
            for i in range(k):
                for j in range(k):
                    if i == j:
                        out[bi, ci, i, j] = 1.0
                        continue
                    ei, ej = h[bi, ci, i] / h[bi, ci, i].norm(), h[bi, ci, j] / h[bi, ci, j].norm()
                    s = ei @ a @ ej + scorer.bias
                    if structure is not None:
                        s = s + scorer.mix * structure[bi, ci, i, j]
                    out[bi, ci, i, j] = scorer.mu0 + (1 - scorer.mu0) * torch.sigmoid(s)
    return out


@pytest.mark.parametrize("structure", [False, True])
def test_relation_scorer_matches_a_loop_and_its_gradients_check(structure):
    torch.manual_seed(0)
    scorer = RelationScorer(5, structure=structure, mu0=0.1).double()
    h = torch.randn(2, 3, 4, 5, dtype=torch.float64)
    t = torch.randn(2, 3, 4, 4, dtype=torch.float64) if structure else None
    # starts uniform (learned) or at the graph score (combined)
    w0 = scorer(h, t)
    expected0 = 0.1 + 0.9 * torch.sigmoid(t) if structure else torch.full_like(w0, 0.55)
    off = ~torch.eye(4, dtype=torch.bool)
    torch.testing.assert_close(w0[..., off], expected0[..., off])
    with torch.no_grad():
        scorer.bilinear.normal_()
        scorer.bias.fill_(0.3)
        if structure:
            scorer.mix.fill_(0.7)
    w = scorer(h, t)
    torch.testing.assert_close(w, _dense_scorer(scorer, h, t))
    torch.testing.assert_close(w, w.transpose(-1, -2) if t is None else w)  # symmetric scores
    params = (scorer.bilinear, scorer.bias) + ((scorer.mix,) if structure else ())
    h.requires_grad_(True)

    def f(hh, *p):
        return scorer(hh, t)

    assert torch.autograd.gradcheck(f, (h, *params))


def test_combined_scorer_needs_the_graph_score():
    scorer = RelationScorer(4, structure=True)
    with pytest.raises(ValueError, match="structure"):
        scorer(torch.randn(1, 1, 3, 4))


@pytest.mark.parametrize("similarity", ["learned", "combined"])
def test_learned_relations_train_end_to_end(pair, similarity):
    """The scorer's parameters and the embeddings get a gradient through the prototype."""
    torch.manual_seed(0)
    bg = dgl.batch([_model_graph(h) for h in pair])
    support = torch.stack([SUPPORT[0], SUPPORT[1] + 15])
    proto = GraphPrototype(PrototypeGNN(4, 4), similarity)
    assert proto.scorer is not None and (proto.scorer.mix is not None) == (similarity == "combined")
    z = torch.randn(bg.num_nodes(), 4, requires_grad=True)
    with torch.no_grad():
        proto.scorer.bilinear.normal_()
    out = proto(bg, z, support)
    assert out.shape == (2, 2, 4)
    out.pow(2).sum().backward()
    assert float(proto.scorer.bilinear.grad.abs().sum()) > 0 and float(z.grad.abs().sum()) > 0
    w = proto.weights(bg, z, support)
    assert w.requires_grad and w.shape == (2, 2, 3, 3)
    if similarity == "combined":  # its graph part is the ppr score, remembered
        torch.testing.assert_close(proto.relations(bg, support), support_similarity(bg, support, "ppr"))
    else:
        assert proto.relations(bg, support) is None


def test_fixed_similarities_have_no_scorer():
    assert GraphPrototype(PrototypeGNN(4, 4), "ppr").scorer is None


@pytest.mark.parametrize("similarity", ["ppr", "learned", "combined"])
def test_config_accepts_the_new_similarities(similarity):
    assert GFLConfig(similarity=similarity).similarity == similarity
    with pytest.raises(GFLError, match="similarity='pr'"):
        GFLConfig(similarity="pr")
