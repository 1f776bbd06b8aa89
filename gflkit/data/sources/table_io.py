"""Reading users' tables and feature files while counting what is malformed.

CSV is parsed line by line (the :mod:`csv` module) so every skipped row can be
reported with its line number: rows with the wrong number of fields, rows that
are not valid UTF-8. Parquet is read with pandas (``pyarrow`` needed); its
"line" numbers are 1-based row numbers.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ...errors import DataFormatError, GFLError
from ..transform import FeatureTransform
from ..validate import finite_features, int_ids, reading
from .base import BadInputReport

__all__ = [
    "existing_file", "read_table", "column", "add_lines", "int_column", "sorted_classes", "read_feature_file",
    "reduce_features", "fit_svd", "read_graph_feature_file",
]

PARQUET_SUFFIXES = (".parquet", ".pq")


def existing_file(path: str | Path, what: str, hint: str) -> Path:
    """``path`` if it is a file, else a one-line :class:`GFLError` saying what to do."""
    path = Path(path)
    if not path.is_file():
        raise GFLError(f"{what} {path} not found: {hint}")
    return path


def read_table(path: Path, report: BadInputReport) -> tuple[pd.DataFrame, np.ndarray]:
    """All rows of a CSV/TSV or Parquet table as strings, with their line numbers.

    Rows with a field count other than the header's are counted as ``ragged
    row``, undecodable rows as ``bad encoding``; both are skipped.
    """
    if path.suffix.lower() in PARQUET_SUFFIXES:
        try:
            with reading(path, "it must be a Parquet file"):
                df = pd.read_parquet(path)
        except ImportError:
            raise GFLError(f"{path}: reading Parquet needs pyarrow: pip install 'gflkit[parquet]'") from None
        df.columns = [str(c).lstrip("\ufeff").strip() for c in df.columns]
        out = df.astype(str).where(df.notna(), "")
        out.attrs["records"] = len(df)
        return out, np.arange(1, len(df) + 1)
    delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    rows, lines, records = [], [], []
    # utf-8-sig drops the byte-order mark that some spreadsheet programs write before the header
    with open(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as f:
        text = f.read()
    clean = _encodable(text)  # check line by line only when some bytes were not UTF-8
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        with reading(path):
            header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise DataFormatError(f"{path}: the file is empty; it needs a header row") from None
    if not clean and not _encodable("".join(header)):
        raise DataFormatError(f"{path}: the header row is not valid UTF-8; save the file as UTF-8")
    with reading(path):
        count = _collect_rows(path, reader, header, clean, report, rows, lines, records)
    # The index is each kept row's place among all data rows, so files aligned
    # with the table's rows stay aligned when a malformed row is skipped.
    df = pd.DataFrame(rows, columns=header, dtype=str, index=pd.Index(records, dtype=np.int64))
    df.attrs["records"] = count
    return df, np.asarray(lines, dtype=np.int64)


def _collect_rows(path: Path, reader, header: list[str], clean: bool, report: BadInputReport, rows: list,
                  lines: list, records: list) -> int:
    """Append the well-formed rows, their lines and record numbers; returns the number of data rows."""
    record = -1
    for row in reader:
        line = reader.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        record += 1
        if len(row) != len(header):
            report.add("ragged row", f"{path.name}:{line}")
        elif not clean and not _encodable("".join(row)):
            report.add("bad encoding", f"{path.name}:{line}")
        else:
            rows.append(row)
            lines.append(line)
            records.append(record)
    return record + 1


def _encodable(text: str) -> bool:
    """False when ``text`` holds bytes that were not valid UTF-8 (surrogate escapes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def column(df: pd.DataFrame, name: str, path: Path, option: str) -> pd.Series:
    if name not in df.columns:
        raise GFLError(f"{path}: no column {name!r} (columns: {', '.join(map(str, df.columns))}); set {option}")
    return df[name]


def add_lines(report: BadInputReport, kind: str, file: str, lines: np.ndarray) -> None:
    """Count one problem of ``kind`` per entry of ``lines``, keeping the first few locations."""
    for line in lines[: report.keep]:
        report.add(kind, f"{file}:{line}")
    if len(lines) > report.keep:
        report.add(kind, None, n=len(lines) - report.keep)


def sorted_classes(values, given: Sequence[str] | None = None) -> list[str]:
    """``given`` as strings, else the distinct non-empty ``values`` sorted (as numbers
    when all are integers, so ``"10"`` follows ``"9"``)."""
    if given:
        return [str(c) for c in given]
    names = sorted({str(v) for v in values if v})
    if names and all(v.lstrip("-").isdigit() for v in names):
        names.sort(key=int)
    return names


def int_column(values: pd.Series, lines: np.ndarray, kind: str, report: BadInputReport, file: str) -> np.ndarray:
    """Integer ids of ``values`` (0 .. 2**63 - 1, parsed exactly); others become ``-1``, counted as ``kind``."""
    ids, ok = int_ids(values)
    add_lines(report, kind, file, lines[~ok])
    return ids


def _feature_table(path: Path, report: BadInputReport):
    suffix = path.suffix.lower()
    if suffix == ".npy":
        with reading(path, "it must be a 2-D numeric array saved with numpy.save"):
            table = np.load(path, mmap_mode="r", allow_pickle=False)
    elif suffix == ".npz":
        with reading(path, "write it with scipy.sparse.save_npz (or use --feature-key graph-node for one array "
                           "per graph)"):
            table = sp.load_npz(path).tocsr()
    elif suffix == ".json":
        table = _bag_of_features(path, report)
    else:
        raise GFLError(f"{path}: feature files must be .npy, .npz or .json")
    if table.ndim != 2 or table.dtype.kind not in "biuf":
        raise DataFormatError(f"{path}: expected a 2-D numeric array of features, got shape {table.shape} "
                              f"and dtype {table.dtype}")
    return table


def _take_rows(table, ids: np.ndarray, path: Path, report: BadInputReport):
    missing = (ids < 0) | (ids >= table.shape[0])
    if missing.any():
        report.add("node without feature row", f"{path.name}: id {int(ids[missing][0])}", n=int(missing.sum()))
    rows = np.where(missing, 0, ids)
    if sp.issparse(table):
        out = table[rows].tocsr().astype(np.float32)
        out.data = finite_features(out.data, report, path.name)
        return sp.diags((~missing).astype(np.float32)) @ out
    with reading(path):
        out = finite_features(np.asarray(table[rows], dtype=np.float32), report, path.name)
    out[missing] = 0.0
    return out


def read_feature_file(path: Path, ids: np.ndarray, report: BadInputReport, shape_only: bool = False):
    """Features of the rows ``ids`` of a ``.npy`` / scipy-sparse ``.npz`` / ``.json`` file.

    JSON maps row (node id) -> list of active feature ids (a sparse bag of features).
    Returns a dense ``np.ndarray`` or a ``scipy.sparse.csr_matrix`` with one row
    per entry of ``ids``; ids without a row get zeros and are counted. With
    ``shape_only`` the file's shape is returned instead.
    """
    table = _feature_table(path, report)
    return tuple(table.shape) if shape_only else _take_rows(table, ids, path, report)


def read_graph_feature_file(path: Path, graphs: Sequence[str], ids: np.ndarray, report: BadInputReport) -> np.ndarray:
    """Features keyed by (graph, node id): an ``.npz`` archive of one dense array per graph name.

    Shapes:
        graphs, ids: ``(n,)``; returns ``(n, d)`` float32.
    """
    if path.suffix.lower() != ".npz":
        raise GFLError(f"{path}: --feature-key graph-node needs an .npz archive with one array per graph "
                       f"(numpy.savez(path, **{{graph_name: features}}))")
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise DataFormatError(f"{path}: not an .npz archive ({err})") from None
    with archive:
        names = sorted(set(graphs))
        absent = [g for g in names if g not in archive.files]
        if absent:
            raise GFLError(f"{path}: no array for graph(s) {', '.join(map(repr, absent[:5]))}; the archive holds "
                           f"{', '.join(archive.files[:5])}{'...' if len(archive.files) > 5 else ''}")
        tables = {g: archive[g] for g in names}
    sizes = {t.shape[1] if t.ndim == 2 else -1 for t in tables.values()}
    if len(sizes) != 1 or -1 in sizes:
        raise DataFormatError(f"{path}: every graph's array must be 2-D with the same number of columns")
    graphs = np.asarray(graphs, dtype=object)
    out = np.zeros((len(ids), sizes.pop()), dtype=np.float32)
    for g, table in tables.items():
        at = np.flatnonzero(graphs == g)
        out[at] = _take_rows(table, ids[at], path, report)
    return out


#: Largest node or feature id of a JSON bag of features (+1): the matrix is indexed by them.
_MAX_BAG_ID = 1 << 26


def _bag_of_features(path: Path, report: BadInputReport) -> sp.csr_matrix:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError, ValueError) as err:
        where = f"{path}, line {err.lineno}" if isinstance(err, json.JSONDecodeError) else f"{path}"
        raise DataFormatError(f"{where}: not valid UTF-8 JSON ({str(err).splitlines()[0][:200]})") from None
    if not isinstance(data, dict):
        raise DataFormatError(f"{path}: expected a JSON object mapping node id -> list of feature ids")
    rows, cols = [], []
    for key, active in data.items():
        try:
            node = int(key)
            feats = [int(a) for a in active]
            if not (0 <= node < _MAX_BAG_ID and all(0 <= a < _MAX_BAG_ID for a in feats)):
                raise ValueError
        except (TypeError, ValueError, OverflowError):
            report.add("malformed feature entry", f"{path.name}: key {key!r}")
            continue
        rows.extend([node] * len(feats))
        cols.extend(feats)
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    shape = (int(rows.max(initial=-1)) + 1, int(cols.max(initial=-1)) + 1)
    table = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, cols)), shape=shape)
    table.data[:] = 1.0  # a feature listed twice is still just active
    return table


def _orthonormal(y: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the columns of a tall ``y`` (Cholesky-QR via the Gram
    matrix, twice; LAPACK's QR of a tall matrix is much slower on some builds)."""
    y = np.asarray(y, dtype=np.float32)
    for _ in range(2):
        w, v = np.linalg.eigh((y.T @ y).astype(np.float64))
        keep = w > w.max(initial=0.0) * 1e-10
        y = y @ (v[:, keep] / np.sqrt(w[keep])).astype(np.float32)
    return y


def reduce_features(x, k: int, seed: int = 0, oversample: int = 10, power_iters: int = 2) -> np.ndarray:
    """Project ``x`` onto its top ``k`` right singular vectors: :func:`fit_svd` applied to ``x``.

    Shapes:
        x: ``(n, m)`` dense or sparse; returns ``(n, min(k, m))`` float32.
    """
    n, m = x.shape
    if k >= m:
        return np.asarray(x.todense() if sp.issparse(x) else x, dtype=np.float32)
    return fit_svd(x, k, seed, oversample, power_iters).apply(x)


def fit_svd(x, k: int, seed: int = 0, oversample: int = 10, power_iters: int = 2) -> FeatureTransform:
    """The top ``k`` right singular vectors of ``x`` (randomized SVD), as a reusable transform.

    Deterministic for a given seed: the random test matrix comes from
    ``np.random.default_rng([seed, 7])`` and each singular vector's sign is
    fixed so that its largest entry is positive (Halko et al. 2011, Alg. 4.4).

    Shapes:
        x: ``(n, m)`` dense or sparse; the transform maps ``(*, m)`` to ``(*, k)``.
    """
    n, m = x.shape
    k = min(k, m)
    x = x.astype(np.float32)  # float32 BLAS is several times faster here, and precise enough
    rng = np.random.default_rng([seed, 7])
    q = _orthonormal(x @ rng.standard_normal((m, k + oversample), dtype=np.float32))  # (n, k + p)
    for _ in range(power_iters):
        q = _orthonormal(x @ _orthonormal(x.T @ q))
    _, _, vt = np.linalg.svd(np.asarray((x.T @ q).T), full_matrices=False)  # (k + p, m)
    vt = vt[:k]
    signs = np.sign(vt[np.arange(k), np.abs(vt).argmax(axis=1)])
    vt = vt * signs[:, None]
    return FeatureTransform("svd", np.ascontiguousarray(vt.T, dtype=np.float32),
                            params={"seed": int(seed), "method": "randomized-svd"})
