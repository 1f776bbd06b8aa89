"""Result rows -> pandas DataFrame -> CSV or JSON.

Every command that reports numbers builds a list of dicts (one per model,
dataset and split), turns it into a DataFrame here, and writes it with
:func:`write_table`. Columns listed in :data:`RESULT_COLUMNS` come first, in that
order; any others follow.
"""
from __future__ import annotations

import io
import math
import os
from typing import IO, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

__all__ = ["RESULT_COLUMNS", "to_frame", "write_table", "mean_ci"]

RESULT_COLUMNS = [
    "model", "aggregator", "dataset", "split", "n_graphs", "k_shot", "episodes",
    "accuracy", "ci95", "std", "seed",
]


def mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean, 95% confidence half-width (1.96 x std / sqrt(n)) and std.

    ``std`` is the population standard deviation (``ddof=0``); with one value
    the interval is 0.
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return math.nan, math.nan, math.nan
    std = float(arr.std())
    return float(arr.mean()), 1.96 * std / math.sqrt(arr.size), std


def to_frame(rows: Iterable[Mapping], columns: Sequence[str] = RESULT_COLUMNS) -> pd.DataFrame:
    """Rows as a DataFrame, known columns first."""
    df = pd.DataFrame(list(rows))
    first = [c for c in columns if c in df.columns]
    return df[first + [c for c in df.columns if c not in first]]


def write_table(df: pd.DataFrame, out: str | os.PathLike | IO[str] | None = None, fmt: str = "csv") -> str:
    """Write ``df`` as CSV (with header) or JSON records; returns the text.

    A path is written atomically (temporary file, then rename).
    """
    if fmt == "csv":
        text = df.to_csv(index=False, float_format="%.4f")
    elif fmt == "json":
        text = df.to_json(orient="records", indent=1, double_precision=6) + "\n"
    else:
        raise ValueError(f"unknown format {fmt!r}")
    if out is None:
        return text
    if isinstance(out, io.IOBase) or hasattr(out, "write"):
        out.write(text)  # type: ignore[union-attr]
        return text
    from .utils import atomic_write_text

    atomic_write_text(out, text)
    return text
