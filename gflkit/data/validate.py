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
  where the exception knows it).
"""
from __future__ import annotations

import contextlib
import functools
import os
import pickle
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

import numpy as np
import pandas as pd

from ..errors import DataFormatError, GFLError

__all__ = [
    "INT64_MAX", "finite_features", "int_ids", "dense_class_ids", "reading", "guard_reader",
]

INT64_MAX = 2**63 - 1
_F = TypeVar("_F", bound=Callable[..., Any])


def finite_features(feat: np.ndarray, report=None, where: str = "features") -> np.ndarray:
    """``feat`` with every NaN/inf value set to 0; rows with one are counted in ``report``.

    Args:
        feat: a numeric ``(n, d)`` array (dense).
        report: a :class:`~gflkit.data.sources.base.BadInputReport`, or ``None``.
        where: name of the table, used in the report.

    Returns:
        A float32 array (``feat`` itself when it was float32 and clean).
    """
    feat = np.asarray(feat)
    if feat.dtype.kind not in "biuf":
        raise DataFormatError(f"{where}: features must be numbers, found dtype {feat.dtype}")
    feat = feat.astype(np.float32, copy=False)
    bad = ~np.isfinite(feat)
    if bad.any():
        rows = np.flatnonzero(bad.reshape(len(feat), -1).any(axis=1)) if feat.ndim > 1 else np.flatnonzero(bad)
        if report is not None:
            report.add("non-finite feature value (set to 0)", f"{where}: row {int(rows[0])}", int(rows.size))
        feat = np.where(bad, np.float32(0), feat)
    return feat


def int_ids(values: Sequence[Any] | pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Parse ids into int64, exactly; ``(ids, ok)`` with ``-1`` where ``ok`` is False.

    Accepted: integers and decimal strings (also ``"7.0"``) in ``0 .. 2**63 - 1``.
    Digit strings are converted without a float round-trip, so ids near the
    int64 limit stay exact. Booleans, negative, fractional, non-finite and too
    large values are refused.
    """
    s = pd.Series(values) if not isinstance(values, pd.Series) else values.reset_index(drop=True)
    out = np.full(len(s), -1, dtype=np.int64)
    if s.dtype.kind in "iu":
        arr = s.to_numpy()
        ok = (arr >= 0) & (arr <= INT64_MAX) if s.dtype.kind == "u" else arr >= 0
        out[ok] = arr[ok].astype(np.int64)
        return out, ok
    if s.dtype.kind == "b":
        return out, np.zeros(len(s), dtype=bool)
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
    try:
        out[digits] = words[digits].astype(np.int64)
    except OverflowError:  # some id beyond int64: one at a time (rare)
        for i in np.flatnonzero(digits):
            n = int(words[i])
            out[i], ok[i] = (n, True) if n <= INT64_MAX else (-1, False)
    rest = ~digits & text.notna().to_numpy()
    if rest.any():  # "7.0", "1e3": only exact below 2**53
        sub, sub_ok = _float_ids(pd.to_numeric(text[rest], errors="coerce").to_numpy(dtype=np.float64),
                                 np.full(int(rest.sum()), -1, dtype=np.int64))
        out[rest], ok[rest] = sub, sub_ok
    return out, ok


def _clean_ints(text: pd.Series) -> tuple[np.ndarray, np.ndarray] | None:
    """The common case, every value a plain int64 digit string: parsed in one call; else ``None``."""
    try:
        arr = text.to_numpy().astype(np.int64)  # int() of each string: exact, raises on anything else
    except (ValueError, TypeError, OverflowError):
        return None
    ok = arr >= 0
    return np.where(ok, arr, -1), ok


def _as_text(v: Any) -> str | None:
    if isinstance(v, str):
        return v.strip()
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
        return str(v)
    return None


def _float_ids(arr: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(arr) & (arr >= 0) & (arr < 2.0**53) & (arr == np.round(arr))
    out[ok] = arr[ok].astype(np.int64)
    return out, ok


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
    one (``json.JSONDecodeError``, ``csv.Error`` ...).
    """
    try:
        yield
    except GFLError as err:
        text, parent = str(err), Path(path).parent
        if str(path) in text or (parent != Path(".") and str(parent) in text):
            raise
        raise type(err)(f"{path}: {text}") from None
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except Exception as err:  # noqa: BLE001 - any failure of a third-party parser
        line = _line_of(err)
        where = f"{path}, line {line}" if line else f"{path}"
        raise DataFormatError(f"{where}: cannot be read ({_reason(err)}); {hint}") from None


def guard_reader(fn: _F) -> _F:
    """Decorate a reader whose first argument is its file or folder with :func:`reading`."""

    @functools.wraps(fn)
    def wrapper(path, *args, **kwargs):
        with reading(Path(path) if isinstance(path, (str, os.PathLike)) else path):
            return fn(path, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
