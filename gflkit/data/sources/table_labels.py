"""The label column of a user's node table -> class indices: unlabelled markers, quantile classes.

A numeric label column (a count, a score) can be binned into quantile classes
(``TableColumns.label_quantiles``, as Geom-GCN bins the Wikipedia networks'
traffic into 5 classes): see :func:`quantile_classes`. The bins are recorded in
the manifest (``meta.label_bins``).
"""
from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

from ...errors import GFLError
from ...sizes import require_at_most
from .table_io import add_lines, column, sorted_classes
from .table_nodes import NodeRows, TableColumns

__all__: list[str] = []

log = logging.getLogger(__name__)


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


def node_labels(nd: NodeRows, rows, cols: TableColumns, classes, report) -> tuple[np.ndarray, list[str], dict | None]:
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
