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

import copy
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch

from . import __version__
from .config import EpisodeConfig, GFLConfig, TrainConfig, config_from_dict, to_dict
from .data import GraphCollection
from .episodes import EpisodeSampler
from .errors import GFLError
from .evaluate import GraphCache, graph_accuracies
from .models.gfl import GFL, batch_episodes
from .utils import atomic_torch_save, atomic_write_text, seed_everything

__all__ = ["TrainResult", "fit_loop", "meta_train", "fit_transfer", "save_checkpoint", "load_checkpoint", "CHECKPOINT_FORMAT"]

log = logging.getLogger(__name__)

CHECKPOINT_FORMAT = "gflkit.checkpoint"


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
        from .models.baselines import TRANSFER

        if ckpt.get("model") not in TRANSFER:
            raise GFLError(f"{path}: unknown baseline {ckpt.get('model')!r} (written by a newer gflkit?)")
        model = TRANSFER[ckpt["model"]](int(ckpt["in_feats"]), int(ckpt["num_classes"]), **ckpt["options"])
    else:
        model = GFL(int(ckpt["in_feats"]), config_from_dict(GFLConfig, ckpt["model_config"]))
    model.load_state_dict(ckpt["state_dict"])
    model.eval()
    meta = {k: v for k, v in ckpt.items() if k != "state_dict"}
    return model, meta


def fit_loop(
    module: torch.nn.Module,
    collection: GraphCollection,
    episode_cfg: EpisodeConfig,
    train_cfg: TrainConfig,
    *,
    step_loss: Callable[[GraphCache, EpisodeSampler, list[int], int], tuple[torch.Tensor, dict[str, float]]],
    score: Callable[..., dict[int, float]],
    name: str,
    progress: bool = True,
    on_best: Callable[[int, float], None] | None = None,
) -> tuple[list[dict[str, float]], int, float]:
    """The training loop of Algorithm 1, shared by GFL and the transfer baselines.

    Each step draws ``meta_batch`` train graphs (seeded from ``(seed, step)``),
    one episode each (seeded from ``(seed, graph_id, step)``), and takes an Adam
    step on ``step_loss(cache, sampler, graph_ids, step) -> (loss, parts)``.
    Every ``eval_every`` steps ``score(module, val_sampler, val_episodes,
    cache)`` rates the module on the val graphs; the best weights are kept
    (``on_best(step, val_accuracy)`` is called) and training stops after
    ``patience`` rounds without gain. The best weights are loaded at the end.

    Returns:
        Per-step metric rows, the step of the kept weights and their mean val
        accuracy (NaN without val graphs: then the latest weights are kept).
    """
    seed = train_cfg.seed
    sampler = EpisodeSampler(collection, "train", episode_cfg, seed).require_graphs()
    val_sampler = EpisodeSampler(collection, "val", episode_cfg, seed)
    cache = GraphCache(collection)
    optimizer = torch.optim.Adam(module.parameters(), lr=train_cfg.lr, weight_decay=train_cfg.weight_decay)
    train_ids = np.asarray(sampler.graph_ids)
    best_val, best_step, best_state, stale = -1.0, 0, copy.deepcopy(module.state_dict()), 0
    rows: list[dict[str, float]] = []
    steps = range(1, train_cfg.steps + 1)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        steps = bar = tqdm(steps, desc=f"training {name}", unit="step", leave=False)
    module.train()
    for step in steps:
        start = time.perf_counter()
        rng = np.random.default_rng([seed, 2, step])
        ids = rng.choice(train_ids, size=train_cfg.meta_batch, replace=len(train_ids) < train_cfg.meta_batch)
        loss, parts = step_loss(cache, sampler, [int(gid) for gid in ids], step)
        optimizer.zero_grad()
        loss.backward()
        if train_cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(module.parameters(), train_cfg.grad_clip)
        optimizer.step()
        row = {"step": step, "loss": float(loss.detach()), **parts, "seconds": time.perf_counter() - start}
        if step % train_cfg.eval_every == 0 or step == train_cfg.steps:
            if val_sampler.graph_ids:
                accs = score(module, val_sampler, train_cfg.val_episodes, cache)
                module.train()
                val = row["val_accuracy"] = float(np.mean(list(accs.values())))
            else:  # no validation graphs: keep the latest weights
                val, row["val_accuracy"] = float(step), float("nan")
            if val > best_val:
                best_val, best_step, stale = val, step, 0
                best_state = copy.deepcopy(module.state_dict())
                if on_best is not None:
                    on_best(step, row["val_accuracy"])
            else:
                stale += 1
            if bar is not None:
                bar.set_postfix(loss=f"{row['loss']:.3f}", val=f"{row['val_accuracy']:.3f}")
        rows.append(row)
        if stale >= train_cfg.patience:
            log.info("early stop at step %d (best validation at step %d)", step, best_step)
            break
    if bar is not None:
        bar.close()
    module.load_state_dict(best_state)
    module.eval()
    return rows, best_step, best_val if val_sampler.graph_ids else float("nan")


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
) -> TrainResult:
    """Meta-train a GFL model on the ``train`` graphs of ``collection``.

    Args:
        collection: the graph family (needs ``train`` graphs; ``val`` graphs
            select the checkpoint when present).
        model_cfg, episode_cfg, train_cfg: the settings.
        model_name: name recorded in the checkpoint and result rows.
        run_dir: folder for ``config.json``, ``metrics.csv`` and ``best.pt``.
        progress: show a tqdm bar on stderr.
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
        name=model_name, progress=progress, on_best=on_best,
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
    from .models.baselines import TRANSFER

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
