"""Per-graph reductions over the node rows of a batched graph."""
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


def segment_mean(a: torch.Tensor, sizes: Sequence[int]) -> torch.Tensor:
    """The mean of each block of rows ``k`` (one graph of a batch each):
    ``dgl.ops.segment_reduce(sizes, a, "mean")``. An empty block has mean 0.

    Shapes:
        a ``(N, p)``, ``sum(sizes) == N`` -> ``(len(sizes), p)``.
    """
    sizes = [int(s) for s in sizes]
    if sum(sizes) != a.shape[0]:
        raise ValueError(f"segment sizes sum to {sum(sizes)}, but the input has {a.shape[0]} rows")
    return dgl.ops.segment_reduce(torch.tensor(sizes, device=a.device), a, "mean")
