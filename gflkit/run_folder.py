"""Writing a run folder so that it never exists half-written.

Training writes into a hidden folder beside the run, ``.<name>.partial``:
``config.json`` first, ``last.pt`` (the resume checkpoint) every few steps,
then ``best.pt``, ``config.json`` again and ``metrics.csv``, and renames it to
``<name>`` when training ends. So ``<name>`` only ever exists complete; a
killed run leaves only the partial folder, which ``gflkit train --resume
<name>`` continues and a new run of the same name removes. While a process
writes the run it holds an exclusive lock on ``.<name>.lock``, so a second
process writing the same run stops at once with one line. The lock is the
``flock``, not the file: a file left by a killed process locks nothing.
"""
from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from .errors import GFLError
from .utils import atomic_torch_save, atomic_write_text

__all__ = [
    "RunFolder", "CONFIG_FILE", "METRICS_FILE", "BEST_FILE", "LAST_FILE",
    "final_run_path", "partial_path", "next_free_path", "clear_stale_lock",
]

log = logging.getLogger(__name__)

CONFIG_FILE, METRICS_FILE, BEST_FILE, LAST_FILE = "config.json", "metrics.csv", "best.pt", "last.pt"
_PARTIAL = ".partial"


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


def _lock_path(run: Path) -> Path:
    return run.with_name(f".{run.name}.lock")


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
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink(missing_ok=True)


class _Lock:
    """An exclusive ``flock`` on a lock file, removed again on release."""

    def __init__(self, path: Path, run: Path) -> None:
        self.path, self.run, self.fd = path, run, None

    def acquire(self) -> "_Lock":
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError as err:
                raise GFLError(f"{self.path}: cannot create the run's lock file ({err.strerror})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                os.close(fd)
                if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise GFLError(
                        f"{self.run}: another gflkit process is writing this run (lock {self.path.name}); "
                        f"wait for it to end or choose another --run-dir"
                    ) from None
                raise GFLError(f"{self.path}: cannot lock the run ({err.strerror})") from None
            try:  # the holder before us may have removed the file: then lock the new one
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return self
            os.close(fd)

    def release(self) -> None:
        if self.fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self.fd)
            self.fd = None


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
                f"{self.path} exists: pass --force to replace it, or --run-dir {next_free_path(self.path)}"
            )
        if self.work.exists():
            log.warning("removing %s, left by an interrupted run (--resume continues such a run)", self.work)
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
        from .loop import RESUME_FORMAT

        try:
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # unpickling errors have no common base
            raise GFLError(f"{path}: not a loadable resume checkpoint ({type(err).__name__}); "
                           f"start the run again with --force") from None
        if not isinstance(ckpt, dict) or ckpt.get("format") != RESUME_FORMAT:
            raise GFLError(f"{path}: not a gflkit resume checkpoint; start the run again with --force")
        return ckpt

    def finish(self, best: dict[str, Any], meta: dict[str, Any], history: pd.DataFrame) -> Path:
        """Write ``best.pt``, ``config.json`` and ``metrics.csv``, then rename the run into place.

        ``metrics.csv`` is written last: its presence marks a finished run.
        """
        atomic_torch_save(best, self.work / BEST_FILE)
        self.write_config(meta)
        atomic_write_text(self.work / METRICS_FILE, history.to_csv(index=False))
        return self.publish()

    def publish(self) -> Path:
        """Rename the finished partial folder to the run folder (replacing an old run)."""
        (self.work / LAST_FILE).unlink(missing_ok=True)
        if self.path.exists() or self.path.is_symlink():
            old = _old_path(self.path)
            os.replace(self.path, old)
            os.replace(self.work, self.path)
            _remove(old)
        else:
            os.replace(self.work, self.path)
        return self.path
