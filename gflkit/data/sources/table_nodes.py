"""The node rows of a user's tables: the columns to read, the node table (or nodes 0..n-1), edge ends.

The readers of :mod:`gflkit.data.sources.tables` find here which row of the
node table is which node (the first of repeated ids), and where an edge's ends
lie among the nodes.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ...errors import GFLError
from .table_io import add_lines, column, int_column, read_feature_file, read_table

__all__: list[str] = []

#: Without a node table the nodes are 0..n-1; n (the largest edge id + 1, or the feature file's
#: rows) may exceed twice the edge count by this much (isolated nodes) before it is taken for a
#: numbering that is not 0..n-1, or for a file that declares more rows than it means.
_SPARE_IDS = 1 << 20


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
class NodeRows:
    """Node rows: id, graph code, row in the node table and line, per data row."""

    ids: np.ndarray
    code: np.ndarray
    record: np.ndarray  # data-row index in the node table
    lines: np.ndarray
    names: list[str]
    frame: object = None  # the node table (None without one)
    path: Path | None = None
    records: int = 0  # data rows in the node table, skipped ones included


def read_node_table(nodes: Path, cols: TableColumns, report) -> NodeRows:
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
    return NodeRows(ids, code, record, nlines, names, ndf, nodes, records)


def implicit_nodes(src, dst, cols: TableColumns, features, report, edges: Path) -> NodeRows:
    """Without a node table: nodes ``0..n-1``, ``n`` from the feature file's rows or the edges.

    Either way ``n`` is checked against the edges before anything of that
    size is allocated (a file may declare 10^9 rows for a few edges).
    """
    if cols.graph:
        raise GFLError("reading many graphs needs a node table (`nodes`) with the graph column")
    n = feature_rows(features, report) if features is not None else None
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
    return NodeRows(ids, np.zeros(n, np.int64), ids, ids + 1, [""], None, None, n)


def feature_rows(path: Path, report) -> int | None:
    """Rows a dense or sparse feature file declares (``None`` for a JSON bag: ids come from the edges)."""
    shape = read_feature_file(path, np.zeros(0, np.int64), report, shape_only=True)
    return None if shape is None else shape[0]


def node_rows(nd: NodeRows, report) -> np.ndarray:
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


def node_positions(code: np.ndarray, node_id: np.ndarray, ecode: np.ndarray, eid: np.ndarray) -> np.ndarray:
    """Position of each ``(ecode, eid)`` among the nodes ``(code, node_id)``, ``-1`` when unknown."""
    import pandas as pd

    index = pd.MultiIndex.from_arrays([code, node_id])
    pos = index.get_indexer(pd.MultiIndex.from_arrays([ecode, eid])) if len(index) else np.full(len(eid), -1)
    return np.where((ecode >= 0) & (eid >= 0), pos, -1).astype(np.int64)
