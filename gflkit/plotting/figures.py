"""How gflkit's figures look and are written: colours, hatching, new figures, the file format and the writing.

Every figure is written by :func:`save_figure`, which checks first that the
image fits (:func:`check_resolution`: ``dpi`` against the pixels a PNG can
have and the memory available) and draws text as it is given: text from a
user's tables (model names, column names, cell values) is never read as
matplotlib's math notation, so a ``$`` in a name is a dollar sign.
"""
from __future__ import annotations

import importlib
import os
import zlib
from pathlib import Path
from typing import Any

from gflkit.names import FIGURE_FORMATS as FORMATS  # figure file formats: --format or the output's suffix

from ..errors import GFLError
from ..io import atomic_write_with
from ..names import MODEL_DISPLAY_NAMES, VARIANT_DISPLAY_NAMES
from ..sizes import require_fit

_EXTRA = "pip install 'gflkit[plot]'"

#: The paper's names of the models (Table 2), by series key (:data:`gflkit.names.MODEL_DISPLAY_NAMES`).
MODEL_NAMES = MODEL_DISPLAY_NAMES

#: What each ablation variant is (Table 3; :data:`gflkit.names.VARIANT_DISPLAY_NAMES`).
VARIANT_NAMES = VARIANT_DISPLAY_NAMES

#: One colour per model or variant, the same in every figure.
COLORS = {
    "gfl": "#d62728", "gfl-mean": "#d62728", "gfl-att": "#ff7f0e", "protonet": "#1f77b4", "maml": "#2ca02c",
    "matchingnet": "#9467bd", "knn": "#8c564b", "agf": "#e377c2", "transfer-head": "#393b79", "gcn": "#7f7f7f",
    "lp": "#bcbd22", "node2vec": "#17becf", "deepwalk": "#6baed6", "planetoid": "#98df8a", "majority": "#d9d9d9",
    "tlp": "#31a354", "tlp-bgrl": "#756bb1", "tlp-sup": "#e7969c",
    "centroid": "#a55194", "centroid-sgc": "#ce6dbd", "ridge": "#e6550d", "ridge-sgc": "#fd8d3c",
    "full": "#d62728", "structure": "#1f77b4", "gate": "#fdae6b", "hierarchy": "#9e9ac8", "recon": "#a1d99b",
}
_SPARE = ("#637939", "#8c6d31", "#843c39", "#7b4173", "#5254a3", "#8ca252", "#bd9e39", "#ad494a")
#: Hatching of a bar: the majority-class reference, and refined rows (``protonet+lp``) by refinement.
_HATCHES = {"majority": "///"}
_REFINE_HATCHES = {"lp": "..", "cs": "xx"}


def color_of(key: str) -> str:
    """The colour of a series: fixed for known models and variants (a refined row, ``protonet+lp``,
    has its model's), else stable per name."""
    base = key.partition("+")[0]
    return COLORS.get(key) or COLORS.get(base) or _SPARE[zlib.crc32(key.encode()) % len(_SPARE)]


def _hatch(key: str) -> str | None:
    base, _, refine = key.partition("+")
    return _REFINE_HATCHES.get(refine) if refine else _HATCHES.get(base)


def require(module: str, package: str) -> Any:
    """Import ``module`` or raise a one-line :class:`GFLError` naming ``package``."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise GFLError(f"plotting needs {package}, which is not installed: run {_EXTRA}") from None


def new_figure(width: float, height: float):
    """An empty :class:`matplotlib.figure.Figure` with constrained layout (no pyplot state)."""
    figure = require("matplotlib.figure", "matplotlib")
    return figure.Figure(figsize=(width, height), layout="constrained")


def figure_format(path: str | os.PathLike, fmt: str | None = None) -> str:
    """The format of a figure file: ``fmt``, else the suffix of ``path``.

    Raises:
        GFLError: the two disagree, or neither names one of :data:`FORMATS`.
    """
    suffix = Path(path).suffix.lower().lstrip(".")
    if fmt is None:
        if suffix not in FORMATS:
            raise GFLError(f"{path}: give a file name ending in .png, .pdf or .svg, or choose `fmt`")
        return suffix
    if fmt not in FORMATS:
        raise GFLError(f"figure format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if suffix and suffix != fmt:
        raise GFLError(f"{path}: the name ends in .{suffix} but `fmt={fmt}`; make them agree")
    return fmt


#: The most pixels a side of a PNG may have (matplotlib's Agg renderer refuses more).
MAX_SIDE_PIXELS = 2**23 - 1
#: Bytes per pixel while a PNG is drawn and written: the RGBA canvas and the encoder's copies.
BYTES_PER_PIXEL = 12


def check_resolution(fig, dpi: int, fmt: str) -> None:
    """Refuse, before drawing, a ``dpi`` at which the PNG of ``fig`` would not fit.

    Raises:
        SizeError: naming ``dpi`` and the largest that fits (the sides' limit
            :data:`MAX_SIDE_PIXELS` and the available memory).
    """
    if fmt != "png":  # vector formats draw text and lines without pixels
        return
    width, height = (float(v) for v in fig.get_size_inches())

    def need(value: float) -> float:
        if max(width, height) * value > MAX_SIDE_PIXELS:
            return float("inf")
        return BYTES_PER_PIXEL * width * value * height * value

    require_fit("dpi", dpi, need, f"a {width:.3g} x {height:.3g} inch PNG")


def _plain_text(fig) -> None:
    """Draw every text of ``fig`` as given: no matplotlib math notation (``$...$``) in names from tables."""
    text = require("matplotlib.text", "matplotlib")
    for artist in fig.findobj(text.Text):
        artist.set_parse_math(False)


def save_figure(fig, path: str | os.PathLike, fmt: str | None = None, dpi: int = 150) -> Path:
    """Write ``fig`` to ``path`` through a temporary file and a rename.

    The format comes from :func:`figure_format`; PDF and SVG files carry no
    creation date, so the same figure gives the same bytes. The resolution is
    checked first (:func:`check_resolution`), and text is drawn as given.
    """
    fmt = figure_format(path, fmt)
    check_resolution(fig, dpi, fmt)
    _plain_text(fig)
    metadata = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}.get(fmt)
    return atomic_write_with(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=dpi, metadata=metadata))

