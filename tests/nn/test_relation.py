"""Relational structure (gflkit.nn.relation): similarities against networkx, k-hop walks, relation graphs."""
from __future__ import annotations

import dgl
import networkx as nx
import numpy as np
import pytest
import torch
from nn_graphs import _adj, _model_graph

from gflkit.nn import relation_graph, relation_weights, support_similarity

# support ids (C=2 classes, K=3) of each graph of `pair`
SUPPORT = [torch.tensor([[0, 4, 9], [2, 7, 13]]), torch.tensor([[1, 5, 10], [3, 6, 8]])]


def _batched_support(sizes) -> torch.Tensor:
    offsets = np.cumsum([0] + list(sizes[:-1]))
    return torch.stack([s + int(o) for s, o in zip(SUPPORT, offsets)])  # (B, C, K)


def _khop_cn(g: nx.Graph, u: int, v: int, hops: int = 3) -> int:
    nu = set(nx.single_source_shortest_path_length(g, u, cutoff=hops)) - {u}
    nv = set(nx.single_source_shortest_path_length(g, v, cutoff=hops)) - {v}
    return len(nu & nv)


def _reference(method: str, g: nx.Graph, support: torch.Tensor) -> torch.Tensor:
    c, k = support.shape
    out = torch.zeros(c, k, k)
    for ci in range(c):
        for i in range(k):
            for j in range(k):
                u, v = int(support[ci, i]), int(support[ci, j])
                if u == v:
                    continue
                if method == "khop-cn":
                    out[ci, i, j] = _khop_cn(g, u, v)
                elif method == "khop-cn-1":
                    out[ci, i, j] = _khop_cn(g, u, v, hops=1)
                elif method == "jaccard":
                    out[ci, i, j] = next(nx.jaccard_coefficient(g, [(u, v)]))[2]
                elif method == "adamic-adar":
                    out[ci, i, j] = next(nx.adamic_adar_index(g, [(u, v)]))[2]
    return out


def _off_diagonal(x: torch.Tensor) -> torch.Tensor:
    k = x.shape[-1]
    return x.masked_fill(torch.eye(k, dtype=torch.bool), 0)


@pytest.mark.parametrize("method", ["khop-cn", "jaccard", "adamic-adar"])
def test_similarity_matches_networkx(pair, method):
    h = pair[0]
    score = support_similarity(_model_graph(h), SUPPORT[0].unsqueeze(0), method)  # (1, C, K, K)
    assert score.shape == (1, 2, 3, 3)
    torch.testing.assert_close(_off_diagonal(score[0]), _reference(method, h, SUPPORT[0]), rtol=1e-5, atol=1e-6)


def test_khop_cn_follows_hops(pair):
    h = pair[0]
    score = support_similarity(_model_graph(h), SUPPORT[0].unsqueeze(0), "khop-cn", hops=1)
    expected = _reference("khop-cn-1", h, SUPPORT[0])
    torch.testing.assert_close(_off_diagonal(score[0]), expected)
    # one hop: exactly the common neighbours
    u, v = int(SUPPORT[0][0, 0]), int(SUPPORT[0][0, 1])
    assert expected[0, 0, 1] == len(list(nx.common_neighbors(h, u, v)))


@pytest.mark.parametrize("method", ["khop-cn", "jaccard", "adamic-adar", "pagerank"])
def test_similarity_on_a_batch_equals_each_graph_alone(pair, method):
    bg = dgl.batch([_model_graph(h) for h in pair])
    batched = support_similarity(bg, _batched_support([15, 11]), method)
    assert batched.shape == (2, 2, 3, 3)
    for b, h in enumerate(pair):
        alone = support_similarity(_model_graph(h), SUPPORT[b].unsqueeze(0), method)[0]
        torch.testing.assert_close(_off_diagonal(batched[b]), _off_diagonal(alone), rtol=1e-5, atol=1e-6)
        if method != "pagerank":
            torch.testing.assert_close(_off_diagonal(batched[b]), _reference(method, h, SUPPORT[b]),
                                       rtol=1e-5, atol=1e-6)


def _random_walk_graph(n: int, edges: int, seed: int, symmetric: bool) -> dgl.DGLGraph:
    """A sparse random graph with one self-loop per node (multi-edges kept when not symmetric)."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, edges), rng.integers(0, n, edges)
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    g = dgl.add_self_loop(dgl.remove_self_loop(dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)),
                                                         num_nodes=n)))
    return g


def _random_support(sizes: list[int], c: int, k: int, seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    offsets = np.cumsum([0] + sizes[:-1])
    return torch.from_numpy(np.stack([rng.choice(n, c * k, replace=False).reshape(c, k) + off
                                      for n, off in zip(sizes, offsets)]))


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("hops", [1, 2, 3])
def test_khop_sparse_walk_gives_the_dense_walks_scores(monkeypatch, symmetric, hops):
    """Sparse graphs take the sparse walk; its scores are the dense walk's to the last bit."""
    from gflkit.nn import relation

    sizes = [400, 250, 300]
    graphs = [_random_walk_graph(n, int(1.5 * n), seed, symmetric) for seed, n in enumerate(sizes)]
    bg = dgl.batch(graphs)
    support = _random_support(sizes, 3, 4, seed=hops)
    sparse = relation._khop_scores_sparse(bg, support, hops)
    assert sparse is not None  # the walks stay small on these graphs
    for b, g in enumerate(graphs):  # each graph alone
        alone = relation._khop_scores_sparse(g, support[b:b + 1] - sum(sizes[:b]), hops)
        assert torch.equal(alone[0], sparse[b])
    monkeypatch.setattr(relation, "_SPARSE_SHARE", -1.0)  # every walk gives way to the dense one
    assert relation._khop_scores_sparse(bg, support, hops) is None
    dense = support_similarity(bg, support, "khop-cn", hops)
    assert torch.equal(sparse, dense)
    assert not symmetric or torch.equal(sparse, sparse.transpose(-1, -2))
    if symmetric:
        nxg = nx.Graph(dgl.to_networkx(dgl.remove_self_loop(graphs[0])).to_undirected())
        nxg.add_nodes_from(range(sizes[0]))
        ref = _reference("khop-cn" if hops == 3 else f"khop-cn-{hops}", nxg, support[0]) if hops != 2 else None
        if ref is not None:
            torch.testing.assert_close(_off_diagonal(sparse[0]), ref)


def test_khop_walk_on_a_dense_graph_is_the_dense_one(monkeypatch):
    """Where the walks reach most of the graph, the sparse walk gives way, with the same scores."""
    from gflkit.nn import relation

    g = _random_walk_graph(60, 600, 0, True)
    support = _random_support([60], 2, 5, seed=0)
    assert relation._khop_scores_sparse(g, support, 3) is None
    monkeypatch.setattr(relation, "_SPARSE_SHARE", float("inf"))  # the sparse walk all the way
    sparse = relation._khop_scores_sparse(g, support, 3)
    monkeypatch.setattr(relation, "_SPARSE_SHARE", -1.0)
    assert torch.equal(sparse, support_similarity(g, support, "khop-cn", 3))


def _dense_ppr(adj: torch.Tensor, restart: float = 0.15, steps: int = 30) -> torch.Tensor:
    """Column v: personalised PageRank restarting at v, by power iteration."""
    n = adj.shape[0]
    walk = adj / adj.sum(0, keepdim=True).clamp(min=1)  # column-stochastic: move to a random neighbour
    x = torch.eye(n)
    p = x.clone()
    for _ in range(steps):
        p = restart * x + (1 - restart) * walk @ p
    return p


def test_pagerank_matches_dense_power_iteration_and_networkx(pair):
    h = pair[0]
    support = SUPPORT[0]
    score = support_similarity(_model_graph(h), support.unsqueeze(0), "pagerank")[0]
    ppr = _dense_ppr(_adj(h))
    nx_ppr = {v: nx.pagerank(h, alpha=0.85, personalization={v: 1.0}, tol=1e-10)
              for v in support.flatten().tolist()}
    for c in range(2):
        for i in range(3):
            for j in range(3):
                u, v = int(support[c, i]), int(support[c, j])
                expected = 0.5 * (ppr[u, v] + ppr[v, u])
                assert float(score[c, i, j]) == pytest.approx(float(expected), rel=1e-5, abs=1e-7)
                # 30 power steps from the restart vector: within 0.85^30 of the fixed point
                assert float(score[c, i, j]) == pytest.approx(0.5 * (nx_ppr[v][u] + nx_ppr[u][v]), abs=0.01)


@pytest.mark.parametrize("classes,k", [(2, 3), (20, 8)])  # C*K up to 128: one full product; above: per class
def test_per_graph_blocks_equal_per_class_products(pair, classes, k):
    from gflkit.nn.relation import _per_graph_blocks

    bg = dgl.batch([_model_graph(h) for h in pair])
    gen = torch.Generator().manual_seed(0)
    left = (torch.rand(bg.num_nodes(), classes * k, generator=gen) > 0.5).float()
    right = torch.rand(bg.num_nodes(), classes * k, generator=gen)
    for r in (left, right):
        out = _per_graph_blocks(bg, left, r, classes, k)
        for b, (lb, rb) in enumerate(zip(left.split([15, 11]), r.split([15, 11]))):
            for c in range(classes):
                cols = slice(c * k, (c + 1) * k)
                torch.testing.assert_close(out[b, c], lb[:, cols].t() @ rb[:, cols])


def test_similarity_rejects_unknown_method(six):
    with pytest.raises(ValueError, match="unknown similarity"):
        support_similarity(_model_graph(six), torch.tensor([[[0, 1]]]), "cosine")


def test_relation_weights_sigmoid_threshold_and_diagonal():
    score = torch.tensor([[0.0, 3.0, 1.0], [3.0, 0.0, 0.0], [1.0, 0.0, 0.0]]).view(1, 1, 3, 3)
    w = relation_weights(score, "khop-cn", mu=0.8, mu0=0.1)[0, 0]
    s3, s1 = float(torch.sigmoid(torch.tensor(3.0))), float(torch.sigmoid(torch.tensor(1.0)))
    expected = torch.tensor([[1.0, s3, 0.1], [s3, 1.0, 0.1], [0.1, 0.1, 1.0]])  # sigmoid(1) = 0.73 < mu
    torch.testing.assert_close(w, expected)
    # mu = 0.5 never fires on sigmoid scores
    w = relation_weights(score, "adamic-adar", mu=0.5, mu0=0.1)[0, 0]
    torch.testing.assert_close(w[0, 2], torch.tensor(s1))
    assert float(w[1, 2]) == 0.5
    # jaccard keeps its score in [0, 1]; pagerank is scaled by the class's largest score
    jac = torch.tensor([[0.0, 0.9, 0.2], [0.9, 0.0, 0.6], [0.2, 0.6, 0.0]]).view(1, 1, 3, 3)
    torch.testing.assert_close(relation_weights(jac, "jaccard", 0.5, 0.1)[0, 0],
                               torch.tensor([[1.0, 0.9, 0.1], [0.9, 1.0, 0.6], [0.1, 0.6, 1.0]]))
    torch.testing.assert_close(relation_weights(jac, "pagerank", 0.5, 0.1)[0, 0],
                               torch.tensor([[1.0, 1.0, 0.1], [1.0, 1.0, 2 / 3], [0.1, 2 / 3, 1.0]]))


def test_relation_graph_batches_every_class_of_every_graph():
    weights = torch.rand(2, 3, 4, 4, generator=torch.Generator().manual_seed(0))
    rg = relation_graph(weights)
    assert rg.num_nodes() == 2 * 3 * 4 and rg.num_edges() == 2 * 3 * 16
    src, dst = rg.edges()
    for b in range(2):
        for c in range(3):
            one = relation_graph(weights[b : b + 1, c : c + 1])
            s1, d1 = one.edges()
            offset = (b * 3 + c) * 4
            mask = (src >= offset) & (src < offset + 4)
            assert torch.equal(src[mask], s1 + offset) and torch.equal(dst[mask], d1 + offset)
            torch.testing.assert_close(rg.edata["w"][mask], one.edata["w"])
            # edge i -> j carries weights[b, c, i, j]
            torch.testing.assert_close(one.edata["w"], weights[b, c][s1, d1])
    assert bool(((src // 4) == (dst // 4)).all())  # no edge between blocks


def test_class_relations_remembers_a_bounded_number_and_no_graph_that_is_gone(pair, monkeypatch):
    """The last answers are remembered, least recently used first out; a graph that is gone is
    never matched (nor kept alive), so a new graph under its id gets its own weights."""
    import gc
    import weakref
    from collections import OrderedDict

    from gflkit.nn import relation

    monkeypatch.setattr(relation, "REMEMBERED_RELATIONS", 2)
    monkeypatch.setattr(relation, "_remembered", OrderedDict())
    support = SUPPORT[0].unsqueeze(0)  # (1, C, K)
    first, second, third = (_model_graph(pair[0]) for _ in range(3))
    a = relation.class_relations(first, support)
    assert relation.class_relations(first, support) is a  # remembered
    assert torch.equal(a, relation_weights(support_similarity(first, support), "khop-cn", 0.5, 0.1))
    b = relation.class_relations(second, support)
    relation.class_relations(first, support)  # first is now the most recently used
    relation.class_relations(third, support)  # full: second, the least recently used, goes
    assert len(relation._remembered) == 2
    assert relation.class_relations(first, support) is a
    assert relation.class_relations(second, support) is not b
    gone = weakref.ref(third)
    del third
    gc.collect()
    assert gone() is None  # not kept alive
    for key, (ref, _) in relation._remembered.items():
        assert ref() is not None or key[0] not in {id(first), id(second)}
    assert relation.class_relations(first, support, hops=2) is not a  # another setting, its own answer
