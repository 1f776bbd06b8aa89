"""Table 1 of the paper for any collection: sizes, features, classes, splits, overlap.

Edges are unique undirected edges. The paper's "# Edges" counts walk steps (the
edge lines of the release), which are reported apart as ``avg_walk_steps`` when
the collection recorded them. ``overlap_val`` / ``overlap_test`` are the shares
of distinct val / test nodes that also lie in a train graph, measured from
``ndata["orig_id"]`` (else taken from the manifest, else empty). ``networks``
names, for a cross-network collection, the networks each split was cut from
(``train=a+b;val=a+b;test=c``; empty otherwise). ``jaccard_val`` /
``jaccard_test`` are the mean pairwise Jaccard indices of the node sets of the
val / test graphs (:func:`~gflkit.data.sampling.pairwise_jaccard`, from
``orig_id`` as the overlap, else the manifest; empty with fewer than two
graphs): above :data:`~gflkit.data.sampling.JACCARD_WARN` (0.1) the graphs share
much of their nodes, and an interval over them is optimistic.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np
import pandas as pd

from .collection import SPLITS, GraphCollection
from .sampling import node_overlap, split_jaccard

__all__ = ["collection_stats"]

STATS_COLUMNS = [
    "dataset", "source", "method", "avg_nodes", "avg_edges", "avg_walk_steps", "feat_size", "num_classes",
    "n_train", "n_val", "n_test", "overlap_val", "overlap_test", "networks", "jaccard_val", "jaccard_test",
]


def _nan(value: Any) -> float:
    return math.nan if value is None else float(value)


def _networks(collection: GraphCollection) -> str:
    """``train=a+b;val=a+b;test=c``: the networks each split's graphs were cut from ("" when not recorded)."""
    if not any("network" in e for e in collection.graph_extra):
        return ""
    used = {s: [] for s in SPLITS}
    for split, extra in zip(collection.splits, collection.graph_extra):
        name = str(extra.get("network", "?"))
        if name not in used[split]:
            used[split].append(name)
    return ";".join(f"{s}={'+'.join(names)}" for s, names in used.items() if names)


def collection_stats(collection: GraphCollection) -> dict[str, Any]:
    """One row of statistics for ``collection`` (keys: :data:`STATS_COLUMNS`)."""
    graphs = collection.graphs
    nodes = [g.num_nodes() for g in graphs]
    edges = [g.num_edges() // 2 for g in graphs]  # each undirected edge is stored twice
    steps = [e["walk_steps"] for e in collection.graph_extra if e.get("walk_steps") is not None]
    overlap = node_overlap(collection)
    if overlap["val"] is None and overlap["test"] is None:
        overlap = dict(collection.meta.get("node_overlap") or {})
    jaccard = split_jaccard(collection)
    if jaccard["val"] is None and jaccard["test"] is None:
        jaccard = dict(collection.meta.get("pairwise_jaccard") or {})
    return {
        "dataset": collection.name,
        "source": collection.source,
        "method": (collection.sampler or {}).get("method", ""),
        "avg_nodes": float(np.mean(nodes)) if nodes else math.nan,
        "avg_edges": float(np.mean(edges)) if edges else math.nan,
        "avg_walk_steps": float(np.mean(steps)) if steps and len(steps) == len(graphs) else math.nan,
        "feat_size": collection.feat_size,
        "num_classes": collection.num_classes,
        **{f"n_{s}": collection.splits.count(s) for s in SPLITS},
        "overlap_val": _nan(overlap.get("val")),
        "overlap_test": _nan(overlap.get("test")),
        "networks": _networks(collection),
        "jaccard_val": _nan(jaccard.get("val")),
        "jaccard_test": _nan(jaccard.get("test")),
    }


def stats_table(collections: Iterable[GraphCollection]) -> pd.DataFrame:
    """One row per collection, columns in :data:`STATS_COLUMNS` order."""
    return pd.DataFrame([collection_stats(c) for c in collections], columns=STATS_COLUMNS)
