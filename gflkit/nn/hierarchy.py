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

from .conv import GCNLayer, propagate
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
        layer, k2 = self.first_level, self.clusters[0]
        bias = layer.bias if layer.bias is not None else layer.weight.new_zeros(layer.out_feats)
        p = torch.softmax(torch.addmm(bias[:k2], z_prop, layer.weight[:, :k2]), dim=-1)  # (N, K2)
        r = torch.relu(torch.addmm(bias[k2:], z_prop, layer.weight[:, k2:]))  # (N, gf)
        ap = dgl.ops.copy_u_sum(g, p) - p  # A P without the self-loops
        xs, adjs = [], []
        for rows in row_blocks(g.batch_num_nodes().tolist()):
            pt = p[rows].t()
            xs.append((pt @ r[rows]) / pt.sum(1, keepdim=True).clamp(min=1e-12))
            adjs.append(pt @ ap[rows])
        return torch.stack(xs), torch.stack(adjs)
