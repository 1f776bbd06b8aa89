"""The GFL authors' released graphs, kept as they are.

Layout of the release folder (default ``<root>/raw/gfl_release/``)::

    graph/graph_<i>.txt         meta-train graph i: one "u v" walk step per line
    graph/test_graph_<i>.txt    meta-test graph i
    graph/<graph>_label.txt     "id label" per node of that graph
    feature.txt                 "id f1 ... fd", one global table

Node ids are global, so the graphs keep them in ``ndata["orig_id"]`` and the
node overlap between splits is measured. Each edge line is one walk step: its
count is kept as ``walk_steps``; repeated edges are collapsed and self-loops
dropped (both counted). Malformed lines, nodes without a feature row or a
label, and empty graphs are counted in the report, never fatal.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ...errors import GFLError
from ..collection import GraphCollection, build_graph
from ..sampling import record_overlap
from ..validate import ID_OUT_OF_RANGE, INT64_MAX, finite_features, guard_reader, reading
from .base import BadInputReport
from .table_io import existing_file, sorted_classes

__all__ = ["read_gfl_release"]

GET_RELEASE = ("get the authors' data from https://github.com/huaxiuyao/GFL and put graph/ and feature.txt "
               "in {root} (or pass the folder)")
_GRAPH_FILE = re.compile(r"^(test_)?graph_(\d+)\.txt$")


def _lines(path: Path, report: BadInputReport):
    """``(line number, fields)`` of the non-blank lines; undecodable lines are counted."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                fields = raw.decode("utf-8-sig" if number == 1 else "utf-8").split()  # drop a byte-order mark
            except UnicodeDecodeError:
                report.add("bad encoding", f"{path.name}:{number}")
                continue
            if fields:
                yield number, fields


def _read_features(path: Path, report: BadInputReport) -> tuple[np.ndarray, np.ndarray]:
    """Sorted node ids and their feature rows (float32)."""
    try:  # fast path for a clean file
        table = pd.read_csv(path, sep=r"\s+", header=None, dtype=np.float64, engine="c",
                            encoding="utf-8-sig").to_numpy()
        first = table[:, 0] if table.ndim == 2 and table.shape[1] >= 2 else np.empty(0)
        if first.size and np.isfinite(first).all() and (first == np.round(first)).all() \
                and first.min() >= 0 and first.max() < 2**53:  # exact as float64
            ids = first.astype(np.int64)
            if np.unique(ids).size == ids.size:
                order = np.argsort(ids)
                return ids[order], finite_features(table[order, 1:], report, path.name)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError):
        pass
    width, rows = None, {}
    for number, fields in _lines(path, report):
        width = width or len(fields)
        where = f"{path.name}:{number}"
        if len(fields) != width:
            report.add("ragged feature row", where)
            continue
        try:
            node, values = int(fields[0]), [float(x) for x in fields[1:]]
        except ValueError:
            report.add("malformed feature row", where)
            continue
        if not 0 <= node <= INT64_MAX:
            report.add(ID_OUT_OF_RANGE, where)
            continue
        if node in rows:
            report.add("duplicate feature row (first kept)", where)
            continue
        rows[node] = values
    if not rows or (width or 0) < 2:
        raise GFLError(f"{path}: no feature row ('id f1 ... fd' per line) could be read; "
                       "check that it is the release's feature.txt")
    ids = np.array(sorted(rows), dtype=np.int64)
    feat = np.array([rows[i] for i in ids.tolist()], dtype=np.float64).reshape(len(ids), width - 1)
    return ids, finite_features(feat, report, path.name)


def _read_graph(path: Path, label_path: Path, report: BadInputReport):
    """Edges, labelled ids and raw walk-step count of one graph file."""
    pairs, steps = [], 0
    for number, fields in _lines(path, report):
        steps += 1
        try:
            u, v = (int(x) for x in fields)
        except ValueError:
            report.add("malformed edge line", f"{path.name}:{number}")
            continue
        if not (0 <= u <= INT64_MAX and 0 <= v <= INT64_MAX):
            report.add(ID_OUT_OF_RANGE, f"{path.name}:{number}")
            continue
        pairs.append((u, v))
    labels = {}
    for number, fields in _lines(label_path, report):
        if len(fields) != 2 or not (fields[0].isascii() and fields[0].isdigit()) or int(fields[0]) > INT64_MAX:
            report.add("malformed label line", f"{label_path.name}:{number}")
        elif labels.setdefault(int(fields[0]), fields[1]) != fields[1]:
            report.add("conflicting label (first kept)", f"{label_path.name}:{number}")
    return np.array(pairs, dtype=np.int64).reshape(-1, 2), labels, steps


@guard_reader
def read_gfl_release(root: str | Path, *, n_val: int = 0, seed: int = 0,
                     name: str = "gfl_release") -> tuple[GraphCollection, BadInputReport]:
    """The release's graphs: ``graph_<i>`` -> train, ``test_graph_<i>`` -> test.

    Args:
        root: the release folder (holding ``graph/`` and ``feature.txt``).
        n_val: train graphs held out for validation, chosen with
            ``np.random.default_rng([seed, 6])``.
        seed: seed of that choice.
        name: collection name.

    Returns:
        The collection and the report of malformed input.
    """
    root = Path(root)
    hint = GET_RELEASE.format(root=root)
    if not root.is_dir():
        raise GFLError(f"no GFL release folder {root}: {hint}")
    report = BadInputReport()
    feature_path = existing_file(root / "feature.txt", "feature file", hint)
    with reading(feature_path):
        ids, feat = _read_features(feature_path, report)
    files = sorted((p for p in (root / "graph").glob("*graph_*.txt") if _GRAPH_FILE.match(p.name)),
                   key=lambda p: (p.name.startswith("test_"), int(_GRAPH_FILE.match(p.name).group(2))))
    if not files:
        raise GFLError(f"no graph/graph_<i>.txt files in {root}: {hint}")
    raw = []
    for path in files:
        label_path = existing_file(path.with_name(f"{path.stem}_label.txt"), "label file",
                                  f"each graph file needs its labels beside it; {hint}")
        with reading(path):
            raw.append((path, *_read_graph(path, label_path, report)))
    classes = sorted_classes({lab for *_, labels, _ in raw for lab in labels.values()})
    if not classes:
        raise GFLError(f"{root / 'graph'}: no label in any *_label.txt file; {hint}")
    index = {c: i for i, c in enumerate(classes)}
    graphs, splits, extras = [], [], []
    for path, pairs, labels, steps in raw:
        nodes = np.unique(np.concatenate([pairs.ravel(), np.fromiter(labels, dtype=np.int64, count=len(labels))]))
        if nodes.size == 0:
            report.add("empty graph (skipped)", path.name)
            continue
        _count_edges(pairs, path.name, report)
        pos = np.minimum(np.searchsorted(ids, nodes), max(len(ids) - 1, 0))
        has_feat = (ids[pos] == nodes) if len(ids) else np.zeros(len(nodes), bool)
        if not has_feat.all():
            report.add("node without feature row (zeros)", f"{path.name}: id {nodes[~has_feat][0]}",
                       int((~has_feat).sum()))
        x = np.where(has_feat[:, None], feat[pos] if len(ids) else 0.0, 0.0).astype(np.float32)
        y = np.array([index[labels[n]] if n in labels else -1 for n in nodes.tolist()], dtype=np.int64)
        if (y < 0).any():
            report.add("node without label", f"{path.name}: id {nodes[y < 0][0]}", int((y < 0).sum()))
        src, dst = np.searchsorted(nodes, pairs[:, 0]), np.searchsorted(nodes, pairs[:, 1])
        x = torch.from_numpy(x.reshape(len(nodes), feat.shape[1]))
        g = build_graph(src, dst, len(nodes), x, torch.from_numpy(y))
        g.ndata["orig_id"] = torch.from_numpy(nodes)
        graphs.append(g)
        splits.append("test" if path.name.startswith("test_") else "train")
        extras.append({"walk_steps": steps, "file": path.name})
    _hold_out(splits, n_val, seed)
    order = sorted(range(len(graphs)), key=lambda i: ("train", "val", "test").index(splits[i]))
    collection = GraphCollection([graphs[i] for i in order], [splits[i] for i in order], classes, name=name,
                                 source="gfl_release", seed=seed, graph_extra=[extras[i] for i in order],
                                 sampler={"method": "given", "n_val": n_val, "seed": seed})
    collection.meta = {"root": str(root), "bad_input": report.as_dict()}
    record_overlap(collection)
    return collection, report


def _count_edges(pairs: np.ndarray, file: str, report: BadInputReport) -> None:
    loops = pairs[:, 0] == pairs[:, 1]
    if loops.any():
        report.add("self-loop (dropped)", file, int(loops.sum()))
    rest = np.sort(pairs[~loops], axis=1)
    repeats = len(rest) - len(np.unique(rest, axis=0))
    if repeats:
        report.add("duplicate edge (collapsed)", file, repeats)


def _hold_out(splits: list[str], n_val: int, seed: int) -> None:
    train = [i for i, s in enumerate(splits) if s == "train"]
    if n_val > len(train):
        raise GFLError(f"`n_val={n_val}` is more than the {len(train)} meta-train graphs of the release")
    for j in np.random.default_rng([seed, 6]).permutation(len(train))[:n_val]:
        splits[train[j]] = "val"
