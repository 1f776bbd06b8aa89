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
traffic into 5 classes): see :func:`quantile_classes`. The bins are recorded in
the manifest (``meta.label_bins``).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np
import scipy.sparse as sp
import torch

from ... import names
from ...errors import GFLError
from ...io import require_memory
from ...sizes import require_at_most
from ..collection import SPLITS, GraphCollection, build_graph
from ..sampling import record_overlap
from ..transform import FeatureTransform, attach_transform, fitted_on
from ..validate import check_edges, finite_features, guard_reader, reading
from .base import BadInputReport, SourceGraph
from .table_io import (MEMORY_HINT, add_lines, column, existing_file, fit_svd, int_column, read_feature_file,
                       read_graph_feature_file, read_table, sorted_classes)

__all__ = ["TableColumns", "read_table_graph", "read_table_collection"]

log = logging.getLogger(__name__)

#: Without a node table the nodes are 0..n-1; n (the largest edge id + 1, or the feature file's
#: rows) may exceed twice the edge count by this much (isolated nodes) before it is taken for a
#: numbering that is not 0..n-1, or for a file that declares more rows than it means.
_SPARE_IDS = 1 << 20

#: Features are reduced to this many dimensions when they come as a sparse bag.
SPARSE_FEAT_SIZE = 128
#: How rows of a feature file map to nodes (see the module docstring; :data:`gflkit.names.FEATURE_KEYS`).
FEATURE_KEYS = names.FEATURE_KEYS


@dataclass(frozen=True)
class TableColumns:
    """How to read the tables: column names, feature layout, unlabelled markers.

    ``features`` is a prefix, or a list of names. ``label=None`` reads no labels.
    ``feature_key`` is one of :data:`FEATURE_KEYS` (``None``: chosen as the
    module docstring says). ``unlabelled`` lists label values that mean "no
    label", besides an empty cell and ``NaN``.
    """

    src: str = "src"
    dst: str = "dst"
    id: str = "id"
    label: str | None = "label"
    graph: str | None = None
    split: str | None = None
    features: str | Sequence[str] | None = None
    feature_key: str | None = None
    unlabelled: Sequence[str] = ("-1",)
    label_quantiles: int | None = None  # bin a numeric label column into this many quantile classes


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


@dataclass
class _Nodes:
    """Node rows: id, graph code, row in the node table and line, per data row."""

    ids: np.ndarray
    code: np.ndarray
    record: np.ndarray  # data-row index in the node table
    lines: np.ndarray
    names: list[str]
    frame: object = None  # the node table (None without one)
    path: Path | None = None
    records: int = 0  # data rows in the node table, skipped ones included


def _numeric_equal(values: np.ndarray, marker: str) -> np.ndarray:
    """Where ``values`` equal ``marker``, as text or as numbers (``-1.0`` is ``-1``)."""
    hit = values == marker
    try:
        target = float(marker)
    except ValueError:
        return hit
    import pandas as pd

    num = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    return hit | (num == target)


def unlabelled_mask(raw: np.ndarray, markers: Sequence[str]) -> np.ndarray:
    """True where a label cell means "no label": empty, ``NaN`` or one of ``markers``."""
    raw = np.asarray(raw, dtype=object).astype(str)
    mask = (raw == "") | (np.char.lower(raw.astype(str)) == "nan")
    for marker in markers:
        mask |= _numeric_equal(raw, str(marker).strip())
    return mask


def _node_table(nodes: Path, cols: TableColumns, report) -> _Nodes:
    """The rows of the node table."""
    ndf, nlines = read_table(nodes, report)
    ids = int_column(column(ndf, cols.id, nodes, "`id_col`"), nlines, "non-numeric node id", report, nodes.name)
    record = np.asarray(ndf.index, dtype=np.int64)
    records = int(ndf.attrs.get("records", len(ndf)))
    if cols.graph:
        ngraph = column(ndf, cols.graph, nodes, "`graph_col`").str.strip().to_numpy()
        names = sorted(set(ngraph[ids >= 0]))
        index = {g: i for i, g in enumerate(names)}
        code = np.array([index.get(g, -1) for g in ngraph], dtype=np.int64)
    else:
        names, code = [""], np.zeros(len(ids), np.int64)
    return _Nodes(ids, code, record, nlines, names, ndf, nodes, records)


def _implicit_nodes(src, dst, cols: TableColumns, features, report, edges: Path) -> _Nodes:
    """Without a node table: nodes ``0..n-1``, ``n`` from the feature file's rows or the edges.

    Either way ``n`` is checked against the edges before anything of that
    size is allocated (a file may declare 10^9 rows for a few edges).
    """
    if cols.graph:
        raise GFLError("reading many graphs needs a node table (`nodes`) with the graph column")
    n = _feature_rows(features, report) if features is not None else None
    if n is not None:
        if n > 2 * len(src) + _SPARE_IDS:
            raise GFLError(f"{features}: {n} feature rows for the {len(src)} edges of {edges}; without a node "
                           f"table every row is a node (ids 0..n-1): give a node table, or keep only the rows of "
                           f"the graph's nodes")
    else:
        n = int(max(src.max(initial=-1), dst.max(initial=-1))) + 1
        if n > 2 * len(src) + _SPARE_IDS:
            raise GFLError(f"{edges}: node ids run up to {n - 1} for {len(src)} edges: without a node table the "
                           f"nodes are 0..n-1; pass a node table (`nodes`) or renumber the ids")
    ids = np.arange(n, dtype=np.int64)
    return _Nodes(ids, np.zeros(n, np.int64), ids, ids + 1, [""], None, None, n)


def _feature_rows(path: Path, report) -> int | None:
    """Rows a dense or sparse feature file declares (``None`` for a JSON bag: ids come from the edges)."""
    shape = read_feature_file(path, np.zeros(0, np.int64), report, shape_only=True)
    return None if shape is None else shape[0]


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
            nd = _node_table(nodes, cols, report)
    edf, elines = read_table(edges, report)
    src = int_column(column(edf, cols.src, edges, "`src_col`"), elines, "non-numeric node id", report, edges.name)
    dst = int_column(column(edf, cols.dst, edges, "`dst_col`"), elines, "non-numeric node id", report, edges.name)
    nd = nd or _implicit_nodes(src, dst, cols, features, report, edges)
    if cols.graph:
        egraph = column(edf, cols.graph, edges, "`graph_col`").str.strip().to_numpy()
        index = {g: i for i, g in enumerate(nd.names)}
        ecode = np.array([index.get(g, -1) for g in egraph], dtype=np.int64)
    else:
        ecode = np.zeros(len(src), np.int64)
    rows = _node_rows(nd, report)
    with reading(nodes or edges):
        label, class_list, bins = _labels(nd, rows, cols, classes, report)
    with reading(features or nodes or edges):  # the feature file, else the node table's feature columns
        no_features = featureless and features is None and (cols.features is None or nd.frame is None)
        feat = np.zeros((len(rows), 0), np.float32) if no_features else _features(nd, rows, features, cols, report)

    code, node_id = nd.code[rows], nd.ids[rows]
    if nd.frame is None:  # nodes 0..n-1: an id is its node's position
        pos = [np.where((e >= 0) & (e < len(node_id)), e, -1) for e in (src, dst)]
    else:
        pos = [_positions(code, node_id, ecode, e) for e in (src, dst)]
    known = (pos[0] >= 0) & (pos[1] >= 0)
    valid_ids = (src >= 0) & (dst >= 0)
    add_lines(report, "edge to unknown node", edges.name, elines[valid_ids & ~known])
    add_lines(report, "self-loop (dropped)", edges.name, elines[known & (pos[0] == pos[1])])
    check_edges(edges, int((known & (pos[0] != pos[1])).sum()), int(edf.attrs.get("records", len(edf))), log=log,
                unit="data rows")
    split = column(nd.frame, cols.split, nodes, "`split_col`").str.strip().to_numpy()[rows] if cols.split else []
    return _Tables(code, node_id, nd.names, feat, torch.from_numpy(label), class_list,
                   pos[0][known], pos[1][known], list(split), report, bins)


def _node_rows(nd: _Nodes, report) -> np.ndarray:
    """Row of the first occurrence of every valid node, in (graph, id) order; repeats are counted."""
    if nd.frame is None:
        return nd.ids
    rows = _first_rows(nd.code, nd.ids)
    dup = np.setdiff1d(np.flatnonzero(nd.ids >= 0), rows)
    add_lines(report, "duplicate node id", nd.path.name, nd.lines[np.sort(dup)])
    return rows


def _first_rows(code: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Row of the first occurrence of every valid ``(code, id)`` pair, sorted by pair.

    Pairs are compared as pairs (a stable lexicographic sort), never packed into
    one integer, so ids up to ``2**63 - 1`` cannot overflow.
    """
    valid = np.flatnonzero((ids >= 0) & (code >= 0))
    order = valid[np.lexsort((ids[valid], code[valid]))]  # stable: equal pairs keep their row order
    c, i = code[order], ids[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (c[1:] != c[:-1]) | (i[1:] != i[:-1])
    return order[new]


def _positions(code: np.ndarray, node_id: np.ndarray, ecode: np.ndarray, eid: np.ndarray) -> np.ndarray:
    """Position of each ``(ecode, eid)`` among the nodes ``(code, node_id)``, ``-1`` when unknown."""
    import pandas as pd

    index = pd.MultiIndex.from_arrays([code, node_id])
    pos = index.get_indexer(pd.MultiIndex.from_arrays([ecode, eid])) if len(index) else np.full(len(eid), -1)
    return np.where((ecode >= 0) & (eid >= 0), pos, -1).astype(np.int64)


def quantile_classes(raw: np.ndarray, quantiles: int, where: str) -> tuple[np.ndarray, dict]:
    """Bin numeric label texts into ``quantiles`` quantile classes named ``"0"`` (lowest) upwards.

    The edges are the ``i / quantiles`` quantiles (``numpy.quantile``, linear)
    of the numeric values; a value goes to the highest bin whose lower edge it
    reaches, so equal values always share a class. When ties make edges
    coincide, the empty bins are dropped and the classes renumbered (fewer
    classes than asked; a warning says so). Empty texts stay ``""``
    (unlabelled); texts that are not finite numbers come back as ``None``.

    Args:
        raw: label texts, ``""`` for no label.
        quantiles: number of bins (>= 2).
        where: the file and column, for the error when no value is numeric.

    Returns:
        The class name of each text (``""`` unlabelled, ``None`` not a number)
        and the bins: ``quantiles``, ``edges`` (lower edge of each class, then
        the maximum), ``counts`` per class.
    """
    import pandas as pd

    given = raw != ""
    number = pd.to_numeric(pd.Series(raw, dtype=object).where(given), errors="coerce").to_numpy(dtype=np.float64)
    ok = given & np.isfinite(number)
    if not ok.any():
        first = raw[given][0] if given.any() else ""
        raise GFLError(f"{where}: no numeric label to bin into quantile classes (first value {first!r}); "
                       "give a numeric label column or leave `label_quantiles` out")
    distinct = len(np.unique(number[ok]))
    if distinct < 2:
        raise GFLError(f"{where}: every numeric label is {number[ok][0]:g}: binning gives one class, and a "
                       "collection needs at least two; give a label column whose values differ")
    require_at_most("label_quantiles", quantiles, distinct, f"{where} holds {distinct} distinct numeric labels")
    edges = np.quantile(number[ok], np.linspace(0.0, 1.0, quantiles + 1))
    lower = np.unique(edges[:-1])  # ties can make edges coincide: one class per distinct lower edge
    code = np.searchsorted(lower, number[ok], side="right") - 1
    counts = np.bincount(code, minlength=len(lower))
    keep = counts > 0
    lower, counts = lower[keep], counts[keep]
    code = np.cumsum(keep)[code] - 1
    names = np.full(len(raw), "", dtype=object)
    names[given & ~ok] = None
    names[ok] = code.astype(str)
    if len(lower) < quantiles:
        log.warning("%s: ties leave %d of %d quantile classes", where, len(lower), quantiles)
    bins = {"quantiles": quantiles, "edges": [float(x) for x in lower] + [float(edges[-1])],
            "counts": [int(c) for c in counts]}
    return names, bins


def _labels(nd: _Nodes, rows, cols: TableColumns, classes, report) -> tuple[np.ndarray, list[str], dict | None]:
    """Class index per node (``-1`` unlabelled), the class names and the quantile bins (or ``None``)."""
    if nd.frame is None or cols.label is None:
        return np.full(len(rows), -1, dtype=np.int64), [str(c) for c in classes or []], None
    raw = column(nd.frame, cols.label, nd.path, "`label_col`").str.strip().to_numpy()[rows]
    raw = np.where(unlabelled_mask(raw, cols.unlabelled), "", raw)
    bins = None
    if cols.label_quantiles:
        binned, bins = quantile_classes(raw, cols.label_quantiles, f"{nd.path}: column {cols.label!r}")
        bad = np.array([v is None for v in binned], dtype=bool)
        add_lines(report, "non-numeric label", nd.path.name, nd.lines[rows][bad])
        raw = np.where(bad, "", binned).astype(str)
        bins["column"] = cols.label
    class_list = sorted_classes(raw, classes)
    index = {c: i for i, c in enumerate(class_list)}
    label = np.array([index.get(v, -1) if v else -1 for v in raw], dtype=np.int64)
    add_lines(report, "label outside class set", nd.path.name, nd.lines[rows][(label < 0) & (raw != "")])
    if not class_list:
        raise GFLError(f"{nd.path}: no labelled node in column {cols.label!r}; set `label_col`")
    return label, class_list, bins


def _feature_key(nd: _Nodes, features: Path, cols: TableColumns) -> str:
    key = cols.feature_key
    if key is None:
        key = "row" if nd.frame is not None and features.suffix.lower() != ".json" else "node"
    if key not in FEATURE_KEYS:
        raise GFLError(f"unknown feature key {key!r}: choose one of {', '.join(FEATURE_KEYS)} (`feature_key`)")
    if key == "node" and cols.graph:
        valid = nd.ids >= 0
        if len(np.unique(nd.ids[valid])) < int(valid.sum()):
            raise GFLError(
                f"{features}: features keyed by node id are ambiguous because node ids repeat across graphs "
                f"({cols.graph!r}); use `feature_key=row` (row i = node-table row i) or `feature_key=graph-node` "
                f"(an .npz with one array per graph)"
            )
    if key == "row" and nd.frame is None:
        raise GFLError(f"{features}: `feature_key=row` needs a node table (`nodes`); use `feature_key=node`")
    return key


def _features(nd: _Nodes, rows, features, cols: TableColumns, report):
    if features is not None:
        key = _feature_key(nd, features, cols)
        if key == "graph-node":
            return read_graph_feature_file(features, [nd.names[c] for c in nd.code[rows]], nd.ids[rows], report)
        if key == "row":
            n_rows = _feature_rows(features, report)
            if n_rows is not None and n_rows != nd.records:
                raise GFLError(
                    f"{features}: {n_rows} feature rows but {nd.path.name} has {nd.records} data rows; with "
                    f"`feature_key=row` (the default with a node table) row i holds the node of table row i; "
                    f"pass `feature_key=node` if rows are node ids"
                )
            return read_feature_file(features, nd.record[rows], report)
        return read_feature_file(features, nd.ids[rows], report)
    if cols.features is None or nd.frame is None:
        raise GFLError(f"{nd.path or 'the graph'}: no node features; pass feature columns (`feature_cols`) "
                       f"of a node table or a file (`features`)")
    ndf, nodes = nd.frame, nd.path
    names = [cols.features] if isinstance(cols.features, str) else list(cols.features)
    chosen = [c for c in ndf.columns if c in names] or [c for c in ndf.columns if str(c).startswith(names[0])]
    if len(names) > 1 and len(chosen) != len(names):
        raise GFLError(f"{nodes}: feature columns {sorted(set(names) - set(chosen))} not found")
    if not chosen:
        raise GFLError(f"{nodes}: no column named or starting with {names[0]!r}; check `feature_cols`")
    import pandas as pd

    block = ndf[chosen].iloc[rows].apply(lambda c: pd.to_numeric(c.str.strip(), errors="coerce"))
    values = block.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(values).all(axis=1)
    add_lines(report, "non-numeric feature value (set to 0)", nodes.name, nd.lines[rows][bad])
    return finite_features(values)  # counted above by line, with the non-numeric values


def _finish_features(feat, feat_size: int | None, seed: int, transform: FeatureTransform | None,
                     fit: bool, what: str, optional: bool = False, fit_rows: np.ndarray | None = None,
                     fitted_on: dict | None = None) -> tuple[torch.Tensor, FeatureTransform | None]:
    """Dense float32 features: ``transform`` applied, or a reduction fitted (``fit``), or kept.

    With ``optional`` the transform is applied only to features of its input size.
    A reduction is fitted on the rows ``fit_rows`` (default all) and applied to all rows;
    ``fitted_on`` says which those are (:func:`~gflkit.data.transform.fitted_on`, kept in its params).
    The memory a reduction or the dense features need is checked first (``what`` names the file)."""
    if transform is not None and not (optional and feat.shape[1] != transform.in_feats):
        return torch.from_numpy(transform.apply(feat, what)), transform
    if transform is not None:
        fit = False
    fitted = None
    n, m = feat.shape
    if fit:
        if feat_size is None and sp.issparse(feat):
            feat_size = SPARSE_FEAT_SIZE
        if feat_size and m > feat_size:
            # fit_svd's blocks: (n + m) x (feat_size + oversampling) float32, a few at a time
            require_memory(4 * 4 * (n + m) * (feat_size + 10), what, MEMORY_HINT)
            basis = feat if fit_rows is None else (feat.tocsr() if sp.issparse(feat) else feat)[fit_rows]
            fitted = fit_svd(basis, feat_size, seed)
            if fitted_on:
                fitted = replace(fitted, params={**fitted.params, **fitted_on})
            feat = fitted.apply(feat, what)
    if sp.issparse(feat):
        require_memory(2 * 4 * n * feat.shape[1], what, MEMORY_HINT)
    return torch.from_numpy(np.asarray(feat.todense() if sp.issparse(feat) else feat, dtype=np.float32)), fitted


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
    feat, used = _finish_features(t.feat, feat_size, seed, transform, fit, str(features or nodes),
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
    feat, used = _finish_features(t.feat, feat_size, seed, transform, fit, str(features or nodes), fit_rows=rows,
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
