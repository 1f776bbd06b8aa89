"""t-SNE of a run's node embeddings on one graph (paper Figure 4).

One panel per class shows its nodes against sampled nodes of the other
classes; a second run (e.g. Protonet) can be drawn as a second row. Needs
scikit-learn and matplotlib (``pip install 'gflkit[plot]'``).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import GFLError
from .figures import MODEL_NAMES, figure_format, new_figure, require, save_figure

__all__ = ["plot_tsne"]


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
    from ..models.gfl import GFL
    from ..runs.checkpoints import load_checkpoint

    model, meta = load_checkpoint(run)
    if not isinstance(model, GFL):
        raise GFLError(f"{run}: t-SNE needs a GFL checkpoint (gfl, protonet), not the baseline {meta.get('model')!r}")
    return model, meta


def _run_name(meta: dict[str, Any]) -> str:
    """The paper's name of a run's model (``GFL-mean``, ``Protonet``)."""
    name = str(meta.get("model", "gfl"))
    cfg = meta.get("model_config") or {}
    if name == "gfl" and cfg.get("gate", True) and cfg.get("aggregator"):
        name = f"{name}-{cfg['aggregator']}"
    return MODEL_NAMES.get(name, name)


def _embeddings(model, run, collection, graph_id: int) -> np.ndarray:
    """``(N, d)`` node embeddings of one graph of ``collection``."""
    import torch

    from ..graphs import prepare_graph

    if model.in_feats != collection.feat_size:
        raise GFLError(
            f"{run}: the model expects {model.in_feats} features per node but collection "
            f"{collection.name!r} has {collection.feat_size}; give the collection the run was trained on"
        )
    with torch.no_grad():
        return model.embed(prepare_graph(collection.graphs[graph_id])).numpy()


def _collection_for(meta: dict[str, Any], data, root):
    """DATA, else the run's own collection when it is found by name, else the built-in family."""
    from ..data import load_collection
    from ..paths import is_name, processed_dir

    name = meta.get("dataset")
    if data is None and is_name(name) and (processed_dir(name, root) / "manifest.json").is_file():
        data = str(name)
    return load_collection(data, root)


def plot_tsne(run: str | os.PathLike, output: str | os.PathLike, data=None, *,
              baseline_run: str | os.PathLike | None = None, graph_id: int | None = None,
              negatives: int = 1000, seed: int = 0, root: str | os.PathLike | None = None,
              fmt: str | None = None, dpi: int = 150) -> Path:
    """t-SNE of node embeddings on one graph, one row per run (paper Figure 4).

    Args:
        run: GFL run folder or checkpoint.
        output: the figure to write.
        data: collection (default: the run's own when found, else the built-in family).
        baseline_run: a second GFL checkpoint (e.g. Protonet) drawn as a second row.
        graph_id: the graph (default: the first test graph).
        negatives: most negative nodes per class panel.
        seed: seed of the negative draw and of t-SNE.
        root: data root for collection names.
        fmt: ``png``, ``pdf`` or ``svg`` (default: from the suffix of ``output``).
        dpi: resolution of PNG output.
    """
    figure_format(output, fmt)
    runs = [run] if baseline_run is None else [run, baseline_run]
    models = [_load_gfl(r) for r in runs]
    collection = _collection_for(models[0][1], data, root)
    if graph_id is None:
        test = collection.graph_ids("test")
        if not test:
            raise GFLError(f"collection {collection.name!r} has no test graphs; choose one with `graph_id`")
        graph_id = test[0]
    if not 0 <= graph_id < len(collection):
        raise GFLError(f"`graph_id={graph_id}`: collection {collection.name!r} has graphs 0..{len(collection) - 1}")
    label = collection.graphs[graph_id].ndata["label"].numpy()
    rows = []
    for r, (model, meta) in zip(runs, models):
        z = _embeddings(model, r, collection, graph_id)
        rows.append((_run_name(meta), tsne_panels(z, label, collection.num_classes, negatives, seed)))
    c = collection.num_classes
    fig = new_figure(2.6 * c, 2.6 * len(rows) + 0.8)
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
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles[::-1], names[::-1], loc="outside lower center", ncols=2, fontsize="small", markerscale=3,
               frameon=False)  # below the panels, never over the points
    fig.suptitle(f"{collection.name}, graph {graph_id}: t-SNE of node embeddings", fontsize="medium")
    return save_figure(fig, output, fmt, dpi)
