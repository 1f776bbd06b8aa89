"""A user's own graph tables (CSV or Parquet) -> one large graph or a collection.

Two tables: edges (``src``, ``dst``, optional ``graph``) and nodes (``id``,
optional ``graph``, ``label``, feature columns). Features come from feature
columns (a name prefix or a list) or from a separate file: ``.npy`` /
scipy-sparse ``.npz`` / ``.json`` (node id -> active feature ids). How a
feature file's rows map to nodes is the *feature key*:

* ``row``: row ``i`` belongs to the node of the node table's ``i``-th data row
  (the default when a node table is given and the file is ``.npy``/``.npz``);
* ``node``: row ``i`` (or JSON key ``i``) is node id ``i`` (the default for
  JSON and without a node table). Refused when ids restart in every graph;
* ``graph-node``: an ``.npz`` archive of one dense array per graph name, row =
  node id inside that graph.

Sparse or wide features are reduced with a seeded randomized SVD, fitted once
and kept as a :class:`~gflkit.data.transform.FeatureTransform`; a transform
given by the caller (``--features-from``, ``predict``) is applied instead.

Without a graph column the tables describe one large graph
(:func:`read_table_graph`, cut into a family by
:func:`gflkit.data.sampling.sample_family`); with one, every graph is kept as
it is (:func:`read_table_collection`), or its graphs are the networks of a
cross-network collection (:mod:`gflkit.data.sources.cross_network`). Node ids are non-negative integers,
unique within a graph. Labels map to classes sorted by name (by value when all
labels are integers); an empty cell, ``NaN`` and the ``unlabelled`` markers
(default ``-1``) mean unlabelled. Malformed rows are counted in the returned
report, never fatal.

A numeric label column (a count, a score) can be binned into quantile classes
(``TableColumns.label_quantiles``, as Geom-GCN bins the Wikipedia networks'
traffic into 5 classes): see :func:`gflkit.data.sources.table_labels.quantile_classes`. The bins are recorded in
the manifest (``meta.label_bins``).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ...errors import GFLError
from ..collection import SPLITS, GraphCollection, build_graph
from ..sampling import record_overlap
from ..transform import FeatureTransform, attach_transform, fitted_on
from ..validate import check_edges, guard_reader, reading
from .base import BadInputReport, SourceGraph
from .table_features import finish_features, node_features
from .table_io import add_lines, column, existing_file, int_column, read_table
from .table_labels import node_labels
from .table_nodes import TableColumns, implicit_nodes, node_positions, node_rows, read_node_table

__all__ = ["TableColumns", "read_table_graph", "read_table_collection"]

log = logging.getLogger(__name__)


@dataclass
class _Tables:
    code: np.ndarray  # (n,) graph code of each node, sorted; nodes sorted by (code, id)
    node_id: np.ndarray  # (n,) the node ids as given
    graph_names: list[str]
    feat: object  # (n, d) raw features, dense or scipy sparse
    label: torch.Tensor  # (n,)
    classes: list[str]
    src: np.ndarray  # (E,) node positions
    dst: np.ndarray
    node_split: list[str]  # split column value of each node ("" when absent)
    report: BadInputReport
    label_bins: dict | None = None  # the quantile bins of a binned label column


def _read(edges, nodes, features, cols: TableColumns, classes, featureless: bool = False) -> _Tables:
    edges = existing_file(edges, "edge table", f"put your edges (columns {cols.src},{cols.dst}) there or pass `edges`")
    if nodes is not None:
        nodes = existing_file(nodes, "node table",
                              f"put your nodes (columns {cols.id},{cols.label},...) there or pass `nodes`")
    if features is not None:
        features = existing_file(features, "feature file", "check `features`")
    report = BadInputReport()
    nd = None
    if nodes is not None:
        with reading(nodes):  # whatever fails in there is the node table's
            nd = read_node_table(nodes, cols, report)
    edf, elines = read_table(edges, report)
    src = int_column(column(edf, cols.src, edges, "`src_col`"), elines, "non-numeric node id", report, edges.name)
    dst = int_column(column(edf, cols.dst, edges, "`dst_col`"), elines, "non-numeric node id", report, edges.name)
    nd = nd or implicit_nodes(src, dst, cols, features, report, edges)
    if cols.graph:
        egraph = column(edf, cols.graph, edges, "`graph_col`").str.strip().to_numpy()
        index = {g: i for i, g in enumerate(nd.names)}
        ecode = np.array([index.get(g, -1) for g in egraph], dtype=np.int64)
    else:
        ecode = np.zeros(len(src), np.int64)
    rows = node_rows(nd, report)
    with reading(nodes or edges):
        label, class_list, bins = node_labels(nd, rows, cols, classes, report)
    with reading(features or nodes or edges):  # the feature file, else the node table's feature columns
        no_features = featureless and features is None and (cols.features is None or nd.frame is None)
        feat = np.zeros((len(rows), 0), np.float32) if no_features else node_features(nd, rows, features, cols, report)

    code, node_id = nd.code[rows], nd.ids[rows]
    if nd.frame is None:  # nodes 0..n-1: an id is its node's position
        pos = [np.where((e >= 0) & (e < len(node_id)), e, -1) for e in (src, dst)]
    else:
        pos = [node_positions(code, node_id, ecode, e) for e in (src, dst)]
    known = (pos[0] >= 0) & (pos[1] >= 0)
    valid_ids = (src >= 0) & (dst >= 0)
    add_lines(report, "edge to unknown node", edges.name, elines[valid_ids & ~known])
    add_lines(report, "self-loop (dropped)", edges.name, elines[known & (pos[0] == pos[1])])
    check_edges(edges, int((known & (pos[0] != pos[1])).sum()), int(edf.attrs.get("records", len(edf))), log=log,
                unit="data rows")
    split = column(nd.frame, cols.split, nodes, "`split_col`").str.strip().to_numpy()[rows] if cols.split else []
    return _Tables(code, node_id, nd.names, feat, torch.from_numpy(label), class_list,
                   pos[0][known], pos[1][known], list(split), report, bins)



@guard_reader
def read_table_graph(edges, nodes=None, *, features=None, columns: TableColumns = TableColumns(), classes=None,
                     feat_size: int | None = None, seed: int = 0, name: str = "tables",
                     transform: FeatureTransform | None = None, fit: bool = True,
                     optional_transform: bool = False, featureless: bool = False) -> SourceGraph:
    """One large graph from an edge table and a node table (see module docstring).

    Args:
        edges, nodes: CSV/TSV or Parquet files. Without a node table the nodes
            are ``0..n-1``: ``n`` rows of the feature file, else the largest id
            of the edges (and JSON keys) plus one.
        features: optional ``.npy``/``.npz``/``.json`` feature file.
        columns: column names and layout.
        classes: the class list; labels outside it are counted and unlabelled.
        feat_size: reduce features to this many dimensions (default: 128 for
            sparse features, else keep them).
        seed: seed of the feature reduction.
        name: default name of the collections cut from it.
        transform: a saved transform to apply instead of fitting one.
        fit: fit a reduction when ``transform`` is ``None`` (else keep raw features).
        optional_transform: apply ``transform`` only when the features have its
            input size, else keep them (the caller checks them).
        featureless: without a feature file or feature columns, give features of width 0
            (else that is an error).

    Returns:
        The graph; ``source.transform`` is the transform its features went through.
    """
    t = _read(edges, nodes, features, columns, classes, featureless)
    feat, used = finish_features(t.feat, feat_size, seed, transform, fit, str(features or nodes),
                                  optional_transform, fitted_on=fitted_on("all"))
    g = build_graph(t.src, t.dst, len(t.node_id), feat, t.label)
    g.ndata["orig_id"] = torch.from_numpy(t.node_id)
    meta = {"files": [str(f) for f in (edges, nodes, features) if f]}
    if t.label_bins is not None:
        meta["label_bins"] = t.label_bins
    if used is not None:
        meta["feature_transform"] = used.describe()
    return SourceGraph(g, t.classes, name, "tables", t.report, meta, transform=used)


def small_classes(collection: GraphCollection, k_shot: int = 10) -> str | None:
    """One line naming the classes with fewer than ``k_shot + 1`` labelled nodes in every graph, or ``None``.

    Episodes need ``k_shot`` support nodes and one query per class, so every
    graph is skipped for such a class.
    """
    most = np.zeros(collection.num_classes, dtype=np.int64)
    for g in collection.graphs:
        label = g.ndata["label"].numpy()
        most = np.maximum(most, np.bincount(label[label >= 0], minlength=collection.num_classes))
    few = [f"{collection.classes[c]!r} (at most {int(most[c])})" for c in np.flatnonzero(most < k_shot + 1)]
    if not few:
        return None
    return (f"class(es) {', '.join(few)} have fewer than k_shot + 1 = {k_shot + 1} labelled nodes in every graph: "
            f"episodes with `k_shot={k_shot}` skip every graph for them; lower `k_shot` or drop them with `classes`")


@guard_reader
def read_table_collection(edges, nodes, *, features=None, columns: TableColumns, classes=None,
                          feat_size: int | None = None, n_graphs: Sequence[int] | None = None, seed: int = 0,
                          name: str = "tables", transform: FeatureTransform | None = None, fit: bool = True,
                          k_shot: int = 10) -> tuple[GraphCollection, BadInputReport]:
    """Many graphs (one per value of ``columns.graph``), kept as they are.

    Splits come from ``columns.split`` (per graph, its first node's value), else
    graphs sorted by name are shuffled with ``default_rng([seed, 5])`` and the
    first ``n_graphs[0]`` go to train, the next ``n_graphs[1]`` to val, then
    ``n_graphs[2]`` to test (default about 70/10/20 %). Features go through
    ``transform`` when given, else through a reduction fitted on the nodes of
    the train graphs only and applied to every graph, as in a cross-network
    collection (the manifest's ``meta.feature_transform.fitted_on`` and
    ``fitted_graphs`` say so; without a train graph it is fitted on all graphs,
    with a warning). Classes with fewer than ``k_shot + 1`` labelled nodes in
    every graph are named in one logged warning (:func:`small_classes`).
    """
    if not columns.graph:
        raise GFLError("reading many graphs needs a graph column (`graph_col`)")
    t = _read(edges, nodes, features, columns, classes)
    slices = GraphSlices.of(t)
    bounds = slices.bounds
    splits = _assign_splits(t, bounds, n_graphs, seed, columns.split)
    train = [i for i, s in enumerate(splits) if s == "train"]
    if train:
        rows, fitted = graph_rows(bounds, train), fitted_on("train", [t.graph_names[i] for i in train])
    else:
        rows, fitted = None, fitted_on("all")
        if fit and transform is None:
            log.warning("%s: no train graph; the feature reduction is fitted on every graph", nodes)
    feat, used = finish_features(t.feat, feat_size, seed, transform, fit, str(features or nodes), fit_rows=rows,
                                  fitted_on=fitted)
    graphs, extras, order = [], [], [(s, i) for s in SPLITS for i, sp_ in enumerate(splits) if sp_ == s]
    for _, i in order:
        g = table_subgraph(t, feat, i, slices)
        g.ndata["orig_id"] = torch.from_numpy(t.node_id[bounds[i]:bounds[i + 1]])
        graphs.append(g)
        extras.append({"graph_name": t.graph_names[i]})
    if not graphs:
        raise GFLError(f"{nodes}: no graph left to keep; check `graph_col` and `n_graphs`")
    collection = GraphCollection(graphs, [s for s, _ in order], t.classes, name=name, source="tables", seed=seed,
                                 graph_extra=extras, meta={"files": [str(f) for f in (edges, nodes, features) if f]},
                                 sampler={"method": "given", "split_col": columns.split, "seed": seed})
    if t.label_bins is not None:
        collection.meta["label_bins"] = t.label_bins
    attach_transform(collection, used)
    warning = small_classes(collection, k_shot)
    if warning:
        log.warning("%s", warning)
    collection.meta["bad_input"] = t.report.as_dict()
    record_overlap(collection)
    return collection, t.report


def graph_rows(bounds: np.ndarray, graphs: Sequence[int]) -> np.ndarray:
    """The node rows of the tables' graphs ``graphs`` (positions ``bounds[i]:bounds[i + 1]``)."""
    return np.concatenate([np.arange(bounds[i], bounds[i + 1]) for i in graphs] or [np.zeros(0, np.int64)])


@dataclass
class GraphSlices:
    """Where each graph of the tables lies: nodes ``bounds[i]:bounds[i + 1]``, edges
    ``edge_order[edge_bounds[i]:edge_bounds[i + 1]]`` (nodes are sorted by graph; edges are sorted once)."""

    bounds: np.ndarray  # (G + 1,)
    edge_order: np.ndarray  # (E,)
    edge_bounds: np.ndarray  # (G + 1,)

    @classmethod
    def of(cls, t: _Tables) -> "GraphSlices":
        graphs = np.arange(len(t.graph_names) + 1)
        order = np.argsort(t.code[t.src], kind="stable")  # an edge's two ends always lie in one graph
        return cls(np.searchsorted(t.code, graphs), order, np.searchsorted(t.code[t.src][order], graphs))


def table_subgraph(t: _Tables, feat: torch.Tensor, i: int, slices: GraphSlices):
    """Graph ``i`` of the tables with its edges, features (``feat`` holds all nodes) and labels; no ``orig_id``."""
    lo, hi = int(slices.bounds[i]), int(slices.bounds[i + 1])
    e = slices.edge_order[slices.edge_bounds[i]:slices.edge_bounds[i + 1]]
    return build_graph(t.src[e] - lo, t.dst[e] - lo, hi - lo, feat[lo:hi], t.label[lo:hi])


def _assign_splits(t: _Tables, bounds, n_graphs, seed, split_col) -> list[str | None]:
    n = len(t.graph_names)
    if split_col:
        out = []
        for i in range(n):
            value = t.node_split[bounds[i]] if bounds[i + 1] > bounds[i] else ""
            if value not in SPLITS:
                t.report.add("graph with unknown split (skipped)", t.graph_names[i])
                value = None
            out.append(value)
        return out
    if n_graphs is None:
        n_val, n_test = max(1, round(0.1 * n)), max(1, round(0.2 * n))
        n_graphs = (max(n - n_val - n_test, 0), n_val, n_test)
    if sum(n_graphs) > n:
        raise GFLError(f"`n_graphs` asks for {sum(n_graphs)} graphs but the tables hold {n}")
    perm = np.random.default_rng([seed, 5]).permutation(n)
    out: list[str | None] = [None] * n
    for j, s in enumerate(s for s, k in zip(SPLITS, n_graphs) for _ in range(k)):
        out[perm[j]] = s
    return out
