"""Writing a collection folder: its lock, and replacing the folder in one rename.

While a process writes a collection it holds an exclusive lock on
``.<name>.lock`` beside it (:func:`lock_collection`), so a second writer stops
at once with one line. A finished collection is written into a hidden
temporary folder and moved into place (:func:`replace_dir`): the previous
folder is first renamed to ``.<name>.old``, and a process killed between the
two renames leaves it there for the next load or save to put back
(:func:`restore_previous`). Every folder moved or deleted is first checked to
lie inside the collection's parent folder (:func:`gflkit.paths.check_inside`),
and neither the lock file nor ``.<name>.old`` is ever reached through a
symbolic link (:func:`gflkit.io.refuse_link`).
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import GFLError
from ..io import FolderLock, lock_path, refuse_link, remove_inside, replace_inside, unwritable
from ..paths import check_inside
from .manifest import GRAPHS_FILE, MANIFEST_FILE

__all__ = []


def _previous(path: Path) -> Path:
    return path.with_name(f".{path.name}.old")


_held: dict[tuple[str, int], int] = {}  # (lock file, thread) -> depth, for the locks this process holds


@contextmanager
def lock_collection(path: str | os.PathLike) -> Iterator[Path]:
    """Hold the lock ``.<name>.lock`` beside the collection folder ``path`` while the block runs.

    A second process (or thread) that wants to write the same folder is
    refused at once with a one-line :class:`GFLError`. Taken again by the same
    thread (a :meth:`GraphCollection.save` inside the block) it is held once.
    The folder must lie inside its parent folder (no ``..``, no link elsewhere:
    :func:`gflkit.paths.check_inside`) and be a collection, an empty folder or
    nothing yet; the parent is created. A symbolic link at the lock file or at
    ``.<name>.old`` is refused in one line naming it.
    """
    path = Path(path)
    file = lock_path(path)
    key = (os.path.realpath(file), threading.get_ident())
    if key in _held:
        _held[key] += 1
        try:
            yield path
        finally:
            _held[key] -= 1
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise unwritable(path, err) from None
    check_replaceable(path)
    refuse_link(_previous(path), "a collection being replaced")
    lock = FolderLock(file, path, "collection", "wait for it to end, or write the collection under another name "
                                                "or folder").acquire()
    _held[key] = 1
    try:
        yield path
    finally:
        del _held[key]
        lock.release()


def check_replaceable(path: Path) -> None:
    """Refuse ``path`` unless it lies inside its parent and is a collection, an empty folder or nothing.

    So a save never moves aside and deletes a folder that is not a collection
    (a mistyped ``~`` or ``.``), nor anything a link leads to elsewhere.
    """
    check_inside(path, path.parent)
    if not path.exists() or (path.is_dir() and ((path / MANIFEST_FILE).is_file() or not any(path.iterdir()))):
        return
    raise GFLError(f"{path}: exists and is not a gflkit collection (no {MANIFEST_FILE}); a collection replaces only "
                   f"a collection or an empty folder: choose a new folder, or remove this one yourself")


def restore_previous(path: Path) -> None:
    """Put back the collection that a save killed between its two renames had moved aside."""
    path = Path(os.path.abspath(path))  # "." and "x/.." have no name of their own
    old = _previous(path)
    if not path.exists() and not old.is_symlink() and (old / MANIFEST_FILE).is_file() and (old / GRAPHS_FILE).is_file():
        try:
            replace_inside(old, path, path.parent)
        except (OSError, GFLError):
            pass  # read-only place, a concurrent writer, or not inside its folder: load reports what it finds


def replace_dir(src: Path, dst: Path) -> None:
    """Move the finished folder ``src`` to ``dst``, replacing what was there.

    The previous folder is first renamed to ``.<name>.old``; a process killed
    before the second rename leaves it there, and the next load or save of
    ``dst`` puts it back (:func:`restore_previous`). Every folder moved or
    deleted is first checked to lie inside ``dst``'s parent.
    """
    root = dst.parent
    if dst.exists() or dst.is_symlink():
        old = _previous(dst)
        refuse_link(old, "a collection being replaced")
        remove_inside(old, root)
        replace_inside(dst, old, root)
        replace_inside(src, dst, root)
        remove_inside(old, root)
    else:
        replace_inside(src, dst, root)
