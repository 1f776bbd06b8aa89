"""Figures of the paper from gflkit's result tables and checkpoints.

* :func:`plot_shots`: accuracy against shots with 95% CI bands, one line per
  model (paper Figure 3), from a k-shot sweep table.
* :func:`plot_bars`: accuracy per model (``compare`` rows: a group of bars
  per dataset, the legend above) or per variant (``ablate`` rows: a panel per
  dataset, the variants named under their bars) with CI error bars.
* :func:`gflkit.plotting.tsne.plot_tsne`: 2-D t-SNE of a run's node embeddings (Figure 4).

Figures use the paper's names (``GFL-mean``, ``Matching Network``, "Majority
class"; an ablation variant by what it removes, e.g. ``gate`` is "M2a: no
hierarchical representation gate"), all from :mod:`gflkit.names`
(:func:`gflkit.names.display_name`), and each model or variant has one colour
in every figure (:data:`COLORS`). Rows of one seed each are averaged per model
and x value, with the 95% CI over seeds; a row that already covers several
seeds (``seed`` "0,1,2", ``n_seeds``) keeps its own interval, as does a row of
one seed (over test graphs). The note under a figure says which, per dataset
when they differ. Result tables of every gflkit version plot: columns added
later (``n_seeds``, ``ci_over``, ``prob_improvement``) are optional.

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
from gflkit.names import FIGURE_FORMATS as FORMATS  # figure file formats: --format or the output's suffix

from ..errors import GFLError
from ..names import (MODEL_DISPLAY_NAMES, REFINE_METHODS, VARIANT_DISPLAY_NAMES, VARIANT_SHORT_NAMES,
                    display_name)
from ..evaluation.tables import mean_ci
from ..io import atomic_write_with

__all__ = ["plot_shots", "plot_bars"]

_EXTRA = "pip install 'gflkit[plot]'"
_SHOT_PARAMS = ("k-shot", "k_shot")

#: The paper's names of the models (Table 2), by series key (:data:`gflkit.names.MODEL_DISPLAY_NAMES`).
MODEL_NAMES = MODEL_DISPLAY_NAMES

#: What each ablation variant is (Table 3; :data:`gflkit.names.VARIANT_DISPLAY_NAMES`).
VARIANT_NAMES = VARIANT_DISPLAY_NAMES

#: One colour per model or variant, the same in every figure.
COLORS = {
    "gfl": "#d62728", "gfl-mean": "#d62728", "gfl-att": "#ff7f0e", "protonet": "#1f77b4", "maml": "#2ca02c",
    "matchingnet": "#9467bd", "knn": "#8c564b", "agf": "#e377c2", "transfer-head": "#393b79", "gcn": "#7f7f7f",
    "lp": "#bcbd22", "node2vec": "#17becf", "deepwalk": "#6baed6", "planetoid": "#98df8a", "majority": "#d9d9d9",
    "tlp": "#31a354", "tlp-bgrl": "#756bb1", "tlp-sup": "#e7969c",
    "full": "#d62728", "structure": "#1f77b4", "gate": "#fdae6b", "hierarchy": "#9e9ac8", "recon": "#a1d99b",
}
_SPARE = ("#637939", "#8c6d31", "#843c39", "#7b4173", "#5254a3", "#8ca252", "#bd9e39", "#ad494a")
#: Hatching of a bar: the majority-class reference, and refined rows (``protonet+lp``) by refinement.
_HATCHES = {"majority": "///"}
_REFINE_HATCHES = {"lp": "..", "cs": "xx"}


def color_of(key: str) -> str:
    """The colour of a series: fixed for known models and variants (a refined row, ``protonet+lp``,
    has its model's), else stable per name."""
    base = key.partition("+")[0]
    return COLORS.get(key) or COLORS.get(base) or _SPARE[zlib.crc32(key.encode()) % len(_SPARE)]


def _hatch(key: str) -> str | None:
    base, _, refine = key.partition("+")
    return _REFINE_HATCHES.get(refine) if refine else _HATCHES.get(base)


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
            raise GFLError(f"{path}: give a file name ending in .png, .pdf or .svg, or choose `fmt`")
        return suffix
    if fmt not in FORMATS:
        raise GFLError(f"figure format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if suffix and suffix != fmt:
        raise GFLError(f"{path}: the name ends in .{suffix} but `fmt={fmt}`; make them agree")
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
        raise GFLError(f"{path}: not a readable CSV ({type(err).__name__}); "
                       "give a CSV written by a gflkit command") from None
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
            raise GFLError(f"{_source(path)}: no rows with param k-shot; plot a sweep over `param=k-shot`")
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


def _short_label(key: str, label: str) -> str:
    """A variant's name under its bar: the two-line short form, else its label wrapped."""
    import textwrap

    return VARIANT_SHORT_NAMES.get(key) or "\n".join(textwrap.wrap(label, 16)[:3])


def _bars(ax, xs, keys: Sequence[str], rows: pd.DataFrame, width: float, labels: dict[str, str] | None = None):
    """One bar per key at ``xs``, with its 95% CI error bar, colour and hatching."""
    values = [rows[rows["key"] == k].iloc[0] for k in keys]
    ys, cis = [float(v["accuracy"]) for v in values], [float(v["ci95"]) for v in values]
    bars = ax.bar(xs, ys, width, yerr=cis, capsize=3, color=[color_of(k) for k in keys], edgecolor="0.35",
                  linewidth=0.5, error_kw={"elinewidth": 0.8, "ecolor": "0.2", "capthick": 0.8})
    for patch, key in zip(bars, keys):
        patch.set_hatch(_hatch(key))
        if labels is not None:
            patch.set_label(labels[key])
    return bars, ys, cis


def _value_labels(ax, xs, ys, cis, rotation: int) -> None:
    """Each bar's value just above the top of its error bar (so neither hides the other)."""
    for x, y, ci in zip(xs, ys, cis):
        ax.annotate(f"{y:.1f}", xy=(x, y + ci), xytext=(0, 2), textcoords="offset points", ha="center",
                    va="bottom", fontsize="x-small", rotation=rotation, color="0.15")


def _room_for_labels(limits: tuple[float, float], rotation: int) -> tuple[float, float]:
    """``limits`` with room above the highest error bar for its value label."""
    lo, hi = limits
    return lo, hi + (hi - lo) * (0.18 if rotation else 0.08)


def _variant_panels(df: pd.DataFrame, datasets: list, order: list[str]):
    """Ablation rows: a panel per dataset, the variants named under their bars (no legend)."""
    labels = dict(zip(df["key"], df["label"]))
    n = len(order)
    fig = new_figure(max(3.0, 0.95 * n) * len(datasets) + 0.7, 3.3)
    axes = fig.subplots(1, len(datasets), squeeze=False)[0]
    shifted = False
    for i, (ax, dataset) in enumerate(zip(axes, datasets)):
        rows = _rows_of(df, dataset)
        keys = [k for k in order if k in set(rows["key"])]
        xs = np.arange(len(keys))
        _, ys, cis = _bars(ax, xs, keys, rows, 0.72)
        limits = _value_limits(np.subtract(ys, cis), np.add(ys, cis))
        if limits is not None:
            shifted = True
            ax.set_ylim(*_room_for_labels(limits, 0))
            _value_labels(ax, xs, ys, cis, 0)
        ax.set_xticks(xs, [_short_label(k, labels[k]) for k in keys], fontsize="x-small")
        ax.tick_params(axis="x", length=0)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        if dataset is not None:
            ax.set_title(str(dataset), fontsize="medium")
        if i == 0:
            ax.set_ylabel(_accuracy_axis_label(df["accuracy"]))
    return fig, shifted


def _legend_columns(labels: Sequence[str], width: float) -> int:
    """Legend columns so the legend below a figure ``width`` inches wide takes as few rows as fit."""
    entry = max(len(text) for text in labels) * 0.062 + 0.4  # inches per entry at fontsize "small"
    return max(1, min(len(labels), int(width // entry)))


def _legend_entries(order: list[str], labels: dict[str, str], handles: dict) -> tuple[list, list[str]]:
    """Legend handles and texts: a bar per model, or, with refined rows (``protonet+lp``), a colour per model
    and a hatching per refinement."""
    keys = [k for k in order if k in handles]
    refines = list(dict.fromkeys(k.partition("+")[2] for k in keys if "+" in k))
    if not refines:
        return [handles[k] for k in keys], [labels[k] for k in keys]
    patches = require("matplotlib.patches", "matplotlib")
    models = list(dict.fromkeys(k.partition("+")[0] for k in keys))
    entries = [(patches.Patch(facecolor=color_of(m), edgecolor="0.35", linewidth=0.5, hatch=_hatch(m)),
                display_name(m)) for m in models]
    entries += [(patches.Patch(facecolor="white", edgecolor="0.35", linewidth=0.5, hatch=_hatch(f"+{r}")),
                 display_name(f"+{r}").strip()) for r in refines]
    return [h for h, _ in entries], [t for _, t in entries]


def _model_groups(df: pd.DataFrame, datasets: list, order: list[str]):
    """Compare rows: a group of bars per dataset, one colour per model, the legend above in rows."""
    labels = dict(zip(df["key"], df["label"]))
    n, groups = len(order), len(datasets)
    width = max(5.0, 1.2 + 0.24 * n * groups)
    _, texts = _legend_entries(order, labels, dict.fromkeys(order))
    columns = _legend_columns(texts, width)
    legend_rows = -(-len(texts) // columns)
    fig = new_figure(width, 3.4 + 0.22 * legend_rows)
    ax = fig.subplots()
    limits = _value_limits((df["accuracy"] - df["ci95"]).to_numpy(), (df["accuracy"] + df["ci95"]).to_numpy())
    bar = 0.84 / n
    rotation = 90 if bar * (width - 1.2) / groups < 0.32 else 0  # a bar too narrow for its value written across
    handles = {}
    for i, key in enumerate(order):
        present = [(j, d) for j, d in enumerate(datasets) if key in set(_rows_of(df, d)["key"])]
        for j, dataset in present:
            x = [j + (i - (n - 1) / 2) * bar]
            bars, ys, cis = _bars(ax, x, [key], _rows_of(df, dataset), bar, labels)
            handles.setdefault(key, bars[0])
            if limits is not None:
                _value_labels(ax, x, ys, cis, rotation)
    if limits is not None:
        ax.set_ylim(*_room_for_labels(limits, rotation))
    ax.set_xticks(range(groups), ["" if d is None else str(d) for d in datasets])
    ax.tick_params(axis="x", length=0)
    ax.set_ylabel(_accuracy_axis_label(df["accuracy"]))
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    fig.legend(*_legend_entries(order, labels, handles), loc="outside upper center", ncols=columns,
               fontsize="small", frameon=False, handlelength=1.4, columnspacing=1.2)
    return fig, limits is not None


def bars_figure(path):
    """The :class:`~matplotlib.figure.Figure` of :func:`plot_bars` (not written)."""
    df = read_results(path, ["accuracy", "ci95"])
    if "variant" not in df.columns and "model" not in df.columns:
        raise GFLError(f"{_source(path)}: needs a 'model' column (compare output) "
                       f"or a 'variant' column (ablate output)")
    variants = "variant" in df.columns
    df, note = _aggregate(df, _source(path), ["dataset"] if "dataset" in df.columns else [])
    datasets = _datasets(df)
    order = _series_order(df)
    fig, shifted = (_variant_panels if variants else _model_groups)(df, datasets, order)
    fig.supxlabel(note + ("; y axis does not start at 0" if shifted else ""), fontsize="x-small", color="0.35")
    return fig


def plot_bars(path, output: str | os.PathLike, *, fmt: str | None = None, dpi: int = 150) -> Path:
    """Bars of accuracy with 95% CI error bars.

    ``compare`` rows: a group of bars per dataset, one colour per model, the
    legend above in as few rows as fit. ``ablate`` rows: a panel per dataset,
    each variant named under its bar (no legend). When the bars differ by
    little the y axis starts above 0 (see :func:`_value_limits`), so small
    differences stay visible, and each bar's value is written just above its
    error bar. The note says what the intervals are.

    Args:
        path: CSV (or a list of CSVs) of ``compare`` rows (``model, accuracy,
            ci95``, optionally ``aggregator``, ``refine``, ``dataset``,
            ``seed``, ``n_seeds``, ``ci_over``) or ``ablate`` rows (with
            ``variant``); rows of one seed each are averaged.
        output: the figure to write.
        fmt: ``png``, ``pdf`` or ``svg`` (default: from the suffix of ``output``).
        dpi: resolution of PNG output.
    """
    figure_format(output, fmt)
    return save_figure(bars_figure(path), output, fmt, dpi)
