"""The runs of an experiment table and the rows built from them.

:func:`gflkit.experiments.compare`, :func:`~gflkit.experiments.ablate` and
:func:`~gflkit.experiments.sweep` each list their runs as tasks (one model,
configuration and seed), hand them to :func:`_score_all` (one process or a
pool) and turn the records that come back into rows paired with a reference.
The names are the package's own: nothing here is exported.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from ..api import train
from ..config import EpisodeConfig, GFLConfig, TrainConfig
from ..data import GraphCollection
from ..episodes import EpisodeSampler
from ..errors import GFLError
from ..evaluation.scoring import baseline_records, majority_records, paired, result_row, score_records
from ..evaluation.statistics import ADJUSTMENTS
from ..evaluation.summary import EMPTY_PAIRED, table_records
from ..models.baselines import PER_GRAPH, TRANSFER
from ..names import DEFAULT_SEEDS
from ..paths import RUN_NAME_LIMIT, check_name
from ..progress import RunCounter
from ..refine import RefineConfig
from ..training.parallel import portable, run_jobs, shared_collection

__all__: list[str] = []

#: Name of the majority-class reference row of :func:`gflkit.experiments.compare`.
MAJORITY = "majority"


@dataclass
class _Entry:
    """One row of a table before the paired columns: its label, row and records (all seeds).

    ``base`` is the label without the refinement (``gfl-mean`` for ``gfl-mean+lp``).
    """

    label: str
    row: dict
    records: pd.DataFrame
    base: str = ""

    @property
    def refine(self) -> str:
        return self.row.get("refine", "none")


def _score(collection: GraphCollection, model: str, cfg: GFLConfig | None, episode_cfg: EpisodeConfig,
           train_cfg: TrainConfig, episodes: int, out: str | None, progress: bool,
           refines: Sequence[RefineConfig] = (RefineConfig(),), force: bool = False,
           device: str = "cpu", options: dict[str, Any] | None = None) -> list[pd.DataFrame]:
    """Train (when needed) and score one model with one seed: records per refinement.

    ``options``: the keyword options of a transfer baseline (``None``: its defaults)."""
    seed = train_cfg.seed
    sampler = EpisodeSampler(collection, "test", episode_cfg, seed).require_graphs()
    if model == MAJORITY:
        return [majority_records(sampler, episodes)]
    if model in PER_GRAPH:
        return [baseline_records(PER_GRAPH[model], sampler, episodes, seed)]
    result, _ = train(collection, cfg, episode_cfg, train_cfg, model=model, run_dir=out or False, force=force,
                      eval_split=None, progress=progress, return_result=True,
                      device=device if model not in TRANSFER else None, options=options or None)
    return [score_records(result.model, collection, "test", episode_cfg, episodes, seed, r) for r in refines]


def _check_model_options(options: Mapping[str, Mapping[str, Any]] | None, models: Sequence[str]) -> dict:
    """``{model: {option: value}}`` checked before any work: each model is a transfer baseline of the
    table (``models``) and each option one it takes, of the right type (one-line errors naming them)."""
    from ..training.model_size import check_options

    checked = {}
    for name, given in (options or {}).items():
        if name not in TRANSFER:
            raise GFLError(f"options for {name}: only transfer baselines take options "
                           f"({', '.join(TRANSFER)})")
        if name not in models:
            raise GFLError(f"options for {name}, which the table does not run: add it to the models "
                           f"({', '.join(models)}) or drop its options")
        check_options(name, TRANSFER[name], given)
        checked[name] = dict(given)
    return checked


def _score_task(args: tuple) -> list[pd.DataFrame]:
    return _score(shared_collection(args[0]), *args[1:])


def _score_all(tasks: list[tuple], jobs: int, what: str, progress: bool,
               labels: list[str]) -> list[list[pd.DataFrame]]:
    """``_score(*task)`` for every task, over ``jobs`` processes when above 1 (results in task order).

    The majority-class tasks take no time: they are scored here first and are
    not counted. A :class:`~gflkit.progress.RunCounter` announces each other
    run as it starts (one process) or counts each as its result comes back (a
    pool, where runs finish in any order).
    """
    results: list[list[pd.DataFrame] | None] = [None] * len(tasks)
    timed = []
    for i, task in enumerate(tasks):
        if task[1] == MAJORITY:
            results[i] = _score(*task)
        else:
            timed.append(i)
    counter = RunCounter(len(timed), what, enabled=progress)
    if jobs > 1 and len(timed) > 1:  # workers load the collection from its folder; their bars would interleave
        sent = [(portable(tasks[i][0]), *tasks[i][1:7], False, *tasks[i][8:]) for i in timed]
        done = run_jobs(_score_task, sent, jobs, on_result=lambda k: counter.finished(labels[timed[k]]))
        for i, result in zip(timed, done):
            results[i] = result
        return results  # type: ignore[return-value]
    for i in timed:
        counter.start(labels[i])
        results[i] = _score(*tasks[i])
        counter.finish()
    return results  # type: ignore[return-value]


def _seeded(records: Sequence[pd.DataFrame], seeds: Sequence[int]) -> pd.DataFrame:
    return pd.concat([r.assign(seed=s) for r, s in zip(records, seeds)], ignore_index=True)


def _seed_value(seeds: Sequence[int]) -> int | str:
    return seeds[0] if len(seeds) == 1 else ",".join(map(str, seeds))


def _seed_list(seeds: Sequence[int] | None) -> list[int]:
    seeds = list(DEFAULT_SEEDS if seeds is None else seeds)
    if not seeds:
        raise GFLError("seeds is empty: give at least one training seed")
    if len(set(seeds)) != len(seeds):
        raise GFLError(f"seeds {', '.join(map(str, seeds))} repeat a seed: give each seed once")
    return seeds


def _entry(label: str, model: str, aggregator: str, collection: GraphCollection, records: pd.DataFrame,
           episode_cfg: EpisodeConfig, episodes: int, seeds: Sequence[int], refine: str, ci: str,
           base: str | None = None) -> _Entry:
    row = result_row(model, aggregator, collection, "test", records, episode_cfg, episodes, _seed_value(seeds),
                     refine=refine, ci=ci, seed_std=True)
    return _Entry(label, row, records, base if base is not None else label)


def _with_paired(entries: list[_Entry], reference: Any, ci: str) -> list[dict]:
    """Rows with the paired columns against ``reference``: an entry, or a function of an entry.

    A row paired with itself (the reference row) gets empty paired columns.
    """
    rows = []
    for e in entries:
        ref = reference(e) if callable(reference) else reference
        if ref is e:
            rows.append({**e.row, **EMPTY_PAIRED})
        else:
            rows.append({**e.row, "reference": ref.label, **paired(e.records, ref.records, ci)})
    return rows


def _with_records(table: pd.DataFrame, entries: list[_Entry], rows: list[dict],
                  first: Sequence[str] = ()) -> pd.DataFrame:
    """``table`` with its records in ``table.attrs["records"]`` (:func:`gflkit.evaluation.summary.table_records`)."""
    table.attrs["records"] = table_records([e.label for e in entries], rows, [e.records for e in entries], first)
    return table


def _check_adjust(adjust: str) -> None:
    if adjust not in ADJUSTMENTS:
        raise GFLError(f"`adjust={adjust!r}`: choose one of {', '.join(ADJUSTMENTS)}")


def _find(entries: list[_Entry], name: str | None, what: str) -> _Entry:
    if name is None:
        return entries[0]
    for e in entries:
        if name in (e.label, e.row.get("model")):
            return e
    raise GFLError(f"`reference={name!r}` is none of the {what}: choose one of "
                   f"{', '.join(dict.fromkeys(e.label for e in entries))}")


def _out(runs_root, *parts) -> str | None:
    """The run folder ``<runs_root>/<part>-<part>-...`` (its name checked: :func:`gflkit.paths.check_name`)."""
    if runs_root is None:
        return None
    check_name(parts[0])  # the collection name
    return os.path.join(str(runs_root), check_name("-".join(map(str, parts)), what="run name", limit=RUN_NAME_LIMIT))


def _label(model: str, aggregator: str, refine: str) -> str:
    return model + (f"-{aggregator}" if aggregator else "") + (f"+{refine}" if refine != "none" else "")
