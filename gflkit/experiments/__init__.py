"""The paper's experiments as functions returning DataFrames.

* :func:`compare`: Table 2, GFL against the baselines on the same test graphs;
* :func:`ablate`: Table 3, the full model against variants without one component;
* :func:`sweep`: Tables 4-6 and Figure 3, one hyperparameter over several values.

Every model is trained once per seed (default :data:`~gflkit.names.DEFAULT_SEEDS`) on the
collection's train graphs (selected on its val graphs) and scored on its test
graphs with the same episodes, so the rows of one table are directly
comparable. The unit of inference is one training run scored on one test graph
(the mean over its episodes): a row's accuracy interval, and its paired
difference to a reference row with that difference's interval, p-value and
probability of improvement, are over those (seed, graph) units, with seeds and
graphs as two levels (:mod:`gflkit.evaluation.statistics`). The reference row's own paired
columns are empty. With one seed the intervals leave training randomness out:
the rows say so (``n_seeds``, ``ci_over``) and a
:class:`~gflkit.errors.OneSeedWarning` is issued once.

The independent runs of a table (model x aggregator x seed, variant x seed,
value x model x seed) can go to a pool of processes (``jobs``,
:func:`gflkit.training.parallel.run_jobs`); each run seeds itself and the rows are
assembled in the same order, so the table is the same as with one process.
The majority-class rows take no time: they are scored here and not counted as
runs.
"""
from __future__ import annotations

import logging
import os
import warnings
from dataclasses import replace
from typing import Any, Iterable, Sequence

import pandas as pd

from ..api import model_config, model_names
from ..config import ABLATIONS, AGGREGATORS, EpisodeConfig, GFLConfig, TrainConfig
from ..data import GraphCollection, load_collection
from ..errors import GFLError, NoSignalWarning
from ..models.baselines import PER_GRAPH
from ..names import VARIANT_DISPLAY_NAMES
from ..refine import REFINE_METHODS, RefineConfig
from ..evaluation.summary import result_table, warn_units
from .settings import TableSettings, table_settings
from .tasks import (MAJORITY, _check_model_options, _entry, _Entry, _find, _label, _out, _score_all, _seeded,
                    _with_paired, _with_records)

__all__ = ["compare", "ablate", "sweep", "TableSettings"]

log = logging.getLogger(__name__)

#: Paper names of the ablation variants (Table 3; :data:`gflkit.names.VARIANT_DISPLAY_NAMES`).
ABLATION_NAMES = {name: VARIANT_DISPLAY_NAMES[name] for name in ABLATIONS}

#: Sweepable parameters: name -> (config it changes, field, value parser).
SWEEP_PARAMS: dict[str, tuple[str, str, Any]] = {
    "mu": ("model", "mu", float),
    "mu0": ("model", "mu0", float),
    "similarity": ("model", "similarity", str),
    "distance": ("model", "distance", str),
    "aggregator": ("model", "aggregator", str),
    "levels": ("model", "levels", int),
    "gamma": ("model", "gamma", float),
    "gate-mode": ("model", "gate_mode", str),
    "k-shot": ("episode", "k_shot", int),
}


def _compared(models: Sequence[str], aggregators: Sequence[str]) -> list[tuple[str, str]]:
    """``(model, aggregator)`` of each compared model: ``gfl`` gives one per aggregator, ``gfl-AGG`` that one.

    Models that are not GFL get the aggregator ``""``; repeats are dropped.
    """
    pairs = []
    for m in models:
        if m == "gfl":
            pairs += [("gfl", agg) for agg in aggregators]
        elif m.startswith("gfl-") and m[len("gfl-"):] in AGGREGATORS:
            pairs.append(("gfl", m[len("gfl-"):]))
        else:
            pairs.append((m, ""))
    return list(dict.fromkeys(pairs))


def _config(model: str, aggregator: str, overrides: dict[str, Any]) -> GFLConfig | None:
    """The GFL configuration of a row of :func:`compare` (``None``: not a GFL preset)."""
    if model == "gfl":
        return model_config("gfl", **{**overrides, "aggregator": aggregator})
    return model_config(model, **overrides) if model == "protonet" else None


def compare(
    data: str | os.PathLike | GraphCollection | None = None,
    models: Sequence[str] | None = None,
    *,
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    table: TableSettings | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """Table 2: every model in ``models`` (default: all) on the same test graphs.

    Args:
        models: model names; ``gfl`` gives one row per aggregator in
            ``aggregators`` (GFL-mean, GFL-att), ``gfl-mean`` or ``gfl-att``
            one; ``majority`` is the majority-class reference, added last
            unless listed or ``majority`` is false.
        episode_cfg, train_cfg: episode and training settings (each run's
            ``seed`` is one of ``seeds``).
        table: how the runs are made, kept and scored
            (:class:`~gflkit.experiments.settings.TableSettings`: ``seeds``,
            ``episodes``, ``ci``, ``adjust``, ``root``, ``runs_root``,
            ``force``, ``device``, ``progress``, ``jobs``), each also a keyword
            setting; a keyword no setting has is an error that names it.
        **settings: the fields of ``table`` and the row options below.
        aggregators: the aggregators of ``gfl`` (``mean``, ``att``).
        model_overrides: GFL settings of the ``gfl`` and ``protonet`` rows.
        majority: add the majority-class row (default true).
        options: keyword options of the transfer baselines, by model (``{"tlp": {"transductive_steps":
            0}}``), as ``train(..., options=...)`` takes them; checked before any work.
        seeds: training seeds, one run each per model (default
            :data:`~gflkit.names.DEFAULT_SEEDS`; ``None`` is the default too); a row's
            intervals are over (seed, graph) units. One seed leaves training
            randomness out (a :class:`~gflkit.errors.OneSeedWarning`).
        refines: refinements of the trained models' scores, one row each
            (one training per model and seed); per-graph baselines and the
            majority row are not refined.
        reference: what the rows are paired with (default: the first model):

            * a model (``protonet``, ``gfl-att``, ``gfl``, ``lp``): each row is
              paired with that model under the row's own refinement
              (``gfl-mean+lp`` with ``protonet+lp``); a row that is never
              refined pairs with the model's first row;
            * a row label with its refinement (``protonet+lp``,
              ``protonet+none``): every row is paired with that one row;
            * ``+`` and a refinement (``+none``, ``+lp``, ``+cs``): each row is
              paired with the same model under that refinement (``+none``:
              against itself unrefined); rows that are never refined, per-graph
              baselines and ``majority``, with themselves.

            A row paired with itself (the reference) has empty paired columns.
        ci: ``t`` or ``paper`` (:mod:`gflkit.evaluation.statistics`).
        adjust: ``holm`` (default), ``bh`` or ``none``: how ``p_adjusted``
            adjusts the p-values over every comparison of the table (the
            family a claim from it belongs to); a difference is shown when its
            adjusted p-value is below 0.05.
        jobs: processes to spread the runs (model x aggregator x seed) over;
            the rows are the same as with one.
        runs_root, force: keep each trained run under ``runs_root``; an
            existing run folder there is an error unless ``force``.
        device: where the GFL models train and are scored (``cpu``, ``cuda``,
            ``cuda:N``); the baselines run on the CPU.

    Returns:
        One row per (model, aggregator, refinement) with the result columns
        (``n_seeds``, ``n_graphs``, ``accuracy``, ``ci95``, ``ci_over``...) and
        ``reference, delta, delta_lo, delta_hi, prob_improvement, p_value,
        p_adjusted, n_pairs``.
    """
    table, own = table_settings("compare", table, settings, dict(
        aggregators=AGGREGATORS, model_overrides=None, refines=(RefineConfig(),), reference=None, majority=True,
        options=None))
    seeds, episodes, ci, adjust, root = table.seeds, table.episodes, table.ci, table.adjust, table.root
    runs_root, force, device, progress, jobs = table.runs_root, table.force, table.device, table.progress, table.jobs
    aggregators, model_overrides, refines = own["aggregators"], own["model_overrides"], own["refines"]
    reference, majority = own["reference"], own["majority"]
    known = model_names() + (MAJORITY,) + tuple(f"gfl-{a}" for a in AGGREGATORS)
    models = list(models or model_names())
    unknown = [m for m in models if m not in known]
    if unknown:
        raise GFLError(f"unknown models {', '.join(unknown)}: choose from {', '.join(known)}")
    aggregators = list(dict.fromkeys(aggregators))
    bad = [a for a in aggregators if a not in AGGREGATORS]
    if bad or not aggregators:
        raise GFLError(f"aggregators {', '.join(bad) or '(none)'}: choose from {', '.join(AGGREGATORS)}")
    if majority and MAJORITY not in models:
        models.append(MAJORITY)
    options = _check_model_options(own["options"], models)
    collection = load_collection(data, root)
    compared = _compared(models, aggregators)
    tasks, labels = [], []
    for model, agg in compared:
        trained = model not in PER_GRAPH and model != MAJORITY
        cfg = _config(model, agg, model_overrides or {})
        for seed in seeds:
            log.debug("compare: %s%s (seed %d) on %s", model, f"-{agg}" if agg else "", seed, collection.name)
            out = _out(runs_root, collection.name, model, *([agg] if agg else []), f"s{seed}")
            tasks.append((collection, model, cfg, episode_cfg, replace(train_cfg, seed=seed), episodes, out,
                          progress, refines if trained else (RefineConfig(),), force, device, options.get(model)))
            labels.append(f"{_label(model, agg, 'none')}, seed {seed}")
    results = iter(_score_all(tasks, jobs, "compare", progress, labels))
    entries = []
    for model, agg in compared:
        trained = model not in PER_GRAPH and model != MAJORITY
        runs = [next(results) for _ in seeds]
        methods = [r.method for r in refines] if trained else ["none"]
        for i, method in enumerate(methods):
            records = _seeded([run[i] for run in runs], seeds)
            entries.append(_entry(_label(model, agg, method), model, agg, collection, records, episode_cfg,
                                  episodes, seeds, method, ci, base=_label(model, agg, "none")))
    rows = _with_paired(entries, _compare_reference(entries, reference, [r.method for r in refines]), ci)
    warn_units(rows, len(seeds), collection.name)
    warn_no_signal(rows, collection.name)
    return _with_records(result_table(rows, adjust=adjust), entries, rows)


def warn_no_signal(rows: list[dict], dataset: str) -> None:
    """Warn (:class:`~gflkit.errors.NoSignalWarning`) when no model's accuracy is above the majority row's.

    Such a table shows no model learning anything from the labels: the labels
    may carry no signal the models can use (e.g. a no-signal family), or
    training failed. Balanced accuracy then tells the models apart from a
    constant answer.
    """
    majority = [r["accuracy"] for r in rows if r.get("model") == MAJORITY]
    others = [(r["accuracy"], r.get("model"), r.get("aggregator"), r.get("refine")) for r in rows
              if r.get("model") != MAJORITY]
    if not majority or not others or max(a for a, *_ in others) > majority[0]:
        return
    best = max(others, key=lambda o: o[0])
    name = "-".join(str(p) for p in best[1:3] if p) + (f"+{best[3]}" if best[3] not in (None, "none") else "")
    warnings.warn(NoSignalWarning(
        f"no model beats the majority class on {dataset}: the best, {name}, scores {best[0]:.2f} against "
        f"{majority[0]:.2f}; the labels may carry no signal these models use, or training failed (compare "
        f"balanced_accuracy, which is 100/classes for a constant answer)"), stacklevel=3)


def _compare_reference(entries: list[_Entry], reference: str | None, methods: list[str]):
    """The reference of :func:`compare`, as a function of an entry (see its ``reference``)."""
    if reference is not None and reference.startswith("+"):
        method = reference[1:]
        if method not in methods:
            raise GFLError(f"`reference=+{method}`: give {method} in `refine` ({', '.join(REFINE_METHODS)}) "
                           f"to pair the rows with it")
        by_key = {(e.base, e.refine): e for e in entries}
        return lambda e: by_key.get((e.base, method), e)  # rows that are never refined pair with themselves
    if reference is not None and "+" in reference:  # one row: a model or label, and a refinement
        name, _, method = reference.partition("+")
        fixed = [e for e in entries if name in (e.base, e.row.get("model")) and e.refine == method]
        if not fixed:
            raise GFLError(f"reference {reference!r} is none of the compared rows: choose one of "
                           f"{', '.join(dict.fromkeys(e.label for e in entries))}")
        return lambda e: fixed[0]
    base = _find(entries, reference, "compared rows").base  # a model or label: under each row's refinement
    by_key = {(e.base, e.refine): e for e in entries}
    first = next(e for e in entries if e.base == base)
    return lambda e: by_key.get((base, e.refine), first)


def ablate(
    data: str | os.PathLike | GraphCollection | None = None,
    drop: Iterable[str] = ("gate",),
    *,
    base: GFLConfig | None = None,
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    table: TableSettings | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """Table 3: the full model and each variant without one component.

    Args:
        drop: components to remove, one variant each: ``structure`` (M1a),
            ``gate`` (M2a), ``hierarchy`` (M2b), ``recon`` (M3).
        base: the full model (default: GFL's defaults).
        seeds: one training run per seed and variant (default
            :data:`~gflkit.names.DEFAULT_SEEDS`); intervals are over (seed, graph) units.
        reference: the variant the others are paired with (default ``full``);
            its own paired columns are empty.
        table, settings: as :func:`compare`'s (``seeds``, ``jobs``...); the
            row option is ``reference``.
        jobs: processes to spread the runs (variant x seed) over; same rows.
        adjust: as :func:`compare`'s.

    Returns:
        One row per variant with ``delta`` (its accuracy minus the
        reference's over the same (seed, graph) units, each the mean over the
        same episodes), ``delta_lo``, ``delta_hi``, ``prob_improvement``,
        ``p_value``, ``p_adjusted`` and ``n_pairs``.
    """
    table, own = table_settings("ablate", table, settings, dict(reference="full"))
    seeds, episodes, ci, adjust, root = table.seeds, table.episodes, table.ci, table.adjust, table.root
    runs_root, force, device, progress, jobs = table.runs_root, table.force, table.device, table.progress, table.jobs
    reference = own["reference"]
    drop = list(dict.fromkeys(drop))
    unknown = [d for d in drop if d not in ABLATIONS]
    if unknown or not drop:
        raise GFLError(f"`drop` takes {', '.join(ABLATIONS)} (got {', '.join(unknown) or 'nothing'})")
    collection = load_collection(data, root)
    base = base or GFLConfig()
    variants = [("full", VARIANT_DISPLAY_NAMES["full"], base)]
    variants += [(d, ABLATION_NAMES[d], replace(base, **ABLATIONS[d])) for d in drop]
    tasks, labels = [], []
    for name, _description, cfg in variants:
        for seed in seeds:
            log.debug("ablate: %s (seed %d) on %s", name, seed, collection.name)
            out = _out(runs_root, collection.name, "ablate", name, f"s{seed}")
            tasks.append((collection, "gfl", cfg, episode_cfg, replace(train_cfg, seed=seed), episodes, out, progress,
                          (RefineConfig(),), force, device))
            labels.append(f"{name}, seed {seed}")
    results = iter(_score_all(tasks, jobs, "ablate", progress, labels))
    entries = []
    for name, description, cfg in variants:
        runs = [records for _ in seeds for records in next(results)]
        entry = _entry(name, "gfl", cfg.aggregator if cfg.uses_hierarchy else "", collection, _seeded(runs, seeds),
                       episode_cfg, episodes, seeds, "none", ci)
        entry.row = {"variant": name, "description": description, **entry.row}
        entries.append(entry)
    rows = _with_paired(entries, _find(entries, reference, "variants"), ci)
    warn_units(rows, len(seeds), collection.name)
    first = ["variant", "description"]
    return _with_records(result_table(rows, first, adjust), entries, rows, first)


def sweep(
    data: str | os.PathLike | GraphCollection | None = None,
    param: str = "mu",
    values: Sequence[Any] = (0.5, 0.6, 0.7, 0.8),
    models: Sequence[str] | None = None,
    *,
    base: GFLConfig | None = None,
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    table: TableSettings | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """Tables 4-6 / Figure 3: one row per (value of ``param``, model).

    Model parameters (``mu``, ``similarity``, ``distance``...) apply to GFL
    configurations; ``k-shot`` applies to every model (default models for it:
    ``gfl``, ``protonet`` and ``maml`` when available, as in Figure 3).

    ``reference`` is a model (each row is paired with that model at the same
    value) or a value of ``param`` (each row is paired with the same model at
    that value). Default: the first model when several are swept, else the
    first value. The reference rows' own paired columns are empty. ``seeds``:
    one training run per seed (default :data:`~gflkit.names.DEFAULT_SEEDS`). ``jobs``
    spreads the runs (value x model x seed) over that many processes (same
    rows). ``adjust``: as :func:`compare`'s (``p_adjusted`` over every
    comparison of the sweep). ``table`` and ``**settings``: as
    :func:`compare`'s; the row option is ``reference``.
    """
    table, own = table_settings("sweep", table, settings, dict(reference=None))
    seeds, episodes, ci, adjust, root = table.seeds, table.episodes, table.ci, table.adjust, table.root
    runs_root, force, device, progress, jobs = table.runs_root, table.force, table.device, table.progress, table.jobs
    reference = own["reference"]
    if param not in SWEEP_PARAMS:
        raise GFLError(f"`param={param!r}` is not sweepable: choose one of {', '.join(SWEEP_PARAMS)}")
    kind, field, parse = SWEEP_PARAMS[param]
    try:
        values = [parse(v) for v in values]
    except ValueError:
        raise GFLError(f"`values` for {param} must be of type {parse.__name__}: got {list(values)}") from None
    if models is None:
        models = ["gfl", "protonet"] + (["maml"] if "maml" in model_names() else []) if kind == "episode" else ["gfl"]
    if kind == "model" and any(m not in ("gfl", "protonet") for m in models):
        raise GFLError(f"`param={param}` changes the GFL model: use `model=gfl` and/or protonet")
    models = list(models)
    collection = load_collection(data, root)
    base = base or GFLConfig()
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
    results = iter(_score_all(tasks, jobs, "sweep", progress, labels))
    entries = []
    for value, ep_cfg, model, cfg in settings:
        runs = [records for _ in seeds for records in next(results)]
        aggregator = cfg.aggregator if cfg is not None and cfg.uses_hierarchy else ""
        entry = _entry(f"{model}@{value}", model, aggregator, collection, _seeded(runs, seeds), ep_cfg, episodes,
                       seeds, "none", ci)
        entry.row = {"param": param, "value": value, **entry.row}
        entries.append(entry)
    rows = _with_paired(entries, _sweep_reference(entries, models, values, reference, parse), ci)
    warn_units(rows, len(seeds), collection.name)
    return _with_records(result_table(rows, ["param", "value"], adjust), entries, rows, ["param", "value"])


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
        raise GFLError(f"`reference={reference!r}` is neither a swept model ({', '.join(models)}) "
                       f"nor a swept value ({', '.join(map(str, values))})")
    return lambda e: by_key[(e.row["model"], value)]
