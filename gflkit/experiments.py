"""The paper's experiments as functions returning DataFrames.

* :func:`compare`: Table 2, GFL against the baselines on the same test graphs;
* :func:`ablate`: Table 3, the full model against variants without one component;
* :func:`sweep`: Tables 4-6 and Figure 3, one hyperparameter over several values.

Every model is trained on the collection's train graphs (selected on its val
graphs) and scored on its test graphs with the same episodes, so the rows of
one table are directly comparable, and they are compared pairwise: each row
carries its mean accuracy difference to a reference row over the same
(graph, episode) pairs, with a 95% interval and a p-value
(:func:`gflkit.metrics.paired`). With several seeds every model is trained and
scored once per seed; a row's metrics average the seeds within each (graph,
episode) before the episode and graph levels, and ``seed_std`` gives the spread
of the per-seed accuracies.

The independent runs of a table (model x aggregator x seed, variant x seed,
value x model x seed) can go to a pool of processes (``jobs``,
:func:`gflkit.parallel.run_jobs`); each run seeds itself and the rows are
assembled in the same order, so the table is the same as with one process.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from .api import model_config, model_names, result_row, score_records, train
from .config import ABLATIONS, EpisodeConfig, GFLConfig, TrainConfig
from .data import GraphCollection, load_collection
from .devices import resolve_device
from .episodes import EpisodeSampler
from .errors import GFLError
from .metrics import baseline_records, majority_records, paired, summarise
from .models.baselines import PER_GRAPH, TRANSFER
from .parallel import portable, run_jobs, shared_collection
from .paths import RUN_NAME_LIMIT, check_name
from .progress import RunCounter
from .refine import REFINE_METHODS, RefineConfig
from .results import PAIRED_COLUMNS, RESULT_COLUMNS, to_frame

__all__ = ["compare", "ablate", "sweep", "SWEEP_PARAMS", "ABLATION_NAMES", "MAJORITY"]

log = logging.getLogger(__name__)

#: Name of the majority-class reference row of :func:`compare`.
MAJORITY = "majority"

#: Paper names of the ablation variants (Table 3).
ABLATION_NAMES = {
    "structure": "M1a: mean prototype (Protonet)",
    "gate": "M2a: no hierarchical representation gate",
    "hierarchy": "M2b: flat representation (R = 1)",
    "recon": "M3: no reconstruction loss",
}

#: Sweepable parameters: name -> (config it changes, field, value parser).
SWEEP_PARAMS: dict[str, tuple[str, str, Any]] = {
    "mu": ("model", "mu", float),
    "mu0": ("model", "mu0", float),
    "similarity": ("model", "similarity", str),
    "distance": ("model", "distance", str),
    "aggregator": ("model", "aggregator", str),
    "levels": ("model", "levels", int),
    "gamma": ("model", "gamma", float),
    "k-shot": ("episode", "k_shot", int),
}


@dataclass
class _Entry:
    """One row of a table before the paired columns: its label, row and records (all seeds)."""

    label: str
    row: dict
    records: pd.DataFrame


def _score(collection: GraphCollection, model: str, cfg: GFLConfig | None, episode_cfg: EpisodeConfig,
           train_cfg: TrainConfig, episodes: int, out: str | None, progress: bool,
           refines: Sequence[RefineConfig] = (RefineConfig(),), force: bool = False,
           device: str = "cpu") -> list[pd.DataFrame]:
    """Train (when needed) and score one model with one seed: records per refinement."""
    seed = train_cfg.seed
    sampler = EpisodeSampler(collection, "test", episode_cfg, seed).require_graphs()
    if model == MAJORITY:
        return [majority_records(sampler, episodes)]
    if model in PER_GRAPH:
        return [baseline_records(PER_GRAPH[model], sampler, episodes, seed)]
    result, _ = train(collection, cfg, episode_cfg, train_cfg, model=model, out=out, force=force, eval_split=None,
                      progress=progress, return_result=True, device=device if model not in TRANSFER else None)
    return [score_records(result.model, collection, "test", episode_cfg, episodes, seed, r) for r in refines]


def _score_task(args: tuple) -> list[pd.DataFrame]:
    return _score(shared_collection(args[0]), *args[1:])


def _score_all(tasks: list[tuple], jobs: int, counter: RunCounter, labels: list[str]) -> list[list[pd.DataFrame]]:
    """``_score(*task)`` for every task, over ``jobs`` processes when above 1 (results in task order).

    ``counter`` announces each run as it starts (one process) or counts each
    as its result comes back (a pool, where runs finish in any order).
    """
    if jobs > 1 and len(tasks) > 1:  # workers load the collection from its folder; their bars would interleave
        tasks = [(portable(t[0]), *t[1:7], False, *t[8:]) for t in tasks]
        return run_jobs(_score_task, tasks, jobs, on_result=lambda i: counter.finished(labels[i]))
    results = []
    for task, label in zip(tasks, labels):
        counter.start(label)
        results.append(_score(*task))
        counter.finish()
    return results


def _seeded(records: Sequence[pd.DataFrame], seeds: Sequence[int]) -> pd.DataFrame:
    return pd.concat([r.assign(seed=s) for r, s in zip(records, seeds)], ignore_index=True)


def _seed_value(seeds: Sequence[int]) -> int | str:
    return seeds[0] if len(seeds) == 1 else ",".join(map(str, seeds))


def _entry(label: str, model: str, aggregator: str, collection: GraphCollection, records: pd.DataFrame,
           episode_cfg: EpisodeConfig, episodes: int, seeds: Sequence[int], refine: str, ci: str) -> _Entry:
    row = result_row(model, aggregator, collection, "test", records, episode_cfg, episodes, _seed_value(seeds),
                     refine=refine, ci=ci)
    if len(seeds) > 1:
        per_seed = [summarise(records[records.seed == s], ci)["accuracy"] for s in seeds]
        row["seed_std"] = float(np.std(per_seed, ddof=1))
    return _Entry(label, row, records)


def _with_paired(entries: list[_Entry], reference: Any, ci: str) -> list[dict]:
    """Rows with the paired columns against ``reference``: an entry, or a function of an entry."""
    rows = []
    for e in entries:
        ref = reference(e) if callable(reference) else reference
        rows.append({**e.row, "reference": ref.label, **paired(e.records, ref.records, ci)})
    return rows


def _find(entries: list[_Entry], name: str | None, what: str) -> _Entry:
    if name is None:
        return entries[0]
    for e in entries:
        if name in (e.label, e.row.get("model")):
            return e
    raise GFLError(f"--reference {name!r} is none of the {what}: choose one of "
                   f"{', '.join(dict.fromkeys(e.label for e in entries))}")


def _out(runs_root, *parts) -> str | None:
    """The run folder ``<runs_root>/<part>-<part>-...`` (its name checked: :func:`gflkit.paths.check_name`)."""
    if runs_root is None:
        return None
    check_name(parts[0])  # the collection name
    return os.path.join(str(runs_root), check_name("-".join(map(str, parts)), what="run name", limit=RUN_NAME_LIMIT))


def _label(model: str, aggregator: str, refine: str) -> str:
    return model + (f"-{aggregator}" if aggregator else "") + (f"+{refine}" if refine != "none" else "")


def _variants(model: str, aggregators: Sequence[str], overrides: dict[str, Any]) -> list[tuple[str, GFLConfig | None]]:
    """``(aggregator, config)`` of each row of ``model`` in :func:`compare` (config ``None``: not a GFL preset)."""
    if model == "gfl":
        return [(agg, model_config("gfl", **{**overrides, "aggregator": agg})) for agg in aggregators]
    return [("", model_config(model, **overrides) if model == "protonet" else None)]


def compare(
    data: str | os.PathLike | GraphCollection | None = None,
    models: Sequence[str] | None = None,
    *,
    aggregators: Sequence[str] = ("mean", "att"),
    model_overrides: dict[str, Any] | None = None,
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    episodes: int = 1,
    seeds: Sequence[int] | None = None,
    refines: Sequence[RefineConfig] = (RefineConfig(),),
    reference: str | None = None,
    majority: bool = True,
    ci: str = "t",
    root: str | os.PathLike | None = None,
    runs_root: str | os.PathLike | None = None,
    force: bool = False,
    device: str = "cpu",
    progress: bool = True,
    jobs: int = 1,
) -> pd.DataFrame:
    """Table 2: every model in ``models`` (default: all) on the same test graphs.

    Args:
        models: model names; ``gfl`` gives one row per aggregator in
            ``aggregators`` (GFL-mean, GFL-att); ``majority`` is the
            majority-class reference, added last unless listed or ``majority``
            is false.
        seeds: training seeds (default: ``train_cfg.seed``).
        refines: refinements of the trained models' scores, one row each
            (one training per model and seed); per-graph baselines and the
            majority row are not refined.
        reference: label of the row the others are paired with (``gfl-mean``,
            ``protonet``, ``agf+lp``...; a model name picks its first row),
            or ``+`` and a refinement (``+none``, ``+lp``, ``+cs``): each row is paired with
            the same model under that refinement (rows that are never refined,
            per-graph baselines and ``majority``, with themselves); default:
            the first row.
        ci: ``t`` or ``paper`` (:func:`gflkit.results.mean_ci`).
        jobs: processes to spread the runs (model x aggregator x seed) over;
            the rows are the same as with one.
        runs_root, force: keep each trained run under ``runs_root``; an
            existing run folder there is an error unless ``force``.
        device: where the GFL models train and are scored (``cpu``, ``cuda``,
            ``cuda:N``); the baselines run on the CPU.

    Returns:
        One row per (model, aggregator, refinement) with the result columns
        and ``reference, delta, delta_lo, delta_hi, p_value, n_pairs``.
    """
    resolve_device(device)  # a device this machine lacks fails before any work
    collection = load_collection(data, root)
    known = model_names() + (MAJORITY,)
    models = list(models or model_names())
    unknown = [m for m in models if m not in known]
    if unknown:
        raise GFLError(f"unknown models {', '.join(unknown)}: choose from {', '.join(known)}")
    if majority and MAJORITY not in models:
        models.append(MAJORITY)
    seeds = list(seeds or [train_cfg.seed])
    tasks, labels = [], []
    for model in models:
        trained = model not in PER_GRAPH and model != MAJORITY
        for agg, cfg in _variants(model, aggregators, model_overrides or {}):
            for seed in seeds:
                log.debug("compare: %s%s (seed %d) on %s", model, f"-{agg}" if agg else "", seed, collection.name)
                out = _out(runs_root, collection.name, model, *([agg] if agg else []), f"s{seed}")
                tasks.append((collection, model, cfg, episode_cfg, replace(train_cfg, seed=seed), episodes, out,
                              progress, refines if trained else (RefineConfig(),), force, device))
                labels.append(f"{model}{f'-{agg}' if agg else ''}, seed {seed}")
    results = iter(_score_all(tasks, jobs, RunCounter(len(tasks), "compare", enabled=progress), labels))
    entries = []
    for model in models:
        trained = model not in PER_GRAPH and model != MAJORITY
        for agg, _ in _variants(model, aggregators, model_overrides or {}):
            runs = [next(results) for _ in seeds]
            methods = [r.method for r in refines] if trained else ["none"]
            for i, method in enumerate(methods):
                records = _seeded([run[i] for run in runs], seeds)
                aggregator = agg if model == "gfl" else ""
                entries.append(_entry(_label(model, aggregator, method), model, aggregator, collection, records,
                                      episode_cfg, episodes, seeds, method, ci))
    rows = _with_paired(entries, _compare_reference(entries, reference, [r.method for r in refines]), ci)
    return to_frame(rows, RESULT_COLUMNS[:-1] + ["seed_std"] + PAIRED_COLUMNS + ["seed"])


def _compare_reference(entries: list[_Entry], reference: str | None, methods: list[str]):
    """The reference of :func:`compare`: an entry, or a function of an entry for a refinement."""
    if reference is None or not reference.startswith("+"):
        return _find(entries, reference, "compared rows")
    reference = reference[1:]
    if reference not in methods:
        raise GFLError(f"--reference +{reference}: give {reference} in --refine ({', '.join(REFINE_METHODS)}) "
                       f"to pair the rows with it")
    by_key = {(e.row["model"], e.row["aggregator"], e.row["refine"]): e for e in entries}

    def same_model(e: _Entry) -> _Entry:  # rows that are never refined pair with themselves
        return by_key.get((e.row["model"], e.row["aggregator"], reference), e)

    return same_model


def ablate(
    data: str | os.PathLike | GraphCollection | None = None,
    drop: Iterable[str] = ("gate",),
    *,
    base: GFLConfig | None = None,
    seeds: Sequence[int] = (0,),
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    episodes: int = 1,
    reference: str = "full",
    ci: str = "t",
    root: str | os.PathLike | None = None,
    runs_root: str | os.PathLike | None = None,
    force: bool = False,
    device: str = "cpu",
    progress: bool = True,
    jobs: int = 1,
) -> pd.DataFrame:
    """Table 3: the full model and each variant without one component.

    Args:
        drop: components to remove, one variant each: ``structure`` (M1a),
            ``gate`` (M2a), ``hierarchy`` (M2b), ``recon`` (M3).
        base: the full model (default: GFL's defaults).
        seeds: one training run per seed and variant; rows aggregate the seeds.
        reference: the variant the others are paired with (default ``full``).
        jobs: processes to spread the runs (variant x seed) over; same rows.

    Returns:
        One row per variant with ``delta`` (its accuracy minus the
        reference's, as a mean over the same (graph, episode) pairs),
        ``delta_lo``, ``delta_hi``, ``p_value`` and ``n_pairs``.
    """
    drop = list(dict.fromkeys(drop))
    unknown = [d for d in drop if d not in ABLATIONS]
    if unknown or not drop:
        raise GFLError(f"--drop takes {', '.join(ABLATIONS)} (got {', '.join(unknown) or 'nothing'})")
    resolve_device(device)  # a device this machine lacks fails before any work
    collection = load_collection(data, root)
    base = base or GFLConfig()
    variants = [("full", "GFL (full model)", base)]
    variants += [(d, ABLATION_NAMES[d], replace(base, **ABLATIONS[d])) for d in drop]
    seeds = list(seeds)
    tasks, labels = [], []
    for name, description, cfg in variants:
        for seed in seeds:
            log.debug("ablate: %s (seed %d) on %s", name, seed, collection.name)
            out = _out(runs_root, collection.name, "ablate", name, f"s{seed}")
            tasks.append((collection, "gfl", cfg, episode_cfg, replace(train_cfg, seed=seed), episodes, out, progress,
                          (RefineConfig(),), force, device))
            labels.append(f"{name}, seed {seed}")
    results = iter(_score_all(tasks, jobs, RunCounter(len(tasks), "ablate", enabled=progress), labels))
    entries = []
    for name, description, cfg in variants:
        runs = [records for _ in seeds for records in next(results)]
        entry = _entry(name, "gfl", cfg.aggregator if cfg.uses_hierarchy else "", collection, _seeded(runs, seeds),
                       episode_cfg, episodes, seeds, "none", ci)
        entry.row = {"variant": name, "description": description, **entry.row}
        entries.append(entry)
    rows = _with_paired(entries, _find(entries, reference, "variants"), ci)
    return to_frame(rows, ["variant", "description"] + RESULT_COLUMNS[:-1] + ["seed_std"] + PAIRED_COLUMNS
                    + ["seed"])


def sweep(
    data: str | os.PathLike | GraphCollection | None = None,
    param: str = "mu",
    values: Sequence[Any] = (0.5, 0.6, 0.7, 0.8),
    models: Sequence[str] | None = None,
    *,
    base: GFLConfig | None = None,
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    episodes: int = 1,
    seeds: Sequence[int] | None = None,
    reference: str | None = None,
    ci: str = "t",
    root: str | os.PathLike | None = None,
    runs_root: str | os.PathLike | None = None,
    force: bool = False,
    device: str = "cpu",
    progress: bool = True,
    jobs: int = 1,
) -> pd.DataFrame:
    """Tables 4-6 / Figure 3: one row per (value of ``param``, model).

    Model parameters (``mu``, ``similarity``, ``distance``...) apply to GFL
    configurations; ``k-shot`` applies to every model (default models for it:
    ``gfl``, ``protonet`` and ``maml`` when available, as in Figure 3).

    ``reference`` is a model (each row is paired with that model at the same
    value) or a value of ``param`` (each row is paired with the same model at
    that value). Default: the first model when several are swept, else the
    first value. ``jobs`` spreads the runs (value x model x seed) over that
    many processes (same rows).
    """
    if param not in SWEEP_PARAMS:
        raise GFLError(f"--param {param!r} is not sweepable: choose one of {', '.join(SWEEP_PARAMS)}")
    kind, field, parse = SWEEP_PARAMS[param]
    try:
        values = [parse(v) for v in values]
    except ValueError:
        raise GFLError(f"--values for {param} must be of type {parse.__name__}: got {list(values)}") from None
    if models is None:
        models = ["gfl", "protonet"] + (["maml"] if "maml" in model_names() else []) if kind == "episode" else ["gfl"]
    if kind == "model" and any(m not in ("gfl", "protonet") for m in models):
        raise GFLError(f"--param {param} changes the GFL model: use --model gfl and/or protonet")
    models = list(models)
    resolve_device(device)  # a device this machine lacks fails before any work
    collection = load_collection(data, root)
    base = base or GFLConfig()
    seeds = list(seeds or [train_cfg.seed])
    settings, tasks, labels = [], [], []
    for value in values:
        ep_cfg = replace(episode_cfg, **{field: value}) if kind == "episode" else episode_cfg
        for model in models:
            cfg = None
            if model in ("gfl", "protonet"):
                preset = base if model == "gfl" else model_config("protonet")
                cfg = replace(preset, **{field: value}) if kind == "model" else preset
            settings.append((value, ep_cfg, model, cfg))
            for seed in seeds:
                log.debug("sweep: %s=%s, %s (seed %d) on %s", param, value, model, seed, collection.name)
                out = _out(runs_root, collection.name, "sweep", param, value, model, f"s{seed}")
                tasks.append((collection, model, cfg, ep_cfg, replace(train_cfg, seed=seed), episodes, out, progress,
                              (RefineConfig(),), force, device))
                labels.append(f"{param}={value}, {model}, seed {seed}")
    results = iter(_score_all(tasks, jobs, RunCounter(len(tasks), "sweep", enabled=progress), labels))
    entries = []
    for value, ep_cfg, model, cfg in settings:
        runs = [records for _ in seeds for records in next(results)]
        aggregator = cfg.aggregator if cfg is not None and cfg.uses_hierarchy else ""
        entry = _entry(f"{model}@{value}", model, aggregator, collection, _seeded(runs, seeds), ep_cfg, episodes,
                       seeds, "none", ci)
        entry.row = {"param": param, "value": value, **entry.row}
        entries.append(entry)
    rows = _with_paired(entries, _sweep_reference(entries, models, values, reference, parse), ci)
    return to_frame(rows, ["param", "value"] + RESULT_COLUMNS[:-1] + ["seed_std"] + PAIRED_COLUMNS + ["seed"])


def _sweep_reference(entries: list[_Entry], models: list[str], values: list[Any], reference: str | None, parse):
    """A function of an entry giving its reference entry (see :func:`sweep`)."""
    by_key = {(e.row["model"], e.row["value"]): e for e in entries}
    if reference is None:
        reference = models[0] if len(models) > 1 else str(values[0])
    if reference in models:
        return lambda e: by_key[(reference, e.row["value"])]
    try:
        value = parse(reference)
    except ValueError:
        value = None
    if value not in values:
        raise GFLError(f"--reference {reference!r} is neither a swept model ({', '.join(models)}) "
                       f"nor a swept value ({', '.join(map(str, values))})")
    return lambda e: by_key[(e.row["model"], value)]
