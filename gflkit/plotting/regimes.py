"""Figures of a regime map: results over a grid of data properties.

A regime map's table is ``gflkit compare`` output over several families,
concatenated, each row carrying the values of its family's properties as extra
columns (``homophily``, ``snr``...; ``scripts/regime_map.py`` writes one). Two
figures read it:

* :func:`plot_heatmap`: one model's ``delta`` to the reference (or its
  accuracy) over two properties, a cell per pair of values, each written in its
  cell (``*`` when the delta's 95% interval excludes 0);
* :func:`plot_lines`: accuracy (or delta) against one property, a line with a
  95% band per model, optionally a panel per value of a second property.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import GFLError
from ..evaluation.statistics import adjust_p
from ..evaluation.tables import P_ADJUSTED, SHOWN_BELOW
from ..names import display_name
from .figures import color_of, figure_format, new_figure, save_figure
from .rows import _aggregate, _series_order, _source, read_results, series_key

#: What a map can show: a model's delta to the reference row, or its accuracy.
VALUES = ("delta", "accuracy")


def _check_columns(df: pd.DataFrame, source, columns: dict[str, str | None]) -> None:
    """Every named column is in ``df`` (``columns`` maps parameter -> column)."""
    for param, column in columns.items():
        if column is not None and column not in df.columns:
            raise GFLError(f"{source}: no column {column!r} (`{param}={column}`); "
                           f"found {', '.join(map(str, df.columns))}")


def _ordered(values: pd.Series) -> list:
    """The distinct values, in numeric order when all are numbers, else as first seen."""
    distinct = list(dict.fromkeys(values))
    numbers = pd.to_numeric(pd.Series(distinct, dtype=object), errors="coerce")
    return [distinct[i] for i in np.argsort(numbers.to_numpy(), kind="stable")] if numbers.notna().all() \
        else distinct


#: The most distinct values an axis of a line figure draws, and of a heatmap (a cell, with its text, per pair).
MAX_LINE_VALUES = 1000
MAX_HEATMAP_VALUES = 100


def _bounded(df: pd.DataFrame, column: str, most: int, source, param: str) -> None:
    """Refuse, before the rows are grouped, a column with more than ``most`` distinct values to draw."""
    count = df[column].nunique(dropna=False)
    if count > most:
        raise GFLError(f"{source}: column {column!r} (`{param}={column}`) holds {count} distinct values; a figure "
                       f"draws at most {most} along an axis: bin the values or choose another column")


def _positions(values: list) -> dict:
    """Each value's position in ``values`` (looked up in constant time: axes may have many values)."""
    return {v: i for i, v in enumerate(values)}


def _with_value(df: pd.DataFrame, value: str, source) -> pd.DataFrame:
    """Rows with ``accuracy``/``ci95`` holding what is drawn: the accuracy, or the delta and its half-interval."""
    if value not in VALUES:
        raise GFLError(f"value {value!r}: choose one of {', '.join(VALUES)}")
    if value == "accuracy":
        return df
    if "delta" not in df.columns:
        raise GFLError(f"{source}: no column 'delta' (compare rows paired with a reference row have one), or choose "
                       f"`value=accuracy`")
    df = df[pd.to_numeric(df["delta"], errors="coerce").notna()]
    if df.empty:
        raise GFLError(f"{source}: no row has a delta (every compare row but the reference's has one); "
                       f"choose `value=accuracy`")
    delta = df["delta"].astype(float)
    half = (df["delta_hi"].astype(float) - delta) if "delta_hi" in df.columns else np.nan
    return df.assign(accuracy=delta, ci95=half)


def _one_row_per_seed(df: pd.DataFrame, source, keys: list[str]) -> None:
    """Refuse rows of one series and ``keys`` that are not one seed each (they differ in another column)."""
    from .rows import _seeds

    seeds = df["seed"] if "seed" in df.columns else pd.Series([None] * len(df), index=df.index)
    for (key, *at), group in df.assign(key=df.apply(series_key, axis=1)).groupby(["key", *keys], sort=False):
        covered = [_seeds(v) for v in seeds[group.index]]
        if len(group) > 1 and (any(c is None or len(c) > 1 for c in covered) or
                               len({c[0] for c in covered}) < len(covered)):
            where = ", ".join(f"{k}={v}" for k, v in zip(keys, at))
            raise GFLError(f"{source}: several rows for {key} at {where} that are not one seed each: they differ "
                           f"in another column; draw a panel per its values (`panel=COLUMN`)")


def _value_label(df: pd.DataFrame, value: str) -> str:
    if value == "accuracy":
        return "accuracy (%)" if df["accuracy"].max() > 1.5 else "accuracy"
    reference = df["reference"].dropna().astype(str).unique() if "reference" in df.columns else []
    return f"delta to {reference[0]} (points)" if len(reference) == 1 else "delta to the reference (points)"


def _map_rows(path, value: str, columns: dict[str, str | None], distinct: tuple[str, str],
              what: str) -> tuple[pd.DataFrame, str]:
    """The rows of the regime-map CSVs ``path`` with ``value`` drawn (:func:`_with_value`), and their source.

    ``columns`` maps parameters to the columns they name, each checked to be in
    the rows (:func:`_check_columns`); the two parameters ``distinct`` must name
    different columns (``what`` says what they are in the error).
    """
    source = _source(path)
    df = read_results(path, ["model", "accuracy", "ci95"], [c for c in columns.values() if c is not None])
    first, second = distinct
    if columns[first] == columns[second]:
        raise GFLError(f"`{first}` and `{second}` are both {columns[first]!r}: give two different {what}")
    _check_columns(df, source, columns)
    return _with_value(df, value, source), source


def heatmap_figure(path, x: str, y: str, model: str | None = None, value: str = "delta"):
    """The :class:`~matplotlib.figure.Figure` of :func:`plot_heatmap` (not written)."""
    df, source = _map_rows(path, value, {"x": x, "y": y}, ("x", "y"), "properties")
    df = df.assign(key=df.apply(series_key, axis=1))
    keys = list(dict.fromkeys(df["key"]))
    model = model or keys[0]
    if model not in keys:
        raise GFLError(f"{source}: no {value} rows for model {model!r} (`model={model}`); choose one of "
                       f"{', '.join(keys)}")
    df = df.assign(shown_p=_adjusted_p(df))
    rows = df[df["key"] == model]
    _bounded(rows, x, MAX_HEATMAP_VALUES, source, "x")
    _bounded(rows, y, MAX_HEATMAP_VALUES, source, "y")
    twice = rows[rows.duplicated([x, y], keep=False)]
    if not twice.empty:
        first = twice.iloc[0]
        raise GFLError(f"{source}: several {model} rows at {x}={first[x]}, {y}={first[y]} (several seeds or "
                       f"files?); keep one row per cell (a compare over several seeds writes one)")
    xs, ys = _ordered(rows[x]), _ordered(rows[y])
    x_at, y_at = _positions(xs), _positions(ys)
    grid = np.full((len(ys), len(xs)), np.nan)
    sure = np.zeros_like(grid, dtype=bool)
    adjusted = rows["shown_p"].notna().any()
    for _, row in rows.iterrows():
        i, j = y_at[row[y]], x_at[row[x]]
        grid[i, j] = float(row["accuracy"])
        if value == "delta":
            sure[i, j] = _shown(row, adjusted)
    fig = new_figure(2.0 + 1.0 * len(xs) + 1.2, 1.4 + 0.8 * len(ys))
    ax = fig.subplots()
    if value == "delta":
        limit = float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 1.0
        image = ax.imshow(grid, cmap="RdBu", vmin=-limit or -1.0, vmax=limit or 1.0, origin="lower",
                          aspect="auto")
    else:
        image = ax.imshow(grid, cmap="viridis", origin="lower", aspect="auto")
    low, high = image.get_clim()
    for i in range(len(ys)):
        for j in range(len(xs)):
            if np.isnan(grid[i, j]):
                continue
            text = f"{grid[i, j]:+.1f}" if value == "delta" else f"{grid[i, j]:.1f}"
            dark = value == "delta" and abs(grid[i, j]) > 0.6 * max(abs(low), abs(high))
            ax.text(j, i, text + ("*" if sure[i, j] else ""), ha="center", va="center", fontsize="small",
                    color="white" if dark else "black", fontweight="bold" if sure[i, j] else "normal")
    ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    ax.set_yticks(range(len(ys)), [str(v) for v in ys])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(display_name(model), fontsize="medium")
    fig.colorbar(image, ax=ax, label=_value_label(rows, value))
    if value == "delta":
        fig.supxlabel("* and bold: shown, the p-value adjusted over the map's comparisons below 0.05"
                      if adjusted else "* and bold: the unadjusted 95% interval of the delta excludes 0",
                      fontsize="x-small", color="0.35")
    return fig


def _adjusted_p(df: pd.DataFrame) -> pd.Series:
    """Each row's p-value adjusted over the map's comparisons: the ``p_adjusted`` column that compare, ablate
    and sweep write, or for an older file its ``p_value`` adjusted by Holm's method over every row read (as
    the docs' tables adjust a map); NaN without either."""
    if P_ADJUSTED in df.columns and df[P_ADJUSTED].notna().any():
        return df[P_ADJUSTED].astype(float)
    if "p_value" in df.columns and df["p_value"].notna().any():
        return pd.Series(adjust_p(df["p_value"].to_numpy(dtype=float), "holm"), index=df.index)
    return pd.Series(np.nan, index=df.index)


def _shown(row: pd.Series, adjusted: bool) -> bool:
    """Whether a cell's delta is marked: its adjusted p-value (:func:`_adjusted_p`) below 0.05, or in a file
    without p-values its 95% interval excluding 0."""
    if adjusted:
        return bool(row["shown_p"] < SHOWN_BELOW)
    if {"delta_lo", "delta_hi"} <= set(row.index):
        return bool(row["delta_lo"] > 0 or row["delta_hi"] < 0)
    return False


def plot_heatmap(path, output: str | os.PathLike, *, x: str, y: str, model: str | None = None,
                 value: str = "delta", fmt: str | None = None, dpi: int = 150) -> Path:
    """One model's delta to the reference (or accuracy) over two properties of a regime map.

    Args:
        path: CSV (or a list of CSVs) of ``compare`` rows with a column per
            property (see the module docstring); one row per model and cell.
        output: the figure to write.
        x, y: the property columns of the horizontal and vertical axes.
        model: the series drawn (``gfl-mean``, ``protonet``, ``lp``...; a
            refined row is ``protonet+lp``); default: the first with a value.
        value: ``delta`` (to the reference row, with a diverging colour map
            centred on 0) or ``accuracy``.
        fmt: ``png``, ``pdf`` or ``svg`` (default: from the suffix of ``output``).
        dpi: resolution of PNG output.
    """
    figure_format(output, fmt)
    return save_figure(heatmap_figure(path, x, y, model, value), output, fmt, dpi)


def plot_lines(path, output: str | os.PathLike, *, x: str, panel: str | None = None, value: str = "accuracy",
               fmt: str | None = None, dpi: int = 150) -> Path:
    """Accuracy (or delta) against one property, a line with a 95% band per model.

    Args:
        path: CSV (or a list of CSVs) of ``compare`` rows with a column per
            property; rows of one seed each are averaged (as :func:`gflkit.plotting.plot_shots`).
        output: the figure to write.
        x: the property column of the horizontal axis (``k_shot`` gives the shots figure).
        panel: a column with one panel per value (default: ``dataset`` when
            the rows come from several datasets, else one panel).
        value: ``accuracy`` or ``delta`` (to the reference row).
        fmt: ``png``, ``pdf`` or ``svg`` (default: from the suffix of ``output``).
        dpi: resolution of PNG output.
    """
    figure_format(output, fmt)
    df, source = _map_rows(path, value, {"x": x, "panel": panel}, ("panel", "x"), "columns")
    if panel is None and "dataset" in df.columns and df["dataset"].nunique() > 1:
        panel = "dataset"
    keys = [x] if panel is None else [x, panel]
    _bounded(df, x, MAX_LINE_VALUES, source, "x")
    if panel is not None:
        _bounded(df, panel, MAX_LINE_VALUES, source, "panel")
    ylabel = _value_label(df, value)
    _one_row_per_seed(df, source, keys)
    df, note = _aggregate(df.drop(columns=[c for c in ("key", "label") if c in df.columns]), source, keys)
    panels = _ordered(df[panel]) if panel else [None]
    order = _series_order(df)
    labels = dict(zip(df["key"], df["label"]))
    xs = _ordered(df[x])
    x_at = _positions(xs)
    numeric = pd.to_numeric(pd.Series(xs, dtype=object), errors="coerce").notna().all()
    fig = new_figure(4.2 * len(panels) + 2.0, 3.6)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    handles = {}
    for ax, name in zip(axes, panels):
        rows = df if name is None else df[df[panel] == name]
        for key in order:
            line = rows[rows["key"] == key]
            if line.empty:
                continue
            order_at = np.array([x_at[v] for v in line[x]])
            line = line.iloc[np.argsort(order_at, kind="stable")]
            at = line[x].astype(float).to_numpy() if numeric else np.sort(order_at)
            y, ci = line["accuracy"].to_numpy(dtype=float), line["ci95"].fillna(0).to_numpy(dtype=float)
            (handles[key],) = ax.plot(at, y, marker="o", color=color_of(key), label=labels[key])
            ax.fill_between(at, y - ci, y + ci, color=color_of(key), alpha=0.15, linewidth=0)
        if not numeric:
            ax.set_xticks(range(len(xs)), [str(v) for v in xs])
        if value == "delta":
            ax.axhline(0.0, color="0.5", linewidth=0.8)
        ax.set_xlabel(x)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if name is not None:
            ax.set_title(f"{panel} = {name}" if panel != "dataset" else str(name))
    shown = [k for k in order if k in handles]
    axes[-1].legend([handles[k] for k in shown], [labels[k] for k in shown], fontsize="small", loc="upper left",
                    bbox_to_anchor=(1.02, 1.0), title="model")
    fig.supxlabel(note, fontsize="x-small", color="0.35")
    return save_figure(fig, output, fmt, dpi)
