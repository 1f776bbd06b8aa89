"""A user's own graph tables (CSV or Parquet) -> one large graph or a collection.

Two tables: edges (``src``, ``dst``, optional ``graph``) and nodes (``id``,
optional ``graph``, ``label``, feature columns). Features come from feature
columns (a name prefix or a list) or from a separate file: ``.npy`` /
scipy-sparse ``.npz`` (row = node id) or ``.json`` (node id -> active feature
ids). Sparse or wide features are reduced with a seeded randomized SVD.

Without a graph column the tables describe one large graph
(:func:`read_table_graph`, cut into a family by
:func:`gflkit.data.sampling.sample_family`); with one, every graph is kept as
it is (:func:`read_table_collection`). Node ids are non-negative integers,
unique within a graph. Labels map to classes sorted by name (by value when all
labels are integers); empty labels mean unlabelled. Malformed rows are counted
in the returned report, never fatal.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import scipy.sparse as sp
import torch

from ...errors import GFLError
from ..collection import SPLITS, GraphCollection, build_graph
from ..sampling import node_overlap
from ..validate import finite_features, guard_reader
from .base import BadInputReport, SourceGraph
from .table_io import (add_lines, column, existing_file, int_column, read_feature_file, read_table, reduce_features,
                       sorted_classes)

__all__ = ["TableColumns", "read_table_graph", "read_table_collection"]

#: Features are reduced to this many dimensions when they come as a sparse bag.
SPARSE_FEAT_SIZE = 128


@dataclass(frozen=True)
class TableColumns:
    """Column names; ``features`` is a prefix, or a list of names."""

    src: str = "src"
    dst: str = "dst"
    id: str = "id"
    label: str = "label"
    graph: str | None = None
    split: str | None = None
    features: str | Sequence[str] | None = None


@dataclass
class _Tables:
    code: np.ndarray  # (n,) graph code of each node, sorted; nodes sorted by (code, id)
    node_id: np.ndarray  # (n,) the node ids as given
    graph_names: list[str]
    feat: torch.Tensor  # (n, d)
    label: torch.Tensor  # (n,)
    classes: list[str]
    src: np.ndarray  # (E,) node positions
    dst: np.ndarray
    node_split: list[str]  # split column value of each node ("" when absent)
    report: BadInputReport


def _read(edges, nodes, features, cols: TableColumns, classes, feat_size, seed) -> _Tables:
    edges = existing_file(edges, "edge table", f"put your edges (columns {cols.src},{cols.dst}) there or pass --edges")
    nodes = existing_file(nodes, "node table",
                          f"put your nodes (columns {cols.id},{cols.label},...) there or pass --nodes")
    if features is not None:
        features = existing_file(features, "feature file", "check --features")
    report = BadInputReport()
    ndf, nlines = read_table(nodes, report)
    edf, elines = read_table(edges, report)
    ids = int_column(column(ndf, cols.id, nodes, "--id-col"), nlines, "non-numeric node id", report, nodes.name)
    src = int_column(column(edf, cols.src, edges, "--src-col"), elines, "non-numeric node id", report, edges.name)
    dst = int_column(column(edf, cols.dst, edges, "--dst-col"), elines, "non-numeric node id", report, edges.name)
    if cols.graph:
        ngraph = column(ndf, cols.graph, nodes, "--graph-col").str.strip().to_numpy()
        egraph = column(edf, cols.graph, edges, "--graph-col").str.strip().to_numpy()
        names = sorted(set(ngraph[ids >= 0]))
        code = {g: i for i, g in enumerate(names)}
        ncode = np.array([code.get(g, -1) for g in ngraph], dtype=np.int64)
        ecode = np.array([code.get(g, -1) for g in egraph], dtype=np.int64)
    else:
        names, ncode, ecode = [""], np.zeros(len(ids), np.int64), np.zeros(len(src), np.int64)
    rows = _first_rows(ncode, ids)  # first row of every valid node, in (graph, id) order
    dup = np.setdiff1d(np.flatnonzero(ids >= 0), rows)
    add_lines(report, "duplicate node id", nodes.name, nlines[np.sort(dup)])

    raw = column(ndf, cols.label, nodes, "--label-col").str.strip().to_numpy()[rows]
    class_list = sorted_classes(raw, classes)
    index = {c: i for i, c in enumerate(class_list)}
    label = np.array([index.get(v, -1) if v else -1 for v in raw], dtype=np.int64)
    add_lines(report, "label outside class set", nodes.name, nlines[rows][(label < 0) & (raw != "")])
    if not class_list:
        raise GFLError(f"{nodes}: no labelled node in column {cols.label!r}; set --label-col")

    feat = _features(ndf, nlines, rows, ids, nodes, features, cols, report)
    if feat_size is None and sp.issparse(feat):
        feat_size = SPARSE_FEAT_SIZE
    if feat_size and feat.shape[1] > feat_size:
        feat = reduce_features(feat, feat_size, seed)
    feat = np.asarray(feat.todense() if sp.issparse(feat) else feat, dtype=np.float32)

    code, node_id = ncode[rows], ids[rows]
    pos = [_positions(code, node_id, ecode, e) for e in (src, dst)]
    known = (pos[0] >= 0) & (pos[1] >= 0)
    valid_ids = (src >= 0) & (dst >= 0)
    add_lines(report, "edge to unknown node", edges.name, elines[valid_ids & ~known])
    add_lines(report, "self-loop (dropped)", edges.name, elines[known & (pos[0] == pos[1])])
    split = column(ndf, cols.split, nodes, "--split-col").str.strip().to_numpy()[rows] if cols.split else []
    return _Tables(code, node_id, names, torch.from_numpy(feat), torch.from_numpy(label), class_list,
                   pos[0][known], pos[1][known], list(split), report)


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


def _features(ndf, nlines, rows, ids, nodes: Path, features, cols: TableColumns, report):
    if features is not None:
        return read_feature_file(features, ids[rows], report)
    if cols.features is None:
        raise GFLError(f"{nodes}: no node features; pass feature columns (--feature-cols) or a file (--features)")
    names = [cols.features] if isinstance(cols.features, str) else list(cols.features)
    chosen = [c for c in ndf.columns if c in names] or [c for c in ndf.columns if str(c).startswith(names[0])]
    if len(names) > 1 and len(chosen) != len(names):
        raise GFLError(f"{nodes}: feature columns {sorted(set(names) - set(chosen))} not found")
    if not chosen:
        raise GFLError(f"{nodes}: no column named or starting with {names[0]!r}; check --feature-cols")
    import pandas as pd

    block = ndf[chosen].iloc[rows].apply(lambda c: pd.to_numeric(c.str.strip(), errors="coerce"))
    values = block.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(values).all(axis=1)
    add_lines(report, "non-numeric feature value (set to 0)", nodes.name, nlines[rows][bad])
    return finite_features(values)  # counted above by line, with the non-numeric values


@guard_reader
def read_table_graph(edges, nodes, *, features=None, columns: TableColumns = TableColumns(), classes=None,
                     feat_size: int | None = None, seed: int = 0, name: str = "tables") -> SourceGraph:
    """One large graph from an edge table and a node table (see module docstring).

    Args:
        edges, nodes: CSV/TSV or Parquet files.
        features: optional ``.npy``/``.npz``/``.json`` feature file (row = node id).
        columns: column names.
        classes: the class list; labels outside it are counted and unlabelled.
        feat_size: reduce features to this many dimensions (default: 128 for
            sparse features, else keep them).
        seed: seed of the feature reduction.
        name: default name of the collections cut from it.
    """
    t = _read(edges, nodes, features, columns, classes, feat_size, seed)
    g = build_graph(t.src, t.dst, len(t.node_id), t.feat, t.label)
    g.ndata["orig_id"] = torch.from_numpy(t.node_id)
    meta = {"files": [str(edges), str(nodes)] + ([str(features)] if features else [])}
    return SourceGraph(g, t.classes, name, "tables", t.report, meta)


@guard_reader
def read_table_collection(edges, nodes, *, features=None, columns: TableColumns, classes=None,
                          feat_size: int | None = None, n_graphs: Sequence[int] | None = None, seed: int = 0,
                          name: str = "tables") -> tuple[GraphCollection, BadInputReport]:
    """Many graphs (one per value of ``columns.graph``), kept as they are.

    Splits come from ``columns.split`` (per graph, its first node's value), else
    graphs sorted by name are shuffled with ``default_rng([seed, 5])`` and the
    first ``n_graphs[0]`` go to train, the next ``n_graphs[1]`` to val, then
    ``n_graphs[2]`` to test (default about 70/10/20 %).
    """
    if not columns.graph:
        raise GFLError("reading many graphs needs a graph column (--graph-col)")
    t = _read(edges, nodes, features, columns, classes, feat_size, seed)
    code = t.code
    bounds = np.searchsorted(code, np.arange(len(t.graph_names) + 1))
    esort = np.argsort(code[t.src], kind="stable")
    ebounds = np.searchsorted(code[t.src][esort], np.arange(len(t.graph_names) + 1))
    splits = _assign_splits(t, bounds, n_graphs, seed, columns.split)
    graphs, extras, order = [], [], [(s, i) for s in SPLITS for i, sp_ in enumerate(splits) if sp_ == s]
    for split, i in order:
        lo, hi = bounds[i], bounds[i + 1]
        e = esort[ebounds[i]:ebounds[i + 1]]
        g = build_graph(t.src[e] - lo, t.dst[e] - lo, hi - lo, t.feat[lo:hi], t.label[lo:hi])
        g.ndata["orig_id"] = torch.from_numpy(t.node_id[lo:hi])
        graphs.append(g)
        extras.append({"graph_name": t.graph_names[i]})
    if not graphs:
        raise GFLError(f"{nodes}: no graph left to keep; check --graph-col and --graphs")
    collection = GraphCollection(graphs, [s for s, _ in order], t.classes, name=name, source="tables", seed=seed,
                                 graph_extra=extras, meta={"files": [str(edges), str(nodes)]},
                                 sampler={"method": "given", "split_col": columns.split, "seed": seed})
    collection.meta.update(node_overlap=node_overlap(collection), bad_input=t.report.as_dict())
    return collection, t.report


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
        raise GFLError(f"--graphs asks for {sum(n_graphs)} graphs but the tables hold {n}")
    perm = np.random.default_rng([seed, 5]).permutation(n)
    out: list[str | None] = [None] * n
    for j, s in enumerate(s for s, k in zip(SPLITS, n_graphs) for _ in range(k)):
        out[perm[j]] = s
    return out
