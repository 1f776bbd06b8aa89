"""Citation graphs of Pubmed, Cora and Citeseer -> one large graph.

Two layouts are read:

* Planetoid (https://github.com/kimiyoung/planetoid/tree/master/data):
  ``ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}``. ``allx``/``ally`` are the
  first rows of the node table, ``tx``/``ty`` the test rows whose node ids are
  listed in ``test.index``; ``graph`` maps a node to its neighbours. Where the
  test ids leave gaps (Citeseer: 15) the gap rows stay as nodes with zero
  features and no label, as in the GCN reference code; they keep the edges
  ``graph`` gives them. Their count is kept in ``meta["padding_rows"]``. Classes are the one-hot column
  indices (``"0"``...).
* LINQS Pubmed-Diabetes (https://linqs-data.soe.ucsc.edu/public/Pubmed-Diabetes.tgz):
  ``Pubmed-Diabetes.NODE.paper.tab`` (TF-IDF weights of 500 words and a label
  ``1``/``2``/``3`` per paper: experimental, type 1, type 2 diabetes) and
  ``Pubmed-Diabetes.DIRECTED.cites.tab`` (citing and cited paper per line).

The GFL paper's Pubmed set has 500 features and 3 classes (Table 1).
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import scipy.sparse as sp
import torch

from ...errors import DataFormatError, GFLError
from ..collection import build_graph
from ..validate import finite_features, guard_reader, reading
from .base import BadInputReport, SourceGraph
from .common import DOWNLOADS, missing_file, require_file, select_classes
from .safe_pickle import load_planetoid_pickle

__all__ = ["read_planetoid", "read_linqs_pubmed", "read_pubmed"]

log = logging.getLogger(__name__)

PLANETOID_NAMES = ("pubmed", "cora", "citeseer")
LINQS_FILES = ("Pubmed-Diabetes.NODE.paper.tab", "Pubmed-Diabetes.DIRECTED.cites.tab")


def _load_pickle(path: Path):
    return load_planetoid_pickle(path)


def _matrix(obj, path: Path, ndim: int = 2) -> np.ndarray:
    """A pickled array or sparse matrix as a dense numeric array, checked."""
    try:
        arr = obj.toarray() if sp.issparse(obj) else np.asarray(obj)
    except Exception:  # noqa: BLE001 - any object that is not array-like
        arr = None
    if arr is None or arr.ndim != ndim or arr.dtype.kind not in "biuf":
        raise DataFormatError(f"{path}: expected a {ndim}-D numeric array; download the file again")
    return arr


def _read_test_index(path: Path, report: BadInputReport) -> np.ndarray:
    """Node ids of ``ind.<name>.test.index``; non-numeric lines are counted."""
    ids = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if line.strip():
            try:
                ids.append(int(line))
            except ValueError:
                report.add("non-numeric test index", lineno)
                continue
            if ids[-1] < 0 or ids[-1] > 2**62:
                raise DataFormatError(
                    f"{path}, line {lineno}: test index {line.strip()} is negative or too large; "
                    "download the file again"
                )
    ids = np.asarray(ids, dtype=np.int64)
    if np.unique(ids).size != ids.size:
        raise DataFormatError(f"{path}: a test index is listed twice, so two test rows would land on one node; "
                              "download the file again")
    return ids


@guard_reader
def read_planetoid(
    folder: str | os.PathLike, name: str = "pubmed", classes: Sequence[str] | None = None,
    num_classes: int | None = None,
) -> SourceGraph:
    """Read the Planetoid files of ``name`` from ``folder`` (see the module docstring)."""
    folder = Path(folder)
    files = {k: require_file(folder / f"ind.{name}.{k}", "planetoid") for k in
             ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")}
    report = BadInputReport(str(folder / f"ind.{name}.*"))
    allx, ally, tx, ty = (_matrix(_load_pickle(files[k]), files[k]) for k in ("allx", "ally", "tx", "ty"))
    adjacency = _load_pickle(files["graph"])
    if not isinstance(adjacency, dict):
        raise DataFormatError(f"{files['graph']}: expected a dict of neighbour lists; download the file again")
    test_ids = _read_test_index(files["test.index"], report)
    if (allx.shape[1] != tx.shape[1] or len(test_ids) != tx.shape[0] or len(ally) != allx.shape[0]
            or len(ty) != tx.shape[0]):
        raise DataFormatError(
            f"{folder}/ind.{name}.*: allx {allx.shape}, ally {np.shape(ally)}, tx {tx.shape}, ty {np.shape(ty)} and "
            f"{len(test_ids)} test ids do not fit together; download the files again"
        )
    n_train = allx.shape[0]
    limit = n_train + 2 * tx.shape[0] + 1000  # Citeseer leaves 15 gaps; anything far beyond is not a node id
    if len(test_ids) and (test_ids.min() < n_train or test_ids.max() >= limit):
        raise DataFormatError(
            f"{files['test.index']}: test indices must lie in {n_train}..{limit - 1} (after the {n_train} allx "
            f"rows), found {int(test_ids.min())}..{int(test_ids.max())}; download the file again"
        )
    n = max(n_train + tx.shape[0], int(test_ids.max()) + 1 if len(test_ids) else 0)
    feat = np.zeros((n, allx.shape[1]), dtype=np.float32)
    onehot = np.zeros((n, np.shape(ally)[1]), dtype=np.float32)
    feat[:n_train] = finite_features(allx, report, files["allx"].name)
    onehot[:n_train] = ally
    feat[test_ids] = finite_features(tx, report, files["tx"].name)
    onehot[test_ids] = ty
    filled = np.zeros(n, dtype=bool)
    filled[:n_train] = filled[test_ids] = True
    label = np.where(onehot.sum(axis=1) > 0, onehot.argmax(axis=1), -1)
    with reading(files["graph"]):
        src, dst = _adjacency_edges(adjacency)
    outside = (src < 0) | (src >= n) | (dst < 0) | (dst >= n)
    if outside.any():
        report.add("edge to a node outside the feature table", int(src[outside][0]), int(outside.sum()))
    names = [str(c) for c in range(onehot.shape[1])]
    label, names = select_classes(label, names, classes, num_classes)
    g = build_graph(torch.from_numpy(src[~outside]), torch.from_numpy(dst[~outside]), n,
                    torch.from_numpy(feat), torch.from_numpy(label))
    report.log(log)
    meta = {"files": str(folder / f"ind.{name}.*"), "layout": "planetoid", "padding_rows": int((~filled).sum()),
            "unlabelled_rows": int((onehot.sum(axis=1) == 0).sum())}
    return SourceGraph(g=g, classes=names, name=name, source="planetoid", report=report, meta=meta)


def _adjacency_edges(adjacency: dict) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) of a node -> neighbours dict; entries that are not integers raise."""
    src, dst = [], []
    for u, neighbours in adjacency.items():
        neighbours = list(neighbours)
        src.extend([int(u)] * len(neighbours))
        dst.extend(int(v) for v in neighbours)
    return np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)


@guard_reader
def read_linqs_pubmed(
    folder: str | os.PathLike, classes: Sequence[str] | None = None, num_classes: int | None = None
) -> SourceGraph:
    """Read the LINQS ``Pubmed-Diabetes`` tab files from ``folder``."""
    node_path, cites_path = (require_file(Path(folder) / f, "linqs") for f in LINQS_FILES)
    report = BadInputReport(str(node_path))
    with open(node_path, encoding="utf-8", errors="replace") as f:
        lines = iter(enumerate(f, 1))
        next(lines, None)  # "NODE paper"
        _, header = next(lines, (2, ""))
        words, names = [], []
        for item in header.split("\t"):
            parts = item.strip().split(":")
            if parts[0] == "numeric" and len(parts) >= 2:
                words.append(parts[1])
            elif parts[0].startswith("cat=") and parts[-1] == "label":
                names = parts[0][4:].split(",")
        if not words or not names:
            raise DataFormatError(f"{node_path}, line 2: expected the feature and label declarations")
        column, klass = {w: i for i, w in enumerate(words)}, {c: i for i, c in enumerate(names)}
        ids: dict[str, int] = {}
        rows, label = [], []
        for lineno, line in lines:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 2 or not fields[0].strip():
                if line.strip():
                    report.add("short line", lineno)
                continue
            if fields[0] in ids:
                report.add("duplicate paper", lineno)
                continue
            ids[fields[0]] = len(rows)
            row, lab = np.zeros(len(words), dtype=np.float32), -1
            for item in fields[1:]:
                key, _, value = item.partition("=")
                if key == "label":
                    lab = klass.get(value.strip(), -1)
                    if lab < 0:
                        report.add("label outside the class set", lineno)
                elif key != "summary":
                    try:
                        row[column[key]] = float(value)
                    except (KeyError, ValueError):
                        report.add("undeclared word or non-numeric weight", lineno)
            rows.append(row)
            label.append(lab)
    if not rows:
        raise DataFormatError(f"{node_path}: no paper lines; the graph would be empty")
    src, dst = [], []
    with open(cites_path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split()
            if lineno <= 2 or not fields:
                continue
            ends = [x.partition(":")[2] for x in fields if x.startswith("paper:")]
            if len(ends) != 2:
                report.add("malformed citation line", f"{cites_path.name}:{lineno}")
            elif ends[0] not in ids or ends[1] not in ids:
                report.add("citation of unknown paper", f"{cites_path.name}:{lineno}")
            else:
                src.append(ids[ends[0]])
                dst.append(ids[ends[1]])
    label, names = select_classes(np.asarray(label), names, classes, num_classes)
    feat = finite_features(np.stack(rows), report, node_path.name)
    g = build_graph(src, dst, len(rows), torch.from_numpy(feat), torch.from_numpy(label))
    report.log(log)
    meta = {"files": [str(node_path), str(cites_path)], "layout": "linqs", "citations": len(src)}
    return SourceGraph(g=g, classes=names, name="pubmed", source="linqs", report=report, meta=meta)


def read_pubmed(
    folder: str | os.PathLike, name: str = "pubmed", classes: Sequence[str] | None = None,
    num_classes: int | None = None,
) -> SourceGraph:
    """Planetoid files of ``name`` in ``folder``; for Pubmed, else the LINQS files."""
    if name not in PLANETOID_NAMES:
        raise GFLError(f"unknown dataset {name!r}: choose one of {', '.join(PLANETOID_NAMES)}")
    folder = Path(folder)
    if name == "pubmed" and not (folder / "ind.pubmed.x").is_file():
        for candidate in (folder, folder / "Pubmed-Diabetes" / "data", folder / "data"):
            if (candidate / LINQS_FILES[0]).is_file():
                return read_linqs_pubmed(candidate, classes, num_classes)
    if not (folder / f"ind.{name}.x").is_file():
        err = missing_file(folder / f"ind.{name}.x", "planetoid", folder)
        if name == "pubmed":
            err = GFLError(f"{err} (or the LINQS files {LINQS_FILES[0]} and {LINQS_FILES[1]} "
                           f"from {DOWNLOADS['linqs']})")
        raise err
    return read_planetoid(folder, name, classes, num_classes)
