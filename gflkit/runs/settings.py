"""A run's name and the settings it recorded: :func:`default_run_dir`, :func:`result_configs`."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..config import EpisodeConfig, GFLConfig, TrainConfig, config_from_dict, hashed_dict, to_dict
from ..data import GraphCollection
from ..errors import GFLError
from ..evaluation.tables import aggregator_name
from ..paths import runs_dir
from .checkpoints import run_name

__all__: list[str] = []


def default_run_dir(collection: GraphCollection, model: str, model_cfg: GFLConfig | None,
                    episode_cfg: EpisodeConfig, train_cfg: TrainConfig, options: dict[str, Any] | None = None,
                    parent: str | os.PathLike | None = None) -> Path:
    """``runs/<dataset>-<model>[-<aggregator>]-s<seed>-<hash6>``, the hash over every setting.

    Runs with different settings (model, options, episodes, training, seed)
    never share a folder; a rerun with the same settings finds its own.
    """
    settings = {
        "model": model, "model_config": hashed_dict(model_cfg) if model_cfg is not None else None,
        "options": options or {}, "episode_config": to_dict(episode_cfg),
        "train_config": hashed_dict(train_cfg.for_model(model)),
    }
    name = run_name(collection.name, model, aggregator_name(model_cfg), train_cfg.seed, settings)
    return Path(parent if parent is not None else runs_dir()) / name


def result_configs(meta: dict[str, Any], where: str | os.PathLike = "the run") -> tuple[
        GFLConfig | None, EpisodeConfig, TrainConfig]:
    """The model (``None`` for a baseline), episode and training settings a run recorded."""
    try:
        model_cfg = None if meta.get("kind") == "baseline" else config_from_dict(GFLConfig, meta["model_config"])
        return (model_cfg, config_from_dict(EpisodeConfig, meta.get("episode_config") or {}),
                config_from_dict(TrainConfig, meta.get("train_config") or {}))
    except GFLError as err:
        raise GFLError(f"{where}: {err}") from None
    except (KeyError, TypeError, ValueError) as err:
        raise GFLError(f"{where}: its settings cannot be read ({type(err).__name__}: {err}); retrain") from None
