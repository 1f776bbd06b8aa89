"""Hierarchical graph representation (paper section 4.2, Eqs. 5-6, 10-11).

Level 1 is the node graph itself, ``h^1`` the mean of the node embeddings.
From level r to r+1 an assignment GNN gives soft cluster memberships
``P = softmax(AGNN(A^r, X^r))`` and a fusion GNN new features:

    A^{r+1} = P^T A^r P,     X^{r+1} = P~^T FGNN(A^r, X^r),     h^{r+1} = mean(X^{r+1})

``P~`` is ``P`` with columns normalised to sum to 1, so cluster features are
weighted means of their members and do not grow with graph size (with the raw
``P^T`` the features, and the gate's input, would scale with the node count).
At level 1, ``A P`` is computed by message passing: no ``n x n`` matrix. Later
levels have at most a few dozen clusters and use small dense matrices.

The levels are aggregated by their mean or by attention with a learnable query
``q``. The paper writes ``beta_r = q^T h^r / sum_r' q^T h^r'``, which can divide
by zero or flip sign; the scores are normalised with a softmax instead.
"""
from __future__ import annotations

import dgl
import torch
from torch import nn

from .conv import GCNLayer, is_symmetric, neighbour_sum, neighbour_sum_t, propagate
from .segment import row_blocks, segment_mean

__all__ = ["HierarchicalGraphRepresentation"]


def dense_gcn_norm(adj: torch.Tensor) -> torch.Tensor:
    """``D^-1/2 (A + I) D^-1/2`` for a batch of small dense adjacencies ``(B, K, K)``."""
    a = adj + torch.eye(adj.shape[-1], dtype=adj.dtype, device=adj.device)
    d = a.sum(-1).clamp(min=1e-12).rsqrt()
    return d.unsqueeze(-1) * a * d.unsqueeze(-2)


def _normalise_columns(p: torch.Tensor) -> torch.Tensor:
    return p / p.sum(-2, keepdim=True).clamp(min=1e-12)


class HierarchicalGraphRepresentation(nn.Module):
    """Graph representation from R levels of soft clustering.

    Args:
        in_feats: node embedding size.
        graph_feats: size of each level's representation.
        levels: R (1 means the flat node-mean representation).
        clusters: clusters of levels 2..R.
        aggregator: ``"mean"`` or ``"att"``.

    Shapes:
        batched graph with N nodes and ``z (N, in_feats)`` -> ``(levels (B, R,
        graph_feats), h (B, graph_feats))``.
    """

    def __init__(self, in_feats: int, graph_feats: int = 32, levels: int = 3,
                 clusters: tuple[int, ...] = (32, 8), aggregator: str = "mean") -> None:
        super().__init__()
        if aggregator not in ("mean", "att"):
            raise ValueError(f"aggregator must be 'mean' or 'att', not {aggregator!r}")
        if len(clusters) < levels - 1:
            raise ValueError(f"{levels} levels need {levels - 1} cluster counts, got {clusters}")
        self.levels, self.aggregator, self.graph_feats = levels, aggregator, graph_feats
        self.clusters = tuple(clusters[: levels - 1])
        self.project = nn.Identity() if in_feats == graph_feats else nn.Linear(in_feats, graph_feats)
        if levels > 1:
            # AGNN and FGNN of level 1 share one GCN layer (outputs side by side),
            # so the large node graph is traversed once instead of twice.
            self.first_level = GCNLayer(in_feats, self.clusters[0] + graph_feats)
        sizes = self.clusters
        self.assign_dense = nn.ModuleList(nn.Linear(graph_feats, n) for n in sizes[1:])
        self.fuse_dense = nn.ModuleList(nn.Linear(graph_feats, graph_feats) for _ in sizes[1:])
        self.query = nn.Parameter(torch.randn(graph_feats) / graph_feats**0.5) if aggregator == "att" else None

    def extra_repr(self) -> str:
        return f"levels={self.levels}, clusters={self.clusters}, aggregator={self.aggregator}"

    def forward(self, g: dgl.DGLGraph, z: torch.Tensor, z_prop: torch.Tensor | None = None, *,
                symmetric: bool | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``z_prop = A_hat z`` may be passed when it is computed anyway; ``symmetric``: whether ``g`` is
        (:func:`~gflkit.nn.conv.propagate`)."""
        reps = [self.project(segment_mean(z, g.batch_num_nodes().tolist()))]  # h^1: (B, gf)
        if self.levels > 1:
            x, adj = self._first_pool(g, z, z_prop, symmetric)
            reps.append(x.mean(1))
            for assign, fuse in zip(self.assign_dense, self.fuse_dense):
                a_hat = dense_gcn_norm(adj)
                p = torch.softmax(a_hat @ assign(x), dim=-1)  # (B, K_r, K_r+1)
                x = _normalise_columns(p).transpose(1, 2) @ torch.relu(a_hat @ fuse(x))
                adj = p.transpose(1, 2) @ adj @ p
                reps.append(x.mean(1))
        levels = torch.stack(reps, dim=1)  # (B, R, gf)
        if self.aggregator == "mean":
            return levels, levels.mean(1)
        beta = torch.softmax(levels @ self.query, dim=1)  # (B, R)
        return levels, (beta.unsqueeze(-1) * levels).sum(1)

    def _first_pool(self, g: dgl.DGLGraph, z: torch.Tensor, z_prop: torch.Tensor | None = None,
                    symmetric: bool | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Level 1 -> 2 on the sparse node graph: ``(B, K2, gf)`` features, ``(B, K2, K2)`` adjacency."""
        if z_prop is None:
            z_prop = propagate(g, z, symmetric)
        layer = self.first_level
        bias = layer.bias if layer.bias is not None else layer.weight.new_zeros(layer.out_feats)
        sizes = g.batch_num_nodes().tolist()
        return _FirstPool.apply(z_prop, layer.weight, bias, g, sizes, self.clusters[0], symmetric)


def _softmax_backward_(grad_p: torch.Tensor, p: torch.Tensor) -> None:
    """``dP -> P * (dP - <dP, P>)`` (row by row) in place of ``grad_p``: through ``P = softmax(logits)``.
    Called graph by graph, so the row products need a graph's rows at a time, not the batch's."""
    grad_p.sub_((grad_p * p).sum(-1, keepdim=True)).mul_(p)


class _FirstPool(torch.autograd.Function):
    """The first pooling level as one operation with a hand-written backward pass.

    With ``[a | f] = z_prop W + b`` (assignment logits and fused features),
    ``P = softmax(a)``, ``R = relu(f)`` and ``A`` the adjacency without
    self-loops, per graph:

        X = (P^T R) / colsum(P),    A' = P^T (A P)

    ``R`` and ``A P`` sit side by side in one ``(N, gf + K2)`` buffer, so each
    graph takes one product ``P^T [R | A P]``. In the backward pass the
    gradient reaching ``P`` is ``R dX'^T + (A P) dA'^T + A^T P dA' + colsum``
    terms; when the graph is symmetric (``symmetric``; ``None``: :func:`~gflkit.nn.conv.is_symmetric` checks),
    ``A^T P = A P`` is already in the buffer and the whole of it is one
    product per graph, ``[R | A P] [dX' ; dA'^T + dA']``, with no sparse
    product. Autograd would store and traverse every intermediate ``(N, .)``
    tensor of these steps; here each gradient is written once. Same arithmetic
    as the composed operations up to float rounding (tested against them).
    """

    @staticmethod
    def forward(ctx, z_prop, weight, bias, g, sizes, k2, symmetric=None):
        gf = weight.shape[1] - k2
        # The assignment logits in a tensor of their own: a softmax along the rows of a
        # contiguous tensor, where columns of a wider one would be copied out first.
        p = torch.softmax(torch.addmm(bias[:k2], z_prop, weight[:, :k2]), dim=-1)
        rap = p.new_empty(p.shape[0], gf + k2)  # [R | A P]
        torch.addmm(bias[k2:], z_prop, weight[:, k2:], out=rap[:, :gf]).clamp_min_(0.0)
        torch.sub(neighbour_sum(g, p), p, out=rap[:, gf:])  # A P without the self-loops
        b = len(sizes)
        prap = p.new_empty(b, k2, gf + k2)  # [P^T R | P^T A P] per graph
        mass = p.new_empty(b, k2)
        for i, rows in enumerate(row_blocks(sizes)):
            torch.mm(p[rows].t(), rap[rows], out=prap[i])
            torch.sum(p[rows], 0, out=mass[i])
        mass = mass.clamp_(min=1e-12).unsqueeze(-1)  # (B, K2, 1)
        x = prap[:, :, :gf] / mass
        ctx.save_for_backward(z_prop, weight, p, rap, x, mass)
        ctx.g, ctx.sizes, ctx.k2, ctx.symmetric = g, sizes, k2, symmetric
        return x, prap[:, :, gf:].contiguous()

    @staticmethod
    def backward(ctx, grad_x, grad_adj):
        z_prop, weight, p, rap, x, mass = ctx.saved_tensors
        g, sizes, k2 = ctx.g, ctx.sizes, ctx.k2
        gf = rap.shape[1] - k2
        if grad_x is None:
            grad_x = torch.zeros_like(x)
        if grad_adj is None:
            grad_adj = p.new_zeros(len(sizes), k2, k2)
        grad_pf = grad_x / mass  # (B, K2, gf)
        grad_mass = -(grad_x * x).sum(-1) / mass.squeeze(-1)  # (B, K2)
        grad_out = p.new_empty(p.shape[0], k2 + gf)  # [dP, then d(logits) | dR, then d(features)]
        grad_p, grad_r = grad_out[:, :k2], grad_out[:, k2:]
        symmetric = is_symmetric(g) if ctx.symmetric is None else ctx.symmetric
        # d[R | A P] -> dP: [dX' ; dA'^T] for R and A P, plus dA' for A^T P = A P when symmetric
        right = torch.cat([grad_pf.transpose(1, 2),
                           grad_adj.transpose(1, 2) + grad_adj if symmetric else grad_adj.transpose(1, 2)], dim=1)
        grad_ap = None if symmetric else torch.empty_like(p)
        blocks = row_blocks(sizes)
        for i, rows in enumerate(blocks):
            torch.mm(rap[rows], right[i], out=grad_p[rows])
            grad_p[rows].add_(grad_mass[i])
            torch.mm(p[rows], grad_pf[i], out=grad_r[rows])
            if grad_ap is not None:
                torch.mm(p[rows], grad_adj[i], out=grad_ap[rows])
            else:
                _softmax_backward_(grad_p[rows], p[rows])
        if grad_ap is not None:  # through A P = S P - P on a directed graph: A^T dAP
            grad_p.add_(neighbour_sum_t(g, grad_ap)).sub_(grad_ap)
            for rows in blocks:
                _softmax_backward_(grad_p[rows], p[rows])
        # through the relu: the gradient where R > 0, else 0 (relu's own backward op, written in place
        # of dR; multiplying by the boolean mask converts it elementwise, 7x slower on these strided columns)
        torch.ops.aten.threshold_backward.grad_input(grad_r, rap[:, :gf], 0.0, grad_input=grad_r)
        grad_z = grad_out @ weight.t() if ctx.needs_input_grad[0] else None
        grad_w = z_prop.t() @ grad_out if ctx.needs_input_grad[1] else None
        grad_b = grad_out.sum(0) if ctx.needs_input_grad[2] else None
        return grad_z, grad_w, grad_b, None, None, None, None
