"""Where gflkit looks for raw data, processed collections and runs.

The data root is, in order: an explicit argument (``--data-root``), the
``GFLKIT_DATA`` environment variable, ``./data`` when it exists (a clone of the
project), else ``~/.gflkit/data``. Raw files live under ``<root>/raw/<source>/``,
collections under ``<root>/processed/<name>/``; runs go to ``./runs/``.

A command's DATA is a folder path or a collection name. A bare name (a name as
:func:`check_name` allows: no folder separator, not starting with ``.`` or
``~``) means the collection of that name
under the data root; a folder of the same name in the working directory is used
only when no such collection exists, and when both exist a one-line warning says
which was taken. Write ``./name`` to mean the folder.

A name that becomes a folder name (a collection's, a run's) is a single plain
path component (:func:`check_name`): never a path, never hidden, never a
control character. Before gflkit moves or deletes an existing folder it checks
that the folder lies inside the folder it belongs to (:func:`check_inside`).
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

from .errors import GFLError

ENV_VAR = "GFLKIT_DATA"
MANIFEST = "manifest.json"
#: Longest name (UTF-8 bytes) of a collection or other named folder.
NAME_LIMIT = 100
#: Longest run folder name: a collection name plus the model, seed and settings hash.
RUN_NAME_LIMIT = 200
#: What every name may look like, for messages.
NAME_RULE = "one folder name: no '/' or '\\', not starting with '.' or '~', printable, at most {limit} bytes"

log = logging.getLogger(__name__)


def name_problem(text: object, limit: int = NAME_LIMIT) -> str | None:
    r"""What keeps ``text`` from being a safe folder name, or ``None`` when it is one.

    A name is a non-empty ``str`` of printable characters (no NUL, newline or
    other control or invisible character), without ``/`` or ``\``, not
    starting with ``.`` (so never ``.`` or ``..``, nor a hidden file such as
    gflkit's own temporaries) or ``~``, not starting or ending with a space, and
    at most ``limit`` bytes in UTF-8.
    """
    if not isinstance(text, str):
        return f"is a {type(text).__name__}, not text"
    if not text:
        return "is empty"
    if not text.isprintable():
        bad = next(c for c in text if not c.isprintable())
        return f"contains the control or non-printable character {bad!r}"
    for sep in ("/", "\\"):
        if sep in text:
            return f"contains {sep!r}: it is a path, not a name"
    if text.startswith((".", "~")):
        return f"starts with {text[0]!r}"
    if text != text.strip():
        return "starts or ends with a space"
    size = len(text.encode("utf-8"))
    if size > limit:
        return f"is {size} bytes long (at most {limit})"
    return None


def is_name(text: object, limit: int = NAME_LIMIT) -> bool:
    """Whether ``text`` is a safe folder name (:func:`name_problem`)."""
    return name_problem(text, limit) is None


def check_name(text: object, *, what: str = "collection name", origin: object = None, limit: int = NAME_LIMIT,
               advice: str | None = None) -> str:
    """``text`` when it is a safe folder name; else a one-line :class:`GFLError`.

    Every name that becomes a folder or file name passes through here: names
    given as parameters, names found in files (a file-name prefix, a
    manifest field) and names gflkit builds from them (run names).

    Args:
        text: the name.
        what: what the name is, for the message (``collection name``, ``run name``...).
        origin: where the name came from (a file, a field), put first in the message.
        limit: the longest name, in UTF-8 bytes.
        advice: what to do instead (default: the rule a name follows).
    """
    problem = name_problem(text, limit)
    if problem is None:
        return text  # type: ignore[return-value]
    where = f"{origin}: " if origin is not None else ""
    advice = advice or f"give a plain name such as 'my-family' ({NAME_RULE.format(limit=limit)})"
    raise GFLError(f"{where}{what} {text!r} {problem}; {advice}")


def check_inside(path: str | os.PathLike, root: str | os.PathLike) -> Path:
    """``path`` when it lies strictly inside the folder ``root``, both resolved (symbolic links followed).

    Called before an existing file or folder is replaced or deleted, so that a
    name such as ``..``, or a link to somewhere else, never lets gflkit move
    or delete anything outside the folder it writes to.

    Raises:
        GFLError: naming ``path``, where it leads and the folder it should be in.
    """
    real, base = os.path.realpath(path), os.path.realpath(root)
    if real == base or os.path.commonpath([real, base]) != base:
        raise GFLError(f"{path}: not a folder inside {base} (it resolves to {real}); gflkit replaces or deletes "
                       f"nothing outside the folder it writes to: give a path inside {base}")
    return Path(path)


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


def processed_root(root: str | os.PathLike | None = None) -> Path:
    """The folder that holds the processed collections, ``<root>/processed``."""
    return data_root(root) / "processed"


def processed_dir(name: str, root: str | os.PathLike | None = None) -> Path:
    """Folder of the processed collection called ``name`` (a name: :func:`check_name`, else :class:`GFLError`)."""
    return processed_root(root) / check_name(name)


def runs_dir() -> Path:
    """Default parent folder of training runs."""
    return Path("runs")


def collection_names(root: str | os.PathLike | None = None) -> list[str]:
    """Names of the collections under ``<root>/processed/`` (folders with a manifest), sorted."""
    processed = processed_root(root)
    if not processed.is_dir():
        return []
    return sorted(p.name for p in processed.iterdir() if is_name(p.name) and (p / MANIFEST).is_file())


def resolve_collection(data: str | os.PathLike, root: str | os.PathLike | None = None) -> Path | None:
    """The folder that ``data`` (a path or a collection name) points to, or ``None``.

    A bare name is looked up under ``<root>/processed/`` first; a folder of the
    same name in the working directory is the fallback. When both hold a
    collection, the named one wins and a warning says so.
    """
    text = os.fspath(data)
    path = Path(text).expanduser()
    if not isinstance(data, str) or not is_name(text):
        return path if path.is_dir() else None
    named = processed_dir(text, root)
    if named.is_dir():
        if (path / MANIFEST).is_file() and path.resolve() != named.resolve():
            log.warning("%r is both the collection %s and the folder ./%s; using the collection "
                        "(write ./%s for the folder)", text, named, text, text)
        return named
    return path if path.is_dir() else None


def printable(text: str) -> str:
    r"""``text`` as it can be written as UTF-8: bytes of a file name that are not UTF-8 as ``\xNN``.

    A folder name that is not valid UTF-8 reaches Python with its bytes as
    surrogate escapes (PEP 383), which no UTF-8 output can write; other lone
    surrogates (from a JSON ``"\udcff"``) become ``\uNNNN``.
    """
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
