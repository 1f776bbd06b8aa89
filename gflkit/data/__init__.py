"""Graph collections: the on-disk format, the built-in family and raw sources."""
from __future__ import annotations

import logging
import os

from .. import names
from ..errors import GFLError
from ..paths import is_name, processed_dir, resolve_collection
from .collection import SPLITS, GraphCollection, build_graph  # noqa: F401 - importable here, not public
from .synthetic import SMALL_SPEC, SyntheticSpec, make_synthetic_family

__all__ = ["GraphCollection", "SyntheticSpec", "SMALL_SPEC", "make_synthetic_family", "load_collection"]

log = logging.getLogger(__name__)

#: The collection used when a command is given no data (:data:`gflkit.names.DEFAULT_COLLECTION`).
DEFAULT_COLLECTION = names.DEFAULT_COLLECTION


def load_collection(
    data: str | os.PathLike | GraphCollection | None = None, root: str | os.PathLike | None = None
) -> GraphCollection:
    """Open a collection by folder path or by name under ``<root>/processed/``.

    With no ``data`` the built-in default family (``synthetic``) is used; it is
    generated into the data root on first use and reused afterwards.
    """
    if isinstance(data, GraphCollection):
        return data
    if data is None:
        path = processed_dir(DEFAULT_COLLECTION, root)
        if not (path / "manifest.json").is_file():
            log.info("building the default synthetic family into %s (first use)", path)
            family = make_synthetic_family(progress=True)
            family.save(path)
            return family  # what was just written: no need to read it back
        return GraphCollection.load(path)
    path = resolve_collection(data, root)
    if path is not None:
        return GraphCollection.load(path)
    if str(data) == DEFAULT_COLLECTION:
        return load_collection(None, root)
    nor = f" (nor {processed_dir(str(data), root)})" if is_name(str(data)) else ""
    raise GFLError(
        f"no collection at {data!r}{nor}: give a collection folder, or build one "
        f"with 'gflkit preprocess <source>'"
    )
