"""Meta-training (paper Algorithm 1) with validation-based model selection.

Each step draws ``meta_batch`` training graphs, one episode per graph seeded
from ``(seed, graph_id, step)``, batches the graphs into one DGLGraph, and takes
an Adam step on the summed prototypical and reconstruction losses. Every
``eval_every`` steps the model is scored on the validation graphs; the best
weights are kept and training stops after ``patience`` rounds without gain.

A run folder holds ``config.json``, ``metrics.csv`` (one row per step) and
``best.pt``; checkpoints load with ``torch.load(..., weights_only=True)``.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch

from . import __version__
from .batching import GraphCache, batch_episodes
from .config import EpisodeConfig, GFLConfig, TrainConfig, to_dict
from .data import GraphCollection
from .episodes import EpisodeSampler
from .errors import GFLError
from .loop import fit_loop
from .metrics import graph_accuracies
from .models.baselines import TRANSFER
from .models.gfl import GFL
from .runs import CHECKPOINT_FORMAT, save_checkpoint
from .utils import atomic_write_text, seed_everything

if TYPE_CHECKING:
    from .distributed import DistContext

__all__ = ["TrainResult", "meta_train", "fit_transfer"]

log = logging.getLogger(__name__)

@dataclass
class TrainResult:
    """What :func:`meta_train` returns.

    Attributes:
        model: the model with the best validation weights loaded.
        history: per-step metrics (``step, loss, ce, recon, val_accuracy, seconds``).
        best_step: step of the selected weights.
        best_val: their mean validation accuracy (fraction), NaN without val graphs.
        run_dir: the run folder, when one was written.
        meta: the checkpoint's metadata (configs, seed, dataset, version).
    """

    model: GFL
    history: pd.DataFrame
    best_step: int
    best_val: float
    run_dir: Path | None
    meta: dict[str, Any]


def _gfl_step(model: GFL):
    def step_loss(cache: GraphCache, sampler: EpisodeSampler, ids: list[int], step: int):
        eps = [sampler.episode(gid, step) for gid in ids]
        bg, support, queries = batch_episodes([cache[gid] for gid in ids], eps)
        return model.loss(model(bg, support, queries), [e.query_label for e in eps])

    return step_loss


def meta_train(
    collection: GraphCollection,
    model_cfg: GFLConfig = GFLConfig(),
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    *,
    model_name: str = "gfl",
    run_dir: str | os.PathLike | None = None,
    progress: bool = True,
    dist: DistContext | None = None,
) -> TrainResult:
    """Meta-train a GFL model on the ``train`` graphs of ``collection``.

    Args:
        collection: the graph family (needs ``train`` graphs; ``val`` graphs
            select the checkpoint when present).
        model_cfg, episode_cfg, train_cfg: the settings.
        model_name: name recorded in the checkpoint and result rows.
        run_dir: folder for ``config.json``, ``metrics.csv`` and ``best.pt``.
        progress: show a tqdm bar on stderr.
        dist: this process's :class:`~gflkit.distributed.DistContext` in a
            distributed run (only rank 0 should get a ``run_dir``).
    """
    seed_everything(train_cfg.seed)
    model = GFL(collection.feat_size, model_cfg)
    meta = {
        "format": CHECKPOINT_FORMAT, "gflkit_version": __version__, "model": model_name,
        "model_config": to_dict(model_cfg), "episode_config": to_dict(episode_cfg),
        "train_config": to_dict(train_cfg), "in_feats": collection.feat_size,
        "classes": list(collection.classes), "dataset": collection.name, "data_path": collection.path,
        "seed": train_cfg.seed,
    }
    run_path = Path(run_dir) if run_dir is not None else None
    if run_path is not None:
        run_path.mkdir(parents=True, exist_ok=True)
        atomic_write_text(run_path / "config.json", json.dumps(meta, indent=1) + "\n")

    def on_best(step: int, val: float) -> None:
        if run_path is not None:
            save_checkpoint(model, {**meta, "step": step, "val_accuracy": val}, run_path / "best.pt")

    rows, best_step, best_val = fit_loop(
        model, collection, episode_cfg, train_cfg, step_loss=_gfl_step(model), score=graph_accuracies,
        name=model_name, progress=progress, on_best=on_best, dist=dist,
    )
    history = pd.DataFrame(rows)
    if run_path is not None:
        atomic_write_text(run_path / "metrics.csv", history.to_csv(index=False))
    meta = {**meta, "step": best_step, "val_accuracy": best_val}
    return TrainResult(model, history, best_step, best_val, run_path, meta)


def _accepted_options(cls) -> set[str]:
    """Keyword options the constructors of a baseline class (and its bases) take."""
    import inspect

    names: set[str] = set()
    for klass in cls.__mro__:
        if "__init__" in vars(klass) and klass is not torch.nn.Module:
            for p in inspect.signature(klass.__init__).parameters.values():
                if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in ("self", "in_feats", "num_classes"):
                    names.add(p.name)
    return names


def fit_transfer(
    name: str,
    collection: GraphCollection,
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    *,
    options: dict[str, Any] | None = None,
    run_dir: str | os.PathLike | None = None,
    progress: bool = True,
) -> TrainResult:
    """Train the transfer baseline ``name`` on the train graphs of ``collection``."""
    if name not in TRANSFER:
        raise GFLError(f"unknown transfer baseline {name!r}: choose one of {', '.join(TRANSFER)}")
    seed_everything(train_cfg.seed)
    cls = TRANSFER[name]
    unknown = sorted(set(options or {}) - _accepted_options(cls))
    if unknown:
        raise GFLError(
            f"{name} has no option {', '.join(unknown)}: choose from {', '.join(sorted(_accepted_options(cls)))}"
        )
    try:
        model = cls(collection.feat_size, collection.num_classes, **(options or {}))
    except (TypeError, ValueError) as err:
        raise GFLError(f"{name} options: {err}") from None
    facts = dict(model.fit(collection, episode_cfg, train_cfg, progress=progress) or {})
    history = pd.DataFrame(facts.pop("history", []))
    model.eval()
    meta = {
        "format": CHECKPOINT_FORMAT, "gflkit_version": __version__, "kind": "baseline", "model": name,
        "options": dict(model.options), "episode_config": to_dict(episode_cfg),
        "train_config": to_dict(train_cfg), "in_feats": collection.feat_size,
        "num_classes": collection.num_classes, "classes": list(collection.classes),
        "dataset": collection.name, "data_path": collection.path, "seed": train_cfg.seed, **facts,
    }
    run_path = Path(run_dir) if run_dir is not None else None
    if run_path is not None:
        run_path.mkdir(parents=True, exist_ok=True)
        atomic_write_text(run_path / "config.json", json.dumps(meta, indent=1, default=str) + "\n")
        save_checkpoint(model, meta, run_path / "best.pt")
        atomic_write_text(run_path / "metrics.csv", history.to_csv(index=False))
    return TrainResult(model, history, int(facts.get("step", 0)), float(facts.get("val_accuracy", float("nan"))),
                       run_path, meta)
