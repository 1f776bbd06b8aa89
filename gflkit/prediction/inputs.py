"""The graph and labels to predict on, read from files or a collection; a collection graph written as tables.

Tables are read by the same reader as ``preprocess tables``
(:func:`gflkit.data.sources.tables.read_table_graph`). A graph may come
without node features (no feature file, no feature columns): it then has
``ndata["feat"]`` of width 0, and prediction uses features computed from its
edges (:mod:`gflkit.data.structure`).
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Hashable, Mapping, Sequence

import dgl
import numpy as np
import pandas as pd

from ..data.transform import check_fingerprint, feature_fingerprint
from ..errors import GFLError

__all__ = []

log = logging.getLogger(__name__)


def graph_from_collection(spec: str, root=None) -> tuple[dgl.DGLGraph, dict[str, Any], str]:
    """``COLLECTION:GRAPH_ID`` -> the graph, the collection's fingerprint and a name for messages."""
    from ..data import load_collection

    name, sep, gid = str(spec).rpartition(":")
    if not sep or not name or not gid.strip().isdigit():
        raise GFLError(f"`graph={spec!r}`: expected COLLECTION:GRAPH_ID, e.g. facebook:25")
    collection = load_collection(name, root)
    gid = int(gid)
    if not 0 <= gid < len(collection):
        raise GFLError(f"`graph={spec}`: collection {collection.name!r} has graphs 0..{len(collection) - 1}")
    return collection.graphs[gid], feature_fingerprint(collection), f"{collection.name}:{gid}"


def read_labels(path: str | os.PathLike, node_ids: np.ndarray, *, node_col: str = "node", label_col: str = "label",
                unlabelled: Sequence[str] = ("-1",)) -> dict[str, list[int]]:
    """A ``node,label`` table -> ``{label: positions}`` (positions of the ids in ``node_ids``).

    Rows whose label is empty, NaN or an ``unlabelled`` marker are ignored.
    Unknown and repeated ids are one-line errors.
    """
    from ..data.sources.base import BadInputReport
    from ..data.sources.table_io import existing_file, read_table
    from ..data.sources.table_labels import unlabelled_mask
    from ..data.validate import ID_OUT_OF_RANGE, parse_ids

    path = existing_file(path, "labels table", "give a CSV/TSV/Parquet file with columns node,label (`labels`)")
    report = BadInputReport()
    df, lines = read_table(path, report)
    if report:
        raise GFLError(f"{path}: {report.summary()[0]}")
    col = node_col if node_col in df.columns else ("id" if "id" in df.columns else None)
    if col is None or label_col not in df.columns:
        raise GFLError(f"{path}: needs columns {node_col},{label_col} (has {', '.join(map(str, df.columns))})")
    raw = df[label_col].str.strip().to_numpy()
    keep = ~unlabelled_mask(raw, unlabelled)
    if not keep.any():
        raise GFLError(f"{path}: no labelled node ({len(df)} row(s), none with a label); give at least one "
                       f"labelled node per class")
    ids, ok, far = parse_ids(df[col])
    if (~ok & keep).any():
        j = int(np.flatnonzero(~ok & keep)[0])
        problem = ID_OUT_OF_RANGE if far[j] else "node id that is not an integer"
        raise GFLError(f"{path}:{int(lines[j])}: {problem} ({df[col].iloc[j]!r})")
    ids, raw, lines = ids[keep], raw[keep], lines[keep]
    uniq, first, counts = np.unique(ids, return_index=True, return_counts=True)
    if (counts > 1).any():
        dup = uniq[counts > 1][0]
        at = lines[ids == dup]
        raise GFLError(f"{path}: node {dup} is listed {int(counts[counts > 1][0])} times (lines "
                       f"{', '.join(map(str, at[:3]))}); keep one row per node")
    pos, missing = _lookup(node_ids, ids)
    if np.any(missing):
        j = int(np.flatnonzero(missing)[0])
        raise GFLError(f"{path}:{int(lines[j])}: node {ids[j]} is not in the graph ({int(np.sum(missing))} "
                       f"labelled id(s) are not); check the ids against the edge/node tables")
    support: dict[str, list[int]] = {}
    for p, label in zip(pos.tolist(), raw.tolist()):
        support.setdefault(str(label), []).append(p)
    return support


def support_from_labels(labels: Mapping[Hashable, Sequence[int]], classes: Sequence[str] | None, what: str):
    """``labels`` restricted to / completed with ``classes`` (a listed class without nodes is an error)."""
    if not classes:
        return dict(labels)
    out = {str(c): list(labels.get(str(c), [])) for c in classes}
    extra = sorted(set(map(str, labels)) - set(out))
    if extra:
        raise GFLError(f"{what}: labels {', '.join(map(repr, extra[:5]))} are not among `classes`")
    return out


def read_graph(predictor=None, *, edges=None, nodes=None, features=None, graph: str | None = None,
               columns=None, root=None, force: bool = False) -> tuple[dgl.DGLGraph, np.ndarray, str]:
    """The graph to predict on, from tables or ``COLLECTION:GRAPH_ID``.

    Tables are read by the same reader as ``preprocess tables``; their raw
    features go through the run's saved transform (``predictor``: a
    :class:`~gflkit.prediction.predictor.Predictor`, or ``None`` without a run).
    Without a feature file or feature columns the graph gets features of width 0.
    A collection graph's features were transformed when it was built, so its
    collection's feature fingerprint must equal the run's (unless ``force``).

    Returns:
        The graph, each node's id as the user knows it and a name for messages.
    """
    from ..data.sources.tables import TableColumns, read_table_graph

    if graph is not None:
        if edges is not None or nodes is not None or features is not None:
            raise GFLError("give either `graph=COLLECTION:GRAPH_ID` or tables (`edges`, ...), not both")
        g, fingerprint, what = graph_from_collection(graph, root)
        if predictor is not None:
            check_fingerprint(predictor.fingerprint, fingerprint, f"collection graph {what}", force)
        ids = g.ndata["orig_id"].numpy() if "orig_id" in g.ndata else np.arange(g.num_nodes(), dtype=np.int64)
        return g, ids, what
    if edges is None:
        raise GFLError("give the graph: `edges=FILE` (with `nodes`, `features`), or `graph=COLLECTION:ID`")
    columns = columns or TableColumns(label=None)
    transform = predictor.transform if predictor is not None else None
    source = read_table_graph(edges, nodes, features=features, columns=columns, transform=transform,
                              fit=False, optional_transform=True, featureless=True)
    for line in source.report.summary():  # repaired (NaN set to 0) or skipped, as when a collection is built
        log.warning("%s", line)
    dup = source.report.counts.get("duplicate node id")
    if dup:
        raise GFLError(f"{nodes}: {dup} duplicate node id(s) (first at {source.report.examples['duplicate node id'][0]}"
                       f"); keep one row per node")
    what = str(features or nodes or edges)
    if source.g.num_nodes() == 0:
        raise GFLError(f"{what}: the graph has no nodes")
    if features is not None and source.g.ndata["feat"].shape[1] == 0:
        raise GFLError(f"{what} has 0 usable features per node: fix the feature file, or leave it out to predict "
                       f"from the edges alone")
    return source.g, source.g.ndata["orig_id"].numpy(), what


def _lookup(node_ids: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of ``wanted`` in ``node_ids`` (any order) and where they are missing."""
    if len(node_ids) == 0:
        return np.zeros(len(wanted), np.int64), np.ones(len(wanted), bool)
    order = np.argsort(node_ids, kind="stable")
    at = np.minimum(np.searchsorted(node_ids, wanted, sorter=order), len(node_ids) - 1)
    pos = order[at]
    return pos, node_ids[pos] != wanted


def _positions(ids: np.ndarray, wanted: Sequence[int], what: str) -> list[int]:
    wanted = np.asarray(list(wanted), dtype=np.int64)
    pos, missing = _lookup(ids, wanted)
    if missing.any():
        raise GFLError(f"{what}: labelled node {int(wanted[missing][0])} is not in the graph")
    return pos.tolist()


def export_tables(graph: str, folder: str | os.PathLike, labels_per_class: int = 10, seed: int = 0,
                  root=None) -> list[Path]:
    """A collection graph as ``edges.csv``, ``nodes.csv`` (truth) and ``labels.csv`` (a few per class).

    Ids are ``ndata["orig_id"]`` when the graph has it (the table's ids for a
    ``--graph-col`` collection; for a sampled graph, positions in the source
    graph, which are the source's ids when those run ``0..n-1``), else positions.
    ``labels.csv`` holds ``labels_per_class`` nodes of each class: the support set of evaluation episode 0 with ``seed``
    (:func:`gflkit.episodes.sample_episode`), so predicting from it scores the
    nodes ``gflkit evaluate --seed SEED`` scores.
    """
    from ..config import EpisodeConfig
    from ..data import load_collection
    from ..episodes import sample_episode
    from ..io import atomic_write_text

    name, _, gid = str(graph).rpartition(":")
    g, _, what = graph_from_collection(graph, root)
    classes = load_collection(name, root).classes
    ids = g.ndata["orig_id"].numpy() if "orig_id" in g.ndata else np.arange(g.num_nodes())
    src, dst = g.edges()
    keep = (src < dst).numpy()  # each undirected edge once
    edges = pd.DataFrame({"src": ids[src.numpy()[keep]], "dst": ids[dst.numpy()[keep]]})
    label = g.ndata["label"].numpy()
    names = np.asarray(list(classes) + [""], dtype=object)[np.where(label >= 0, label, len(classes))]
    nodes = pd.DataFrame({"id": ids, "label": names})
    episode = sample_episode(label, len(classes), EpisodeConfig(k_shot=labels_per_class), seed=seed,
                             graph_id=int(gid), episode=0)
    chosen = episode.support.reshape(-1).numpy()
    labels = pd.DataFrame({"node": ids[chosen], "label": names[chosen]})
    folder = Path(folder)
    out = []
    for file, df in (("edges.csv", edges), ("nodes.csv", nodes), ("labels.csv", labels)):
        out.append(atomic_write_text(folder / file, df.to_csv(index=False)))
    log.info("%s: %d nodes, %d edges, %d labelled for prediction", what, len(nodes), len(edges), len(labels))
    return out
