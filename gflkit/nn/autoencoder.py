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

from .conv import GCNLayer
from .segment import segment_gram

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

    def forward(self, g: dgl.DGLGraph, z: torch.Tensor, z_prop: torch.Tensor | None = None) -> torch.Tensor:
        """``z_prop = A_hat z`` may be passed when it is computed anyway."""
        return self.conv(g, z) if z_prop is None else self.conv.from_propagated(z_prop)


def recon_loss(g: dgl.DGLGraph, d: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Exact ``||A - D D^T||_F^2`` per graph of a batch, averaged over graphs.

    ``A`` is the binary adjacency without self-loops. ``g`` must be a (batched)
    simple graph with exactly one self-loop per node, as the model's graphs are;
    the self-loops are taken out of the sums here.

    Args:
        g: the (batched) graph.
        d: decoder output.
        reduction: ``"mean"`` divides each graph's loss by ``n^2`` (a mean over
            the entries of A); ``"sum"`` keeps the plain squared norm.

    Shapes:
        d: ``(N, k)``; returns a scalar.
    """
    sizes = g.batch_num_nodes()
    edge_counts = g.batch_num_edges()
    grams = segment_gram(d, sizes.tolist())  # (B, k, k): D^T D per graph
    # tr(D^T A D) as a sum over nodes of <d_v, (A D)_v>: one sparse product (and
    # one more in the backward pass), much cheaper on CPU than a dot product per
    # edge. The self-loops of g add tr(D^T D), taken back out per graph.
    rows = (d * dgl.ops.copy_u_sum(g, d)).sum(1, keepdim=True)
    tr_dad = dgl.ops.segment_reduce(sizes, rows, "sum").squeeze(-1) - grams.diagonal(dim1=-2, dim2=-1).sum(-1)
    gram = grams.pow(2).sum((-2, -1))
    a_norm = (edge_counts - sizes).to(d.dtype)  # ||A||_F^2 of a binary A
    loss = a_norm - 2 * tr_dad + gram  # (B,)
    if reduction == "mean":
        loss = loss / sizes.to(d.dtype).pow(2)
    elif reduction != "sum":
        raise ValueError(f"reduction must be 'mean' or 'sum', not {reduction!r}")
    return loss.mean()


def dense_recon_loss(adj: torch.Tensor, d: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """The same loss computed densely, for tests and the dense benchmark.

    Shapes:
        adj: ``(n, n)``; d: ``(n, k)``.
    """
    loss = (adj - d @ d.t()).pow(2).sum()
    return loss / adj.shape[0] ** 2 if reduction == "mean" else loss
