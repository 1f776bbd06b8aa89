"""The paper's experiments as functions returning DataFrames.

* :func:`compare`: Table 2, GFL against the baselines on the same test graphs;
* :func:`ablate`: Table 3, the full model against variants without one component;
* :func:`sweep`: Tables 4-6 and Figure 3, one hyperparameter over several values.

Every model is trained on the collection's train graphs (selected on its val
graphs) and scored on its test graphs with the same episodes, so the rows of
one table are directly comparable.
"""
from __future__ import annotations

import logging
import os
from dataclasses import replace
from typing import Any, Iterable, Sequence

import pandas as pd

from .api import evaluate_baseline, model_config, model_names, train
from .config import ABLATIONS, EpisodeConfig, GFLConfig, TrainConfig
from .data import GraphCollection, load_collection
from .errors import GFLError
from .models.baselines import PER_GRAPH
from .parallel import portable, run_jobs, shared_collection
from .results import to_frame

__all__ = ["compare", "ablate", "sweep", "SWEEP_PARAMS", "ABLATION_NAMES"]

log = logging.getLogger(__name__)

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


def _run(collection: GraphCollection, model: str, cfg: GFLConfig | None, episode_cfg: EpisodeConfig,
         train_cfg: TrainConfig, episodes: int, out: str | os.PathLike | None, progress: bool) -> pd.DataFrame:
    """Train (when needed) and score one model on the test graphs."""
    if model in PER_GRAPH:
        return evaluate_baseline(model, collection, episodes=episodes, episode_cfg=episode_cfg, seed=train_cfg.seed)
    _, table = train(collection, cfg, episode_cfg, train_cfg, model=model, out=out, episodes=episodes,
                     progress=progress)
    return table


def _run_task(args: tuple) -> pd.DataFrame:
    return _run(shared_collection(args[0]), *args[1:])


def _run_all(tasks: list[tuple], jobs: int) -> list[pd.DataFrame]:
    """``_run(*task)`` for every task, over ``jobs`` processes when above 1 (results in task order)."""
    if jobs > 1:  # workers load the collection from its folder; their progress bars would interleave
        tasks = [(portable(t[0]), *t[1:-1], False) for t in tasks]
    return run_jobs(_run_task, tasks, jobs)


def _out(runs_root, *parts) -> str | None:
    return None if runs_root is None else os.path.join(str(runs_root), "-".join(map(str, parts)))


def compare(
    data: str | os.PathLike | GraphCollection | None = None,
    models: Sequence[str] | None = None,
    *,
    aggregators: Sequence[str] = ("mean", "att"),
    model_overrides: dict[str, Any] | None = None,
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    episodes: int = 1,
    root: str | os.PathLike | None = None,
    runs_root: str | os.PathLike | None = None,
    progress: bool = True,
    jobs: int = 1,
) -> pd.DataFrame:
    """Table 2: every model in ``models`` (default: all) on the same test graphs.

    ``gfl`` gives one row per aggregator in ``aggregators`` (GFL-mean, GFL-att).
    ``jobs > 1`` trains the models in that many processes (same rows).
    """
    collection = load_collection(data, root)
    models = list(models or model_names())
    unknown = [m for m in models if m not in model_names()]
    if unknown:
        raise GFLError(f"unknown models {', '.join(unknown)}: choose from {', '.join(model_names())}")
    tasks = []
    for model in models:
        log.info("compare: %s on %s", model, collection.name)
        if model == "gfl":
            for agg in aggregators:
                cfg = model_config("gfl", **{**(model_overrides or {}), "aggregator": agg})
                out = _out(runs_root, collection.name, model, agg, f"s{train_cfg.seed}")
                tasks.append((collection, model, cfg, episode_cfg, train_cfg, episodes, out, progress))
        else:
            cfg = model_config(model, **(model_overrides or {})) if model == "protonet" else None
            out = _out(runs_root, collection.name, model, f"s{train_cfg.seed}")
            tasks.append((collection, model, cfg, episode_cfg, train_cfg, episodes, out, progress))
    tables = _run_all(tasks, jobs)
    return to_frame(pd.concat(tables, ignore_index=True).to_dict("records"))


def ablate(
    data: str | os.PathLike | GraphCollection | None = None,
    drop: Iterable[str] = ("gate",),
    *,
    base: GFLConfig | None = None,
    seeds: Sequence[int] = (0,),
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    episodes: int = 1,
    root: str | os.PathLike | None = None,
    runs_root: str | os.PathLike | None = None,
    progress: bool = True,
    jobs: int = 1,
) -> pd.DataFrame:
    """Table 3: the full model and each variant without one component.

    Args:
        drop: components to remove, one variant each: ``structure`` (M1a),
            ``gate`` (M2a), ``hierarchy`` (M2b), ``recon`` (M3).
        base: the full model (default: GFL's defaults).
        seeds: one training run per seed and variant.
        jobs: processes to spread the runs over (same rows).

    Returns:
        One row per (variant, seed) with ``delta``: accuracy minus the full
        model's accuracy with the same seed.
    """
    drop = list(dict.fromkeys(drop))
    unknown = [d for d in drop if d not in ABLATIONS]
    if unknown or not drop:
        raise GFLError(f"--drop takes {', '.join(ABLATIONS)} (got {', '.join(unknown) or 'nothing'})")
    collection = load_collection(data, root)
    base = base or GFLConfig()
    variants = [("full", "GFL (full model)", base)]
    variants += [(d, ABLATION_NAMES[d], replace(base, **ABLATIONS[d])) for d in drop]
    tasks = []
    for seed in seeds:
        tr_cfg = replace(train_cfg, seed=seed)
        for name, description, cfg in variants:
            log.info("ablate: %s (seed %d) on %s", name, seed, collection.name)
            out = _out(runs_root, collection.name, "ablate", name, f"s{seed}")
            tasks.append((collection, "gfl", cfg, episode_cfg, tr_cfg, episodes, out, progress))
    tables = iter(_run_all(tasks, jobs))
    rows = []
    for seed in seeds:
        full_acc = None
        for name, description, _ in variants:
            row = next(tables).iloc[0].to_dict()
            full_acc = row["accuracy"] if name == "full" else full_acc
            rows.append({"variant": name, "description": description, **row,
                         "delta": row["accuracy"] - full_acc})
    return to_frame(rows, ["variant", "description", "model", "aggregator", "dataset", "split", "n_graphs",
                           "k_shot", "episodes", "accuracy", "ci95", "std", "delta", "seed"])


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
    root: str | os.PathLike | None = None,
    runs_root: str | os.PathLike | None = None,
    progress: bool = True,
    jobs: int = 1,
) -> pd.DataFrame:
    """Tables 4-6 / Figure 3: one row per (value of ``param``, model).

    Model parameters (``mu``, ``similarity``, ``distance``...) apply to GFL
    configurations; ``k-shot`` applies to every model (default models for it:
    ``gfl``, ``protonet`` and ``maml`` when available, as in Figure 3).
    ``jobs > 1`` spreads the runs over that many processes (same rows).
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
        raise GFLError(f"--param {param} changes the GFL model: use --models gfl and/or protonet")
    collection = load_collection(data, root)
    base = base or GFLConfig()
    tasks, keys = [], []
    for value in values:
        for model in models:
            ep_cfg = replace(episode_cfg, **{field: value}) if kind == "episode" else episode_cfg
            cfg = None
            if model in ("gfl", "protonet"):
                preset = base if model == "gfl" else model_config("protonet")
                cfg = replace(preset, **{field: value}) if kind == "model" else preset
            log.info("sweep: %s=%s, %s on %s", param, value, model, collection.name)
            out = _out(runs_root, collection.name, "sweep", param, value, model, f"s{train_cfg.seed}")
            tasks.append((collection, model, cfg, ep_cfg, train_cfg, episodes, out, progress))
            keys.append(value)
    rows = [{"param": param, "value": value, **table.iloc[0].to_dict()}
            for value, table in zip(keys, _run_all(tasks, jobs))]
    return to_frame(rows, ["param", "value", "model", "aggregator", "dataset", "split", "n_graphs", "k_shot",
                           "episodes", "accuracy", "ci95", "std", "seed"])
