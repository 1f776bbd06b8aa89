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
import torch.nn.functional as F
from torch import nn

from .conv import GCNLayer
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


def recon_loss(g: dgl.DGLGraph, d: torch.Tensor, reduction: str = "mean", normalize: bool = False) -> torch.Tensor:
    """Exact ``||A - D D^T||_F^2`` per graph of a batch, averaged over graphs.

    ``A`` is the binary adjacency without self-loops. ``g`` must be a (batched)
    simple graph with exactly one self-loop per node, as the model's graphs are;
    the self-loops are taken out of the sums here.

    Args:
        g: the (batched) graph.
        d: decoder output.
        reduction: ``"mean"`` divides each graph's loss by ``n^2`` (a mean over
            the entries of A); ``"sum"`` keeps the plain squared norm.
        normalize: L2-normalise the rows of ``d`` first (``F.normalize(d, dim=-1)``).

    Shapes:
        d: ``(N, k)``; returns a scalar.
    """
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', not {reduction!r}")
    if normalize:
        d = F.normalize(d, dim=-1)
    sizes = g.batch_num_nodes().tolist()
    edges = g.batch_num_edges().tolist()
    sd = dgl.ops.copy_u_sum(g, d)  # S D, with S = A + I (g holds the self-loops)
    losses = []
    for rows, n, e in zip(row_blocks(sizes), sizes, edges):
        db = d[rows]
        gram = db.t() @ db
        tr_dad = torch.dot(db.reshape(-1), sd[rows].reshape(-1)) - gram.trace()
        losses.append((e - n) - 2 * tr_dad + gram.pow(2).sum())  # e - n = ||A||^2 of a binary A
    scale = torch.tensor([1.0 / (n * n) if reduction == "mean" else 1.0 for n in sizes], dtype=d.dtype, device=d.device)
    return (torch.stack(losses) * scale).mean()


def dense_recon_loss(adj: torch.Tensor, d: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """The same loss computed densely, for tests and the dense benchmark.

    Shapes:
        adj: ``(n, n)``; d: ``(n, k)``.
    """
    loss = (adj - d @ d.t()).pow(2).sum()
    return loss / adj.shape[0] ** 2 if reduction == "mean" else loss
