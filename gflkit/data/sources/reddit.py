"""Reddit (and any GraphSAGE-layout dataset) -> one large graph.

Two layouts are read, both published for the Reddit post-to-post graph of
GraphSAGE (Hamilton et al., 2017), which the GFL paper uses (section 5):

* GraphSAGE (http://snap.stanford.edu/graphsage/): ``<prefix>-G.json`` (networkx
  1.x node-link JSON), ``<prefix>-feats.npy``, ``<prefix>-id_map.json`` (node id ->
  row of the features) and ``<prefix>-class_map.json`` (node id -> class id). In
  that JSON the ``source``/``target`` of a link are **positions in the ``nodes``
  list**, not node ids. Node ``i`` of the result is ``nodes[i]``. The JSON is
  streamed (:func:`~gflkit.data.sources.json_io.stream_object`), never loaded
  whole, so Reddit's gigabyte file needs memory for the edge arrays only; it
  is validated as it is read, so a file cut short is refused, never read up
  to the cut.
* DGL (https://data.dgl.ai/dataset/reddit.zip): ``reddit_data.npz`` (``feature``,
  ``label``, ``node_types``) and ``reddit_graph.npz`` (a SciPy sparse matrix
  written by :func:`scipy.sparse.save_npz`).

Classes are the class ids as strings; the paper uses 5 per graph, by default the
5 most frequent. Nodes of other classes stay in the graph, unlabelled (-1).

The graph's name (the default collection name) is ``reddit`` for DGL's layout
and the file prefix for GraphSAGE's; a prefix that is not a plain name
(``.``, ``..``, ...: :func:`gflkit.paths.check_name`) is an error naming the
``<prefix>-G.json`` file.
"""
from __future__ import annotations

import logging
import os
from array import array
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp
import torch

from ...errors import DataFormatError, GFLError
from ...paths import check_name
from ...io import require_memory
from ..collection import build_graph
from ..validate import (INT64_MAX, check_edges, dense_class_ids, finite_features, guard_reader, int_ids,
                        npy_info, npz_info, reading, sparse_npz_info)
from .base import BadInputReport, SourceGraph
from .common import missing_file, require_file, select_classes
from .json_io import read_json, stream_object

__all__ = ["read_reddit", "read_graphsage", "read_dgl_reddit"]

log = logging.getLogger(__name__)

NUM_CLASSES = 5
_NODE_LINK = "it must be a networkx node-link JSON file"


def find_prefix(folder: str | os.PathLike) -> str:
    """The ``<prefix>`` of the single ``<prefix>-G.json`` in ``folder``."""
    found = sorted(p.name[: -len("-G.json")] for p in Path(folder).glob("*-G.json"))
    if not found:
        raise missing_file(Path(folder) / "reddit-G.json", "reddit", folder)
    if len(found) > 1:
        raise GFLError(f"{folder}: several <prefix>-G.json files ({', '.join(found)}); give the prefix with `prefix`")
    return found[0]


def _prefix_name(folder: Path, prefix: str) -> str:
    """``prefix`` as a collection name, checked; the error names the file it came from."""
    return check_name(prefix, what="collection name (the file prefix)", origin=folder / f"{prefix}-G.json",
                      advice="rename the four <prefix>-* files with a plain prefix such as 'reddit'")


def source_name(folder: str | os.PathLike, prefix: str | None = None) -> str:
    """The name :func:`read_reddit` gives the graph in ``folder``, found without reading the graph.

    Raises:
        GFLError: no GraphSAGE or DGL files are found, or the prefix is not a
            plain name (naming its ``<prefix>-G.json``).
    """
    folder = Path(folder)
    if prefix is None and (folder / "reddit_data.npz").is_file():
        return "reddit"
    if not folder.is_dir():
        raise missing_file(folder / "reddit-G.json", "reddit", folder)
    return _prefix_name(folder, prefix or find_prefix(folder))


def _scan_node_link(path: Path, report: BadInputReport) -> tuple[list, np.ndarray, np.ndarray, int]:
    """Node ids, link (source, target) positions and the number of links of a node-link JSON, streamed and
    validated.

    A link whose ``source`` or ``target`` is not an integer is counted and
    skipped; one outside int64 becomes ``-1`` (outside the node list, counted
    by the caller). A node without an ``"id"`` is refused: the links' positions
    would not say which node they mean.
    """
    ids: list = []
    src, dst = array("q"), array("q")
    seen = [0]  # links read so far

    def nodes(items: list) -> None:
        for item in items:
            if not isinstance(item, dict) or "id" not in item:
                raise DataFormatError(f"{path}: node {len(ids)} of the node list has no \"id\"; {_NODE_LINK}")
            ids.append(item["id"])

    def links(items: list) -> None:
        for item in items:
            seen[0] += 1
            s, t = (item.get("source"), item.get("target")) if isinstance(item, dict) else (None, None)
            if type(s) is not int or type(t) is not int:  # bool and float too
                report.add("link without integer source and target", f"link {seen[0] - 1}")
                continue
            src.append(s if -INT64_MAX <= s <= INT64_MAX else -1)
            dst.append(t if -INT64_MAX <= t <= INT64_MAX else -1)

    def named(key: str) -> Callable[[list], None]:  # "links" or its other name "edges", never both
        def take(items: list) -> None:
            given.add(key)
            if len(given) > 1:
                raise DataFormatError(f"{path}: both \"links\" and \"edges\" hold the graph's links; keep one "
                                      f"of them")
            links(items)

        return take

    given: set[str] = set()
    stream_object(path, {"nodes": nodes, "links": named("links"), "edges": named("edges")}, _NODE_LINK)
    return ids, np.frombuffer(src, dtype=np.int64), np.frombuffer(dst, dtype=np.int64), seen[0]


def _json_mapping(path: Path) -> dict:
    """A JSON object read from ``path``; anything else is a one-line error."""
    data = read_json(path, "it must be a JSON object")
    if not isinstance(data, dict):
        raise DataFormatError(f"{path}: expected a JSON object mapping node id -> value, found a {type(data).__name__}")
    return data


def _feature_table(path: Path) -> np.ndarray:
    """The ``(rows, d)`` numeric array of a ``.npy`` file (memory-mapped, never unpickled; header checked first)."""
    hint = "it must be a 2-D numeric array saved with numpy.save"
    info = npy_info(path, hint)
    if len(info.shape) != 2 or info.dtype.kind not in "biuf":
        raise DataFormatError(f"{path}: expected a 2-D numeric array of features, found a {info.describe()}")
    with reading(path, hint):
        return np.load(path, mmap_mode="r", allow_pickle=False)


def _class_ids(class_map: dict, ids: list, report: BadInputReport) -> np.ndarray:
    """One class id per node (``-1`` when missing or not a single non-negative integer)."""
    raw = [class_map.get(str(i)) for i in ids]
    label, ok = int_ids([c if isinstance(c, int) and not isinstance(c, bool) else None for c in raw])
    for k in np.flatnonzero(~ok)[: report.keep]:
        report.add("node without a single class id", str(ids[k]))
    if (~ok).sum() > report.keep:
        report.add("node without a single class id", None, int((~ok).sum()) - report.keep)
    return label


@guard_reader
def read_graphsage(
    folder: str | os.PathLike, prefix: str | None = None, classes: Sequence[str] | None = None,
    num_classes: int | None = NUM_CLASSES,
) -> SourceGraph:
    """Read ``<prefix>-{G.json,feats.npy,id_map.json,class_map.json}`` from ``folder``.

    Args:
        folder: where the four files are.
        prefix: file prefix (``reddit``, ``cora``...); found from ``*-G.json`` if omitted.
        classes: class ids to keep; default the ``num_classes`` most frequent.
        num_classes: how many of the most frequent classes to keep (``None``: all).
    """
    folder = Path(folder)
    prefix = prefix or find_prefix(folder)
    name = _prefix_name(folder, prefix)
    paths = {k: require_file(folder / f"{prefix}-{k}", "reddit")
             for k in ("G.json", "feats.npy", "id_map.json", "class_map.json")}
    report = BadInputReport(str(paths["G.json"]))
    with reading(paths["G.json"], _NODE_LINK):
        ids, src, dst, links = _scan_node_link(paths["G.json"], report)
    n = len(ids)
    if n == 0:
        raise DataFormatError(f"{paths['G.json']}: no nodes found; is it a node-link JSON file?")
    bad = (src < 0) | (src >= n) | (dst < 0) | (dst >= n)
    if bad.any():
        report.add("link to a position outside the node list", f"link {int(np.flatnonzero(bad)[0])}", int(bad.sum()))
        src, dst = src[~bad], dst[~bad]
    check_edges(paths["G.json"], int((src != dst).sum()), links, required=True, unit="links")
    feats = _feature_table(paths["feats.npy"])
    id_map = _json_mapping(paths["id_map.json"])
    class_map = _json_mapping(paths["class_map.json"])
    rows, _ = int_ids([_as_row(id_map.get(str(i))) for i in ids])
    missing = (rows < 0) | (rows >= len(feats))
    if missing.any():
        report.add("node without a feature row", str(ids[int(np.flatnonzero(missing)[0])]), int(missing.sum()))
    require_memory(3 * 4 * n * feats.shape[1], paths["feats.npy"], "use a machine with more memory")
    feat = np.zeros((n, feats.shape[1]), dtype=np.float32)
    with reading(paths["feats.npy"]):
        feat[~missing] = finite_features(feats[rows[~missing]], report, paths["feats.npy"].name, rows[~missing])
    label, names = dense_class_ids(_class_ids(class_map, ids, report))
    if not names:
        raise DataFormatError(f"{paths['class_map.json']}: no node has a single non-negative integer class id")
    label, names = select_classes(label, names, classes, None if classes else num_classes)
    g = build_graph(torch.from_numpy(src), torch.from_numpy(dst), n, torch.from_numpy(feat), torch.from_numpy(label))
    report.log(log)
    meta = {"files": [str(p) for p in paths.values()], "links": int(len(src)), "layout": "graphsage"}
    return SourceGraph(g=g, classes=names, name=name, source="graphsage",
                       report=report, meta=meta)


def _as_row(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@guard_reader
def read_dgl_reddit(
    folder: str | os.PathLike, classes: Sequence[str] | None = None, num_classes: int | None = NUM_CLASSES
) -> SourceGraph:
    """Read DGL's ``reddit_data.npz`` and ``reddit_graph.npz`` from ``folder``."""
    folder = Path(folder)
    data_path = require_file(folder / "reddit_data.npz", "reddit")
    graph_path = require_file(folder / "reddit_graph.npz", "reddit")
    report = BadInputReport(str(data_path))
    arrays = npz_info(data_path, "it must be DGL's reddit_data.npz")
    require_memory(3 * sum(a.nbytes for a in arrays.values()), data_path, "use a machine with more memory")
    with reading(data_path), np.load(data_path, allow_pickle=False) as data:
        for key in ("feature", "label"):
            if key not in data:
                raise DataFormatError(f"{data_path}: no array {key!r}; is it DGL's reddit_data.npz?")
        feat, label = data["feature"], data["label"]
    if feat.ndim != 2 or label.ndim != 1 or len(feat) != len(label) or label.dtype.kind not in "iu":
        raise DataFormatError(f"{data_path}: {feat.shape} features for {label.shape} integer labels")
    feat, label = finite_features(feat, report, data_path.name), label.astype(np.int64)
    hint = "it must be a SciPy sparse matrix saved with scipy.sparse.save_npz"
    declared, n = sparse_npz_info(graph_path, hint), len(label)
    if declared.shape != (n, n):
        raise DataFormatError(f"{graph_path}: adjacency of shape {declared.shape} but {n} nodes in {data_path.name}")
    require_memory(declared.nbytes + 32 * declared.nnz, graph_path, "use a machine with more memory")
    with reading(graph_path, hint):
        adj = sp.load_npz(graph_path).tocoo()
    check_edges(graph_path, int((adj.row != adj.col).sum()), int(adj.nnz), required=True, unit="stored entries")
    if (label < 0).any():
        report.add("negative class id", int(np.flatnonzero(label < 0)[0]), int((label < 0).sum()))
        label[label < 0] = -1
    label, names = dense_class_ids(label)
    label, names = select_classes(label, names, classes, None if classes else num_classes)
    g = build_graph(torch.from_numpy(adj.row.astype(np.int64)), torch.from_numpy(adj.col.astype(np.int64)), n,
                    torch.from_numpy(feat), torch.from_numpy(label))
    report.log(log)
    meta = {"files": [str(data_path), str(graph_path)], "links": int(adj.nnz), "layout": "dgl"}
    return SourceGraph(g=g, classes=names, name="reddit", source="dgl-reddit", report=report, meta=meta)


def read_reddit(
    folder: str | os.PathLike, prefix: str | None = None, classes: Sequence[str] | None = None,
    num_classes: int | None = NUM_CLASSES,
) -> SourceGraph:
    """Read whichever layout ``folder`` holds: DGL's npz files, else GraphSAGE's."""
    folder = Path(folder)
    if prefix is None and (folder / "reddit_data.npz").is_file():
        return read_dgl_reddit(folder, classes, num_classes)
    if not folder.is_dir():
        raise missing_file(folder / "reddit-G.json", "reddit", folder)
    return read_graphsage(folder, prefix, classes, num_classes)
