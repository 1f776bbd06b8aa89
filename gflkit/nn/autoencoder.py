"""Auxiliary graph reconstruction (paper section 4.3, Eq. 9).

``L_r = ||A - D D^T||_F^2`` with ``D = GNN_dec(Z)``. Expanding the square gives

    ||A||_F^2 - 2 tr(D^T A D) + ||D^T D||_F^2

where ``tr(D^T A D)`` is a sum over edges of ``<d_u, d_v>`` and ``D^T D`` is
``d x d``: the exact loss costs O(E d + n d^2) time and never builds an
``n x n`` matrix.
"""
from __future__ import annotations

import dgl
import torch
from dgl.nn import GraphConv
from torch import nn

__all__ = ["GraphDecoder", "recon_loss", "dense_recon_loss"]


class GraphDecoder(nn.Module):
    """GNN_dec: one GraphConv layer mapping embeddings to reconstruction factors.

    Shapes:
        z ``(N, in_feats)`` -> ``(N, out_feats)``.
    """

    def __init__(self, in_feats: int, out_feats: int) -> None:
        super().__init__()
        self.conv = GraphConv(in_feats, out_feats, norm="both")

    def reset_parameters(self) -> None:
        self.conv.reset_parameters()

    def forward(self, g: dgl.DGLGraph, z: torch.Tensor) -> torch.Tensor:
        return self.conv(g, z)


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
    edge_graph = torch.repeat_interleave(torch.arange(len(sizes)), edge_counts)
    node_graph = torch.repeat_interleave(torch.arange(len(sizes)), sizes)
    dots = dgl.ops.u_dot_v(g, d, d).squeeze(-1)  # (E,) <d_u, d_v> per edge
    tr_all = torch.zeros(len(sizes), dtype=d.dtype).index_add(0, edge_graph, dots)
    self_loops = torch.zeros(len(sizes), dtype=d.dtype).index_add(0, node_graph, (d * d).sum(1))
    tr_dad = tr_all - self_loops  # tr(D^T A D) without the self-loops
    gram = torch.stack([(di.t() @ di).pow(2).sum() for di in torch.split(d, sizes.tolist())])
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
