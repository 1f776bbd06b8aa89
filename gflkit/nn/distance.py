"""Distance d between query embeddings and prototypes (paper Eq. 2, Table 6)."""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F


__all__ = ["logits", "Distance"]


def logits(z: torch.Tensor, protos: torch.Tensor, distance: str = "inner", cosine_scale: float = 10.0) -> torch.Tensor:
    """Class scores ``-d(z, c_k)`` for each query and prototype.

    Args:
        z: query embeddings.
        protos: one prototype per class.
        distance: ``"inner"`` (``z . c``, the paper's default), ``"cosine"``
            (scaled by ``cosine_scale`` so that a softmax can be confident) or
            ``"euclidean"`` (negative squared distance).

    Shapes:
        z: ``(Q, d)``; protos: ``(C, d)``; returns ``(Q, C)``.
    """
    if distance == "inner":
        return z @ protos.t()
    if distance == "cosine":
        return cosine_scale * F.normalize(z, dim=-1) @ F.normalize(protos, dim=-1).t()
    if distance == "euclidean":
        return -torch.cdist(z, protos).pow(2)
    raise ValueError(f"unknown distance {distance!r}")


def block_logits(z: torch.Tensor, protos: torch.Tensor, sizes: Sequence[int], distance: str = "inner",
                 cosine_scale: float = 10.0) -> torch.Tensor | None:
    """:func:`logits` of every row of a batch against its own graph's prototypes.

    The rows of ``z`` come in blocks of ``sizes`` (the graphs of a batch);
    row ``v`` of block ``b`` gets ``logits(z[v], protos[b])``. When most nodes
    are queries, scoring every row and picking the queries' rows of the small
    ``(N, C)`` result is cheaper than gathering the queries' embeddings: the
    backward pass writes the embeddings' gradient graph by graph, where a
    gather fills a zero ``(N, d)`` tensor and scatters into it. ``None`` for a distance
    without this form (``"euclidean"``).

    Shapes:
        z: ``(N, d)``; protos: ``(B, C, d)``; ``sum(sizes) == N``; returns ``(N, C)``.
    """
    sizes = [int(s) for s in sizes]
    if sum(sizes) != z.shape[0] or len(sizes) != protos.shape[0]:
        raise ValueError(f"{len(sizes)} blocks of {sum(sizes)} rows do not fit z {tuple(z.shape)} "
                         f"and prototypes {tuple(protos.shape)}")
    if distance == "inner":
        return _block_inner(z, protos, sizes)
    if distance == "cosine":
        return cosine_scale * _block_inner(F.normalize(z, dim=-1), F.normalize(protos, dim=-1), sizes)
    if distance == "euclidean":
        return None
    raise ValueError(f"unknown distance {distance!r}")


def _block_inner(z: torch.Tensor, protos: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    """``z_b @ protos[b]^T`` for each block ``b`` of rows, concatenated into ``(N, C)``."""
    return torch.cat([zb @ pb.t() for zb, pb in zip(z.split(sizes), protos)])


class Distance(torch.nn.Module):
    """:func:`logits` as a module, so the distance is one part of a composed model.

    Args:
        kind: ``"inner"``, ``"cosine"`` or ``"euclidean"``.
        cosine_scale: logit scale of the cosine distance.
    """

    def __init__(self, kind: str = "inner", cosine_scale: float = 10.0) -> None:
        super().__init__()
        if kind not in ("inner", "cosine", "euclidean"):
            raise ValueError(f"unknown distance {kind!r}: choose inner, cosine or euclidean")
        self.kind, self.cosine_scale = kind, cosine_scale

    def extra_repr(self) -> str:
        return f"kind={self.kind}" + (f", cosine_scale={self.cosine_scale}" if self.kind == "cosine" else "")

    def forward(self, z: torch.Tensor, protos: torch.Tensor) -> torch.Tensor:
        return logits(z, protos, self.kind, self.cosine_scale)

    def blocks(self, z: torch.Tensor, protos: torch.Tensor, sizes: Sequence[int]) -> torch.Tensor | None:
        """Every row's logits against its own block's prototypes (:func:`block_logits`), or ``None``."""
        return block_logits(z, protos, sizes, self.kind, self.cosine_scale)


def cross_entropy(scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``F.cross_entropy(scores, labels)`` (mean over rows), the same numbers, faster for few classes.

    PyTorch's log-softmax along a short last dimension (a few classes) takes a
    slow path; along the first dimension of the transposed scores it runs
    vectorised over the rows, several times faster, and gives the same values
    to the last bit.

    Shapes:
        scores: ``(Q, C)``; labels: ``(Q,)`` in ``0..C-1``; returns a scalar.
    """
    return F.nll_loss(F.log_softmax(scores.t(), dim=0).t(), labels)
