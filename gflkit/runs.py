"""Run folders and checkpoints.

A run folder holds ``config.json`` (settings and provenance), ``metrics.csv``
(one row per step) and ``best.pt``. Checkpoints hold tensors and plain Python
values only and load with ``torch.load(..., weights_only=True)``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from .config import GFLConfig, config_from_dict
from .errors import GFLError
from .models.baselines import TRANSFER
from .models.gfl import GFL
from .utils import atomic_torch_save

__all__ = ["CHECKPOINT_FORMAT", "save_checkpoint", "load_checkpoint", "training_collection"]

CHECKPOINT_FORMAT = "gflkit.checkpoint"


def _checkpoint(model: torch.nn.Module, meta: dict[str, Any]) -> dict[str, Any]:
    return {**meta, "state_dict": {k: v.detach().clone() for k, v in model.state_dict().items()}}


def save_checkpoint(model: torch.nn.Module, meta: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write weights and metadata atomically (plain tensors and builtins only)."""
    return atomic_torch_save(_checkpoint(model, meta), path)


def load_checkpoint(path: str | os.PathLike) -> tuple[torch.nn.Module, dict[str, Any]]:
    """Rebuild a model (GFL or a transfer baseline) from a checkpoint or run folder.

    Only tensors and plain Python values are read (``weights_only=True``).
    """
    path = Path(path)
    if path.is_dir():
        path = path / "best.pt"
    if not path.is_file():
        raise GFLError(f"{path}: no such checkpoint; give a run folder written by 'gflkit train' or its best.pt")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # unpickling errors have no common base
        raise GFLError(f"{path}: not a loadable gflkit checkpoint ({type(err).__name__}); retrain") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
        raise GFLError(f"{path}: not a gflkit checkpoint")
    if ckpt.get("kind") == "baseline":
        if ckpt.get("model") not in TRANSFER:
            raise GFLError(f"{path}: unknown baseline {ckpt.get('model')!r} (written by a newer gflkit?)")
        model = TRANSFER[ckpt["model"]](int(ckpt["in_feats"]), int(ckpt["num_classes"]), **ckpt["options"])
    else:
        model = GFL(int(ckpt["in_feats"]), config_from_dict(GFLConfig, ckpt["model_config"]))
    model.load_state_dict(ckpt["state_dict"])
    model.eval()
    meta = {k: v for k, v in ckpt.items() if k != "state_dict"}
    return model, meta


def training_collection(meta: dict, root=None) -> str | None:
    """The collection a run was trained on, if it can still be found."""
    from .paths import processed_dir

    name, path = meta.get("dataset"), meta.get("data_path")
    if name and (processed_dir(str(name), root) / "manifest.json").is_file():
        return str(name)
    if path and (Path(path) / "manifest.json").is_file():
        return str(path)
    return None
