"""The graph convolution of GFL, with the graph's normalisation stored once.

Every graph convolution of GFL is Kipf and Welling's GCN layer, as
``dgl.nn.GraphConv(norm="both")`` computes it:

    conv(g, x) = A_hat x W + b,    A_hat = D_in^-1/2 (A + I) D_out^-1/2

On CPU a step is bound by passes over ``(N, d)`` tensors, and ``GraphConv``
spends several of them per call recomputing what does not change. :class:`GCNLayer`
owns its ``weight`` and ``bias`` (initialised as ``GraphConv`` does, with the
same parameter names, so checkpoints and seeded initialisations carry over) and

* reads the normalisation stored on the graph once (:func:`add_gcn_norm`, called
  by :func:`gflkit.graphs.prepare_graph`, so ``dgl.batch`` concatenates it);
* computes ``X W``, the propagation, the bias and an optional ``relu`` as one
  operation with a hand-written backward pass, writing two ``(N, out)`` tensors
  where the composed operations write five;
* can start from an ``A_hat x`` computed once where several layers read the same
  input (:meth:`GCNLayer.from_propagated`): the decoder and the first hierarchy
  level both read ``A_hat Z``.

The result equals ``GraphConv(norm="both")(g, x)`` up to floating-point rounding
(tested).
"""
from __future__ import annotations

from typing import Sequence

import dgl
import numpy as np
import torch
from torch import nn

from .segment import row_blocks

__all__ = ["GCNLayer"]

NORM_SRC, NORM_DST = "gcn_norm_src", "gcn_norm_dst"


def _degree_norm(degrees: torch.Tensor) -> torch.Tensor:
    return degrees.float().clamp(min=1).pow(-0.5).unsqueeze(-1)


def gcn_norm(g: dgl.DGLGraph) -> tuple[torch.Tensor, torch.Tensor]:
    """``(D_out^-1/2, D_in^-1/2)`` as ``(N, 1)`` columns: stored ones when present."""
    if NORM_SRC in g.ndata and NORM_DST in g.ndata:
        return g.ndata[NORM_SRC], g.ndata[NORM_DST]
    return _degree_norm(g.out_degrees()), _degree_norm(g.in_degrees())


def add_gcn_norm(g: dgl.DGLGraph, out_degrees: torch.Tensor | None = None,
                 in_degrees: torch.Tensor | None = None) -> dgl.DGLGraph:
    """Store the degree normalisation of ``g`` in its ``ndata`` (in place); returns ``g``.

    ``out_degrees`` and ``in_degrees`` (``(N,)``), when the caller knows them, spare DGL building
    the graph's sparse formats to count them.
    """
    g.ndata[NORM_SRC] = _degree_norm(g.out_degrees() if out_degrees is None else out_degrees)
    g.ndata[NORM_DST] = _degree_norm(g.in_degrees() if in_degrees is None else in_degrees)
    return g


def propagate(g: dgl.DGLGraph, x: torch.Tensor, symmetric: bool | None = None) -> torch.Tensor:
    """``A_hat x``: one sparse product over ``g`` (which has its self-loops).

    Its backward pass is ``A_hat^T`` applied to the gradient; on a symmetric
    graph that is ``A_hat`` again, computed from the sparse format the forward
    pass built, so the transposed format of a batched graph is never built
    (about 0.4 ms per batch of 13,500 nodes).

    Args:
        symmetric: whether ``g`` is symmetric, when the caller knows
            (:attr:`gflkit.graphs.EpisodeBatch.symmetric`); ``None``: the
            backward pass checks (:func:`is_symmetric`).

    Shapes:
        x ``(N, d)`` -> ``(N, d)``.
    """
    src, dst = gcn_norm(g)
    return _Propagate.apply(x, src, dst, g, symmetric)


class _Propagate(torch.autograd.Function):
    """``dst * (S (src * x))`` with ``S = A + I``; the backward pass ``src * (S^T (dst * dy))``
    (no gradient for the normalisation ``src``, ``dst``: stored constants of the graph), itself a
    propagation, differentiable again when the backward pass builds a graph (``create_graph=True``)."""

    @staticmethod
    def forward(ctx, x, src, dst, g, symmetric):
        ctx.g, ctx.symmetric = g, symmetric
        ctx.save_for_backward(src, dst)
        return neighbour_sum(g, x * src).mul_(dst)

    @staticmethod
    def backward(ctx, grad):
        src, dst = ctx.saved_tensors
        # the normalisation is a constant
        return _propagate_back(ctx.g, grad, src, dst, ctx.symmetric), None, None, None, None


def _propagate_back(g: dgl.DGLGraph, grad: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                    symmetric: bool | None, own: bool = False) -> torch.Tensor:
    """``src * (S^T (dst * grad))``: a gradient through ``dst * (S (src * x))``.

    ``S^T = S`` when ``g`` is ``symmetric`` (``None``: checked here). Differentiable itself when
    the backward pass builds a graph (``create_graph=True``, second-order MAML); otherwise
    ``own=True`` lets it scale ``grad`` in place (a tensor the caller made and does not read again).
    """
    symmetric = is_symmetric(g) if symmetric is None else symmetric
    if torch.is_grad_enabled():
        reverse = g if symmetric else dgl.reverse(g, copy_ndata=False, copy_edata=False)
        return _Propagate.apply(grad, dst, src, reverse, symmetric)  # the reverse of a directed graph is directed
    scaled = grad.mul_(dst) if own else grad * dst
    spread = neighbour_sum(g, scaled) if symmetric else neighbour_sum_t(g, scaled)
    return spread.mul_(src)


def neighbour_sum(g: dgl.DGLGraph, x: torch.Tensor) -> torch.Tensor:
    """``S x`` for the adjacency ``S`` of ``g`` (``dgl.ops.copy_u_sum``), without autograd:
    the sparse product of the hand-written forward and backward passes.

    Shapes:
        x ``(N, d)`` -> ``(N, d)``.
    """
    with torch.no_grad():
        return dgl.ops.copy_u_sum(g, x)


def neighbour_sum_t(g: dgl.DGLGraph, x: torch.Tensor) -> torch.Tensor:
    """``A^T x`` for the adjacency ``A`` of ``g`` (``copy_u_sum`` computes ``A x``), without
    autograd: the backward pass of a product with ``A``. One sparse product over
    the reversed graph, which DGL builds from the formats ``g`` holds.

    Shapes:
        x ``(N, d)`` -> ``(N, d)``.
    """
    with torch.no_grad():
        return dgl.ops.copy_u_sum(dgl.reverse(g, copy_ndata=False, copy_edata=False), x)


def is_symmetric(g: dgl.DGLGraph) -> bool:
    """Whether every edge ``u -> v`` of ``g`` has its reverse ``v -> u`` (an undirected graph; multi-edges counted).

    Then ``A^T x = A x``, and a backward pass may reuse a product of the
    forward pass. Two sorts of the edge keys ``u n + v`` and ``v n + u``, about
    a millisecond for 25,000 edges: a caller that knows the answer passes it
    (``symmetric=``) instead; :class:`gflkit.graphs.GraphCache` checks each
    graph once, and :class:`gflkit.graphs.EpisodeBatch` carries the answer for
    its members.
    """
    src, dst = (t.cpu().numpy().astype(np.int64) for t in g.edges())
    n = g.num_nodes()
    return bool(np.array_equal(np.sort(src * n + dst), np.sort(dst * n + src)))
class _GCNConv(torch.autograd.Function):
    """``act(dst * (S (src * (X W))) + b)`` as one operation: the weight applied first.

    ``X`` comes as one or more blocks of rows, one per graph of a batch: each
    block is multiplied into its rows of ``X W`` (a batch's features need not be
    copied into one ``(N, in)`` tensor, only to be read once), and the weight's
    gradient is summed block by block. ``act`` is the identity or ``relu``. The
    forward pass writes two ``(N, out)`` tensors, ``X W`` (scaled in place, then
    freed) and the output (scaled, shifted and rectified in place), where the
    composed operations write five; it keeps ``X``, the weight and, with
    ``relu``, the output (for its mask). The backward pass is the transposed
    propagation of the masked gradient, which it writes twice; when it is itself
    differentiated (``create_graph=True``, second-order MAML) it is computed
    from differentiable operations instead.
    """

    @staticmethod
    def forward(ctx, weight, bias, src, dst, g, relu, symmetric, *parts):
        out = neighbour_sum(g, _rows_matmul(parts, weight).mul_(src)).mul_(dst)
        if bias is not None:
            out.add_(bias)
        if relu:
            out.clamp_min_(0.0)
        ctx.save_for_backward(weight, src, dst, out if relu else None, *parts)
        ctx.g, ctx.relu, ctx.symmetric = g, relu, symmetric
        return out

    @staticmethod
    def backward(ctx, grad):
        weight, src, dst, out, *parts = ctx.saved_tensors
        g, relu = ctx.g, ctx.relu
        need_w, need_b, need_parts = ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.needs_input_grad[7:]
        differentiable = torch.is_grad_enabled()  # create_graph: this pass is itself differentiated
        if differentiable:
            masked = grad * (out > 0) if relu else grad
        else:  # relu's own backward op writes the masked gradient into a new tensor, scaled in place after
            masked = torch.ops.aten.threshold_backward(grad, out, 0.0) if relu else grad
        grad_b = masked.sum(0) if need_b else None
        spread = _propagate_back(g, masked, src, dst, ctx.symmetric, own=relu and not differentiable)
        grad_w, grad_parts = None, []
        for x, need, block in zip(parts, need_parts, row_blocks([x.shape[0] for x in parts])):
            rows = spread[block]
            if need_w:
                if grad_w is None:
                    grad_w = x.t() @ rows
                else:
                    grad_w = grad_w.addmm(x.t(), rows) if differentiable else grad_w.addmm_(x.t(), rows)
            grad_parts.append(rows @ weight.t() if need else None)
        return (grad_w, grad_b, None, None, None, None, None, *grad_parts)


def _rows_matmul(parts: Sequence[torch.Tensor], weight: torch.Tensor) -> torch.Tensor:
    """``torch.cat(parts) @ weight`` into one new tensor, each block of rows multiplied in place."""
    if len(parts) == 1:
        return parts[0] @ weight
    out = weight.new_empty(sum(x.shape[0] for x in parts), weight.shape[1])
    for x, rows in zip(parts, row_blocks([x.shape[0] for x in parts])):
        torch.mm(x, weight, out=out[rows])
    return out


class GCNLayer(nn.Module):
    """One GCN layer ``A_hat x W + b`` (``GraphConv(norm="both")``), with an optional ``relu``.

    Args:
        in_feats: input size.
        out_feats: output size.
        bias: whether to add a learnable bias.
        relu: apply ``relu`` to the output, inside the same operation (in place
            of a new tensor; :class:`~gflkit.nn.encoder.GCNEncoder`'s first layer).

    Shapes:
        x ``(N, in_feats)`` -> ``(N, out_feats)``; the graph must have its self-loops.
    """

    def __init__(self, in_feats: int, out_feats: int, bias: bool = True, relu: bool = False) -> None:
        super().__init__()
        if in_feats < 1 or out_feats < 1:
            raise ValueError(f"GCNLayer sizes must be positive, got in_feats={in_feats}, out_feats={out_feats}")
        self.in_feats, self.out_feats, self.relu = in_feats, out_feats, relu
        self.weight = nn.Parameter(torch.empty(in_feats, out_feats))
        self.bias = nn.Parameter(torch.empty(out_feats)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform weight and zero bias, drawn as ``GraphConv`` draws them."""
        nn.init.xavier_uniform_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def extra_repr(self) -> str:
        return (f"in_feats={self.in_feats}, out_feats={self.out_feats}, bias={self.bias is not None}"
                + (", relu=True" if self.relu else ""))

    def from_propagated(self, x_prop: torch.Tensor) -> torch.Tensor:
        """The layer applied to an already propagated input ``x_prop = A_hat x``."""
        out = x_prop @ self.weight if self.bias is None else torch.addmm(self.bias, x_prop, self.weight)
        return out.relu_() if self.relu else out

    def forward(self, g: dgl.DGLGraph, x: torch.Tensor | Sequence[torch.Tensor], *,
                symmetric: bool | None = None) -> torch.Tensor:
        """``A_hat x W + b`` with the graph's stored normalisation.

        The weight is applied first unless it widens the features (as in
        ``GraphConv``, which applies it first only when it narrows them), so
        the sparse product runs on the narrower side; at equal widths the
        weight first keeps fewer tensors. ``x`` may be one tensor per graph of
        a batched ``g``, in the batch's order (not concatenated where the weight comes first).
        ``symmetric``: whether ``g`` is symmetric, as :func:`propagate` takes it.
        """
        parts = list(x) if isinstance(x, (list, tuple)) else [x]
        if self.in_feats < self.out_feats:
            return self.from_propagated(propagate(g, parts[0] if len(parts) == 1 else torch.cat(parts), symmetric))
        src, dst = gcn_norm(g)
        return _GCNConv.apply(self.weight, self.bias, src, dst, g, self.relu, symmetric, *parts)
