"""Per-graph products over the node rows of a batched graph."""
from __future__ import annotations

from typing import Sequence

import dgl
import torch

__all__ = []


def row_blocks(sizes: Sequence[int]) -> list[slice]:
    """The rows of each block (each graph of a batch) with these row counts, in order."""
    blocks, start = [], 0
    for n in sizes:
        blocks.append(slice(start, start + n))
        start += n
    return blocks


def block_rows_mm(x: torch.Tensor, mats: torch.Tensor, sizes: Sequence[int], out: torch.Tensor) -> torch.Tensor:
    """``x_k @ mats[k]`` for each block of rows ``k``, written into its rows of ``out``; returns ``out``.

    Shapes:
        x ``(N, p)``, mats ``(len(sizes), p, q)``, out ``(N, q)``.
    """
    for k, rows in enumerate(row_blocks(sizes)):
        torch.mm(x[rows], mats[k], out=out[rows])
    return out


def block_tmm(a: torch.Tensor, b: torch.Tensor, sizes: Sequence[int], out: torch.Tensor) -> torch.Tensor:
    """``a_k^T b_k`` for each block of rows ``k``, written into ``out[k]``; returns ``out``.

    Shapes:
        a ``(N, p)``, b ``(N, q)``, out ``(len(sizes), p, q)``.
    """
    for k, (ak, bk) in enumerate(zip(a.split(sizes), b.split(sizes))):
        torch.mm(ak.t(), bk, out=out[k])
    return out


class _SegmentTMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor, sizes: list[int]) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        ctx.sizes = sizes
        return block_tmm(a, b, sizes, a.new_empty(len(sizes), a.shape[1], b.shape[1]))

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        a, b = ctx.saved_tensors
        need_a, need_b, _ = ctx.needs_input_grad
        # Gradients are written block by block into whole (N, .) tensors: no
        # per-graph pieces to concatenate afterwards.
        grad_a = block_rows_mm(b, grad.transpose(1, 2), ctx.sizes, torch.empty_like(a)) if need_a else None
        grad_b = block_rows_mm(a, grad, ctx.sizes, torch.empty_like(b)) if need_b else None
        return grad_a, grad_b, None


class _SegmentGram(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: torch.Tensor, sizes: list[int]) -> torch.Tensor:
        ctx.save_for_backward(a)
        ctx.sizes = sizes
        return block_tmm(a, a, sizes, a.new_empty(len(sizes), a.shape[1], a.shape[1]))

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (a,) = ctx.saved_tensors
        sym = grad + grad.transpose(1, 2)  # d(a^T a) = da^T a + a^T da
        return block_rows_mm(a, sym, ctx.sizes, torch.empty_like(a)), None


def segment_gram(a: torch.Tensor, sizes: Sequence[int]) -> torch.Tensor:
    """``a_k^T a_k`` for each block of rows ``k``: :func:`segment_tmm` of ``a`` with
    itself, with one product per block in the backward pass instead of two.

    Shapes:
        a ``(N, p)``, ``sum(sizes) == N`` -> ``(len(sizes), p, p)``.
    """
    sizes = [int(s) for s in sizes]
    if sum(sizes) != a.shape[0]:
        raise ValueError(f"segment sizes sum to {sum(sizes)}, but the input has {a.shape[0]} rows")
    return _SegmentGram.apply(a.contiguous(), sizes)


def segment_tmm(a: torch.Tensor, b: torch.Tensor, sizes: Sequence[int]) -> torch.Tensor:
    """``a_k^T b_k`` for each block of rows ``k`` (one graph of a batch each).

    Equal to stacking ``a_k.t() @ b_k`` over ``torch.split(a, sizes)`` and
    ``torch.split(b, sizes)``; its backward pass writes the gradients of all
    blocks into one tensor instead of concatenating per-block pieces.

    Shapes:
        a ``(N, p)``, b ``(N, q)``, ``sum(sizes) == N`` -> ``(len(sizes), p, q)``.
    """
    sizes = [int(s) for s in sizes]
    if sum(sizes) != a.shape[0] or a.shape[0] != b.shape[0]:
        raise ValueError(f"segment sizes sum to {sum(sizes)}, but the inputs have {a.shape[0]} and {b.shape[0]} rows")
    return _SegmentTMM.apply(a.contiguous(), b.contiguous(), sizes)


class _SegmentMean(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: torch.Tensor, sizes: list[int]) -> torch.Tensor:
        ctx.sizes = sizes
        out = a.new_empty(len(sizes), a.shape[1])
        start = 0
        for k, size in enumerate(sizes):
            if size:
                torch.mean(a[start : start + size], 0, out=out[k])
            else:  # an empty block's mean is 0, as in ``segment_reduce``
                out[k].zero_()
            start += size
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        # Each row of a block gets its block's gradient over the block's size:
        # one write of the (N, p) gradient, no gather by segment ids.
        sizes = ctx.sizes
        grad_a = grad.new_empty(sum(sizes), grad.shape[1])
        start = 0
        for k, size in enumerate(sizes):
            grad_a[start : start + size] = grad[k] / max(size, 1)
            start += size
        return grad_a, None


def segment_mean(a: torch.Tensor, sizes: Sequence[int]) -> torch.Tensor:
    """The mean of each block of rows ``k`` (one graph of a batch each).

    Equal, up to float rounding, to ``dgl.ops.segment_reduce(sizes, a, "mean")``;
    the backward pass writes each block's gradient into its rows of one tensor
    instead of gathering it by segment ids. An empty block has mean 0.

    Shapes:
        a ``(N, p)``, ``sum(sizes) == N`` -> ``(len(sizes), p)``.
    """
    sizes = [int(s) for s in sizes]
    if sum(sizes) != a.shape[0]:
        raise ValueError(f"segment sizes sum to {sum(sizes)}, but the input has {a.shape[0]} rows")
    return dgl.ops.segment_reduce(torch.tensor(sizes), a, "mean")
