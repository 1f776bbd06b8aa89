"""Meta-training (paper Algorithm 1) with validation-based model selection.

Each step draws ``meta_batch`` training graphs, one episode per graph seeded
from ``(seed, graph_id, step)``, batches the graphs into one DGLGraph, and takes
an Adam step on the summed prototypical and reconstruction losses. Every
``eval_every`` steps the model is scored on the validation graphs; the best
weights are kept and training stops after ``patience`` rounds without gain.
Without val graphs there is neither (a warning says so when training starts);
``TrainConfig.val_from_train`` moves train graphs to validation instead. The
run's ``config.json`` records which (``validation``: :mod:`gflkit.training.validation`).

With a run folder, the run is written through a hidden partial folder
(:class:`gflkit.runs.folder.RunFolder`) holding ``config.json`` and a resume
checkpoint ``last.pt``; when training ends ``best.pt`` and ``metrics.csv``
are added and the folder is renamed into place. Checkpoints load with
``torch.load(..., weights_only=True)``.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd
import torch
from gflkit.names import CHECKPOINT_EVERY  # steps between resume checkpoints (last.pt)

from .. import __version__
from ._engine import StepLoss, graph_mean_loss
from ..config import EpisodeConfig, GFLConfig, TrainConfig, config_from_dict, to_dict
from ..data import GraphCollection
from ..devices import resolve_device
from ..episodes import EpisodeSampler
from ..errors import GFLError
from .loop import OptimizerFactory, fit_loop, step_graph_ids
from .model_size import WIDTHS as _WIDTHS, check_options, require_model_memory
from ..evaluation.scoring import graph_accuracies
from ..graphs import GraphCache
from ..models.baselines import TRANSFER
from ..models.baselines.base import TransferBaseline
from ..models.gfl import GFL
from ..data.transform import feature_fingerprint
from ..data.feature_stats import training_feature_stats
from ..runs.folder import CONFIG_FILE, RunFolder
from ..runs.checkpoints import (CHECKPOINT_FORMAT, checkpoint_dict, collection_hash, load_checkpoint, load_metrics,
                                now, provenance)
from ..seeding import seed_everything
from .validation import validation_plan

if TYPE_CHECKING:
    from .ddp import DistContext

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


def _gfl_step(model: GFL, train_cfg: TrainConfig | None = None, ahead: bool = True) -> StepLoss:
    """The loop's ``step_loss``, in parts side by side as ``train_cfg.parallel_steps`` says; with
    ``ahead``, each next meta-batch is prepared during a step (the ids the loop will draw are
    known from the seed and the step)."""
    parallel = train_cfg is None or train_cfg.parallel_steps
    if train_cfg is None or not ahead:
        return StepLoss(model, parallel=parallel)

    def next_ids(sampler: EpisodeSampler, step: int) -> list[int] | None:
        return step_graph_ids(sampler.graph_ids, train_cfg, step) if step <= train_cfg.steps else None

    return StepLoss(model, next_ids, parallel=parallel)


def _with_defaults(recorded: dict[str, Any]) -> dict[str, Any]:
    """The recorded config sections with the defaults of settings they predate filled in."""
    out = {}
    for key, cls in (("model_config", GFLConfig), ("episode_config", EpisodeConfig), ("train_config", TrainConfig)):
        section = recorded.get(key)
        if isinstance(section, dict):
            try:
                out[key] = to_dict(config_from_dict(cls, section))
            except (GFLError, TypeError, ValueError):
                pass  # left as recorded: the comparison reports it
    return out


def _same_settings(recorded: dict[str, Any], meta: dict[str, Any], where: Path) -> None:
    """Refuse to resume a run with settings or data other than those it started with."""
    keys = ("model", "kind", "model_config", "options", "episode_config", "train_config", "in_feats", "classes")
    recorded = {**recorded, **_with_defaults(recorded)}  # settings added since the run started
    changed = [k for k in keys if json.loads(json.dumps(recorded.get(k), default=str))
               != json.loads(json.dumps(meta.get(k), default=str))]
    if changed:
        raise GFLError(f"{where}: the interrupted run has other settings ({', '.join(changed)}); "
                       f"resume it with its own settings (`resume=RUN` reads them)")
    if recorded.get("data_sha256") not in (None, meta.get("data_sha256")):
        raise GFLError(f"{where}: the interrupted run started on other data than collection "
                       f"{meta.get('dataset')!r} at {meta.get('data_path')} (content hash differs); "
                       "give its collection")


def _finished_run(path: Path) -> tuple[torch.nn.Module, list[dict], dict[str, Any]]:
    """Model, history and metadata of a finished run folder."""
    model, meta = load_checkpoint(path)
    rows = load_metrics(path).to_dict("records")
    return model, rows, meta


def _train_run(
    model: torch.nn.Module,
    meta: dict[str, Any],
    collection: GraphCollection,
    fit: Callable[[dict | None, Callable | None], tuple[list[dict], dict[str, Any]]],
    run_dir: str | os.PathLike | None,
    *,
    force: bool,
    resume: bool,
) -> tuple[torch.nn.Module, list[dict], dict[str, Any], Path | None]:
    """Run ``fit(resume_checkpoint, save)`` and, with ``run_dir``, write the run folder around it.

    ``fit`` trains ``model`` (leaving the kept weights in it) and returns the
    history rows and facts (``step``, ``val_accuracy``) to add to ``meta``.
    """
    if run_dir is None:
        if resume:
            raise GFLError("resume needs the run folder to continue")
        rows, facts = fit(None, None)
        return model, rows, {**meta, **facts}, None
    meta = {**meta, "data_sha256": collection_hash(collection)}
    with RunFolder(run_dir, force=force, resume=resume) as folder:
        if resume:
            recorded = folder.read_config()
            _same_settings(recorded, meta, folder.work / CONFIG_FILE)
            if folder.finished:  # stopped between finishing and the rename
                return (*_finished_run(folder.publish()), folder.path)
            prov = dict(recorded.get("provenance") or {})
            if prov.get("threads") not in (None, torch.get_num_threads()):
                log.warning("the run started with %s threads and resumes with %d: results may differ in the "
                            "last digits (set OMP_NUM_THREADS=%s to match)", prov["threads"],
                            torch.get_num_threads(), prov["threads"])
            prov["resumed"] = [*prov.get("resumed", []), {"command": provenance()["command"], "at": now()}]
        else:
            prov = provenance()
        meta = {**meta, "provenance": prov}
        folder.write_config(meta)
        rows, facts = fit(folder.load_last() if resume else None, folder.save_last)
        meta = {**meta, **facts, "provenance": {**prov, "finished": now()}}
        path = folder.finish(checkpoint_dict(model, meta), meta, pd.DataFrame(rows))
    return model, rows, meta, path


def meta_train(
    collection: GraphCollection,
    model_cfg: GFLConfig = GFLConfig(),
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    *,
    model_name: str = "gfl",
    run_dir: str | os.PathLike | None = None,
    progress: bool = True,
    force: bool = False,
    resume: bool = False,
    checkpoint_every: int = CHECKPOINT_EVERY,
    dist: DistContext | None = None,
    device: str | torch.device | None = None,
    optimizer: OptimizerFactory | None = None,
) -> TrainResult:
    """Meta-train a GFL model on the ``train`` graphs of ``collection``.

    Args:
        collection: the graph family (needs ``train`` graphs; ``val`` graphs
            select the checkpoint when present).
        model_cfg, episode_cfg, train_cfg: the settings.
        model_name: name recorded in the checkpoint and result rows.
        run_dir: folder for ``config.json``, ``metrics.csv`` and ``best.pt``,
            written through a hidden partial folder and renamed when done.
        progress: show a tqdm bar on stderr.
        force: replace an existing ``run_dir``.
        resume: continue the interrupted run ``run_dir`` from its ``last.pt``.
        checkpoint_every: steps between resume checkpoints (``last.pt``).
        dist: this process's :class:`~gflkit.training.distributed.DistContext` in a
            distributed run: rank 0 writes ``run_dir`` (and reads its
            ``last.pt`` with ``resume``), the other ranks follow it.
        device: ``cpu`` (default), ``cuda`` or ``cuda:N``
            (:func:`~gflkit.devices.resolve_device`). The weights are
            initialised on the CPU, so a seed gives the same start everywhere.
        optimizer: ``optimizer(parameters) -> torch.optim.Optimizer``, called
            once with the model's parameters, e.g. ``lambda ps:
            torch.optim.SGD(ps, lr=0.1)``; by default ``torch.optim.Adam`` with
            ``train_cfg.lr`` and ``train_cfg.weight_decay`` (those left at ``None``:
            the model's own, :func:`~gflkit.config.optimizer_defaults`). The run's settings
            do not record it: resume a run with the optimizer it started with.
    """
    device = resolve_device(device)
    train_cfg = train_cfg.for_model(model_name)
    seed_everything(train_cfg.seed)
    require_model_memory(lambda change: GFL.from_config(replace(model_cfg, **change), collection.feat_size),
                         {k: getattr(model_cfg, k) for k in _WIDTHS if getattr(model_cfg, k, None)}, str, model_name)
    model = GFL.from_config(model_cfg, collection.feat_size).to(device)
    meta = {
        "format": CHECKPOINT_FORMAT, "gflkit_version": __version__, "model": model_name,
        "model_config": to_dict(model_cfg), "episode_config": to_dict(episode_cfg),
        "train_config": to_dict(train_cfg), "in_feats": collection.feat_size,
        "classes": list(collection.classes), "dataset": collection.name, "data_path": collection.path,
        "seed": train_cfg.seed, "feature_fingerprint": feature_fingerprint(collection),
        "feature_stats": training_feature_stats(collection),
    }
    training, meta["validation"] = validation_plan(collection, train_cfg.val_from_train, train_cfg.seed,
                                                   episode_cfg.k_shot, warn=dist is None or dist.is_main)

    def fit(last: dict | None, save: Callable | None) -> tuple[list[dict], dict[str, Any]]:
        # A distributed rank computes its share of each meta-batch: it prepares nothing ahead.
        step_loss = _gfl_step(model, train_cfg) if dist is None else _gfl_step(model, train_cfg, ahead=False)
        rows, best_step, best_val = fit_loop(
            model, training, episode_cfg, train_cfg, step_loss=step_loss, score=graph_accuracies,
            name=model_name, progress=progress, resume=last, save=save, checkpoint_every=checkpoint_every,
            dist=dist, optimizer=optimizer,
        )
        return rows, {"step": best_step, "val_accuracy": best_val}

    if dist is not None and not dist.is_main:  # rank 0 writes the run folder
        run_dir, resume = None, False
    model, rows, meta, path = _train_run(model, meta, collection, fit, run_dir, force=force, resume=resume)
    return TrainResult(model, pd.DataFrame(rows), int(meta["step"]), float(meta["val_accuracy"]), path, meta)


def fit_baseline(model: TransferBaseline, collection: GraphCollection, episode_cfg: EpisodeConfig,
                 train_cfg: TrainConfig, progress: bool = False, **loop_options: Any) -> dict[str, Any]:
    """Train the transfer baseline ``model`` on ``collection``'s train graphs, keeping the weights best on its
    val graphs.

    As :func:`meta_train`: each step draws ``meta_batch`` train
    graphs and one episode each (seeded from ``(seed, graph_id, step)``),
    takes an Adam step on the model's ``step_loss`` (with the model's own
    learning rate and weight decay where ``train_cfg`` leaves them at ``None``), and every ``eval_every``
    steps scores its ``class_scores`` on the val graphs; training stops after
    ``patience`` rounds without gain. ``loop_options`` (``resume``,
    ``save``, ``checkpoint_every``) go to :func:`gflkit.training.loop.fit_loop`.

    Returns:
        ``step`` and ``val_accuracy`` (fraction; NaN without val graphs) of
        the kept weights, and ``history``, one dict per step. A model that does not train
        (``model.trains`` false) is left as initialised: step 0, NaN, no history.
    """
    if not model.trains:  # used as initialised: nothing to learn from the train graphs
        return {"step": 0, "val_accuracy": float("nan"), "history": []}
    in_parts = model.steps_in_parts and train_cfg.parallel_steps

    def step_loss(cache: GraphCache, sampler: EpisodeSampler, ids: list[int], step: int):
        graphs = [cache[gid] for gid in ids]
        episodes = [sampler.episode(gid, step) for gid in ids]
        labels = [collection.graphs[gid].ndata["label"] for gid in ids]
        if in_parts:  # the meta-batch in parts side by side (the model allows it)
            return graph_mean_loss(model, graphs, episodes, labels), {}
        return model.step_loss(graphs, episodes, labels), {}

    def score(module, sampler: EpisodeSampler, *args: Any) -> dict[int, float]:
        return graph_accuracies(module.for_validation(), sampler, *args)

    rows, best_step, best_val = fit_loop(
        model, collection, episode_cfg, train_cfg.for_model(model.name), step_loss=step_loss, score=score,
        name=model.name, progress=progress, **loop_options,
    )
    return {"step": best_step, "val_accuracy": best_val, "history": rows}


def fit_transfer(
    name: str,
    collection: GraphCollection,
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    *,
    options: dict[str, Any] | None = None,
    run_dir: str | os.PathLike | None = None,
    progress: bool = True,
    force: bool = False,
    resume: bool = False,
    checkpoint_every: int = CHECKPOINT_EVERY,
) -> TrainResult:
    """Train the transfer baseline ``name`` on the train graphs of ``collection``.

    ``run_dir``, ``force``, ``resume`` and ``checkpoint_every`` work as in
    :func:`meta_train`.
    """
    if name not in TRANSFER:
        raise GFLError(f"unknown transfer baseline {name!r}: choose one of {', '.join(TRANSFER)}")
    train_cfg = train_cfg.for_model(name)
    seed_everything(train_cfg.seed)
    cls = TRANSFER[name]
    check_options(name, cls, options)
    widths = {k: v for k, v in (options or {}).items() if k in _WIDTHS}
    require_model_memory(lambda change: cls(collection.feat_size, collection.num_classes, **{**(options or {}),
                                                                                            **change}),
                         widths, lambda key: "options", name)
    try:
        model = cls(collection.feat_size, collection.num_classes, **(options or {}))
    except (TypeError, ValueError) as err:
        raise GFLError(f"{name} options: {err}") from None
    meta = {
        "format": CHECKPOINT_FORMAT, "gflkit_version": __version__, "kind": "baseline", "model": name,
        "options": dict(model.options), "episode_config": to_dict(episode_cfg),
        "train_config": to_dict(train_cfg), "in_feats": collection.feat_size,
        "num_classes": collection.num_classes, "classes": list(collection.classes),
        "dataset": collection.name, "data_path": collection.path, "seed": train_cfg.seed,
        "feature_fingerprint": feature_fingerprint(collection),
        "feature_stats": training_feature_stats(collection),
    }
    training, meta["validation"] = validation_plan(collection, train_cfg.val_from_train, train_cfg.seed,
                                                   episode_cfg.k_shot)

    def fit(last: dict | None, save: Callable | None) -> tuple[list[dict], dict[str, Any]]:
        facts = dict(fit_baseline(model, training, episode_cfg, train_cfg, progress=progress, resume=last, save=save,
                                  checkpoint_every=checkpoint_every) or {})
        rows = facts.pop("history", [])
        model.eval()
        return rows, facts

    model, rows, meta, path = _train_run(model, meta, collection, fit, run_dir, force=force, resume=resume)
    return TrainResult(model, pd.DataFrame(rows), int(meta.get("step", 0)),
                       float(meta.get("val_accuracy", float("nan"))), path, meta)
