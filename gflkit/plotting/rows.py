"""The rows a figure draws: result CSVs read and checked, their series named, rows of several seeds averaged.

:func:`read_results` checks the cells a figure draws before anything is
drawn (:func:`check_cells`): an empty, NaN or non-numeric cell in a column
that must hold numbers is refused in one line naming the file, the column and
the CSV line.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..errors import GFLError
from ..evaluation.tables import mean_ci
from ..names import REFINE_METHODS, display_name
from .figures import MODEL_NAMES, VARIANT_NAMES

#: Columns a figure reads as numbers wherever they are: a cell must be a finite number (``ci95`` may be empty).
NUMERIC = {"accuracy": False, "ci95": True, "k_shot": False, "delta": True, "delta_lo": True, "delta_hi": True}


def check_cells(df: pd.DataFrame, path, columns: Sequence[str], numeric: bool | None = None) -> None:
    """Refuse a cell a figure cannot draw, naming the file, the column and the CSV line.

    Args:
        df: the rows of one CSV, in file order (line ``i + 2`` holds row ``i``).
        path: the file, for the message.
        columns: the columns drawn; those of :data:`NUMERIC` must hold finite
            numbers (or be empty where allowed), the others (an axis of
            property values) must not be empty.
        numeric: ``True``: every column of ``columns`` must hold numbers;
            ``None``: as :data:`NUMERIC` says.

    Raises:
        GFLError: an empty or NaN cell where a value is drawn, or a text or
            infinite value in a column of numbers.
    """
    for column in dict.fromkeys(columns):
        if column not in df.columns:
            continue
        cells = df[column]
        missing = cells.isna().to_numpy()
        must_be_number = numeric or (numeric is None and column in NUMERIC)
        empty_allowed = numeric is None and NUMERIC.get(column, False)
        bad = np.zeros(len(df), dtype=bool) if empty_allowed else missing
        what = "the cell is empty or NaN"
        if must_be_number:
            number = pd.to_numeric(cells, errors="coerce").to_numpy(dtype=float)
            wrong = ~missing & ~np.isfinite(number)
            if wrong.any() and (not bad.any() or np.flatnonzero(wrong)[0] < np.flatnonzero(bad)[0]):
                first = int(np.flatnonzero(wrong)[0])
                bad, what = wrong, f"{str(cells.iloc[first])[:40]!r} is not a finite number"
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise GFLError(f"{path}: column {column!r}, line {row + 2}: {what}; fix or remove that row")


def read_results(path: str | os.PathLike | Sequence[str | os.PathLike], required: Sequence[str],
                 drawn: Sequence[str] = ()) -> pd.DataFrame:
    """One or more result CSVs (rows concatenated) with at least the ``required`` columns.

    The ``required`` and ``drawn`` columns of each file are checked by :func:`check_cells`.

    Raises:
        GFLError: a file is missing, unreadable, empty or lacks a column, or a cell drawn is not a value.
    """
    if not isinstance(path, (str, os.PathLike)):
        return pd.concat([read_results(p, required, drawn) for p in path], ignore_index=True)
    path = Path(path)
    try:
        df = pd.read_csv(path)
    except FileNotFoundError:
        raise GFLError(f"{path}: no such file; give a CSV written by a gflkit command") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise GFLError(f"{path}: not a readable CSV ({type(err).__name__}); "
                       "give a CSV written by a gflkit command") from None
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise GFLError(f"{path}: missing column(s) {', '.join(missing)}; found {', '.join(map(str, df.columns))}")
    if df.empty:
        raise GFLError(f"{path}: no rows to plot")
    check_cells(df, path, [*required, *drawn])
    return df


def _source(path) -> str:
    """A file, or several, as named in error messages."""
    return str(path) if isinstance(path, (str, os.PathLike)) else ", ".join(map(str, path))


def series_key(row: pd.Series) -> str:
    """The short name of a result row's series: its variant, else its model.

    A GFL row with an aggregator is ``gfl-mean`` or ``gfl-att``; a model
    without one (Protonet, baselines) keeps its name. A refined row
    (``refine`` other than ``none``) adds ``+<method>``: ``protonet+lp``.
    """
    if isinstance(row.get("variant"), str) and row["variant"]:
        return row["variant"]
    model = str(row["model"])
    aggregator = row.get("aggregator")
    if isinstance(aggregator, str) and aggregator and not model.endswith(f"-{aggregator}"):
        model = f"{model}-{aggregator}"
    refine = row.get("refine")
    if isinstance(refine, str) and refine and refine != "none":
        model += f"+{refine}"
    return model


def series_label(row: pd.Series) -> str:
    """What a result row is called in a legend: the paper's name of its model or variant
    (:func:`gflkit.names.display_name`; a variant's own ``description`` when the row has one)."""
    key = series_key(row)
    if isinstance(row.get("variant"), str) and row["variant"]:
        description = row.get("description")
        return description if isinstance(description, str) and description else display_name(key)
    return display_name(key)


def _seeds(value: Any) -> tuple[int, ...] | None:
    """The training seeds a row covers: its ``seed`` is one seed or a list (``"0,1,2"``); ``None``: unknown."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    parts = [p.strip() for p in value.split(",") if p.strip()] if isinstance(value, str) else [value]
    try:
        return tuple(int(float(p)) for p in parts) or None
    except (TypeError, ValueError):
        return None


#: How a note under a figure says what a row's interval (``ci_over``) is over.
_OVER = {"graphs": "test graphs", "seeds x graphs": "(seed, graph) units", "episodes": "episodes", "seeds": "seeds"}


def _row_note(seeds: tuple[int, ...] | None, averaged: bool, over: str) -> str:
    if averaged:
        return f"mean of {len(seeds)} seeds ({', '.join(map(str, seeds))}); intervals: 95% CI over seeds"
    which = "" if not seeds else (f"seed {seeds[0]}; " if len(seeds) == 1 else
                                  f"seeds {', '.join(map(str, seeds))}; ")
    return f"{which}intervals: 95% CI over {over}"


def _aggregate(df: pd.DataFrame, source, keys: Sequence[str]) -> tuple[pd.DataFrame, str]:
    """One row per series and ``keys``: the mean over seeds when there are rows of several seeds.

    A row of one seed keeps its interval (over test graphs), and so does a row
    that covers several seeds itself (``seed`` "0,1,2" or ``n_seeds`` above 1,
    as ``compare --seed 0,1,2`` writes). Rows of one seed each are averaged,
    with the 95% CI over seeds.

    Returns the rows (columns ``key, label, accuracy, ci95, n_seeds`` and
    ``keys``) and a note saying what the intervals are (per dataset when the
    datasets differ).

    Raises:
        GFLError: two rows share series, keys and a seed (two splits or
            files?), or rows of several seeds each would be averaged.
    """
    df = df.assign(key=df.apply(series_key, axis=1), label=df.apply(series_label, axis=1))
    has_seed = "seed" in df.columns
    rows = []
    for _, group in df.groupby(["key", *keys], sort=False, dropna=False):
        first = group.iloc[0]
        where = ", ".join(f"{k}={first[k]}" for k in keys)
        at = f" at {where}" if where else ""
        covered = [_seeds(v) for v in group["seed"]] if has_seed else [None] * len(group)
        if len(group) == 1:
            seeds = covered[0]
            n_seeds = int(first["n_seeds"]) if "n_seeds" in group and pd.notna(first["n_seeds"]) else \
                len(seeds or (0,))
            over = first.get("ci_over") if "ci_over" in group else None
            over = _OVER.get(over, over) if isinstance(over, str) and over else "test graphs"
            accuracy, ci95 = float(first["accuracy"]), float(np.nan_to_num(first["ci95"]))
            note = _row_note(seeds, False, over)
        else:
            if not has_seed or any(s is None for s in covered):
                raise GFLError(f"{source}: several rows for {first['key']}{at} (several seeds? keep the seed "
                               f"column); keep one row each")
            if any(len(s) > 1 for s in covered):
                raise GFLError(f"{source}: rows for {first['key']}{at} cover several seeds each and would be "
                               f"averaged again; plot one table of several seeds, or rows of one seed each")
            seeds = tuple(s[0] for s in covered)
            twice = sorted({s for s in seeds if seeds.count(s) > 1})
            if twice:
                raise GFLError(f"{source}: several rows for {first['key']}{at}, seed={twice[0]} (several splits or "
                               f"the same seed twice?); keep one row each")
            accuracy, ci95, _ = mean_ci(group["accuracy"].to_numpy(dtype=float))
            n_seeds, seeds = len(seeds), tuple(sorted(seeds))
            note = _row_note(seeds, True, "seeds")
        rows.append({"key": first["key"], "label": first["label"], **{k: first[k] for k in keys},
                     "accuracy": accuracy, "ci95": ci95, "n_seeds": n_seeds, "note": note})
    out = pd.DataFrame(rows)
    by_note: dict[str, list] = {}
    for note, dataset in zip(out["note"], out["dataset"] if "dataset" in out else [None] * len(out)):
        by_note.setdefault(note, [])
        if dataset not in by_note[note]:
            by_note[note].append(dataset)
    if len(by_note) == 1:
        note = next(iter(by_note))
    else:
        note = " | ".join(f"{', '.join(str(d) for d in datasets if d is not None)}: {text}".lstrip(": ")
                          for text, datasets in by_note.items())
    return out.drop(columns="note"), note


def _accuracy_axis_label(values: pd.Series) -> str:
    return "accuracy (%)" if values.max() > 1.5 else "accuracy"


def _datasets(df: pd.DataFrame) -> list:
    """Datasets in the order the tables list them (``[None]`` without a dataset column)."""
    return list(dict.fromkeys(df["dataset"])) if "dataset" in df.columns else [None]


def _rows_of(df: pd.DataFrame, dataset) -> pd.DataFrame:
    return df if dataset is None else df[df["dataset"] == dataset]


def _series_order(df: pd.DataFrame) -> list[str]:
    """Series keys: known models and variants in the paper's order, then the rest as first seen;
    a model's refined rows (``protonet+lp``) follow it, in the order of :data:`gflkit.names.REFINE_METHODS`."""
    paper = [*VARIANT_NAMES, *MODEL_NAMES]
    seen = list(dict.fromkeys(df["key"]))

    def rank(key: str) -> tuple[int, int, int]:
        base, _, refine = key.partition("+")
        known = paper.index(base) if base in paper else len(paper)
        first = seen.index(key) if known == len(paper) else 0
        refine = refine or "none"
        return known, first, REFINE_METHODS.index(refine) if refine in REFINE_METHODS else len(REFINE_METHODS)

    return sorted(seen, key=rank)


def _value_limits(low: np.ndarray, high: np.ndarray) -> tuple[float, float] | None:
    """y limits that do not start at 0 when the values differ by little, else ``None``.

    "Little" means the whole span (intervals included) is under half the
    largest value; the lower limit is then rounded down to a multiple of 5.
    """
    lo, hi = float(np.nanmin(low)), float(np.nanmax(high))
    if not (lo > 0 and hi - lo < 0.5 * hi):
        return None
    pad = max(0.15 * (hi - lo), 0.5)
    return max(0.0, 5.0 * np.floor((lo - pad) / 5.0)), hi + pad

