"""Models: GFL and the baselines it is compared with, all keeping one contract (:class:`FewShotModel`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..devices import require_cpu
from .base import FewShotModel
from .gfl import GFL, GFLOutput

if TYPE_CHECKING:
    import torch

__all__ = ["FewShotModel", "GFL", "GFLOutput", "place"]


def place(module: torch.nn.Module, device: torch.device, name: str) -> torch.nn.Module:
    """``module`` on ``device`` when it is a GFL model; any other model stays on the CPU (:func:`require_cpu`)."""
    if isinstance(module, GFL):
        return module.to(device)
    require_cpu(name, device)
    return module
