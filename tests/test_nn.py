"""Building blocks of GFL, each against a dense or networkx reference."""
from __future__ import annotations

import dgl
import networkx as nx
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from dgl.nn import GraphConv

from gflkit.data import build_graph
from gflkit.batching import prepare_graph
from gflkit.nn import (
    GCNEncoder, GCNLayer, GraphDecoder, HierarchicalGraphRepresentation, PrototypeGNN, dense_recon_loss, logits,
    recon_loss, relation_graph, relation_weights, support_similarity,
)
from gflkit.nn.conv import NORM_DST, NORM_SRC, add_gcn_norm, is_symmetric, propagate
from gflkit.nn.hierarchy import dense_gcn_norm
from gflkit.nn.distance import block_logits
from gflkit.nn.segment import segment_gram, segment_mean, segment_tmm

# -- graphs and dense references ------------------------------------------------------


def _model_graph(nxg: nx.Graph, feat_size: int = 4, seed: int = 0) -> dgl.DGLGraph:
    """``nxg`` as the model sees it: simple, symmetric, one self-loop per node."""
    n = nxg.number_of_nodes()
    edges = list(nxg.edges()) or [(0, 0)]
    src, dst = zip(*edges)
    feat = torch.from_numpy(np.random.default_rng(seed).standard_normal((n, feat_size)).astype(np.float32))
    return prepare_graph(build_graph(src, dst, n, feat, torch.zeros(n, dtype=torch.long)))


def _adj(nxg: nx.Graph) -> torch.Tensor:
    """Binary adjacency without self-loops."""
    return torch.tensor(nx.to_numpy_array(nxg, nodelist=range(nxg.number_of_nodes())), dtype=torch.float32)


def _gcn_norm(adj: torch.Tensor) -> torch.Tensor:
    """``D^-1/2 (A + I) D^-1/2``."""
    a = adj + torch.eye(adj.shape[0])
    d = a.sum(1).rsqrt()
    return d[:, None] * a * d[None, :]


@pytest.fixture
def six() -> nx.Graph:
    """A 6-node graph: a triangle 0-1-2 with a tail 2-3-4 and a pendant 5 on 1."""
    return nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (1, 5)])


@pytest.fixture
def twelve() -> nx.Graph:
    g = nx.gnm_random_graph(12, 24, seed=3)
    g.add_edges_from((i, i + 1) for i in range(11))  # connected
    return g


@pytest.fixture
def pair() -> list[nx.Graph]:
    """Two connected graphs of 15 and 11 nodes."""
    graphs = []
    for n, m, seed in ((15, 25, 5), (11, 17, 6)):
        g = nx.gnm_random_graph(n, m, seed=seed)
        g.add_edges_from((v, (v + 1) % n) for v in range(n) if g.degree(v) == 0)  # no isolated nodes
        graphs.append(g)
    return graphs


# support ids (C=2 classes, K=3) of each graph of `pair`
SUPPORT = [torch.tensor([[0, 4, 9], [2, 7, 13]]), torch.tensor([[1, 5, 10], [3, 6, 8]])]


def _batched_support(sizes) -> torch.Tensor:
    offsets = np.cumsum([0] + list(sizes[:-1]))
    return torch.stack([s + int(o) for s, o in zip(SUPPORT, offsets)])  # (B, C, K)


# -- encoder ------------------------------------------------------------------------------


def test_gcn_encoder_matches_dense_reference(six):
    torch.manual_seed(0)
    g = _model_graph(six, feat_size=5)
    enc = GCNEncoder(5, hidden_feats=7, out_feats=3)
    with torch.no_grad():
        enc.conv1.bias.normal_()
        enc.conv2.bias.normal_()
    x = g.ndata["feat"]
    a = _gcn_norm(_adj(six))
    w1, b1, w2, b2 = enc.conv1.weight, enc.conv1.bias, enc.conv2.weight, enc.conv2.bias
    expected = a @ torch.relu(a @ x @ w1 + b1) @ w2 + b2
    torch.testing.assert_close(enc(g, x), expected, rtol=1e-5, atol=1e-5)
    assert enc(g, x).shape == (6, 3)


@pytest.mark.parametrize("sizes", [(5, 3), (3, 5), (3, 3)])  # weight applied before / after propagation
def test_gcn_layer_equals_dgl_graphconv_on_a_directed_graph(sizes):
    # A directed graph: in- and out-degrees differ, so both normalisations are exercised.
    src = torch.tensor([0, 0, 1, 2, 3, 4, 4, 5, 1])
    dst = torch.tensor([1, 2, 2, 3, 1, 0, 5, 3, 4])
    g = dgl.add_self_loop(dgl.graph((src, dst), num_nodes=6))
    torch.manual_seed(0)
    conv = GraphConv(*sizes, norm="both")
    torch.manual_seed(0)
    layer = GCNLayer(*sizes)
    assert torch.equal(layer.weight, conv.weight) and torch.equal(layer.bias, conv.bias)  # same initialisation
    assert set(layer.state_dict()) == set(conv.state_dict())  # checkpoints carry over
    with torch.no_grad():
        conv.bias.normal_()
        layer.bias.copy_(conv.bias)
    x = torch.randn(6, sizes[0])
    expected = conv(g, x)
    torch.testing.assert_close(layer(g, x), expected)  # degrees computed on the fly
    torch.testing.assert_close(layer(add_gcn_norm(g), x), expected)  # stored ones
    torch.testing.assert_close(layer.from_propagated(propagate(g, x)), expected)
    no_bias = GCNLayer(*sizes, bias=False)
    assert no_bias.bias is None and "bias" not in no_bias.state_dict()
    with torch.no_grad():
        conv.weight.copy_(no_bias.weight)
        conv.bias.zero_()
    torch.testing.assert_close(no_bias(g, x), conv(g, x))
    with pytest.raises(ValueError, match="positive"):
        GCNLayer(0, 3)


@pytest.mark.parametrize("directed", [False, True])
def test_propagate_gradient_on_symmetric_and_directed_graphs(pair, directed):
    """The backward pass takes A_hat on a symmetric graph (the forward pass's format) and
    the reversed graph otherwise: gradcheck and GraphConv's gradient on both."""
    graphs = [_model_graph(h) for h in pair]
    if directed:  # one direction of some edges dropped
        graphs = [dgl.remove_edges(g, torch.arange(2, g.num_edges(), 5)) for g in graphs]
    bg = add_gcn_norm(dgl.batch(graphs))
    assert is_symmetric(bg) != directed
    x = torch.randn(bg.num_nodes(), 3, dtype=torch.float64, generator=torch.Generator().manual_seed(4),
                    requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: propagate(bg, v), (x,))
    conv = GraphConv(3, 3, norm="both", weight=False, bias=False).double()
    weights = torch.randn(bg.num_nodes(), 3, dtype=torch.float64)
    (ours,) = torch.autograd.grad((propagate(bg, x) * weights).sum(), x)
    (theirs,) = torch.autograd.grad((conv(bg, x) * weights).sum(), x)
    torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_neighbour_sums_are_dgls_products(pair, dtype):
    """``neighbour_sum`` is DGL's ``copy_u_sum`` and ``neighbour_sum_t`` the same over the reversed
    graph, to the last bit (the dense products up to rounding), also on a strided input and a
    graph without edges; neither records autograd history."""
    from gflkit.nn.conv import neighbour_sum, neighbour_sum_t

    bg = dgl.batch([_model_graph(h) for h in pair])
    bg = dgl.remove_edges(bg, torch.arange(0, bg.num_edges(), 3))  # directed
    x = torch.randn(bg.num_nodes(), 6, dtype=dtype)[:, ::2].requires_grad_()  # not contiguous
    src, dst = bg.edges()
    dense = torch.zeros(bg.num_nodes(), bg.num_nodes(), dtype=dtype).index_put_(
        (dst, src), torch.ones(len(src), dtype=dtype), accumulate=True)
    forward, backward = neighbour_sum(bg, x), neighbour_sum_t(bg, x)
    assert not forward.requires_grad and not backward.requires_grad
    with torch.no_grad():
        assert torch.equal(forward, dgl.ops.copy_u_sum(bg, x))
        assert torch.equal(backward, dgl.ops.copy_u_sum(dgl.reverse(bg), x))
        torch.testing.assert_close(forward, dense @ x)
        torch.testing.assert_close(backward, dense.t() @ x)
    empty = dgl.graph(([], []), num_nodes=4)
    assert torch.equal(neighbour_sum(empty, torch.ones(4, 2, dtype=dtype)), torch.zeros(4, 2, dtype=dtype))
    assert torch.equal(neighbour_sum_t(empty, torch.ones(4, 2, dtype=dtype)), torch.zeros(4, 2, dtype=dtype))


def test_gcn_encoder_initialises_and_computes_as_graphconv_layers(six):
    """Two ``dgl.nn.GraphConv`` layers seeded alike give the same weights and outputs."""
    g = _model_graph(six, feat_size=40)  # wide input: the weight comes before the propagation
    torch.manual_seed(0)
    enc = GCNEncoder(40, hidden_feats=8, out_feats=3)
    torch.manual_seed(0)
    conv1, conv2 = GraphConv(40, 8, norm="both"), GraphConv(8, 3, norm="both")
    assert torch.equal(enc.conv1.weight, conv1.weight) and torch.equal(enc.conv2.weight, conv2.weight)
    x = g.ndata["feat"]
    torch.testing.assert_close(enc(g), conv2(g, torch.relu(conv1(g, x))), rtol=1e-5, atol=1e-6)


def test_prepared_graph_stores_the_normalisation_and_one_copy_of_the_features(six):
    raw = build_graph(*zip(*six.edges()), 6, torch.randn(6, 5), torch.zeros(6, dtype=torch.long))
    g = prepare_graph(raw)
    assert set(g.ndata) == {"feat", NORM_SRC, NORM_DST}
    assert g.ndata["feat"].data_ptr() == raw.ndata["feat"].data_ptr()  # shared, not copied
    torch.testing.assert_close(g.ndata[NORM_SRC], (_adj(six).sum(1, keepdim=True) + 1).rsqrt())


def test_decoder_and_hierarchy_accept_a_shared_propagation(pair):
    torch.manual_seed(0)
    bg = dgl.batch([_model_graph(h, feat_size=6, seed=i) for i, h in enumerate(pair)])
    z = bg.ndata["feat"]
    z_prop = propagate(bg, z)
    decoder = GraphDecoder(6, 4)
    torch.testing.assert_close(decoder(bg, z, z_prop), decoder.conv(bg, z))
    module = HierarchicalGraphRepresentation(6, graph_feats=5, levels=3, clusters=(4, 2))
    for a, b in zip(module(bg, z, z_prop), module(bg, z)):
        torch.testing.assert_close(a, b)


def test_segment_tmm_matches_per_block_products_and_gradients():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(9, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    b = torch.randn(9, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    sizes = [4, 2, 3]
    expected = torch.stack([x.t() @ y for x, y in zip(a.split(sizes), b.split(sizes))])
    torch.testing.assert_close(segment_tmm(a, b, sizes), expected)
    assert torch.autograd.gradcheck(lambda x, y: segment_tmm(x, y, sizes), (a, b))
    assert torch.autograd.gradcheck(lambda x: segment_tmm(x, x, sizes), (a,))  # D^T D
    with pytest.raises(ValueError, match="sum to 8"):
        segment_tmm(a, b, [4, 4])


def test_segment_mean_matches_dgl_and_its_gradient():
    gen = torch.Generator().manual_seed(2)
    a = torch.randn(9, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    sizes = [4, 0, 5]  # an empty block has mean 0, as in DGL
    expected = dgl.ops.segment_reduce(torch.tensor(sizes), a, "mean")
    torch.testing.assert_close(segment_mean(a, sizes), expected)
    assert torch.equal(segment_mean(a, sizes)[1], torch.zeros(3, dtype=torch.float64))
    assert torch.autograd.gradcheck(lambda x: segment_mean(x, sizes), (a,))
    with pytest.raises(ValueError, match="sum to 8"):
        segment_mean(a, [4, 4])


def test_segment_gram_equals_segment_tmm_with_itself():
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(9, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    sizes = [4, 2, 3]
    torch.testing.assert_close(segment_gram(a, sizes), segment_tmm(a, a, sizes))
    weight = torch.randn(3, 3, 3, dtype=torch.float64, generator=gen)  # not symmetric
    grad = torch.autograd.grad((segment_gram(a, sizes) * weight).sum(), a)[0]
    expected = torch.autograd.grad((segment_tmm(a, a, sizes) * weight).sum(), a)[0]
    torch.testing.assert_close(grad, expected)
    assert torch.autograd.gradcheck(lambda x: segment_gram(x, sizes), (a,))
    with pytest.raises(ValueError, match="sum to 8"):
        segment_gram(a, [4, 4])


# -- reconstruction ---------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_recon_loss_is_exact(twelve, reduction):
    g = _model_graph(twelve)
    a = _adj(twelve)
    d = torch.randn(12, 4, dtype=torch.float32, generator=torch.Generator().manual_seed(0), requires_grad=True)
    loss = recon_loss(g, d, reduction)
    dense = dense_recon_loss(a, d, reduction)
    frob = torch.linalg.matrix_norm(a - d @ d.t(), ord="fro") ** 2
    torch.testing.assert_close(loss, dense)
    torch.testing.assert_close(dense, frob / 144 if reduction == "mean" else frob)
    (grad,) = torch.autograd.grad(loss, d)
    (dense_grad,) = torch.autograd.grad(dense, d)
    torch.testing.assert_close(grad, dense_grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_recon_loss_on_a_batch_is_the_mean_over_graphs(pair, reduction):
    g = dgl.batch([_model_graph(h) for h in pair])
    d = torch.randn(g.num_nodes(), 5, generator=torch.Generator().manual_seed(1), requires_grad=True)
    parts = torch.split(d, [15, 11])
    expected = torch.stack([dense_recon_loss(_adj(h), p, reduction) for h, p in zip(pair, parts)]).mean()
    loss = recon_loss(g, d, reduction)
    torch.testing.assert_close(loss, expected)
    (grad,) = torch.autograd.grad(loss, d)
    (dense_grad,) = torch.autograd.grad(expected, d)
    torch.testing.assert_close(grad, dense_grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("symmetric", [True, False])
def test_recon_loss_normalized_matches_autograd(pair, symmetric):
    """normalize=True equals F.normalize then the loss, value and gradient, on either backward path."""
    from gflkit.nn.conv import set_symmetric

    g = dgl.batch([_model_graph(h) for h in pair])
    assert is_symmetric(g)
    set_symmetric(g, symmetric)  # False: the path of directed graphs (a product over the reversed graph)
    d = torch.randn(g.num_nodes(), 5, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    d[3] = 0.0  # a row at the norm's floor
    d.requires_grad_()
    parts = torch.split(F.normalize(d, dim=-1), [15, 11])
    expected = torch.stack([dense_recon_loss(_adj(h).double(), p) for h, p in zip(pair, parts)]).mean()
    loss = recon_loss(g, d, normalize=True)
    torch.testing.assert_close(loss, expected)
    (grad,) = torch.autograd.grad(loss, d)
    (dense_grad,) = torch.autograd.grad(expected, d)
    torch.testing.assert_close(grad, dense_grad)


def test_recon_loss_on_a_directed_graph():
    """A graph without the reverse of its edges takes the reversed product: the dense gradient."""
    src, dst = torch.tensor([0, 1, 2, 3, 0, 2]), torch.tensor([1, 2, 3, 0, 2, 1])
    g = dgl.add_self_loop(dgl.graph((src, dst), num_nodes=4))
    assert not is_symmetric(g)
    adj = torch.zeros(4, 4, dtype=torch.float64)
    adj[src, dst] = 1.0
    d = torch.randn(4, 3, generator=torch.Generator().manual_seed(3), dtype=torch.float64, requires_grad=True)
    loss = recon_loss(g, d)
    expected = dense_recon_loss(adj, d)
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(torch.autograd.grad(loss, d)[0], torch.autograd.grad(expected, d)[0])


def test_is_symmetric_counts_multi_edges_and_is_remembered_beside_the_graph():
    import gc
    import weakref

    from gflkit.nn.conv import graph_facts

    undirected = dgl.graph((torch.tensor([0, 1, 1, 2]), torch.tensor([1, 0, 2, 1])))
    attributes = set(vars(undirected))
    assert is_symmetric(undirected) and graph_facts(undirected)["symmetric"] is True
    assert set(vars(undirected)) == attributes  # nothing is set on the caller's graph
    alive = weakref.ref(undirected)
    del undirected
    gc.collect()
    assert alive() is None  # the notes do not keep the graph alive
    assert not is_symmetric(dgl.graph((torch.tensor([0, 1]), torch.tensor([1, 2]))))
    twice_one_way = dgl.graph((torch.tensor([0, 0, 1]), torch.tensor([1, 1, 0])))
    assert not is_symmetric(twice_one_way)
    assert is_symmetric(dgl.graph(([], []), num_nodes=3))


def test_recon_loss_rejects_unknown_reduction(six):
    with pytest.raises(ValueError, match="reduction"):
        recon_loss(_model_graph(six), torch.zeros(6, 2), "max")


# -- relational structure ----------------------------------------------------------------


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


# -- prototype GNN -------------------------------------------------------------------------


def _symmetric_weights(b, c, k, seed=0) -> torch.Tensor:
    w = torch.rand(b, c, k, k, generator=torch.Generator().manual_seed(seed))
    w = 0.5 * (w + w.transpose(-1, -2))
    return w.masked_fill(torch.eye(k, dtype=torch.bool), 1.0)


def _dense_pgnn(support, weights, weight, bias, pool="mean"):
    """``tanh(D^-1 R H W + b)`` per (graph, class), then pooling over the K nodes."""
    b, c, k, d = support.shape
    out = torch.empty(b, c, weight.shape[-1])
    for bi in range(b):
        w = weight if weight.dim() == 2 else weight[bi]
        bb = bias if bias.dim() == 1 else bias[bi]
        for ci in range(c):
            r = weights[bi, ci]
            h = torch.tanh((r / r.sum(1, keepdim=True)) @ support[bi, ci] @ w + bb)  # (K, out)
            out[bi, ci] = h.mean(0) if pool == "mean" else h.max(0).values
    return out


@pytest.mark.parametrize("pool", ["mean", "max"])
def test_pgnn_matches_dense_reference(pool):
    torch.manual_seed(0)
    pgnn = PrototypeGNN(6, 5, pool=pool)
    with torch.no_grad():
        pgnn.weight.normal_()
        pgnn.bias.normal_()
    support = torch.randn(2, 3, 4, 6)
    weights = _symmetric_weights(2, 3, 4)
    out = pgnn(support, weights)
    assert out.shape == (2, 3, 5)
    torch.testing.assert_close(out, _dense_pgnn(support, weights, pgnn.weight, pgnn.bias, pool), rtol=1e-5, atol=1e-5)


def _relation_graph_pgnn(pgnn: PrototypeGNN, support, weights, gate=None):
    """The PGNN as message passing on the batched relation graph (the earlier implementation)."""
    b, c, k, d = support.shape
    rg = relation_graph(weights)
    w_e = rg.edata["w"].unsqueeze(-1)
    degree = dgl.ops.copy_e_sum(rg, w_e).clamp(min=1e-12)
    agg = (dgl.ops.u_mul_e_sum(rg, support.reshape(b * c * k, d), w_e) / degree).view(b, c * k, d)
    weight, bias = pgnn.weight.expand(b, -1, -1), pgnn.bias.expand(b, -1)
    if gate is not None:
        n_w = pgnn.weight.numel()
        weight = weight * gate[:, :n_w].view(b, d, -1)
        bias = bias * gate[:, n_w:]
    out = torch.tanh(torch.bmm(agg, weight) + bias.unsqueeze(1)).view(b, c, k, -1)
    return out.mean(2) if pgnn.pool == "mean" else out.amax(2)


def test_pgnn_equals_message_passing_on_the_relation_graph():
    """Asymmetric weights: the batched matmul aggregates along the edges i -> j as the graph did."""
    torch.manual_seed(0)
    for pool in ("mean", "max"):
        pgnn = PrototypeGNN(6, 6, pool=pool)
        support = torch.randn(3, 4, 5, 6, requires_grad=True)
        weights = torch.rand(3, 4, 5, 5).masked_fill(torch.eye(5, dtype=torch.bool), 1.0)
        gate = torch.rand(3, pgnn.num_params)
        for g in (None, gate):
            out, ref = pgnn(support, weights, g), _relation_graph_pgnn(pgnn, support, weights, g)
            torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-6)
            grads = torch.autograd.grad(out.sum(), (support, pgnn.weight))
            ref_grads = torch.autograd.grad(ref.sum(), (support, pgnn.weight))
            for a, b in zip(grads, ref_grads):
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_pgnn_gate_modulates_the_parameters():
    torch.manual_seed(0)
    pgnn = PrototypeGNN(6, 6)
    with torch.no_grad():
        pgnn.bias.normal_()
    support = torch.randn(2, 3, 4, 6)
    weights = _symmetric_weights(2, 3, 4, seed=1)
    plain = pgnn(support, weights)
    torch.testing.assert_close(pgnn(support, weights, torch.ones(2, pgnn.num_params)), plain)
    gate = torch.rand(2, pgnn.num_params, generator=torch.Generator().manual_seed(2))
    gated = pgnn(support, weights, gate)
    assert not torch.allclose(gated, plain, atol=1e-3)
    w = pgnn.weight.unsqueeze(0) * gate[:, :36].view(2, 6, 6)
    bias = pgnn.bias.unsqueeze(0) * gate[:, 36:]
    torch.testing.assert_close(gated, _dense_pgnn(support, weights, w, bias), rtol=1e-5, atol=1e-5)
    assert pgnn.num_params == 6 * 6 + 6


def test_pgnn_starts_near_a_relation_weighted_mean():
    pgnn = PrototypeGNN(4, 4, activation="none")
    support = torch.randn(1, 2, 3, 4)
    equal = torch.ones(1, 2, 3, 3)
    torch.testing.assert_close(pgnn(support, equal), support.mean(2), atol=0.05, rtol=0)


# -- hierarchical graph representation -------------------------------------------------------


def _dense_hierarchy(module: HierarchicalGraphRepresentation, nxg: nx.Graph, z: torch.Tensor):
    """Levels ``(R, gf)`` and level-2 adjacency of one graph, with dense matrices throughout."""
    a = _adj(nxg)
    a_hat = _gcn_norm(a)
    reps = [module.project(z.mean(0))]
    if module.levels == 1:
        return torch.stack(reps), None
    k2 = module.clusters[0]
    conv = module.first_level  # AGNN (first k2 outputs) and FGNN side by side
    out = a_hat @ z @ conv.weight + conv.bias
    p = torch.softmax(out[:, :k2], dim=-1)  # (n, K2)
    f = torch.relu(out[:, k2:])
    x = (p / p.sum(0, keepdim=True)).t() @ f
    adj = p.t() @ a @ p
    adj2 = adj
    reps.append(x.mean(0))
    for assign, fuse in zip(module.assign_dense, module.fuse_dense):
        ah = dense_gcn_norm(adj.unsqueeze(0))[0]
        p = torch.softmax(ah @ assign(x), dim=-1)
        x = (p / p.sum(0, keepdim=True)).t() @ torch.relu(ah @ fuse(x))
        adj = p.t() @ adj @ p
        reps.append(x.mean(0))
    return torch.stack(reps), adj2


@pytest.mark.parametrize("levels", [1, 2, 3])
@pytest.mark.parametrize("aggregator", ["mean", "att"])
def test_hierarchy_matches_dense_reference(pair, levels, aggregator):
    torch.manual_seed(0)
    module = HierarchicalGraphRepresentation(4, graph_feats=6, levels=levels, clusters=(5, 3), aggregator=aggregator)
    gs = [_model_graph(h, seed=i) for i, h in enumerate(pair)]
    bg = dgl.batch(gs)
    z = bg.ndata["feat"]
    out_levels, h = module(bg, z)
    assert out_levels.shape == (2, levels, 6) and h.shape == (2, 6)
    for b, (nxg, g) in enumerate(zip(pair, gs)):
        expected, _ = _dense_hierarchy(module, nxg, g.ndata["feat"])
        torch.testing.assert_close(out_levels[b], expected, rtol=1e-4, atol=1e-5)
        if aggregator == "mean":
            torch.testing.assert_close(h[b], expected.mean(0))
        else:
            beta = torch.softmax(expected @ module.query, dim=0)
            torch.testing.assert_close(h[b], (beta[:, None] * expected).sum(0), rtol=1e-4, atol=1e-5)
            assert module.query.requires_grad


def test_hierarchy_level_two_adjacency_is_pt_a_p(pair):
    torch.manual_seed(1)
    module = HierarchicalGraphRepresentation(4, graph_feats=4, levels=2, clusters=(3,))
    gs = [_model_graph(h, seed=i) for i, h in enumerate(pair)]
    bg = dgl.batch(gs)
    _, adjs = module._first_pool(bg, bg.ndata["feat"])
    assert adjs.shape == (2, 3, 3)
    for b, (nxg, g) in enumerate(zip(pair, gs)):
        p = torch.softmax(module.first_level(g, g.ndata["feat"])[:, :3], dim=-1)  # P from the module's own layer
        torch.testing.assert_close(adjs[b], p.t() @ _adj(nxg) @ p, rtol=1e-5, atol=1e-5)
        _, adj2 = _dense_hierarchy(module, nxg, g.ndata["feat"])
        torch.testing.assert_close(adjs[b], adj2, rtol=1e-5, atol=1e-5)


def test_flat_hierarchy_is_the_node_mean(pair):
    module = HierarchicalGraphRepresentation(4, graph_feats=4, levels=1)
    bg = dgl.batch([_model_graph(h, seed=i) for i, h in enumerate(pair)])
    z = bg.ndata["feat"]
    levels, h = module(bg, z)
    expected = torch.stack([part.mean(0) for part in torch.split(z, [15, 11])])
    torch.testing.assert_close(h, expected)
    torch.testing.assert_close(levels[:, 0], expected)
    assert not any(True for _ in module.parameters())


def test_hierarchy_checks_its_arguments():
    with pytest.raises(ValueError, match="aggregator"):
        HierarchicalGraphRepresentation(4, aggregator="max")
    with pytest.raises(ValueError, match="cluster counts"):
        HierarchicalGraphRepresentation(4, levels=3, clusters=(4,))


# -- distance ---------------------------------------------------------------------------------


def test_distances():
    z = torch.tensor([[1.0, 0.0], [1.0, 2.0], [-3.0, 1.0]])
    c = torch.tensor([[2.0, 0.0], [0.0, -1.0]])
    inner = torch.tensor([[z[q] @ c[k] for k in range(2)] for q in range(3)])
    torch.testing.assert_close(logits(z, c), inner)
    cos = torch.tensor([[float(z[q] @ c[k] / (z[q].norm() * c[k].norm())) for k in range(2)] for q in range(3)])
    torch.testing.assert_close(logits(z, c, "cosine", cosine_scale=4.0), 4.0 * cos)
    sq = torch.tensor([[float(((z[q] - c[k]) ** 2).sum()) for k in range(2)] for q in range(3)])
    torch.testing.assert_close(logits(z, c, "euclidean"), -sq, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="unknown distance"):
        logits(z, c, "manhattan")


@pytest.mark.parametrize("kind", ["inner", "cosine"])
def test_block_logits_score_each_row_against_its_own_graphs_prototypes(kind):
    gen = torch.Generator().manual_seed(3)
    z = torch.randn(9, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    protos = torch.randn(2, 3, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    sizes = [4, 5]
    expected = torch.cat([logits(z[:4], protos[0], kind), logits(z[4:], protos[1], kind)])
    torch.testing.assert_close(block_logits(z, protos, sizes, kind), expected)
    assert torch.autograd.gradcheck(lambda x, p: block_logits(x, p, sizes, kind), (z, protos))


def test_block_logits_has_no_euclidean_form_and_checks_the_blocks():
    z, protos = torch.randn(9, 4), torch.randn(2, 3, 4)
    assert block_logits(z, protos, [4, 5], "euclidean") is None
    with pytest.raises(ValueError, match="do not fit"):
        block_logits(z, protos, [4, 4])
    with pytest.raises(ValueError, match="unknown distance"):
        block_logits(z, protos, [4, 5], "manhattan")


def test_pgnn_symmetric_normalisation_matches_a_dense_reference():
    from gflkit.nn import PrototypeGNN

    torch.manual_seed(0)
    b, c, k, d = 2, 3, 4, 5
    support = torch.randn(b, c, k, d)
    weights = torch.rand(b, c, k, k)
    weights = 0.5 * (weights + weights.transpose(-1, -2))
    pgnn = PrototypeGNN(d, d, activation="none", norm="sym")
    out = pgnn(support, weights)
    deg = weights.sum(-1)  # symmetric: in- and out-degrees agree
    norm = weights / (deg.unsqueeze(-1) * deg.unsqueeze(-2)).sqrt()
    expected = (norm.transpose(-1, -2) @ support @ pgnn.weight + pgnn.bias).mean(2)
    assert torch.allclose(out, expected, atol=1e-5)
    row = PrototypeGNN(d, d, activation="none", norm="row")
    row.load_state_dict(pgnn.state_dict())
    assert not torch.allclose(row(support, weights), out)


@pytest.mark.parametrize("mode, start", [("open", 0.95), ("centered", 1.0), ("paper", 0.5)])
def test_gate_modes_start_where_documented(mode, start):
    from gflkit.nn import HierarchyGate

    torch.manual_seed(0)
    gate = HierarchyGate(32, 100, mode=mode)
    g = gate(torch.zeros(1, 32))  # a zero representation leaves only the bias
    assert abs(float(g.detach().mean()) - start) < (0.25 if mode == "paper" else 0.01)
    h = torch.randn(4, 32, requires_grad=True)
    gate(h).sum().backward()
    if mode == "centered":  # slope 0.5 and the usual weights: the representation gets a real gradient
        assert float(h.grad.norm()) > 10 * _open_gate_grad()


def _open_gate_grad() -> float:
    from gflkit.nn import HierarchyGate

    torch.manual_seed(0)
    gate = HierarchyGate(32, 100, mode="open")
    h = torch.randn(4, 32, requires_grad=True)
    gate(h).sum().backward()
    return float(h.grad.norm())


def _composed_first_pool(g, z_prop, weight, bias, k2):
    """The first pooling level composed of autograd operations (the earlier implementation)."""
    out = torch.addmm(bias, z_prop, weight)
    p = torch.softmax(out[:, :k2], dim=-1)
    ap = dgl.ops.copy_u_sum(g, p) - p
    rhs = torch.cat([torch.relu(out[:, k2:]), ap], dim=1)
    sizes = g.batch_num_nodes().tolist()
    prods = segment_tmm(p, rhs, sizes)
    pf, adj = prods.split([out.shape[1] - k2, k2], dim=-1)
    mass = torch.stack([x.sum(0) for x in p.split(sizes)]).clamp(min=1e-12).unsqueeze(-1)
    return pf / mass, adj


@pytest.mark.parametrize("directed", [False, True])
def test_first_pool_equals_the_composed_operations(pair, directed):
    from gflkit.nn.hierarchy import _FirstPool

    graphs = [_model_graph(h) for h in pair]
    if directed:  # drop some edges one way: A^T != A exercises the transposed product
        graphs = [dgl.remove_edges(g, torch.arange(0, g.num_edges(), 7)) for g in graphs]
    bg = dgl.batch(graphs)
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(bg.num_nodes(), 5, dtype=torch.float64, generator=gen, requires_grad=True)
    w = torch.randn(5, 7, dtype=torch.float64, generator=gen, requires_grad=True)
    b = torch.randn(7, dtype=torch.float64, generator=gen, requires_grad=True)
    sizes = bg.batch_num_nodes().tolist()
    fused = _FirstPool.apply(z, w, b, bg, sizes, 3)
    composed = _composed_first_pool(bg, z, w, b, 3)
    weights = [torch.randn(x.shape, dtype=torch.float64, generator=gen) for x in composed]
    for x, y in zip(fused, composed):
        torch.testing.assert_close(x, y)
    grads = [torch.autograd.grad(sum((o * v).sum() for o, v in zip(outs, weights)), (z, w, b))
             for outs in (fused, composed)]
    for x, y in zip(*grads):
        torch.testing.assert_close(x, y)
    assert torch.autograd.gradcheck(lambda z_, w_, b_: _FirstPool.apply(z_, w_, b_, bg, sizes, 3), (z, w, b))


@pytest.mark.parametrize("directed", [False, True])
def test_recon_loss_gradcheck(pair, directed):
    graphs = [_model_graph(h) for h in pair]
    if directed:  # one direction of some edges dropped: the backward pass needs A^T
        graphs = [dgl.remove_edges(g, torch.arange(1, g.num_edges(), 9)) for g in graphs]
    bg = dgl.batch(graphs)
    d = torch.randn(bg.num_nodes(), 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2),
                    requires_grad=True)
    assert is_symmetric(bg) != directed
    for reduction in ("mean", "sum"):
        for normalize in (False, True):
            assert torch.autograd.gradcheck(lambda x, r=reduction, n=normalize: recon_loss(bg, x, r, n), (d,))


@pytest.mark.parametrize("classes", [2, 4, 40])
def test_cross_entropy_equals_torch_to_the_last_bit(classes):
    from gflkit.nn.distance import cross_entropy

    gen = torch.Generator().manual_seed(classes)
    scores = (5 * torch.randn(300, classes, generator=gen)).requires_grad_()
    labels = torch.randint(0, classes, (300,), generator=gen)
    ours, ref = cross_entropy(scores, labels), torch.nn.functional.cross_entropy(scores, labels)
    assert torch.equal(ours, ref)
    torch.testing.assert_close(torch.autograd.grad(ours, scores)[0], torch.autograd.grad(ref, scores)[0])


# -- features one tensor per graph -------------------------------------------------------


def test_parts_matmul_is_the_product_with_the_concatenation():
    from gflkit.nn.conv import parts_matmul

    gen = torch.Generator().manual_seed(0)
    parts = [torch.randn(n, 7, generator=gen) for n in (5, 1, 9)]
    weight = torch.randn(7, 3, generator=gen, requires_grad=True)
    out = parts_matmul(parts, weight)
    want = torch.cat(parts) @ weight
    torch.testing.assert_close(out, want)
    grad = torch.randn(out.shape, generator=gen)
    (got,) = torch.autograd.grad(out, weight, grad)
    (expected,) = torch.autograd.grad(want, weight, grad)
    torch.testing.assert_close(got, expected)
    doubles = [p.double().requires_grad_() for p in parts]
    assert torch.autograd.gradcheck(lambda w, *xs: parts_matmul(xs, w), (weight.detach().double().requires_grad_(),
                                                                        *doubles))


def test_gcn_encoder_takes_each_graphs_features_as_they_are():
    from gflkit.nn import make_encoder

    graphs = [_model_graph(nx.gnp_random_graph(n, 0.2, seed=n), feat_size=6, seed=n) for n in (12, 7, 15)]
    bg = dgl.batch(graphs)
    torch.manual_seed(0)
    gcn = make_encoder("gcn", 6, 8, 4)
    assert gcn.takes_feature_parts
    parts = [g.ndata["feat"] for g in graphs]
    torch.testing.assert_close(gcn(bg, parts), gcn(bg))
    (a,) = torch.autograd.grad(gcn(bg, parts).square().sum(), gcn.conv1.weight)
    (b,) = torch.autograd.grad(gcn(bg).square().sum(), gcn.conv1.weight)
    torch.testing.assert_close(a, b)
    assert not make_encoder("gcn", 6, 8, 4, dropout=0.5).takes_feature_parts  # its mask covers the batch
    sage = make_encoder("sage", 6, 8, 4)
    assert not sage.takes_feature_parts
    torch.testing.assert_close(sage(bg, parts), sage(bg))  # concatenated for it
