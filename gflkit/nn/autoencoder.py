"""Auxiliary graph reconstruction (paper section 4.3, Eq. 9).

``L_r = ||A - D D^T||_F^2`` with ``D = GNN_dec(Z)``. Expanding the square gives

    ||A||_F^2 - 2 tr(D^T A D) + ||D^T D||_F^2

where ``tr(D^T A D) = sum_v <d_v, (A D)_v>`` takes one sparse product and
``D^T D`` is ``d x d``: the exact loss costs O(E d + n d^2) time and never builds an
``n x n`` matrix.
"""
from __future__ import annotations

import dgl
import torch
from torch import nn

from .conv import GCNLayer, is_symmetric, neighbour_sum, neighbour_sum_t
from .segment import row_blocks

__all__ = ["GraphDecoder", "recon_loss", "dense_recon_loss"]


class GraphDecoder(nn.Module):
    """GNN_dec: one GCN layer mapping embeddings to reconstruction factors.

    Shapes:
        z ``(N, in_feats)`` -> ``(N, out_feats)``.
    """

    def __init__(self, in_feats: int, out_feats: int) -> None:
        super().__init__()
        self.conv = GCNLayer(in_feats, out_feats)

    def reset_parameters(self) -> None:
        self.conv.reset_parameters()

    def forward(self, g: dgl.DGLGraph, z: torch.Tensor, z_prop: torch.Tensor | None = None, *,
                symmetric: bool | None = None) -> torch.Tensor:
        """``z_prop = A_hat z`` may be passed when it is computed anyway; ``symmetric``: whether ``g`` is
        (:func:`~gflkit.nn.conv.propagate`)."""
        return self.conv(g, z, symmetric=symmetric) if z_prop is None else self.conv.from_propagated(z_prop)


def recon_loss(g: dgl.DGLGraph, d: torch.Tensor, reduction: str = "mean", normalize: bool = False, *,
               symmetric: bool | None = None) -> torch.Tensor:
    """Exact ``||A - D D^T||_F^2`` per graph of a batch, averaged over graphs.

    ``A`` is the binary adjacency without self-loops. ``g`` must be a (batched)
    simple graph with exactly one self-loop per node, as the model's graphs are;
    the self-loops are taken out of the sums here.

    Args:
        g: the (batched) graph.
        d: decoder output.
        reduction: ``"mean"`` divides each graph's loss by ``n^2`` (a mean over
            the entries of A); ``"sum"`` keeps the plain squared norm.
        normalize: L2-normalise the rows of ``d`` first (as
            ``F.normalize(d, dim=-1)``), inside the same operation.
        symmetric: whether ``g`` is symmetric (its backward pass then needs no
            product over the reversed graph); ``None``: the backward pass checks
            (:func:`~gflkit.nn.conv.is_symmetric`).

    Shapes:
        d: ``(N, k)``; returns a scalar.
    """
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', not {reduction!r}")
    sizes = g.batch_num_nodes().tolist()
    edges = g.batch_num_edges().tolist()
    return _ReconLoss.apply(d.contiguous(), g, sizes, edges, reduction == "mean", normalize, symmetric)


#: ``F.normalize``'s floor on a row's norm.
_NORM_EPS = 1e-12


class _ReconLoss(torch.autograd.Function):
    """``mean_b ||A_b - D_b D_b^T||^2 (/ n_b^2)`` with a hand-written backward pass.

    Per graph, with ``S = A + I`` (g holds the self-loops) and ``G = D^T D``:

        loss = ||A||^2 - 2 (<D, S D> - tr G) + ||G||^2

    ``<D, S D>`` takes one sparse product; the gradient
    ``-2 (S D + S^T D - 2 D) + 4 D G`` takes one more over the reversed graph
    (none when the graph is symmetric, as undirected graphs are: then
    ``S^T D = S D``), and is written per graph by one ``addmm``. With
    ``normalize`` the rows ``U = D / |D|`` take the place of ``D``, and the
    gradient goes back through the normalisation as ``(dU - U <dU, U>) / |D|``
    in two passes, where autograd would take several.
    """

    @staticmethod
    def forward(ctx, d, g, sizes, edges, mean, normalize=False, symmetric=None):
        norm = None
        if normalize:
            norm = torch.linalg.vector_norm(d, dim=1, keepdim=True).clamp_(min=_NORM_EPS)
            d = d / norm
        sd = neighbour_sum(g, d)  # S D
        grams = d.new_empty(len(sizes), d.shape[1], d.shape[1])
        losses = d.new_empty(len(sizes))
        scales = []
        for i, (rows, n, e) in enumerate(zip(row_blocks(sizes), sizes, edges)):
            db = d[rows]
            torch.mm(db.t(), db, out=grams[i])
            tr_dad = torch.dot(db.reshape(-1), sd[rows].reshape(-1)) - grams[i].trace()
            losses[i] = (e - n) - 2 * tr_dad + grams[i].pow(2).sum()  # e - n = ||A||^2 of a binary A
            scales.append(1.0 / (n * n) if mean else 1.0)
        scale = torch.tensor(scales, dtype=d.dtype, device=d.device)
        ctx.save_for_backward(d, sd, grams, norm)
        ctx.g, ctx.sizes, ctx.scales, ctx.symmetric = g, sizes, scales, symmetric
        return (losses * scale).mean()

    @staticmethod
    def backward(ctx, grad):
        d, sd, grams, norm = ctx.saved_tensors
        # The gradient -2c ((S + S^T) D - 2 D) + 4c D G, as one product per graph:
        # 4c D (G + I) - 2c (S + S^T) D, with (S + S^T) D = 2 S D when S^T = S.
        symmetric = is_symmetric(ctx.g) if ctx.symmetric is None else ctx.symmetric
        if symmetric:
            base, twice = sd, True
        else:
            base, twice = sd + neighbour_sum_t(ctx.g, d), False
        grad_d = torch.empty_like(d)
        eye = torch.eye(d.shape[1], dtype=d.dtype, device=d.device)
        count = len(ctx.sizes)
        for i, rows in enumerate(row_blocks(ctx.sizes)):
            c = float(grad) * ctx.scales[i] / count
            torch.addmm(base[rows], d[rows], grams[i] + eye, beta=(-4.0 if twice else -2.0) * c, alpha=4.0 * c,
                        out=grad_d[rows])
            if norm is not None:  # through U = D / max(|D|, eps), graph by graph; rows at the floor are scaled only
                gd, u, length = grad_d[rows], d[rows], norm[rows]
                along = (gd * u).sum(1, keepdim=True).masked_fill_(length <= _NORM_EPS, 0.0)
                gd.addcmul_(u, along, value=-1.0).div_(length)
        return grad_d, None, None, None, None, None, None


def dense_recon_loss(adj: torch.Tensor, d: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """The same loss computed densely, for tests and the dense benchmark.

    Shapes:
        adj: ``(n, n)``; d: ``(n, k)``.
    """
    loss = (adj - d @ d.t()).pow(2).sum()
    return loss / adj.shape[0] ** 2 if reduction == "mean" else loss
