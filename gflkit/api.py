"""What the commands do, as Python functions returning DataFrames.

Every ``gflkit`` command is a thin layer over one of these, so a notebook gets
the same numbers as the command line::

    import gflkit
    table = gflkit.train(aggregator="att")                       # gflkit train --aggregator att: runs/<name>
    table = gflkit.train(aggregator="att", run_dir="runs/gfl-att")  # ... --run-dir runs/gfl-att
    table = gflkit.evaluate("runs/gfl-att", episodes=5)          # gflkit evaluate runs/gfl-att --episodes 5
    result, table = gflkit.train(return_result=True)             # also the TrainResult (model, metrics, run)
    table = gflkit.train(steps=20, run_dir=False)                # keep no run folder (a quick try)

Keyword model settings (``aggregator="att"``, ``mu=0.6``: the fields of
:class:`~gflkit.config.GFLConfig`, as the command line's flags) change the
preset named by ``model``.
"""
from __future__ import annotations

import logging
import os
import warnings
from dataclasses import fields, replace
from typing import Any

import pandas as pd
import torch

from .training import distributed
from .config import PRESETS, EpisodeConfig, GFLConfig, RunSettings, TrainConfig, refuse_settings_on_resume
from .data import GraphCollection, load_collection
from .data.transform import check_fingerprint, feature_fingerprint
from .episodes import EpisodeSampler
from .devices import require_cpu, resolve_device
from .models import place
from .errors import GFLError
from .evaluation.statistics import warn_one_seed
from .evaluation.scoring import baseline_records, result_row, score_row
from .models.baselines import PER_GRAPH, TRANSFER
from .names import model_names, trainable_names  # noqa: F401 - the registry's, re-exported
from .refine import RefineConfig
from .evaluation.tables import to_frame
from .runs.folder import CONFIG_FILE, RunFolder, final_run_path, partial_path
from .runs.checkpoints import (collection_hash, find_training_collection, load_checkpoint, load_metrics)
from .runs.settings import default_run_dir, result_configs
from .training.meta import TrainResult, fit_transfer, meta_train

__all__ = ["train", "evaluate", "evaluate_baseline", "model_config"]

log = logging.getLogger(__name__)


def model_config(model: str = "gfl", **overrides: Any) -> GFLConfig:
    """The preset ``model`` with keyword overrides (``None`` values ignored)."""
    if model not in PRESETS:
        raise GFLError(f"model {model!r} is not meta-trained: choose one of {', '.join(PRESETS)}")
    changes = {k: v for k, v in overrides.items() if v is not None}
    return replace(PRESETS[model], **changes)


def train(
    data: str | os.PathLike | GraphCollection | None = None,
    model_cfg: GFLConfig | None = None,
    episode_cfg: EpisodeConfig | None = None,
    train_cfg: TrainConfig | None = None,
    *,
    model: str = "gfl",
    run: RunSettings | None = None,
    return_result: bool = False,
    **settings: Any,
) -> pd.DataFrame | tuple[TrainResult, pd.DataFrame]:
    """Train ``model`` on the train graphs of a collection and score the result.

    As :func:`evaluate`, it returns the result table (one row, or none when
    ``eval_split`` is ``None``); ``return_result=True`` returns the
    :class:`~gflkit.training.meta.TrainResult` (model, metrics, run folder) too.

    Args:
        data: collection folder, name, object, or ``None`` for the built-in family
            (with ``resume``: the run's own collection).
        model_cfg: GFL settings (default: the preset ``model``); GFL presets only.
        episode_cfg, train_cfg: episode and training settings (default: the defaults).
        model: a GFL preset (``gfl``, ``protonet``) or a transfer baseline name.
        run: how the run is launched, kept and scored (:class:`~gflkit.config.RunSettings`: the run
            folder, ``force``, ``resume``, checkpoints, processes, device, data root, the split scored
            after training, its episodes, refinement and interval).
        return_result: return ``(TrainResult, table)`` instead of the table.
        **settings: keyword conveniences, each given to the dataclass that has the field (as the
            command line's flags): fields of :class:`~gflkit.config.GFLConfig`
            (``encoder="gat"``), :class:`~gflkit.config.EpisodeConfig` (``k_shot=5``),
            :class:`~gflkit.config.TrainConfig` (``lr=0.001``, ``steps=100``) and
            :class:`~gflkit.config.RunSettings` (``run_dir="runs/mine"``, ``force=True``,
            ``resume="runs/mine"``, ``nproc=2``, ``device="cuda"``, ``eval_split=None``, ...);
            ``options={...}``, the keyword options of a transfer baseline. A name none of them
            has is an error that names it (:func:`train_settings`).

    With ``resume`` (a run folder whose training was interrupted), the run continues
    from its last checkpoint with its own settings: then give none (a finished run is
    only scored). ``run_dir=None`` (default) keeps the run in ``./runs/<name>``, named
    as ``gflkit train`` names it; ``run_dir=False`` keeps nothing. ``nproc`` processes
    are spawned: in a script, call this under ``if __name__ == "__main__":``.
    ``val_from_train=N`` moves ``N`` train graphs, drawn with the seed, to validation
    when the collection has no val graphs (:mod:`gflkit.training.validation`).

    Returns:
        The one-row result DataFrame (empty when not evaluated), or
        ``(TrainResult, DataFrame)`` with ``return_result=True``.
    """
    model_cfg, episode_cfg, train_cfg, options, run = train_settings(model, model_cfg, episode_cfg, train_cfg,
                                                                     run, settings)
    common = dict(progress=run.progress, checkpoint_every=run.checkpoint_every)
    spread = None
    if run.nproc > 1 or distributed.env_context() is not None:  # one run over several processes
        spread = dict(nproc=run.nproc, threads=run.threads_per_proc, timeout=run.timeout)
    if run.resume is not None:
        result, collection = _resume(run.resume, data, run.root, spread=spread, device=run.device, **common)
        episode_cfg, seed, model = result_configs(result.meta)[1], int(result.meta.get("seed", 0)), result.meta["model"]
    else:
        collection = load_collection(data, run.root)
        train_cfg = train_cfg.for_model(model)
        seed = train_cfg.seed
        cfg = None if model in TRANSFER else model_cfg or model_config(model)
        run_dir = run.run_dir
        if run_dir is None:  # as the command line names it
            run_dir = default_run_dir(collection, model, cfg, episode_cfg, train_cfg, options)
        kept = dict(run_dir=None if run_dir is False else run_dir, force=run.force, **common)
        if model in TRANSFER:
            _single_process(model, spread)
            require_cpu(model, run.device)
            result = fit_transfer(model, collection, episode_cfg, train_cfg, options=options, **kept)
        elif spread is None:
            result = meta_train(collection, cfg, episode_cfg, train_cfg, model_name=model, device=run.device, **kept)
        else:
            result = distributed.train(collection, cfg, episode_cfg, train_cfg, model_name=model, device=run.device,
                                       **kept, **spread)
    if run.eval_split is None or not distributed.is_main_process():  # under torchrun rank 0 scores the run
        table = to_frame([])
    else:
        table = to_frame([score_row(result.model, model, collection, run.eval_split, episode_cfg, run.episodes,
                                    seed, run.refine, run.ci)])
        warn_one_seed(1, "run", stacklevel=3)
    return (result, table) if return_result else table


_RUN_FIELDS = frozenset(f.name for f in fields(RunSettings))
_CONFIG_FIELDS = {cls: frozenset(f.name for f in fields(cls)) for cls in (GFLConfig, EpisodeConfig, TrainConfig)}


def train_settings(model: str, model_cfg: GFLConfig | None, episode_cfg: EpisodeConfig | None,
                   train_cfg: TrainConfig | None, run: RunSettings | None, settings: dict[str, Any]) -> tuple[
                       GFLConfig | None, EpisodeConfig, TrainConfig, dict[str, Any] | None, RunSettings]:
    """:func:`train`'s arguments checked, in one place, before any work: the keyword ``settings`` each
    given to the dataclass that has the field (``None`` values ignored; a name none has is a GFLError
    naming it), and, with ``resume``, nothing else given (:func:`~gflkit.config.refuse_settings_on_resume`).

    Returns:
        ``(model_cfg, episode_cfg, train_cfg, options, run)``.
    """
    settings = dict(settings)
    if "out" in settings:  # the old name of run_dir
        settings["run_dir"] = _run_dir_argument(settings.get("run_dir"), settings.pop("out"))
    options = settings.pop("options", None)
    config_fields = frozenset().union(*_CONFIG_FIELDS.values())
    unknown = sorted(set(settings) - _RUN_FIELDS - config_fields)
    if unknown:
        raise GFLError(f"train() got unknown settings {', '.join(unknown)}: give "
                       f"fields of GFLConfig, EpisodeConfig, TrainConfig or RunSettings, or options= "
                       f"({', '.join(sorted(_RUN_FIELDS | config_fields))})")
    launch = {k: v for k, v in settings.items() if k in _RUN_FIELDS}
    run = replace(run, **launch) if run is not None else RunSettings(**launch)
    if run.refine is not None and not isinstance(run.refine, RefineConfig):
        raise GFLError(f"refine={run.refine!r}: give a gflkit.refine.RefineConfig or None")
    run = replace(run, refine=run.refine or RefineConfig())
    given = {k: tuple(v) if k == "clusters" else v for k, v in settings.items()
             if k in config_fields and v is not None}
    if run.resume is not None:
        named = ["model"] if model != "gfl" else []
        named += [name for name, value in (("model_cfg", model_cfg), ("episode_cfg", episode_cfg),
                                           ("train_cfg", train_cfg), ("options", options or None)) if value is not None]
        named += sorted(given)
        if run.run_dir not in (None, False) and final_run_path(run.run_dir) != final_run_path(run.resume):
            named.append("run_dir")
        refuse_settings_on_resume(run.resume, named)
    episode_cfg, train_cfg = episode_cfg or EpisodeConfig(), train_cfg or TrainConfig()
    model_changes = {k: v for k, v in given.items() if k in _CONFIG_FIELDS[GFLConfig]}
    if model_changes:
        if model not in PRESETS:
            raise GFLError(f"model settings ({', '.join(sorted(model_changes))}) apply to GFL presets "
                           f"({', '.join(PRESETS)}), not to {model}")
        model_cfg = replace(model_cfg or PRESETS[model], **model_changes)
    episode_cfg = replace(episode_cfg, **{k: v for k, v in given.items() if k in _CONFIG_FIELDS[EpisodeConfig]})
    train_cfg = replace(train_cfg, **{k: v for k, v in given.items() if k in _CONFIG_FIELDS[TrainConfig]})
    return model_cfg, episode_cfg, train_cfg, options, run


def _run_dir_argument(run_dir: Any, out: Any) -> Any:
    """:func:`train`'s ``run_dir``, given as ``run_dir`` or by its old name ``out`` (with a DeprecationWarning)."""
    if out is not None:
        if run_dir is not None:
            raise GFLError("train() got run_dir and out: give run_dir only (out is its old name)")
        warnings.warn("train(out=...) is deprecated and will be removed in the next release; use run_dir=... "
                      "(run_dir=False keeps no run folder)", DeprecationWarning, stacklevel=4)
        run_dir = out
    return run_dir


def _single_process(model: str, spread: dict[str, Any] | None) -> None:
    if spread is not None:
        raise GFLError(f"`nproc` trains GFL models ({', '.join(PRESETS)}), not the transfer baseline {model}")


def _fit_gfl(collection: GraphCollection, cfg: GFLConfig, episode_cfg: EpisodeConfig, train_cfg: TrainConfig,
             spread: dict[str, Any] | None, **kwargs: Any) -> TrainResult:
    """:func:`meta_train` in this process, or over several (``spread``: nproc, threads, timeout)."""
    if spread is None:
        return meta_train(collection, cfg, episode_cfg, train_cfg, **kwargs)
    return distributed.train(collection, cfg, episode_cfg, train_cfg, **kwargs, **spread)


def _resume(run: str | os.PathLike, data, root, *, checkpoint_every: int, progress: bool,
            spread: dict[str, Any] | None = None,
            device: torch.device = torch.device("cpu")) -> tuple[TrainResult, GraphCollection]:
    """Continue the interrupted run ``run`` (or just load it when it has finished)."""
    final = final_run_path(run)
    partial = partial_path(final)
    if not partial.is_dir():
        if not final.is_dir():
            raise GFLError(f"{final}: nothing to resume (neither the run nor {partial.name} beside it exists)")
        log.info("%s has finished already: scoring it", final)
        module, meta = load_checkpoint(final)
        place(module, device, str(meta.get("model")))
        collection = load_collection(data if data is not None else find_training_collection(meta, root, final), root)
        history = load_metrics(final)
        result = TrainResult(module, history, int(meta.get("step", 0)), float(meta.get("val_accuracy", "nan")),
                             final, meta)
        return result, collection
    config = RunFolder(final, resume=True).read_config()
    model_cfg, ep_cfg, tr_cfg = result_configs(config, partial / CONFIG_FILE)
    collection = load_collection(data if data is not None else find_training_collection(config, root, final), root)
    name = str(config.get("model", "gfl"))
    common = dict(run_dir=final, resume=True, progress=progress, checkpoint_every=checkpoint_every)
    if model_cfg is None:
        _single_process(name, spread)
        require_cpu(name, device)
        result = fit_transfer(name, collection, ep_cfg, tr_cfg, options=config.get("options"), **common)
    else:
        result = _fit_gfl(collection, model_cfg, ep_cfg, tr_cfg, spread, model_name=name, device=device, **common)
    return result, collection


def evaluate(
    run: str | os.PathLike | torch.nn.Module,
    data: str | os.PathLike | GraphCollection | None = None,
    *,
    split: str = "test",
    episodes: int = 1,
    episode_cfg: EpisodeConfig | None = None,
    seed: int | None = None,
    root: str | os.PathLike | None = None,
    model_name: str | None = None,
    refine: RefineConfig = RefineConfig(),
    ci: str = "t",
    force: bool = False,
    device: str | torch.device | None = None,
) -> pd.DataFrame:
    """Score a trained model (run folder, checkpoint or module) on ``split``.

    Without ``data`` the collection the run was trained on is used (by name
    under the data root, else the folder the run recorded); when it cannot be
    found that is an error, never a fallback to another collection. Without
    ``episode_cfg`` the run's own k_shot and n_query are used, and without
    ``seed`` the run's seed (0 for a bare module): the row then repeats the
    one training printed. The seed used is in the row's ``seed`` column. A
    collection whose feature fingerprint differs from the run's is an error
    unless ``force``. A GFL model is scored on ``device`` (``cpu`` by
    default, ``cuda`` or ``cuda:N``; a module passed in is moved there).
    """
    device = resolve_device(device)
    if isinstance(run, torch.nn.Module):
        module, meta = run, {"model": model_name or run.name, "episode_config": {}}
    else:
        module, meta = load_checkpoint(run)
    looked_up = data is None
    if looked_up:
        data = find_training_collection(meta, root, None if isinstance(run, torch.nn.Module) else run)
    collection = load_collection(data, root)
    check_fingerprint(meta.get("feature_fingerprint"), feature_fingerprint(collection),
                      f"collection {collection.name!r}", force)
    if looked_up and meta.get("data_sha256") not in (None, collection_hash(collection)):
        log.warning("%s: the collection at %s is not the one the run was trained on (its content hash differs)",
                    run, collection.path)
    place(module, device, str(meta.get("model")))
    if module.in_feats is not None and collection.feat_size != module.in_feats:
        raise GFLError(
            f"the model expects {module.in_feats} features per node but collection {collection.name!r} has "
            f"{collection.feat_size}; evaluate on a collection of the same source"
        )
    where = "the model" if isinstance(run, torch.nn.Module) else run
    ep_cfg = episode_cfg or result_configs({**meta, "kind": "baseline"}, where)[1]
    seed = int(meta.get("seed", 0)) if seed is None else seed
    name = model_name or meta.get("model", "gfl")
    table = to_frame([score_row(module, name, collection, split, ep_cfg, episodes, seed, refine, ci)])
    warn_one_seed(1, "run")
    return table


def evaluate_baseline(
    model: str,
    data: str | os.PathLike | GraphCollection | None = None,
    *,
    split: str = "test",
    episodes: int = 1,
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    seed: int = 0,
    root: str | os.PathLike | None = None,
    ci: str = "t",
) -> pd.DataFrame:
    """Score a baseline that is fitted on each graph's support set alone."""
    if model not in PER_GRAPH:
        raise GFLError(f"{model!r} is not a per-graph baseline: choose one of {', '.join(PER_GRAPH)}")
    collection = load_collection(data, root)
    sampler = EpisodeSampler(collection, split, episode_cfg, seed).require_graphs()
    records = baseline_records(PER_GRAPH[model], sampler, episodes, seed)
    table = to_frame([result_row(model, "", collection, split, records, episode_cfg, episodes, seed, ci=ci)])
    warn_one_seed(1, "run")
    return table
