"""Writing a run folder so that it never exists half-written.

Training writes into a hidden folder beside the run, ``.<name>.partial``:
``config.json`` first, ``last.pt`` (the resume checkpoint) every few steps,
then ``best.pt``, ``config.json`` again (now with the SHA-256 of ``best.pt``
and ``metrics.csv`` under ``sha256``) and ``metrics.csv``, and renames it to
``<name>`` when training ends. So ``<name>`` only ever exists complete; a
killed run leaves only the partial folder, which ``gflkit train --resume
<name>`` continues and a new run of the same name removes. While a process
writes the run it holds an exclusive lock on ``.<name>.lock``
(:class:`gflkit.io.FolderLock`), so a second process writing the same run
stops at once with one line. The lock is the ``flock``, not the file: a file
left by a killed process locks nothing. A folder is moved or deleted only after
a check that it lies inside the run's parent folder
(:func:`gflkit.paths.check_inside`), and ``force`` replaces only a run (or an
empty folder).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from ..errors import GFLError
from ..io import FolderLock as _Lock, lock_path as _lock_path
from ..paths import check_inside
from ..io import atomic_torch_save, atomic_write_text, atomic_write_with, remove_inside, replace_inside

__all__ = []

log = logging.getLogger(__name__)

CONFIG_FILE, METRICS_FILE, BEST_FILE, LAST_FILE = "config.json", "metrics.csv", "best.pt", "last.pt"
#: ``format`` field of a resume checkpoint (``last.pt``).
RESUME_FORMAT = "gflkit.resume"
#: Entry a loaded resume checkpoint carries (not saved): the file it was read from, for errors.
RESUME_SOURCE = "source"
_PARTIAL = ".partial"
#: Key of ``config.json`` holding ``{file name: SHA-256 hex digest}`` of a finished run's files.
HASHES = "sha256"
#: The files of a finished run whose SHA-256 ``config.json`` records.
HASHED_FILES = (BEST_FILE, METRICS_FILE)
_CHUNK = 1 << 20


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def recorded_hashes(config: dict[str, Any]) -> dict[str, str] | None:
    """The SHA-256 digests a run's ``config.json`` records, ``None`` for a run written before they were.

    Raises:
        ValueError: the entry is there but is not a table of file names to hex digests.
    """
    hashes = config.get(HASHES)
    if hashes is None:
        return None
    if not (isinstance(hashes, dict) and all(isinstance(v, str) and len(v) == 64 for v in hashes.values())):
        raise ValueError(f"{HASHES} is not a table of file names to SHA-256 digests")
    return hashes


def _mismatch(path: Path) -> str:
    return (f"{path}: its SHA-256 differs from the one {path.parent / CONFIG_FILE} recorded when the run finished "
            f"(the file was changed or damaged since); restore it or train the run again")


def read_verified(path: str | os.PathLike) -> bytes:
    """The bytes of a run's file, checked against the SHA-256 its run's ``config.json`` recorded.

    A file whose run records no digest for it (a run written before digests
    were, a checkpoint outside a run folder, an unreadable ``config.json``) is
    read unchecked.

    Raises:
        GFLError: the file cannot be read, or its digest differs from the recorded one.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise GFLError(f"{path}: cannot read it ({err.strerror or err})") from None
    try:
        config = json.loads((path.parent / CONFIG_FILE).read_text(encoding="utf-8"))
        want = (recorded_hashes(config) or {}).get(path.name) if isinstance(config, dict) else None
    except (OSError, ValueError):
        want = None
    if want is not None and hashlib.sha256(data).hexdigest() != want:
        raise GFLError(_mismatch(path))
    return data


def final_run_path(path: str | os.PathLike) -> Path:
    """The run folder named by ``path``, which may also be its hidden partial folder."""
    path = Path(path)
    name = path.name
    if name.startswith(".") and name.endswith(_PARTIAL) and len(name) > len(_PARTIAL) + 1:
        return path.with_name(name[1 : -len(_PARTIAL)])
    return path


def partial_path(run: str | os.PathLike) -> Path:
    """The hidden folder a run is written to before it is renamed into place."""
    run = final_run_path(run)
    return run.with_name(f".{run.name}{_PARTIAL}")


def _old_path(run: Path) -> Path:
    return run.with_name(f".{run.name}.old")


def next_free_path(run: str | os.PathLike) -> Path:
    """``run`` itself when unused, else the first free ``run-2``, ``run-3``, ..."""
    run = final_run_path(run)
    candidate, i = run, 1
    while candidate.exists() or partial_path(candidate).exists():
        i += 1
        candidate = run.with_name(f"{run.name}-{i}")
    return candidate


def _remove(path: Path) -> None:
    """Delete ``path``, which lies in the folder of the run (checked: :func:`~gflkit.io.remove_inside`)."""
    remove_inside(path, path.parent)


def clear_stale_lock(run: str | os.PathLike) -> None:
    """Remove the lock file of ``run`` that no process holds (left by one that was killed while writing the run).

    A lock held by a live process stays. A stale lock never stops a run (the
    lock is the ``flock``, not the file): this only tidies up.
    """
    run = final_run_path(run)
    lock = _Lock(_lock_path(run), run)
    if not lock.path.exists():
        return
    try:
        lock.acquire()
    except GFLError:  # held, or not ours to open
        return
    lock.release()


class RunFolder:
    """One run folder, written through its hidden partial folder under a lock.

    Use as a context manager::

        with RunFolder("runs/x", force=False) as run:
            run.write_config(meta)
            ...                       # run.save_last(ckpt) every few steps
            run.finish(model_ckpt, meta, history)

    Args:
        path: the run folder (its partial folder is accepted too).
        force: replace an existing run folder when this one is finished.
        resume: continue the partial folder left by an interrupted run.

    Raises:
        GFLError: when another process holds the lock, when the run exists
            and ``force`` is not set, or when ``resume`` finds nothing.
    """

    def __init__(self, path: str | os.PathLike, *, force: bool = False, resume: bool = False) -> None:
        self.path = final_run_path(path)
        self.work = partial_path(self.path)
        self.force, self.resume = force, resume
        self._lock = _Lock(_lock_path(self.path), self.path)

    def __enter__(self) -> "RunFolder":
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise GFLError(f"{self.path.parent}: cannot create the folder for the run ({err.strerror})") from None
        check_inside(self.path, self.path.parent)  # before anything is locked, moved or deleted
        self._lock.acquire()
        try:
            self._prepare()
        except BaseException:
            self._lock.release()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if exc_type is not None and issubclass(exc_type, GFLError) and not self.resume:
                _remove(self.work)  # a run that failed cleanly leaves nothing behind
        finally:
            self._lock.release()
        return False

    def _prepare(self) -> None:
        _remove(_old_path(self.path))  # left by a replacement that was interrupted
        if self.resume:
            if not self.work.is_dir():
                raise GFLError(f"{self.path}: nothing to resume (no interrupted run {self.work.name} beside it)")
            for stale in self.work.glob(".*.tmp"):  # from saves that were interrupted
                _remove(stale)
            return
        if (self.path.exists() or self.path.is_symlink()) and not self.force:
            raise GFLError(
                f"{self.path} exists: pass `force=True` to replace it, or `run_dir={next_free_path(self.path)}`"
            )
        if self.path.exists() and not (self.path.is_dir() and ((self.path / CONFIG_FILE).is_file()
                                                                or not any(self.path.iterdir()))):
            raise GFLError(f"{self.path} exists and is not a gflkit run (no {CONFIG_FILE}); `force=True` replaces "
                           f"only a run or an empty folder: choose another `run_dir`")
        if self.work.exists():
            log.warning("removing %s, left by an interrupted run (`resume` continues such a run)", self.work)
            _remove(self.work)
        self.work.mkdir()

    @property
    def finished(self) -> bool:
        """Whether the partial folder holds a finished run that only awaits its rename."""
        return (self.work / METRICS_FILE).is_file() and (self.work / BEST_FILE).is_file()

    def read_config(self) -> dict[str, Any]:
        """The settings written when the interrupted run started."""
        path = self.work / CONFIG_FILE
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise GFLError(
                f"{path}: missing; the run was interrupted before it started, start it again"
            ) from None
        except (OSError, ValueError) as err:
            raise GFLError(f"{path}: unreadable ({err}); start the run again") from None
        if not isinstance(config, dict):
            raise GFLError(f"{path}: not a run configuration; start the run again")
        return config

    def write_config(self, meta: dict[str, Any]) -> None:
        atomic_write_text(self.work / CONFIG_FILE, json.dumps(meta, indent=1, default=str) + "\n")

    def save_last(self, ckpt: dict[str, Any]) -> None:
        """Write the resume checkpoint atomically."""
        atomic_torch_save(ckpt, self.work / LAST_FILE)

    def load_last(self) -> dict[str, Any] | None:
        """The resume checkpoint, or ``None`` when the run stopped before writing one."""
        path = self.work / LAST_FILE
        if not path.is_file():
            return None
        try:
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # unpickling errors have no common base
            raise GFLError(f"{path}: not a loadable resume checkpoint ({type(err).__name__}); "
                           f"start the run again with `force=True`") from None
        if not isinstance(ckpt, dict) or ckpt.get("format") != RESUME_FORMAT:
            raise GFLError(f"{path}: not a gflkit resume checkpoint; start the run again with `force=True`")
        return {**ckpt, RESUME_SOURCE: str(path)}

    def finish(self, best: dict[str, Any], meta: dict[str, Any], history: pd.DataFrame) -> Path:
        """Write ``best.pt``, ``config.json`` and ``metrics.csv``, then rename the run into place.

        ``config.json`` records the SHA-256 of the other two (under :data:`HASHES`);
        ``metrics.csv`` is written last: its presence marks a finished run.
        """
        atomic_torch_save(best, self.work / BEST_FILE)
        metrics = history.to_csv(index=False).encode("utf-8")
        hashes = {BEST_FILE: file_sha256(self.work / BEST_FILE), METRICS_FILE: hashlib.sha256(metrics).hexdigest()}
        self.write_config({**meta, HASHES: hashes})
        atomic_write_with(self.work / METRICS_FILE, lambda tmp: Path(tmp).write_bytes(metrics))
        return self.publish()

    def publish(self) -> Path:
        """Rename the finished partial folder to the run folder (replacing an old run)."""
        (self.work / LAST_FILE).unlink(missing_ok=True)
        if self.path.exists() or self.path.is_symlink():
            old = _old_path(self.path)
            replace_inside(self.path, old, self.path.parent)
            replace_inside(self.work, self.path, self.path.parent)
            _remove(old)
        else:
            replace_inside(self.work, self.path, self.path.parent)
        return self.path
