"""The hierarchical graph representation (gflkit.nn.hierarchy) against a dense reference."""
from __future__ import annotations

import dgl
import networkx as nx
import pytest
import torch
from nn_graphs import _adj, _gcn_norm, _model_graph

from gflkit.nn import HierarchicalGraphRepresentation
from gflkit.nn.hierarchy import dense_gcn_norm


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


def _composed_first_pool(g, z_prop, weight, bias, k2):
    """The first pooling level composed of autograd operations (the earlier implementation)."""
    out = torch.addmm(bias, z_prop, weight)
    p = torch.softmax(out[:, :k2], dim=-1)
    ap = dgl.ops.copy_u_sum(g, p) - p
    rhs = torch.cat([torch.relu(out[:, k2:]), ap], dim=1)
    sizes = g.batch_num_nodes().tolist()
    prods = torch.stack([a.t() @ b for a, b in zip(p.split(sizes), rhs.split(sizes))])
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
