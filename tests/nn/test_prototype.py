"""The prototype GNN (gflkit.nn.prototype) against dense references and message passing."""
from __future__ import annotations

import dgl
import pytest
import torch

from gflkit.nn import PrototypeGNN, relation_graph


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
