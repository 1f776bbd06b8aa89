"""The graph autoencoder's reconstruction loss (gflkit.nn.autoencoder): exact, normalised, gradchecked."""
from __future__ import annotations

import dgl
import networkx as nx
import pytest
import torch
import torch.nn.functional as F
from nn_graphs import _adj, _model_graph

from gflkit.nn import (
    GraphDecoder,
    HierarchicalGraphRepresentation,
    dense_recon_loss,
    recon_loss,
)
from gflkit.nn.conv import is_symmetric, propagate


@pytest.fixture
def twelve() -> nx.Graph:
    g = nx.gnm_random_graph(12, 24, seed=3)
    g.add_edges_from((i, i + 1) for i in range(11))  # connected
    return g


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


def test_recon_loss_normalized_matches_autograd(pair):
    """normalize=True equals F.normalize then the loss, value and gradient."""
    g = dgl.batch([_model_graph(h) for h in pair])
    assert is_symmetric(g)
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
    """A graph without the reverse of its edges: the dense loss and gradient."""
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


def test_recon_loss_rejects_unknown_reduction(six):
    with pytest.raises(ValueError, match="reduction"):
        recon_loss(_model_graph(six), torch.zeros(6, 2), "max")


@pytest.mark.parametrize("directed", [False, True])
def test_recon_loss_gradcheck(pair, directed):
    graphs = [_model_graph(h) for h in pair]
    if directed:  # one direction of some edges dropped
        graphs = [dgl.remove_edges(g, torch.arange(1, g.num_edges(), 9)) for g in graphs]
    bg = dgl.batch(graphs)
    d = torch.randn(bg.num_nodes(), 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2),
                    requires_grad=True)
    assert is_symmetric(bg) != directed
    for reduction in ("mean", "sum"):
        for normalize in (False, True):
            assert torch.autograd.gradcheck(lambda x, r=reduction, n=normalize: recon_loss(bg, x, r, n), (d,))
