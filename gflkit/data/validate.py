"""Checks shared by every raw-data reader: numbers, ids, and errors while reading.

Readers hand their arrays to these functions instead of checking them each in
their own way, so every source treats bad values alike:

* :func:`finite_features` zeroes NaN/inf feature values and counts the rows;
* :func:`int_ids` parses node ids, refusing anything outside ``0 .. 2**63 - 1``
  (no float round-trip, so ids near the int64 limit stay exact);
* :func:`dense_class_ids` maps arbitrary non-negative class ids to ``0..k-1``
  without building a list as long as the largest id;
* :func:`reading` turns any exception raised while a file is read into one
  :class:`~gflkit.errors.DataFormatError` line naming the file (and the line,
  where the exception knows it);
* :func:`npy_info`, :func:`npz_info` and :func:`sparse_npz_info` read what a
  ``.npy`` / ``.npz`` file *declares* (shapes and dtypes, from the headers only)
  and check that the declared data is really stored, so a reader can check the
  sizes against the graph and against the memory
  (:func:`gflkit.io.require_memory`) before it allocates anything.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import pickle
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

import numpy as np
import pandas as pd

from ..errors import DataFormatError, GFLError
from ..io import human_bytes

__all__ = []

INT64_MAX = 2**63 - 1
#: How every reader names an integer id outside ``0 .. 2**63 - 1`` (negative, or too large for int64).
ID_OUT_OF_RANGE = "node id out of range 0..2**63-1"
_F = TypeVar("_F", bound=Callable[..., Any])


def finite_features(feat: np.ndarray, report=None, where: str = "features", rows=None) -> np.ndarray:
    """``feat`` with every NaN/inf value set to 0; rows with one are counted in ``report``.

    Args:
        feat: a numeric ``(n, d)`` array (dense), or the ``(nnz,)`` stored values of a sparse matrix.
        report: a :class:`~gflkit.data.sources.base.BadInputReport`, or ``None``.
        where: name of the table, used in the report.
        rows: the row number (in the file) of each entry of ``feat``'s first axis, for the report
            (default: its position); rows are counted once however many of their values are bad.

    Returns:
        A float32 array (``feat`` itself when it was float32 and clean).
    """
    feat = np.asarray(feat)
    if feat.dtype.kind not in "biuf":
        raise DataFormatError(f"{where}: features must be numbers, found dtype {feat.dtype}")
    feat = feat.astype(np.float32, copy=False)
    bad = ~np.isfinite(feat)
    if bad.any():
        hit = bad.reshape(len(feat), -1).any(axis=1) if feat.ndim > 1 else bad
        at = np.flatnonzero(hit) if rows is None else np.unique(np.asarray(rows)[hit])
        if report is not None:
            report.add("non-finite feature value (set to 0)", f"{where}: row {int(at[0])}", int(at.size))
        feat = np.where(bad, np.float32(0), feat)
    return feat


def int_ids(values: Sequence[Any] | pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Parse ids into int64, exactly; ``(ids, ok)`` with ``-1`` where ``ok`` is False (see :func:`parse_ids`)."""
    ids, ok, _ = parse_ids(values)
    return ids, ok


def parse_ids(values: Sequence[Any] | pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse ids into int64, exactly: ``(ids, ok, out_of_range)``, ids ``-1`` where ``ok`` is False.

    Accepted: integers and decimal strings (also ``"7.0"``) in ``0 .. 2**63 - 1``.
    Digit strings are converted without a float round-trip, so ids near the
    int64 limit stay exact. Booleans, negative, fractional, non-finite and too
    large values are refused; ``out_of_range`` marks the refused values that
    are whole numbers, only outside ``0 .. 2**63 - 1`` (:data:`ID_OUT_OF_RANGE`),
    so a reader can tell them from values that are not numbers at all.
    """
    s = pd.Series(values) if not isinstance(values, pd.Series) else values.reset_index(drop=True)
    out = np.full(len(s), -1, dtype=np.int64)
    if s.dtype.kind in "iu":
        arr = s.to_numpy()
        ok = (arr >= 0) & (arr <= INT64_MAX) if s.dtype.kind == "u" else arr >= 0
        out[ok] = arr[ok].astype(np.int64)
        return out, ok, ~ok
    if s.dtype.kind == "b":
        return out, np.zeros(len(s), dtype=bool), np.zeros(len(s), dtype=bool)
    if s.dtype.kind == "f":
        return _float_ids(s.to_numpy(dtype=np.float64), out)
    if s.dtype == object:
        text = s.str.strip()
        odd = text.isna() & s.notna()
        if odd.any():  # numbers among the strings
            text[odd] = s[odd].map(_as_text)
        fast = _clean_ints(text)
        if fast is not None:
            return fast
    else:
        text = s.map(_as_text)
    digits = text.str.isdecimal().fillna(False).to_numpy(dtype=bool)  # what int() reads (any script's 0-9)
    words = text.to_numpy()
    ok = digits.copy()
    far = np.zeros(len(s), dtype=bool)
    try:
        out[digits] = words[digits].astype(np.int64)
    except OverflowError:  # some id beyond int64: one at a time (rare)
        for i in np.flatnonzero(digits):
            n = int(words[i])
            out[i], ok[i], far[i] = (n, True, False) if n <= INT64_MAX else (-1, False, True)
    rest = ~digits & text.notna().to_numpy()
    if rest.any():  # "-3", "7.0", "1e3": only exact below 2**53
        sub, sub_ok, sub_far = _float_ids(pd.to_numeric(text[rest], errors="coerce").to_numpy(dtype=np.float64),
                                          np.full(int(rest.sum()), -1, dtype=np.int64))
        out[rest], ok[rest], far[rest] = sub, sub_ok, sub_far
    return out, ok, far


def _clean_ints(text: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The common case, every value a plain int64 digit string: parsed in one call; else ``None``."""
    try:
        arr = text.to_numpy().astype(np.int64)  # int() of each string: exact, raises on anything else
    except (ValueError, TypeError, OverflowError):
        return None
    ok = arr >= 0
    return np.where(ok, arr, -1), ok, ~ok


def _as_text(v: Any) -> str | None:
    if isinstance(v, str):
        return v.strip()
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
        return str(v)
    return None


def _float_ids(arr: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore"):
        whole = np.isfinite(arr) & (arr == np.round(arr))
        ok = whole & (arr >= 0) & (arr < 2.0**53)
        far = whole & ((arr < 0) | (arr >= 2.0**63))  # between 2**53 and 2**63 a float is not exact: not "range"
    out[ok] = arr[ok].astype(np.int64)
    return out, ok, far


def dense_class_ids(raw: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Map non-negative class ids (``-1`` = none) to ``0..k-1`` in increasing order.

    Returns:
        The dense labels (``-1`` kept) and the class names (the original ids as strings).
    """
    raw = np.asarray(raw, dtype=np.int64)
    present = np.unique(raw[raw >= 0])
    label = np.full(raw.shape, -1, dtype=np.int64)
    label[raw >= 0] = np.searchsorted(present, raw[raw >= 0])
    return label, [str(int(c)) for c in present]


def _line_of(err: BaseException) -> int | None:
    for attr in ("lineno", "line_num"):
        value = getattr(err, attr, None)
        if isinstance(value, int):
            return value
    return None


def _reason(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    first = text[0].strip() if text else ""
    name = type(err).__name__
    if isinstance(err, MemoryError):
        return "not enough memory to read it"
    if isinstance(err, pickle.UnpicklingError):
        return f"not a valid pickle ({first})" if first else "not a valid pickle"
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return f"{name}: {first[:200]}" if first else name


@contextlib.contextmanager
def reading(path: str | os.PathLike, hint: str = "check the file or download it again") -> Iterator[None]:
    """Turn any exception raised inside into a one-line :class:`DataFormatError` naming ``path``.

    :class:`~gflkit.errors.GFLError` (already one line) passes through, prefixed
    with ``path`` when it names neither ``path`` nor its folder; ``KeyboardInterrupt``
    passes through unchanged. The line number is added when the exception carries
    one (``json.JSONDecodeError``, ``csv.Error`` ...). Contexts nest: the
    innermost one names the file, and an error it let out or made is marked
    (``located``) so that an outer context, reading another file, leaves it alone.
    """
    try:
        yield
    except GFLError as err:
        text, parent = str(err), Path(path).parent
        if getattr(err, "located", False) or str(path) in text or (parent != Path(".") and str(parent) in text):
            err.located = True
            raise
        located = type(err)(f"{path}: {text}")
        located.located = True
        raise located from None
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except Exception as err:  # noqa: BLE001 - any failure of a third-party parser
        line = _line_of(err)
        where = f"{path}, line {line}" if line else f"{path}"
        located = DataFormatError(f"{where}: cannot be read ({_reason(err)}); {hint}")
        located.located = True
        raise located from None


def guard_reader(fn: _F) -> _F:
    """Decorate a reader whose first argument is its file or folder with :func:`reading`."""

    @functools.wraps(fn)
    def wrapper(path, *args, **kwargs):
        with reading(Path(path) if isinstance(path, (str, os.PathLike)) else path):
            return fn(path, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


# -- declared sizes of .npy / .npz files ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ArrayInfo:
    """What an array's ``.npy`` header declares; nothing of its data is read."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def size(self) -> int:
        """Number of values (a Python int: a lying header cannot overflow it)."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def describe(self) -> str:
        return f"{' x '.join(map(str, self.shape)) or 'scalar'} {self.dtype} array ({human_bytes(self.nbytes)})"


@dataclass(frozen=True)
class SparseInfo:
    """What a :func:`scipy.sparse.save_npz` file declares: format, shape, stored values and bytes of all arrays."""

    format: str
    shape: tuple[int, int]
    dtype: np.dtype  # of the stored values
    nnz: int  # stored values
    nbytes: int  # all arrays of the archive, as their headers declare them


def _npy_header(f, where: str) -> tuple[ArrayInfo, int]:
    """The header of the ``.npy`` stream ``f`` and the offset of its data (numpy's public header readers)."""
    major, _ = np.lib.format.read_magic(f)
    read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
    shape, _, dtype = read(f)
    if dtype.hasobject:
        raise DataFormatError(f"{where}: holds Python objects (loading them would unpickle code), not numbers; "
                              f"save a numeric array")
    if any(int(d) < 0 for d in shape):
        raise DataFormatError(f"{where}: its header declares a negative size {tuple(shape)}")
    return ArrayInfo(tuple(int(d) for d in shape), dtype), f.tell()


def _stored(where: str, info: ArrayInfo, stored: int) -> None:
    if info.nbytes > stored:
        raise DataFormatError(f"{where}: its header declares a {info.describe()} but only {max(stored, 0)} bytes of "
                              f"data follow; the file is cut short or its header is wrong")


def npy_info(path: str | os.PathLike, hint: str = "check the file") -> ArrayInfo:
    """The shape and dtype a ``.npy`` file declares, checked against the bytes it holds (only the header is read).

    Raises:
        DataFormatError: not a ``.npy`` file, an object (pickle) array, or less data than declared.
    """
    path = Path(path)
    with reading(path, hint):
        with open(path, "rb") as f:
            info, offset = _npy_header(f, str(path))
        _stored(str(path), info, path.stat().st_size - offset)
    return info


def npz_info(path: str | os.PathLike, hint: str = "check the file") -> dict[str, ArrayInfo]:
    """The shape and dtype every array of an ``.npz`` archive declares, from the zip's and the arrays' headers.

    Only the first bytes of each member are decompressed. Each array must hold
    the data its header declares (the zip header gives the member's size); a
    member that is not an ``.npy`` array counts as its bytes (``uint8``).
    """
    path = Path(path)
    out: dict[str, ArrayInfo] = {}
    with reading(path, hint), zipfile.ZipFile(path) as archive:
        for member in archive.infolist():
            if not member.filename.endswith(".npy"):
                out[member.filename] = ArrayInfo((member.file_size,), np.dtype(np.uint8))
                continue
            name = member.filename[:-4]
            where = f"{path} (array {name!r})"
            with archive.open(member) as f:
                info, offset = _npy_header(f, where)
            _stored(where, info, member.file_size - offset)
            out[name] = info
    return out


_SPARSE_FORMATS = ("csr", "csc", "bsr", "dia", "coo")


def sparse_npz_info(path: str | os.PathLike, hint: str = "write it with scipy.sparse.save_npz") -> SparseInfo:
    """The format, shape and sizes a :func:`scipy.sparse.save_npz` file declares, before loading it.

    Only the two small arrays ``format`` and ``shape`` are read (after their
    own headers are checked); the others are sized from their headers.
    """
    path = Path(path)
    arrays = npz_info(path, hint)
    fmt, shape, data = arrays.get("format"), arrays.get("shape"), arrays.get("data")
    if fmt is None or shape is None or data is None:
        raise DataFormatError(f"{path}: not a SciPy sparse matrix (it needs the arrays 'format', 'shape' and "
                              f"'data'; it has {', '.join(map(repr, sorted(arrays)[:6])) or 'none'}); {hint}")
    if fmt.dtype.kind not in "US" or fmt.size != 1 or fmt.nbytes > 256 or shape.dtype.kind not in "iu" \
            or shape.shape != (2,):
        raise DataFormatError(f"{path}: its 'format' and 'shape' arrays are not a sparse matrix's (a format name "
                              f"and two sizes); {hint}")
    with reading(path, hint), np.load(path, allow_pickle=False) as archive:
        name, dims = archive["format"].item(), [int(v) for v in archive["shape"]]
    name = name.decode("ascii", "replace") if isinstance(name, bytes) else str(name)
    if name not in _SPARSE_FORMATS:
        raise DataFormatError(f"{path}: unknown sparse format {name[:20]!r} (SciPy writes "
                              f"{', '.join(_SPARSE_FORMATS)}); {hint}")
    if not all(0 <= d <= INT64_MAX for d in dims):
        raise DataFormatError(f"{path}: declares the shape {tuple(dims)}; sizes must lie in 0..2**63-1")
    return SparseInfo(name, (dims[0], dims[1]), data.dtype, data.size, sum(a.nbytes for a in arrays.values()))


# -- graphs without edges ------------------------------------------------------------------------------------------
def check_edges(path: str | os.PathLike, edges: int, records: int, required: bool = False,
                log: logging.Logger | None = None, unit: str = "rows") -> None:
    """Warn, or refuse when ``required``, when the edge file ``path`` gave no edge at all.

    Args:
        path: the file the edges come from (named in the message).
        edges: edges kept (self-loops not counted).
        records: data rows (or links) the file holds, kept or not.
        required: the graph is read to be cut into graphs (which needs edges): refuse.
        log: where the warning goes (default: this module's logger).
        unit: what ``records`` counts, for the message.
    """
    if edges:
        return
    why = f"it holds no {unit}" if records == 0 else f"none of its {records} {unit} gave an edge"
    text = f"{path}: the graph has no edges ({why})"
    if required:
        raise DataFormatError(f"{text}; graphs are cut from the edges: check the file")
    (log or logging.getLogger(__name__)).warning("%s; every node stands alone", text)
