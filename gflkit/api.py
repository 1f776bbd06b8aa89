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
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from .training import distributed
from .config import (PRESETS, EpisodeConfig, GFLConfig, RunSettings, TrainConfig, config_from_dict, hashed_dict,
                     to_dict)
from .data import GraphCollection, load_collection
from .data.transform import check_fingerprint, feature_fingerprint
from .episodes import EpisodeSampler
from .devices import require_cpu, resolve_device
from .models import place
from .errors import GFLError
from .evaluation.statistics import warn_one_seed
from .evaluation.scoring import baseline_records, graph_records, summarise
from .models.baselines import PER_GRAPH, TRANSFER
from .models.gfl import GFL
from .names import model_names, trainable_names  # noqa: F401 - the registry's, re-exported
from .refine import RefineConfig
from .evaluation.tables import to_frame
from .paths import runs_dir
from .runs.folder import CONFIG_FILE, RunFolder, final_run_path, partial_path
from .runs.checkpoints import collection_hash, find_training_collection, load_checkpoint, load_metrics, run_name
from .training.meta import CHECKPOINT_EVERY, TrainResult, fit_transfer, meta_train

__all__ = ["train", "evaluate", "evaluate_baseline", "model_config"]

log = logging.getLogger(__name__)


def model_config(model: str = "gfl", **overrides: Any) -> GFLConfig:
    """The preset ``model`` with keyword overrides (``None`` values ignored)."""
    if model not in PRESETS:
        raise GFLError(f"model {model!r} is not meta-trained: choose one of {', '.join(PRESETS)}")
    changes = {k: v for k, v in overrides.items() if v is not None}
    return replace(PRESETS[model], **changes)


def _aggregator(cfg: GFLConfig) -> str:
    return cfg.aggregator if cfg.uses_hierarchy else ""


def result_row(model: str, aggregator: str, collection: GraphCollection, split: str,
               records: pd.DataFrame | dict[int, float], episode_cfg: EpisodeConfig, episodes: int, seed: Any,
               *, refine: str = "none", ci: str = "t", seed_std: bool = False) -> dict:
    """One result table row (accuracy and CI in percent; :func:`gflkit.evaluation.scoring.summarise`).

    ``seed_std``: keep the standard deviation of the per-seed accuracies (for
    tables that take several seeds).
    """
    summary = summarise(records, ci)
    if not seed_std:
        summary.pop("seed_std")
    return {
        "model": model, "aggregator": aggregator, "dataset": collection.name, "split": split,
        "k_shot": episode_cfg.k_shot, "episodes": episodes, "refine": refine, **summary, "seed": seed,
    }


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
    aggregator = _aggregator(model_cfg) if model_cfg is not None else ""
    name = run_name(collection.name, model, aggregator, train_cfg.seed, settings)
    return Path(parent if parent is not None else runs_dir()) / name


def train(
    data: str | os.PathLike | GraphCollection | None = None,
    model_cfg: GFLConfig | None = None,
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    *,
    model: str = "gfl",
    options: dict[str, Any] | None = None,
    run_dir: str | os.PathLike | bool | None = None,
    force: bool = False,
    resume: str | os.PathLike | None = None,
    checkpoint_every: int = CHECKPOINT_EVERY,
    root: str | os.PathLike | None = None,
    eval_split: str | None = "test",
    episodes: int = 1,
    progress: bool = True,
    nproc: int = 1,
    threads_per_proc: int | None = None,
    timeout: float = distributed.DEFAULT_TIMEOUT,
    refine: RefineConfig = RefineConfig(),
    ci: str = "t",
    device: str | torch.device | None = None,
    return_result: bool = False,
    out: str | os.PathLike | bool | None = None,
    **model_settings: Any,
) -> pd.DataFrame | tuple[TrainResult, pd.DataFrame]:
    """Train ``model`` on the train graphs of a collection and score the result.

    As :func:`evaluate`, it returns the result table (one row, or none when
    ``eval_split`` is ``None``); ``return_result=True`` returns the
    :class:`~gflkit.training.meta.TrainResult` (model, metrics, run folder) too.

    Args:
        data: collection folder, name, object, or ``None`` for the built-in family
            (with ``resume``: the run's own collection).
        model_cfg: GFL settings (default: the preset ``model``); GFL presets only.
        episode_cfg, train_cfg: episode and training settings.
        model: a GFL preset (``gfl``, ``protonet``) or a transfer baseline name.
        options: keyword options of a transfer baseline.
        run_dir: the run folder to keep (``config.json``, ``metrics.csv``,
            ``best.pt``). ``None`` (default): ``./runs/<name>``, named as
            ``gflkit train`` names it (:func:`default_run_dir`); ``False``:
            keep nothing. It is written through the hidden folder
            ``.<name>.partial`` beside it and renamed when done.
        force: replace an existing run folder ``run_dir`` (else that is an error).
        resume: a run folder whose training was interrupted: continue it from
            its last checkpoint with its own settings (then leave the settings
            arguments unset). A finished run is only scored.
        checkpoint_every: steps between resume checkpoints (``last.pt``).
        root: data root for names and the default family.
        eval_split: split to evaluate after training (``None`` to skip).
        episodes: support draws per graph in that evaluation.
        nproc: processes to train one GFL model with (:mod:`gflkit.training.distributed`);
            under ``torchrun`` the launch decides and ``nproc`` is ignored. The
            processes are spawned: in a script, call this under
            ``if __name__ == "__main__":``.
        threads_per_proc: threads of each process (default: cores / nproc).
        timeout: seconds after which a rank waiting for a dead peer gives up.
        refine: transductive refinement of the scores (:mod:`gflkit.refine`).
        ci: interval of the row, ``t`` or ``paper`` (:mod:`gflkit.evaluation.statistics`); the row is of
            one trained run, so its interval leaves training randomness out
            (a :class:`~gflkit.errors.OneSeedWarning` says so).
        device: where a GFL model trains and is scored: ``cpu`` (default),
            ``cuda`` or ``cuda:N`` (:func:`gflkit.devices.resolve_device`).
            Transfer baselines train on the CPU.
        return_result: return ``(TrainResult, table)`` instead of the table.
        out: the old name of ``run_dir`` (deprecated; the same values).
        (``run_dir`` to ``device``, the launch of the run, are checked together, before any work:
        :class:`~gflkit.config.RunSettings`.)
        **model_settings: fields of :class:`~gflkit.config.GFLConfig`,
            :class:`~gflkit.config.EpisodeConfig` or
            :class:`~gflkit.config.TrainConfig`, as the command line's flags
            (``encoder="gat"``, ``k_shot=5``, ``lr=0.001``, ``steps=100``);
            each changes the config that has it (``model_cfg`` defaults to the
            preset ``model``). ``val_from_train=N`` moves ``N`` train graphs,
            drawn with the seed, to validation when the collection has no val
            graphs (:mod:`gflkit.training.validation`; else training keeps the last
            step's weights, with a warning).

    Returns:
        The one-row result DataFrame (empty when not evaluated), or
        ``(TrainResult, DataFrame)`` with ``return_result=True``.
    """
    run = RunSettings(run_dir=_run_dir_argument(run_dir, out), force=force, resume=resume,
                      checkpoint_every=checkpoint_every, progress=progress, nproc=nproc,
                      threads_per_proc=threads_per_proc, timeout=timeout, device=device)
    if model_settings:
        model_cfg, episode_cfg, train_cfg = _with_settings(model, model_cfg, episode_cfg, train_cfg, model_settings)
    if run.resume is not None:
        _refuse_settings_on_resume(run, model_cfg=model_cfg, episode_cfg=episode_cfg, train_cfg=train_cfg,
                                   model=model, options=options)
    result, table = _train(data, model_cfg, episode_cfg, train_cfg, model=model, options=options, run=run, root=root,
                           eval_split=eval_split, episodes=episodes, refine=refine, ci=ci)
    return (result, table) if return_result else table


def _run_dir_argument(run_dir: Any, out: Any) -> Any:
    """:func:`train`'s ``run_dir``, given as ``run_dir`` or by its old name ``out`` (with a DeprecationWarning)."""
    if out is not None:
        if run_dir is not None:
            raise GFLError("train() got run_dir and out: give run_dir only (out is its old name)")
        warnings.warn("train(out=...) is deprecated and will be removed in the next release; use run_dir=... "
                      "(run_dir=False keeps no run folder)", DeprecationWarning, stacklevel=3)
        run_dir = out
    return run_dir


def _refuse_settings_on_resume(run: RunSettings, **settings: Any) -> None:
    """A resumed run keeps its own settings: a GFLError naming each one given all the same."""
    defaults = dict(model_cfg=None, episode_cfg=EpisodeConfig(), train_cfg=TrainConfig(), model="gfl", options=None)
    given = [name for name, value in settings.items()
             if (value or None if name == "options" else value) != defaults[name]]
    if run.run_dir not in (None, False) and final_run_path(run.run_dir) != final_run_path(run.resume):
        given.append("run_dir")
    if given:
        raise GFLError(f"resume continues {run.resume} with its own settings: do not give {', '.join(given)}")


def _with_settings(model: str, model_cfg: GFLConfig | None, episode_cfg: EpisodeConfig, train_cfg: TrainConfig,
                   settings: dict[str, Any]) -> tuple[GFLConfig | None, EpisodeConfig, TrainConfig]:
    """The configs with keyword settings applied, each to the config that has the field (as the
    command line's flags): ``aggregator="att"``, ``k_shot=5``, ``lr=0.001``. ``None`` values are
    ignored; unknown names are a GFLError."""
    by_cls = {cls: {f.name for f in fields(cls)} for cls in (GFLConfig, EpisodeConfig, TrainConfig)}
    unknown = sorted(set(settings) - set().union(*by_cls.values()))
    if unknown:
        raise GFLError(f"train() got unknown settings {', '.join(unknown)}: give fields of GFLConfig, "
                       f"EpisodeConfig or TrainConfig ({', '.join(sorted(set().union(*by_cls.values())))})")
    given = {k: tuple(v) if k == "clusters" else v for k, v in settings.items() if v is not None}
    model_changes = {k: v for k, v in given.items() if k in by_cls[GFLConfig]}
    if model_changes:
        if model not in PRESETS:
            raise GFLError(f"model settings ({', '.join(sorted(model_changes))}) apply to GFL presets "
                           f"({', '.join(PRESETS)}), not to {model}")
        model_cfg = replace(model_cfg or PRESETS[model], **model_changes)
    episode_cfg = replace(episode_cfg, **{k: v for k, v in given.items() if k in by_cls[EpisodeConfig]})
    train_cfg = replace(train_cfg, **{k: v for k, v in given.items() if k in by_cls[TrainConfig]})
    return model_cfg, episode_cfg, train_cfg


def _train(data, model_cfg: GFLConfig | None, episode_cfg: EpisodeConfig, train_cfg: TrainConfig, *, model: str,
           options: dict[str, Any] | None, run: RunSettings, root, eval_split: str | None, episodes: int,
           refine: RefineConfig, ci: str) -> tuple[TrainResult, pd.DataFrame]:
    """:func:`train`'s work, with its settings checked: the training result and the result table."""
    device, run_dir = run.device, run.run_dir
    common = dict(progress=run.progress, checkpoint_every=run.checkpoint_every)
    spread = None
    if run.nproc > 1 or distributed.env_context() is not None:  # one run over several processes
        spread = dict(nproc=run.nproc, threads=run.threads_per_proc, timeout=run.timeout)
    if run.resume is not None:
        result, collection = _resume(run.resume, data, root, spread=spread, device=device, **common)
        episode_cfg, seed, model = result_configs(result.meta)[1], int(result.meta.get("seed", 0)), result.meta["model"]
    else:
        collection = load_collection(data, root)
        train_cfg = train_cfg.for_model(model)
        seed = train_cfg.seed
        cfg = None if model in TRANSFER else model_cfg or model_config(model)
        if run_dir is None:  # as the command line names it
            run_dir = default_run_dir(collection, model, cfg, episode_cfg, train_cfg, options)
        out = None if run_dir is False else run_dir
        if model in TRANSFER:
            _single_process(model, spread)
            require_cpu(model, device)
            result = fit_transfer(model, collection, episode_cfg, train_cfg, options=options, run_dir=out,
                                  force=run.force, **common)
        else:
            result = _fit_gfl(collection, cfg, episode_cfg, train_cfg, spread, model_name=model, run_dir=out,
                              force=run.force, device=device, **common)
    if eval_split is None or not distributed.is_main_process():  # under torchrun rank 0 scores the run
        return result, to_frame([])
    row = _score(result.model, model, collection, eval_split, episode_cfg, episodes, seed, refine, ci)
    warn_one_seed(1, "run", stacklevel=4)
    return result, to_frame([row])


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


def score_records(module, collection: GraphCollection, split: str = "test",
                  episode_cfg: EpisodeConfig = EpisodeConfig(), episodes: int = 1, seed: int = 0,
                  refine: RefineConfig = RefineConfig()) -> pd.DataFrame:
    """Per-(graph, episode) records of a trained GFL model or transfer baseline on ``split``."""
    sampler = EpisodeSampler(collection, split, episode_cfg, seed).require_graphs()
    return graph_records(module, sampler, episodes, refine=refine)


def _score(module, name: str, collection: GraphCollection, split: str, episode_cfg: EpisodeConfig,
           episodes: int, seed: int, refine: RefineConfig = RefineConfig(), ci: str = "t") -> dict:
    records = score_records(module, collection, split, episode_cfg, episodes, seed, refine)
    aggregator = _aggregator(module.cfg) if isinstance(module, GFL) and module.cfg is not None else ""
    return result_row(name, aggregator, collection, split, records, episode_cfg, episodes, seed,
                      refine=refine.method, ci=ci)


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
    table = to_frame([_score(module, name, collection, split, ep_cfg, episodes, seed, refine, ci)])
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
