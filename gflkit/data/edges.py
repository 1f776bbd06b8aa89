"""Simple undirected graphs in collection format, from edge lists."""
from __future__ import annotations

from typing import Sequence

import dgl
import torch

__all__ = []


def undirected_edges(src: Sequence[int] | torch.Tensor, dst: Sequence[int] | torch.Tensor,
                     num_nodes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The edges of the simple undirected graph an edge list describes: each edge in both directions.

    Self-loops and duplicate edges are dropped, and ``u -> v`` and ``v -> u``
    are the same edge. The result is sorted (edge ``lo -> hi`` by ``lo * n + hi``,
    then the reversed edges in the same order), so it depends only on the set
    of edges, not on their order or direction: an edge table read from a file
    (:func:`build_graph`) and a DGLGraph given to
    :meth:`gflkit.prediction.predictor.Predictor.predict` with the same edges in one
    direction only give the same graph. Memory is linear in the number of edges.

    Shapes:
        src, dst: ``(E,)`` -> two ``(2 E',)`` tensors, ``E'`` the distinct non-loop edges.
    """
    src = torch.as_tensor(src, dtype=torch.int64)
    dst = torch.as_tensor(dst, dtype=torch.int64)
    keep = src != dst
    lo = torch.minimum(src[keep], dst[keep])
    hi = torch.maximum(src[keep], dst[keep])
    key = torch.unique(lo * num_nodes + hi)  # sorted, so the result is deterministic
    lo, hi = key // num_nodes, key % num_nodes
    return torch.cat([lo, hi]), torch.cat([hi, lo])


def build_graph(
    src: Sequence[int] | torch.Tensor,
    dst: Sequence[int] | torch.Tensor,
    num_nodes: int,
    feat: torch.Tensor,
    label: torch.Tensor,
) -> dgl.DGLGraph:
    """A simple undirected graph in collection format from an edge list.

    Self-loops and duplicate edges are dropped; every edge is stored in both
    directions (:func:`undirected_edges`). Memory is linear in the number of edges.

    Shapes:
        src, dst: ``(E,)``; feat: ``(num_nodes, d)``; label: ``(num_nodes,)``.
    """
    g = dgl.graph(undirected_edges(src, dst, num_nodes), num_nodes=num_nodes)
    g.ndata["feat"] = torch.as_tensor(feat, dtype=torch.float32)
    g.ndata["label"] = torch.as_tensor(label, dtype=torch.int64)
    return g
