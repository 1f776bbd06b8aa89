"""Result rows -> pandas DataFrame -> CSV or JSON.

Every command that reports numbers builds a list of dicts (one per model,
dataset and split), turns it into a DataFrame here, and writes it with
:func:`write_table`. Columns listed in :data:`RESULT_COLUMNS` come first, in that
order; any others follow.

The rows' intervals are computed by :mod:`gflkit.evaluation.statistics` (over (seed,
graph) units). Two one-level helpers stay here: :func:`mean_ci` (a t-based 95%
interval, or the paper's ``1.96 * std / sqrt(n)``, over values taken as
independent) and :func:`paired_difference` (the paired t-test of paired values).
"""
from __future__ import annotations

import io
import math
import os
from typing import IO, Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

__all__ = ["mean_ci", "paired_difference"]

RESULT_COLUMNS = [
    "model", "aggregator", "dataset", "split", "n_seeds", "n_graphs", "k_shot", "episodes", "refine",
    "accuracy", "ci95", "ci_over", "std", "balanced_accuracy", "macro_f1", "seed",
]

#: Tables that take several seeds (compare, ablate, sweep) add this after :data:`RESULT_COLUMNS`' metrics.
SEED_STD = "seed_std"

#: Columns of a comparison against a reference row (:func:`gflkit.evaluation.scoring.paired`); empty on the
#: reference row.
PAIRED_COLUMNS = ["reference", "delta", "delta_lo", "delta_hi", "prob_improvement", "p_value", "n_pairs"]

#: A table of several comparisons adds this after ``p_value``: the p-value adjusted over every comparison the
#: table prints (:func:`gflkit.evaluation.statistics.adjust_p`). A comparison is *shown* when it is below 0.05.
P_ADJUSTED = "p_adjusted"
#: A comparison is *shown* when its adjusted p-value is below this.
SHOWN_BELOW = 0.05

#: ``t``: Student-t interval with ``ddof = 1``; ``paper``: ``1.96 * std(ddof=0) / sqrt(n)``.
CI_METHODS = ("t", "paper")


def _half_width(arr: np.ndarray, method: str) -> tuple[float, float]:
    """95% half-width and the std it uses (``ddof=1`` for ``t``, ``0`` for ``paper``)."""
    if method not in CI_METHODS:
        raise ValueError(f"unknown interval {method!r}: choose one of {', '.join(CI_METHODS)}")
    n = arr.size
    if method == "paper":
        std = float(arr.std())
        return 1.96 * std / math.sqrt(n), std
    if n < 2:
        return math.nan, math.nan
    from scipy.special import stdtrit  # Student t quantile (what scipy.stats.t.ppf calls; 0.4 s less to import)

    std = float(arr.std(ddof=1))
    return float(stdtrit(n - 1, 0.975)) * std / math.sqrt(n), std


def mean_ci(values: Sequence[float], method: str = "t") -> tuple[float, float, float]:
    """Mean, 95% confidence half-width and standard deviation.

    Args:
        values: one value per unit (test graph, or episode).
        method: ``t`` (default): ``t_{0.975, n-1} * std(ddof=1) / sqrt(n)``,
            NaN with fewer than two values; ``paper``: the paper's
            ``1.96 * std(ddof=0) / sqrt(n)`` (0 with one value), for
            comparison with published tables.
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return math.nan, math.nan, math.nan
    half, std = _half_width(arr, method)
    return float(arr.mean()), half, std


def paired_difference(a: Sequence[float], b: Sequence[float], method: str = "t") -> dict[str, float]:
    """Compare paired values ``a[i]`` and ``b[i]`` (the same unit under two models).

    Returns:
        ``delta`` (mean of ``a - b``), ``delta_lo`` and ``delta_hi`` (its 95%
        interval, as :func:`mean_ci` with ``method``), ``p_value`` (two-sided
        paired t-test; 1 when every difference is 0, 0 when all are equal and
        not 0, NaN for a single pair) and ``n_pairs``.
    """
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if diff.size == 0:
        return {"delta": math.nan, "delta_lo": math.nan, "delta_hi": math.nan, "p_value": math.nan, "n_pairs": 0}
    mean, half, _ = mean_ci(diff, method)
    if diff.size < 2:
        p = math.nan
    elif np.all(diff == diff[0]):
        p = 1.0 if diff[0] == 0 else 0.0
    else:
        from scipy.special import stdtr  # Student t distribution function (scipy.stats.t.sf(x) = stdtr(-x))

        t = mean / (diff.std(ddof=1) / math.sqrt(diff.size))
        p = float(2 * stdtr(diff.size - 1, -abs(t)))
    return {"delta": mean, "delta_lo": mean - half, "delta_hi": mean + half, "p_value": p, "n_pairs": int(diff.size)}


def to_frame(rows: Iterable[Mapping], columns: Sequence[str] = RESULT_COLUMNS) -> pd.DataFrame:
    """Rows as a DataFrame, known columns first."""
    df = pd.DataFrame(list(rows))
    first = [c for c in columns if c in df.columns]
    return df[first + [c for c in df.columns if c not in first]]


def _p_text(p: float) -> str:
    return "" if p is None or (isinstance(p, float) and math.isnan(p)) else f"{p:.3g}"


def write_table(df: pd.DataFrame, out: str | os.PathLike | IO[str] | None = None, fmt: str = "csv") -> str:
    """Write ``df`` as CSV (with header) or JSON records; returns the text.

    Floats get 4 decimals in CSV, p-values 3 significant digits.

    A path is written atomically (temporary file, then rename).
    """
    if fmt == "csv":
        for column in ("p_value", "p_adjusted"):  # small p-values keep their digits
            if column in df:
                df = df.assign(**{column: [_p_text(p) for p in df[column]]})
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
    from ..io import atomic_write_text

    atomic_write_text(out, text)
    return text


def aggregator_name(cfg: Any) -> str:
    """The aggregator a result row and a run name show (of a :class:`~gflkit.config.GFLConfig`): empty without
    a hierarchy, or for a baseline (``cfg`` ``None``)."""
    return cfg.aggregator if cfg is not None and cfg.uses_hierarchy else ""

