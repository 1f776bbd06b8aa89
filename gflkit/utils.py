"""Small helpers shared across gflkit: atomic writes and seeding."""
from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import torch

__all__ = ["atomic_write_text", "atomic_torch_save", "atomic_write_with", "seed_everything"]


def _atomic(path: str | os.PathLike, write) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file and a rename."""

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    return _atomic(path, write)


def atomic_write_with(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Create ``path`` by calling ``write(tmp)`` on a temporary file, then renaming it.

    For writers that take a file name (``savefig``, ``np.save``, ...).
    """
    return _atomic(path, write)


def atomic_torch_save(obj, path: str | os.PathLike) -> Path:
    """``torch.save`` through a temporary file and a rename."""
    return _atomic(path, lambda tmp: torch.save(obj, tmp))


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU) global generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
