"""Figures of the paper from gflkit's result tables and checkpoints.

* :func:`plot_shots`: accuracy against shots with 95% CI bands, one line per
  model (paper Figure 3), from a k-shot sweep table.
* :func:`plot_bars`: accuracy per model (``compare`` rows) or per variant
  (``ablate`` rows) with CI error bars, one group per dataset.
* :func:`plot_tsne`: 2-D t-SNE of a run's node embeddings on one graph, one
  panel per class, positives against sampled negatives (paper Figure 4).

matplotlib and scikit-learn are an optional extra (``pip install
'gflkit[plot]'``) and are imported only when a figure is drawn. Figures are
built on :class:`matplotlib.figure.Figure` (no pyplot state) and written
atomically as PNG.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .errors import GFLError
from .utils import atomic_write_with

__all__ = [
    "require", "read_results", "series_label", "plot_shots", "plot_bars", "plot_tsne",
    "tsne_panels", "save_figure",
]

_EXTRA = "pip install 'gflkit[plot]'"
_SHOT_PARAMS = ("k-shot", "k_shot")


def require(module: str, package: str) -> Any:
    """Import ``module`` or raise a one-line :class:`GFLError` naming ``package``."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise GFLError(f"plotting needs {package}, which is not installed: run {_EXTRA}") from None


def _figure(width: float, height: float):
    figure = require("matplotlib.figure", "matplotlib")
    return figure.Figure(figsize=(width, height), layout="constrained")


def save_figure(fig, path: str | os.PathLike) -> Path:
    """Write ``fig`` as PNG to ``path`` through a temporary file and a rename."""
    return atomic_write_with(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))


def read_results(path: str | os.PathLike, required: Sequence[str]) -> pd.DataFrame:
    """A result CSV with at least the ``required`` columns.

    Raises:
        GFLError: the file is missing, unreadable, empty or lacks a column.
    """
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


def series_label(row: pd.Series) -> str:
    """What a result row is called in a legend: its variant, else its model.

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


def _labelled(df: pd.DataFrame, source: Path, keys: Sequence[str]) -> pd.DataFrame:
    """``df`` with a ``label`` column; raises when two rows share label and keys."""
    df = df.assign(label=df.apply(series_label, axis=1))
    dup = df.duplicated(["label", *keys], keep=False)
    if dup.any():
        first = df[dup].iloc[0]
        where = ", ".join(f"{k}={first[k]}" for k in keys)
        raise GFLError(
            f"{source}: several rows for {first['label']} at {where} (several seeds or splits?); "
            f"keep one row each"
        )
    return df


def _colors(n: int) -> list:
    """``n`` distinct colours, the same label keeping its colour across panels."""
    cmap = require("matplotlib", "matplotlib").colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _accuracy_axis_label(values: pd.Series) -> str:
    return "accuracy (%)" if values.max() > 1.5 else "accuracy"


def _datasets(df: pd.DataFrame) -> list:
    return sorted(df["dataset"].unique(), key=str) if "dataset" in df.columns else [None]


def _rows_of(df: pd.DataFrame, dataset) -> pd.DataFrame:
    return df if dataset is None else df[df["dataset"] == dataset]


def plot_shots(path: str | os.PathLike, output: str | os.PathLike) -> Path:
    """Accuracy against shots, one line with a 95% CI band per model (Figure 3).

    Args:
        path: CSV with ``model, k_shot, accuracy, ci95`` (a ``dataset`` column
            gives one panel per dataset; sweep tables with a ``param`` column
            are reduced to their k-shot rows).
        output: the PNG to write.
    """
    path = Path(path)
    df = read_results(path, ["model", "k_shot", "accuracy", "ci95"])
    if "param" in df.columns:
        df = df[df["param"].isin(_SHOT_PARAMS)]
        if df.empty:
            raise GFLError(f"{path}: no rows with param k-shot; plot a sweep over --param k-shot")
    df = _labelled(df, path, ["k_shot", "dataset"] if "dataset" in df.columns else ["k_shot"])
    datasets = _datasets(df)
    labels = sorted(df["label"].unique())
    colors = _colors(len(labels))
    fig = _figure(4.2 * len(datasets) + 1.4, 3.4)
    axes = fig.subplots(1, len(datasets), squeeze=False)[0]
    handles = {}
    for ax, dataset in zip(axes, datasets):
        rows = _rows_of(df, dataset)
        for i, label in enumerate(labels):
            line = rows[rows["label"] == label].sort_values("k_shot")
            if line.empty:
                continue
            x, y, ci = line["k_shot"].to_numpy(), line["accuracy"].to_numpy(), line["ci95"].fillna(0).to_numpy()
            (handles[label],) = ax.plot(x, y, marker="o", color=colors[i], label=label)
            ax.fill_between(x, y - ci, y + ci, color=colors[i], alpha=0.2, linewidth=0)
        ax.set_xticks(sorted(rows["k_shot"].unique()))
        ax.set_xlabel("shots (labelled nodes per class)")
        ax.set_ylabel(_accuracy_axis_label(df["accuracy"]))
        ax.grid(alpha=0.3)
        if dataset is not None:
            ax.set_title(str(dataset))
    axes[-1].legend([handles[k] for k in labels], labels, fontsize="small", loc="upper left",
                    bbox_to_anchor=(1.02, 1.0), title="model")
    return save_figure(fig, output)


def plot_bars(path: str | os.PathLike, output: str | os.PathLike) -> Path:
    """Bars of accuracy with 95% CI error bars, one group per dataset.

    Args:
        path: ``compare`` rows (``model, accuracy, ci95``, optionally
            ``aggregator``, ``dataset``) or ``ablate`` rows (with ``variant``).
        output: the PNG to write.
    """
    path = Path(path)
    df = read_results(path, ["accuracy", "ci95"])
    if "variant" not in df.columns and "model" not in df.columns:
        raise GFLError(f"{path}: needs a 'model' column (compare output) or a 'variant' column (ablate output)")
    df = _labelled(df, path, ["dataset"] if "dataset" in df.columns else [])
    datasets = _datasets(df)
    labels = list(dict.fromkeys(df["label"]))  # first-seen order, as the command wrote them
    width = 0.8 / len(labels)
    fig = _figure(max(4.0, 1.2 + 0.45 * len(labels) * len(datasets)) + 1.4, 3.6)
    ax = fig.subplots()
    colors = _colors(len(labels))
    for i, label in enumerate(labels):
        xs, ys, cis = [], [], []
        for j, dataset in enumerate(datasets):
            row = _rows_of(df, dataset)
            row = row[row["label"] == label]
            if len(row):
                xs.append(j + (i - (len(labels) - 1) / 2) * width)
                ys.append(float(row["accuracy"].iloc[0]))
                cis.append(float(np.nan_to_num(row["ci95"].iloc[0])))
        ax.bar(xs, ys, width, yerr=cis, capsize=3, label=label, color=colors[i])
    ax.set_xticks(range(len(datasets)), ["" if d is None else str(d) for d in datasets])
    ax.set_ylabel(_accuracy_axis_label(df["accuracy"]))
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", title="variant" if "variant" in df.columns else "model", loc="upper left",
              bbox_to_anchor=(1.02, 1.0))
    return save_figure(fig, output)


def tsne_panels(z: np.ndarray, label: np.ndarray, num_classes: int, negatives: int = 1000,
                seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per class, 2-D t-SNE coordinates of its nodes and of sampled others.

    The positives of class ``c`` are all its nodes; the negatives are up to
    ``negatives`` labelled nodes of other classes, drawn from
    ``default_rng([seed, c])``. Each class gets its own t-SNE (seeded with
    ``seed``), as in the paper's Figure 4.

    Shapes:
        z: ``(N, d)``; label: ``(N,)`` with ``-1`` unlabelled. Returns per
        class ``(positives (P, 2), negatives (M, 2))``.
    """
    manifold = require("sklearn.manifold", "scikit-learn")
    panels = []
    for c in range(num_classes):
        pos = np.flatnonzero(label == c)
        others = np.flatnonzero((label >= 0) & (label != c))
        rng = np.random.default_rng([seed, c])
        neg = np.sort(rng.choice(others, size=min(negatives, others.size), replace=False))
        points = z[np.concatenate([pos, neg])]
        if len(points) < 3:
            raise GFLError(f"class {c} has too few nodes for a t-SNE panel ({len(points)}); choose another graph")
        perplexity = float(min(30.0, (len(points) - 1) / 3))
        xy = manifold.TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed).fit_transform(points)
        panels.append((xy[: pos.size], xy[pos.size:]))
    return panels


def _load_gfl(run: str | os.PathLike):
    """A GFL model and its metadata from a run folder or checkpoint."""
    from .models.gfl import GFL
    from .runs import load_checkpoint

    model, meta = load_checkpoint(run)
    if not isinstance(model, GFL):
        raise GFLError(f"{run}: t-SNE needs a GFL checkpoint (gfl, protonet), not the baseline {meta.get('model')!r}")
    return model, meta


def _run_name(meta: dict[str, Any]) -> str:
    name = str(meta.get("model", "gfl"))
    cfg = meta.get("model_config") or {}
    if name == "gfl" and cfg.get("gate", True) and cfg.get("aggregator"):
        name = f"{name}-{cfg['aggregator']}"
    return name


def _embeddings(model, run, collection, graph_id: int) -> np.ndarray:
    """``(N, d)`` node embeddings of one graph of ``collection``."""
    import torch

    from .batching import prepare_graph

    if model.in_feats != collection.feat_size:
        raise GFLError(
            f"{run}: the model expects {model.in_feats} features per node but collection "
            f"{collection.name!r} has {collection.feat_size}; give the collection the run was trained on"
        )
    with torch.no_grad():
        return model.embed(prepare_graph(collection.graphs[graph_id])).numpy()


def _collection_for(meta: dict[str, Any], data, root):
    """DATA, else the run's own collection when it is found by name, else the built-in family."""
    from .data import load_collection
    from .paths import processed_dir

    name = meta.get("dataset")
    if data is None and name and (processed_dir(str(name), root) / "manifest.json").is_file():
        data = str(name)
    return load_collection(data, root)


def plot_tsne(run: str | os.PathLike, output: str | os.PathLike, data=None, *,
              baseline_run: str | os.PathLike | None = None, graph_id: int | None = None,
              negatives: int = 1000, seed: int = 0, root: str | os.PathLike | None = None) -> Path:
    """t-SNE of node embeddings on one graph, one row per run (paper Figure 4).

    Args:
        run: GFL run folder or checkpoint.
        output: the PNG to write.
        data: collection (default: the run's own when found, else the built-in family).
        baseline_run: a second GFL checkpoint (e.g. Protonet) drawn as a second row.
        graph_id: the graph (default: the first test graph).
        negatives: most negative nodes per class panel.
        seed: seed of the negative draw and of t-SNE.
        root: data root for collection names.
    """
    runs = [run] if baseline_run is None else [run, baseline_run]
    models = [_load_gfl(r) for r in runs]
    collection = _collection_for(models[0][1], data, root)
    if graph_id is None:
        test = collection.graph_ids("test")
        if not test:
            raise GFLError(f"collection {collection.name!r} has no test graphs; choose one with --graph-id")
        graph_id = test[0]
    if not 0 <= graph_id < len(collection):
        raise GFLError(f"--graph-id {graph_id}: collection {collection.name!r} has graphs 0..{len(collection) - 1}")
    label = collection.graphs[graph_id].ndata["label"].numpy()
    rows = []
    for r, (model, meta) in zip(runs, models):
        z = _embeddings(model, r, collection, graph_id)
        rows.append((_run_name(meta), tsne_panels(z, label, collection.num_classes, negatives, seed)))
    c = collection.num_classes
    fig = _figure(2.6 * c, 2.6 * len(rows) + 0.4)
    axes = fig.subplots(len(rows), c, squeeze=False)
    for i, (name, panels) in enumerate(rows):
        for k, (pos, neg) in enumerate(panels):
            ax = axes[i][k]
            ax.scatter(neg[:, 0], neg[:, 1], s=6, c="tab:gray", alpha=0.5, linewidths=0, label="other classes")
            ax.scatter(pos[:, 0], pos[:, 1], s=6, c="tab:red", alpha=0.8, linewidths=0, label="this class")
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_title(str(collection.classes[k]), fontsize="medium")
            if k == 0:
                ax.set_ylabel(name)
    axes[0][0].legend(fontsize="x-small", markerscale=3, loc="best")
    fig.suptitle(f"{collection.name}, graph {graph_id}: t-SNE of node embeddings", fontsize="medium")
    return save_figure(fig, output)
