"""Support sets of a new graph as the models' ``class_scores`` take them, and scoring in chunks.

A support set is a sequence of ``C`` id tensors, one per class, of any sizes.
Scores of all nodes are computed :data:`CHUNK` query nodes at a time; nothing
is ``n x n``.
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch

from ..errors import GFLError

__all__ = []

#: Query nodes scored at a time.
CHUNK = 1 << 18


def flat_support(support: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Support ids of all classes in one vector, and their classes (``support`` may hold tensors or lists of
    ids). Shapes: ``(S,)``, ``(S,)``."""
    ids = torch.cat([torch.as_tensor(s, dtype=torch.int64) for s in support])
    target = torch.cat([torch.full((len(s),), c, dtype=torch.int64) for c, s in enumerate(support)])
    return ids, target


def chunked(n: int, score: Callable[[slice | torch.Tensor], torch.Tensor], size: int = CHUNK,
            nodes: torch.Tensor | None = None) -> torch.Tensor:
    """``score(rows)`` of ``n`` nodes (``rows`` slices), or of the node ids ``nodes`` (``rows`` id
    tensors), ``size`` (default :data:`CHUNK`) at a time, concatenated."""
    if nodes is not None:
        return torch.cat([score(nodes[lo:lo + size]) for lo in range(0, len(nodes), size)])
    return torch.cat([score(slice(lo, min(lo + size, n))) for lo in range(0, n, size)])


def check_head_classes(model, support: Sequence[torch.Tensor], others: Sequence[str] = ()) -> None:
    """A model with a classifier head (``head_classes``) scores at most as many classes as it was trained
    with; ``others``: the models that score any classes, named in the error."""
    if model.head_classes and len(support) > model.num_classes:
        hint = f" ({_listed(others)} can)" if others else ""
        raise GFLError(f"the {model.name} run was trained with a {model.num_classes}-class head; it cannot predict "
                       f"{len(support)} classes{hint}")


def cannot_predict(model, able: Sequence[str] = ()) -> GFLError:
    """The error for a model that cannot score a new graph's classes (``uses_support`` false); ``able``: the
    models that can."""
    hint = f": only {_listed(able)} runs can" if able else ""
    return GFLError(f"{model.name} cannot predict on a new graph{hint}")


def _listed(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
