"""Figures of the paper from gflkit's result tables and checkpoints.

* :func:`plot_shots`: accuracy against shots with 95% CI bands, one line per
  model (paper Figure 3), from a k-shot sweep table.
* :func:`plot_bars`: accuracy per model (``compare`` rows) or per variant
  (``ablate`` rows) with CI error bars, one group per dataset.
* :func:`gflkit.tsne.plot_tsne`: 2-D t-SNE of a run's node embeddings (Figure 4).

Legends use the paper's names (``GFL-mean``, ``Matching Network``; an ablation
variant by its description, e.g. ``gate`` is "M2a: no hierarchical
representation gate"), and each model or variant has one colour in every
figure (:data:`COLORS`). Tables with several seeds are averaged per model and
x value; their interval is then the 95% CI over seeds, else the row's own CI
over test graphs.

matplotlib and scikit-learn are an optional extra (``pip install
'gflkit[plot]'``) and are imported only when a figure is drawn. Figures are
built on :class:`matplotlib.figure.Figure` (no pyplot state) and written
atomically as PNG, PDF or SVG.
"""
from __future__ import annotations

import importlib
import os
import zlib
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .errors import GFLError
from .results import mean_ci
from .utils import atomic_write_with

__all__ = [
    "require", "read_results", "series_key", "series_label", "plot_shots", "plot_bars", "save_figure",
    "figure_format", "color_of", "new_figure", "FORMATS", "MODEL_NAMES", "VARIANT_NAMES", "COLORS",
]

_EXTRA = "pip install 'gflkit[plot]'"
_SHOT_PARAMS = ("k-shot", "k_shot")

#: Figure file formats, chosen by ``--format`` or the output's suffix.
FORMATS = ("png", "pdf", "svg")

#: The paper's names of the models (Table 2), by series key.
MODEL_NAMES = {
    "gfl": "GFL", "gfl-mean": "GFL-mean", "gfl-att": "GFL-att", "protonet": "Protonet", "maml": "MAML",
    "matchingnet": "Matching Network", "knn": "K-NN", "agf": "All-Graph-Finetune", "gcn": "Non-transfer GCN",
    "lp": "Label Propagation", "node2vec": "node2vec", "deepwalk": "DeepWalk", "planetoid": "Planetoid",
}

#: What each ablation variant is (Table 3): the variant is named by what it removes.
VARIANT_NAMES = {
    "full": "GFL (full model)",
    "structure": "M1a: mean prototype (Protonet)",
    "gate": "M2a: no hierarchical representation gate",
    "hierarchy": "M2b: flat representation (R = 1)",
    "recon": "M3: no reconstruction loss",
}

#: One colour per model or variant, the same in every figure.
COLORS = {
    "gfl": "#d62728", "gfl-mean": "#d62728", "gfl-att": "#ff7f0e", "protonet": "#1f77b4", "maml": "#2ca02c",
    "matchingnet": "#9467bd", "knn": "#8c564b", "agf": "#e377c2", "gcn": "#7f7f7f", "lp": "#bcbd22",
    "node2vec": "#17becf", "deepwalk": "#6baed6", "planetoid": "#98df8a",
    "full": "#d62728", "structure": "#1f77b4", "gate": "#fdae6b", "hierarchy": "#9e9ac8", "recon": "#a1d99b",
}
_SPARE = ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#5254a3", "#8ca252", "#bd9e39")


def color_of(key: str) -> str:
    """The colour of a series: fixed for known models and variants, else stable per name."""
    return COLORS.get(key) or _SPARE[zlib.crc32(key.encode()) % len(_SPARE)]


def require(module: str, package: str) -> Any:
    """Import ``module`` or raise a one-line :class:`GFLError` naming ``package``."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise GFLError(f"plotting needs {package}, which is not installed: run {_EXTRA}") from None


def new_figure(width: float, height: float):
    """An empty :class:`matplotlib.figure.Figure` with constrained layout (no pyplot state)."""
    figure = require("matplotlib.figure", "matplotlib")
    return figure.Figure(figsize=(width, height), layout="constrained")


def figure_format(path: str | os.PathLike, fmt: str | None = None) -> str:
    """The format of a figure file: ``fmt``, else the suffix of ``path``.

    Raises:
        GFLError: the two disagree, or neither names one of :data:`FORMATS`.
    """
    suffix = Path(path).suffix.lower().lstrip(".")
    if fmt is None:
        if suffix not in FORMATS:
            raise GFLError(f"{path}: give a file name ending in .png, .pdf or .svg, or choose --format")
        return suffix
    if fmt not in FORMATS:
        raise GFLError(f"figure format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if suffix and suffix != fmt:
        raise GFLError(f"{path}: the name ends in .{suffix} but --format is {fmt}; make them agree")
    return fmt


def save_figure(fig, path: str | os.PathLike, fmt: str | None = None, dpi: int = 150) -> Path:
    """Write ``fig`` to ``path`` through a temporary file and a rename.

    The format comes from :func:`figure_format`; PDF and SVG files carry no
    creation date, so the same figure gives the same bytes.
    """
    fmt = figure_format(path, fmt)
    metadata = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}.get(fmt)
    return atomic_write_with(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=dpi, metadata=metadata))


def read_results(path: str | os.PathLike | Sequence[str | os.PathLike], required: Sequence[str]) -> pd.DataFrame:
    """One or more result CSVs (rows concatenated) with at least the ``required`` columns.

    Raises:
        GFLError: a file is missing, unreadable, empty or lacks a column.
    """
    if not isinstance(path, (str, os.PathLike)):
        return pd.concat([read_results(p, required) for p in path], ignore_index=True)
    path = Path(path)
    try:
        df = pd.read_csv(path)
    except FileNotFoundError:
        raise GFLError(f"{path}: no such file; give a CSV written by a gflkit command") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise GFLError(f"{path}: not a readable CSV ({type(err).__name__}); give a CSV written by a gflkit command") from None
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise GFLError(f"{path}: missing column(s) {', '.join(missing)}; found {', '.join(map(str, df.columns))}")
    if df.empty:
        raise GFLError(f"{path}: no rows to plot")
    return df


def _source(path) -> str:
    """A file, or several, as named in error messages."""
    return str(path) if isinstance(path, (str, os.PathLike)) else ", ".join(map(str, path))


def series_key(row: pd.Series) -> str:
    """The short name of a result row's series: its variant, else its model.

    A GFL row with an aggregator is ``gfl-mean`` or ``gfl-att``; a model
    without one (Protonet, baselines) keeps its name.
    """
    if isinstance(row.get("variant"), str) and row["variant"]:
        return row["variant"]
    model = str(row["model"])
    aggregator = row.get("aggregator")
    if isinstance(aggregator, str) and aggregator and not model.endswith(f"-{aggregator}"):
        return f"{model}-{aggregator}"
    return model


def series_label(row: pd.Series) -> str:
    """What a result row is called in a legend: the paper's name of its model or variant."""
    key = series_key(row)
    if isinstance(row.get("variant"), str) and row["variant"]:
        description = row.get("description")
        return description if isinstance(description, str) and description else VARIANT_NAMES.get(key, key)
    return MODEL_NAMES.get(key, key)


def _aggregate(df: pd.DataFrame, source, keys: Sequence[str]) -> tuple[pd.DataFrame, str]:
    """One row per series and ``keys``: the mean over seeds when there are several.

    Returns the rows (columns ``key, label, accuracy, ci95, n_seeds`` and
    ``keys``) and a note saying what the intervals are.

    Raises:
        GFLError: two rows share series, keys and seed (two splits or files?).
    """
    df = df.assign(key=df.apply(series_key, axis=1), label=df.apply(series_label, axis=1))
    seeds = ["seed"] if "seed" in df.columns else []
    dup = df.duplicated(["key", *keys, *seeds], keep=False)
    if dup.any():
        first = df[dup].iloc[0]
        where = ", ".join(f"{k}={first[k]}" for k in [*keys, *seeds])
        hint = "several splits or the same seed twice?" if seeds else "several seeds? keep the seed column"
        raise GFLError(f"{source}: several rows for {first['key']} at {where} ({hint}); keep one row each")
    rows = []
    for _, group in df.groupby(["key", *keys], sort=False, dropna=False):
        first = group.iloc[0]
        if len(group) > 1:
            accuracy, ci95, _ = mean_ci(group["accuracy"].to_numpy(dtype=float))
        else:
            accuracy, ci95 = float(first["accuracy"]), float(np.nan_to_num(first["ci95"]))
        rows.append({"key": first["key"], "label": first["label"], **{k: first[k] for k in keys},
                     "accuracy": accuracy, "ci95": ci95, "n_seeds": len(group)})
    out = pd.DataFrame(rows)
    n = sorted(out["n_seeds"].unique())
    if n == [1]:
        seed_list = sorted(df["seed"].unique()) if seeds else []
        over = sorted(df["ci_over"].dropna().unique()) if "ci_over" in df.columns else []
        note = (f"seed {seed_list[0]}; " if len(seed_list) == 1 else "") + \
            f"intervals: 95% CI over {' / '.join(over) if over else 'test graphs'}"
    else:
        seed_list = ", ".join(map(str, sorted(df["seed"].unique())))
        note = f"mean of {'/'.join(map(str, n))} seeds ({seed_list}); intervals: 95% CI over seeds"
    return out, note


def _accuracy_axis_label(values: pd.Series) -> str:
    return "accuracy (%)" if values.max() > 1.5 else "accuracy"


def _datasets(df: pd.DataFrame) -> list:
    """Datasets in the order the tables list them (``[None]`` without a dataset column)."""
    return list(dict.fromkeys(df["dataset"])) if "dataset" in df.columns else [None]


def _rows_of(df: pd.DataFrame, dataset) -> pd.DataFrame:
    return df if dataset is None else df[df["dataset"] == dataset]


def _series_order(df: pd.DataFrame) -> list[str]:
    """Series keys: known models and variants in the paper's order, then the rest as first seen."""
    known = [k for k in (*VARIANT_NAMES, *MODEL_NAMES) if k in set(df["key"])]
    return known + [k for k in dict.fromkeys(df["key"]) if k not in known]


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


def plot_shots(path, output: str | os.PathLike, *, fmt: str | None = None, dpi: int = 150) -> Path:
    """Accuracy against shots, one line with a 95% CI band per model (Figure 3).

    Args:
        path: CSV (or a list of CSVs) with ``model, k_shot, accuracy, ci95``
            (a ``dataset`` column gives one panel per dataset; sweep tables
            with a ``param`` column are reduced to their k-shot rows; several
            seeds are averaged).
        output: the figure to write.
        fmt: ``png``, ``pdf`` or ``svg`` (default: from the suffix of ``output``).
        dpi: resolution of PNG output.
    """
    figure_format(output, fmt)
    df = read_results(path, ["model", "k_shot", "accuracy", "ci95"])
    if "param" in df.columns:
        df = df[df["param"].isin(_SHOT_PARAMS)]
        if df.empty:
            raise GFLError(f"{_source(path)}: no rows with param k-shot; plot a sweep over --param k-shot")
    keys = ["k_shot", "dataset"] if "dataset" in df.columns else ["k_shot"]
    df, note = _aggregate(df, _source(path), keys)
    datasets = _datasets(df)
    order = _series_order(df)
    labels = dict(zip(df["key"], df["label"]))
    fig = new_figure(4.2 * len(datasets) + 2.0, 3.6)
    axes = fig.subplots(1, len(datasets), squeeze=False)[0]
    handles = {}
    for ax, dataset in zip(axes, datasets):
        rows = _rows_of(df, dataset)
        for key in order:
            line = rows[rows["key"] == key].sort_values("k_shot")
            if line.empty:
                continue
            x, y, ci = line["k_shot"].to_numpy(), line["accuracy"].to_numpy(), line["ci95"].fillna(0).to_numpy()
            (handles[key],) = ax.plot(x, y, marker="o", color=color_of(key), label=labels[key])
            ax.fill_between(x, y - ci, y + ci, color=color_of(key), alpha=0.15, linewidth=0)
        ax.set_xticks(sorted(rows["k_shot"].unique()))
        ax.set_xlabel("shots (labelled nodes per class)")
        ax.set_ylabel(_accuracy_axis_label(df["accuracy"]))
        ax.grid(alpha=0.3)
        if dataset is not None:
            ax.set_title(str(dataset))
    keys = [k for k in order if k in handles]
    axes[-1].legend([handles[k] for k in keys], [labels[k] for k in keys], fontsize="small", loc="upper left",
                    bbox_to_anchor=(1.02, 1.0), title="model")
    fig.supxlabel(note, fontsize="x-small", color="0.35")
    return save_figure(fig, output, fmt, dpi)


def plot_bars(path, output: str | os.PathLike, *, fmt: str | None = None, dpi: int = 150) -> Path:
    """Bars of accuracy with 95% CI error bars, one group per dataset.

    The y axis starts above 0 when the bars differ by little (see
    :func:`_value_limits`), so small differences stay visible; each bar then
    carries its value.

    Args:
        path: CSV (or a list of CSVs) of ``compare`` rows (``model, accuracy,
            ci95``, optionally ``aggregator``, ``dataset``) or ``ablate`` rows
            (with ``variant``); several seeds are averaged.
        output: the figure to write.
        fmt: ``png``, ``pdf`` or ``svg`` (default: from the suffix of ``output``).
        dpi: resolution of PNG output.
    """
    figure_format(output, fmt)
    df = read_results(path, ["accuracy", "ci95"])
    if "variant" not in df.columns and "model" not in df.columns:
        raise GFLError(f"{_source(path)}: needs a 'model' column (compare output) "
                       f"or a 'variant' column (ablate output)")
    title = "variant" if "variant" in df.columns else "model"
    df, note = _aggregate(df, _source(path), ["dataset"] if "dataset" in df.columns else [])
    datasets = _datasets(df)
    order = _series_order(df)
    labels = dict(zip(df["key"], df["label"]))
    width = 0.8 / len(order)
    fig = new_figure(max(4.0, 1.2 + 0.25 * len(order) * len(datasets)) + 3.0, 3.8)
    ax = fig.subplots()
    limits = _value_limits((df["accuracy"] - df["ci95"]).to_numpy(), (df["accuracy"] + df["ci95"]).to_numpy())
    for i, key in enumerate(order):
        xs, ys, cis = [], [], []
        for j, dataset in enumerate(datasets):
            row = _rows_of(df, dataset)
            row = row[row["key"] == key]
            if len(row):
                xs.append(j + (i - (len(order) - 1) / 2) * width)
                ys.append(float(row["accuracy"].iloc[0]))
                cis.append(float(row["ci95"].iloc[0]))
        bars = ax.bar(xs, ys, width, yerr=cis, capsize=3, label=labels[key], color=color_of(key),
                      error_kw={"elinewidth": 0.8, "ecolor": "0.25"})
        if limits is not None:
            ax.bar_label(bars, fmt="%.1f", label_type="center", fontsize="x-small", rotation=90)
    if limits is not None:
        ax.set_ylim(*limits)
    ax.set_xticks(range(len(datasets)), ["" if d is None else str(d) for d in datasets])
    ax.set_ylabel(_accuracy_axis_label(df["accuracy"]))
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", title=title, loc="upper left",
              bbox_to_anchor=(1.02, 1.0))
    fig.supxlabel(note + ("" if limits is None else "; y axis does not start at 0"), fontsize="x-small",
                  color="0.35")
    return save_figure(fig, output, fmt, dpi)
