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

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import GFLError
from ..names import VARIANT_SHORT_NAMES, display_name
# The helpers of every figure, importable from the package as before.
from .figures import (COLORS, FORMATS, MODEL_NAMES, VARIANT_NAMES, _hatch, check_resolution,  # noqa: F401
                      color_of, figure_format, new_figure, require, save_figure)
from .rows import (_accuracy_axis_label, _aggregate, _datasets, _rows_of, _seeds, _series_order,  # noqa: F401
                   _source, _value_limits, check_cells, read_results, series_key, series_label)

__all__ = ["plot_shots", "plot_bars"]

_SHOT_PARAMS = ("k-shot", "k_shot")

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
