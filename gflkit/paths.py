"""Where gflkit looks for raw data, processed collections and runs.

The data root is, in order: an explicit argument (``--data-root``), the
``GFLKIT_DATA`` environment variable, ``./data`` when it exists (a clone of the
project), else ``~/.gflkit/data``. Raw files live under ``<root>/raw/<source>/``,
collections under ``<root>/processed/<name>/``; runs go to ``./runs/``.
"""
from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "GFLKIT_DATA"


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
