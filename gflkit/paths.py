"""Where gflkit looks for raw data, processed collections and runs.

The data root is, in order: an explicit argument (``--data-root``), the
``GFLKIT_DATA`` environment variable, ``./data`` when it exists (a clone of the
project), else ``~/.gflkit/data``. Raw files live under ``<root>/raw/<source>/``,
collections under ``<root>/processed/<name>/``; runs go to ``./runs/``.

A command's DATA is a folder path or a collection name. A bare name (no folder
separator, not starting with ``.`` or ``~``) means the collection of that name
under the data root; a folder of the same name in the working directory is used
only when no such collection exists, and when both exist a one-line warning says
which was taken. Write ``./name`` to mean the folder.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

ENV_VAR = "GFLKIT_DATA"
MANIFEST = "manifest.json"

log = logging.getLogger(__name__)


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data root folder (see module docstring for the search order)."""
    if root is not None:
        return Path(root).expanduser()
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    local = Path("data")
    if local.is_dir():
        return local
    return Path.home() / ".gflkit" / "data"


def raw_dir(source: str, root: str | os.PathLike | None = None) -> Path:
    """Folder holding the raw files of ``source`` (e.g. ``aminer``)."""
    return data_root(root) / "raw" / source


def processed_dir(name: str, root: str | os.PathLike | None = None) -> Path:
    """Folder of the processed collection called ``name``."""
    return data_root(root) / "processed" / name


def runs_dir() -> Path:
    """Default parent folder of training runs."""
    return Path("runs")


def collection_names(root: str | os.PathLike | None = None) -> list[str]:
    """Names of the collections under ``<root>/processed/`` (folders with a manifest), sorted."""
    processed = data_root(root) / "processed"
    if not processed.is_dir():
        return []
    return sorted(p.name for p in processed.iterdir() if (p / MANIFEST).is_file())


def _is_bare_name(text: str) -> bool:
    return not (os.sep in text or (os.altsep and os.altsep in text) or text.startswith((".", "~")))


def resolve_collection(data: str | os.PathLike, root: str | os.PathLike | None = None) -> Path | None:
    """The folder that ``data`` (a path or a collection name) points to, or ``None``.

    A bare name is looked up under ``<root>/processed/`` first; a folder of the
    same name in the working directory is the fallback. When both hold a
    collection, the named one wins and a warning says so.
    """
    text = os.fspath(data)
    path = Path(text).expanduser()
    if not isinstance(data, str) or not _is_bare_name(text):
        return path if path.is_dir() else None
    named = processed_dir(text, root)
    if named.is_dir():
        if (path / MANIFEST).is_file() and path.resolve() != named.resolve():
            log.warning("%r is both the collection %s and the folder ./%s; using the collection "
                        "(write ./%s for the folder)", text, named, text, text)
        return named
    return path if path.is_dir() else None
