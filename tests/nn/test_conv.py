"""Graph convolution (gflkit.nn.conv): propagation, normalisation, GCN layers, against DGL and dense references."""
from __future__ import annotations

import dgl
import pytest
import torch
from dgl.nn import GraphConv
from nn_graphs import _adj, _model_graph

from gflkit.data import build_graph
from gflkit.graphs import prepare_graph
from gflkit.nn import GCNLayer
from gflkit.nn.conv import NORM_DST, NORM_SRC, add_gcn_norm, is_symmetric, propagate


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
    # the backward pass is differentiable too (second-order meta-gradients)
    assert torch.autograd.gradgradcheck(lambda v: propagate(bg, v).pow(2), (x,))
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


def test_prepared_graph_stores_the_normalisation_and_one_copy_of_the_features(six):
    raw = build_graph(*zip(*six.edges()), 6, torch.randn(6, 5), torch.zeros(6, dtype=torch.long))
    g = prepare_graph(raw)
    assert set(g.ndata) == {"feat", NORM_SRC, NORM_DST}
    assert g.ndata["feat"].data_ptr() == raw.ndata["feat"].data_ptr()  # shared, not copied
    torch.testing.assert_close(g.ndata[NORM_SRC], (_adj(six).sum(1, keepdim=True) + 1).rsqrt())


def test_is_symmetric_counts_multi_edges_and_sets_nothing_on_the_graph():
    undirected = dgl.graph((torch.tensor([0, 1, 1, 2]), torch.tensor([1, 0, 2, 1])))
    attributes = set(vars(undirected))
    assert is_symmetric(undirected)
    assert set(vars(undirected)) == attributes  # nothing is set on the caller's graph
    assert not is_symmetric(dgl.graph((torch.tensor([0, 1]), torch.tensor([1, 2]))))
    twice_one_way = dgl.graph((torch.tensor([0, 0, 1]), torch.tensor([1, 1, 0])))
    assert not is_symmetric(twice_one_way)
    assert is_symmetric(dgl.graph(([], []), num_nodes=3))


@pytest.mark.parametrize("told", [None, True, False])
def test_gcn_layer_gradients_whatever_it_is_told_of_a_symmetric_graph(pair, told):
    """On a symmetric graph, the backward pass may reuse the forward product (told ``True``, or
    checked with ``None``) or take the reversed graph (told ``False``): the same gradients."""
    bg = add_gcn_norm(dgl.batch([_model_graph(h) for h in pair]))
    x = torch.randn(bg.num_nodes(), 7, dtype=torch.float64, generator=torch.Generator().manual_seed(1),
                    requires_grad=True)
    torch.manual_seed(0)
    layer = GCNLayer(7, 3, relu=True).double()
    (got,) = torch.autograd.grad(layer(bg, x, symmetric=told).sum(), x)
    (expected,) = torch.autograd.grad(layer(bg, x).sum(), x)
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("relu", [False, True])
def test_gcn_layer_on_feature_parts_is_the_layer_on_their_concatenation(pair, directed, relu):
    """The fused layer (weight first, bias and relu in place) on one feature block per graph
    gives the composed operations' output and gradients on the concatenation; its backward
    pass passes gradcheck, and gradgradcheck (second-order MAML differentiates it)."""
    graphs = [_model_graph(h) for h in pair]
    if directed:  # one direction of some edges dropped: the backward pass takes the reversed graph
        graphs = [dgl.remove_edges(g, torch.arange(2, g.num_edges(), 5)) for g in graphs]
    bg = add_gcn_norm(dgl.batch(graphs))
    assert is_symmetric(bg) != directed
    gen = torch.Generator().manual_seed(0)
    sizes = bg.batch_num_nodes().tolist()
    torch.manual_seed(0)
    layer = GCNLayer(7, 3, relu=relu).double()
    with torch.no_grad():
        layer.bias.normal_(generator=gen)
    parts = [torch.randn(n, 7, dtype=torch.float64, generator=gen, requires_grad=True) for n in sizes]
    out = layer(bg, parts)
    composed = propagate(bg, torch.cat(parts) @ layer.weight) + layer.bias
    composed = torch.relu(composed) if relu else composed
    torch.testing.assert_close(out, composed)
    torch.testing.assert_close(layer(bg, torch.cat(parts).detach()), composed)  # one tensor
    widening = GCNLayer(7, 9, relu=relu).double()  # propagates first, then the weight
    want = propagate(bg, torch.cat(parts)) @ widening.weight + widening.bias
    torch.testing.assert_close(widening(bg, parts), torch.relu(want) if relu else want)
    grad = torch.randn(out.shape, dtype=torch.float64, generator=gen)
    params = [layer.weight, layer.bias, *parts]
    for ours, theirs in zip(torch.autograd.grad(out, params, grad), torch.autograd.grad(composed, params, grad)):
        torch.testing.assert_close(ours, theirs)
    weight, bias = layer.weight.detach().requires_grad_(), layer.bias.detach().requires_grad_()
    assert torch.autograd.gradcheck(lambda w, b, *xs: _gcn_conv(layer, bg, w, b, xs), (weight, bias, *parts))
    assert torch.autograd.gradgradcheck(lambda w, b, *xs: _gcn_conv(layer, bg, w, b, xs).pow(2),
                                        (weight, bias, *parts))


def _gcn_conv(layer, g, weight, bias, parts):
    """The layer's operation with given parameters (``functional_call``, as MAML calls it)."""
    return torch.func.functional_call(layer, {"weight": weight, "bias": bias}, (g, list(parts)))
