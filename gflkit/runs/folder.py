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
empty folder). The lock file and the hidden ``.<name>.partial`` and
``.<name>.old`` folders are never reached through a symbolic link: a link at
one of those names is refused in one line (:func:`gflkit.io.refuse_link`).

Reading a run goes through one check (:func:`read_verified`): every file is
opened as a regular file no larger than its limit (:data:`CONFIG_LIMIT`,
:data:`CHECKPOINT_LIMIT`, :data:`METRICS_LIMIT`), without blocking on a pipe,
and a finished run's ``best.pt`` and ``metrics.csv`` are read only when their
SHA-256 is the one its ``config.json`` records; a ``config.json`` that cannot
be read, or whose table of digests is not well formed, stops the load.
"""
from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from ..errors import GFLError
from ..io import FolderLock as _Lock, lock_path as _lock_path
from ..paths import check_inside
from ..io import (FileRefused, atomic_torch_save, atomic_write_text, atomic_write_with, read_regular, refuse_link,
                  remove_inside, replace_inside, sha256_regular)

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


#: The largest ``config.json`` read (a run's is a few KB; its feature statistics grow with the feature size).
CONFIG_LIMIT = 32 * 2**20
#: The largest ``best.pt`` or ``last.pt`` read (its size is also checked against the available memory).
CHECKPOINT_LIMIT = 4 * 2**30
#: The largest ``metrics.csv`` read (one row per validation step).
METRICS_LIMIT = 256 * 2**20
_LIMITS = {CONFIG_FILE: CONFIG_LIMIT, METRICS_FILE: METRICS_LIMIT}
#: ``gflkit_version`` prefixes of the releases whose runs record no SHA-256 (their ``config.json`` has no
#: :data:`HASHES`): such a run loads unverified, with a warning. Any other run without them is refused.
UNHASHED_RELEASES = ("0.1.",)
_RESTORE = "restore the run's files or train the run again"


def size_limit(path: str | os.PathLike) -> int:
    """The largest size gflkit reads of a run's file (by its name; a checkpoint by any other name is a checkpoint)."""
    return _LIMITS.get(Path(path).name, CHECKPOINT_LIMIT)


def read_run_file(path: str | os.PathLike, advice: str = _RESTORE) -> bytes:
    """The bytes of a run's file, read as a regular file of at most :func:`size_limit` bytes.

    Raises:
        FileRefused: naming ``path``: missing, not a regular file, too large (:func:`gflkit.io.read_regular`).
    """
    return read_regular(path, size_limit(path), advice)


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 hex digest of a run's file, read in chunks as a regular file of at most :func:`size_limit` bytes.

    Raises:
        FileRefused: as :func:`read_run_file`.
    """
    return sha256_regular(path, size_limit(path), _RESTORE)


def parse_config(data: bytes, path: str | os.PathLike, advice: str = _RESTORE) -> dict[str, Any]:
    """The JSON object ``data``, read from the ``config.json`` at ``path``.

    Raises:
        FileRefused: naming ``path``: not UTF-8 JSON, nested too deep, or not an object.
    """
    try:
        config = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as err:  # JSON and UTF-8 decoding errors, absurd nesting
        raise FileRefused(path, f"not JSON ({' '.join(str(err).split())[:120]})", advice) from None
    if not isinstance(config, dict):
        raise FileRefused(path, "not the configuration of a gflkit run", advice)
    return config


def read_config(path: str | os.PathLike, advice: str = _RESTORE) -> dict[str, Any]:
    """A run's ``config.json``: a regular file of at most :data:`CONFIG_LIMIT` bytes holding a JSON object.

    Raises:
        FileRefused: naming ``path`` and what is wrong, then ``advice``.
    """
    return parse_config(read_run_file(path, advice), path, advice)


def recorded_hashes(config: dict[str, Any], path: str | os.PathLike = CONFIG_FILE,
                    advice: str = _RESTORE) -> dict[str, str] | None:
    """The SHA-256 digests of :data:`HASHED_FILES` a run's ``config.json`` records.

    ``None`` for a run of a release that recorded none (:data:`UNHASHED_RELEASES`).

    Raises:
        FileRefused: naming ``path``: the entry is missing from the ``config.json`` of
            any other run, is not a table, lacks a file, or holds something
            other than a SHA-256 hex digest (64 lowercase hex digits).
    """
    if HASHES not in config:
        version = config.get("gflkit_version")
        if isinstance(version, str) and version.startswith(UNHASHED_RELEASES):
            return None
        raise FileRefused(path, f"no {HASHES!r} entry (only runs of gflkit 0.1 have none), so the run's files "
                                f"cannot be verified", advice)
    hashes = config[HASHES]
    if not isinstance(hashes, dict):
        raise FileRefused(path, f"{HASHES!r} is {type(hashes).__name__}, not a table of file names to SHA-256 digests",
                          advice)
    for name in HASHED_FILES:
        if name not in hashes:
            raise FileRefused(path, f"{HASHES!r} records no digest for {name}", advice)
        if not (isinstance(hashes[name], str) and re.fullmatch(r"[0-9a-f]{64}", hashes[name])):
            raise FileRefused(path, f"{HASHES}[{name!r}] is not a SHA-256 digest (64 lowercase hex digits)", advice)
    return {name: hashes[name] for name in HASHED_FILES}


def _mismatch(path: Path) -> str:
    return (f"{path}: its SHA-256 differs from the one {path.parent / CONFIG_FILE} recorded when the run finished "
            f"(the file was changed or damaged since); restore it or train the run again")


def read_verified(path: str | os.PathLike, *, run: bool = True) -> bytes:
    """The bytes of a finished run's ``best.pt`` or ``metrics.csv``, checked against its ``config.json``.

    Every load of a run's files goes through here. ``config.json`` is read
    first (a regular file of at most :data:`CONFIG_LIMIT` bytes holding a JSON
    object with a well-formed :data:`HASHES` table, :func:`recorded_hashes`),
    then the file (a regular file of at most :func:`size_limit` bytes), whose
    SHA-256 must be the recorded one. A run of a release that recorded no
    digests loads unverified, with a warning.

    A checkpoint file named by itself (``run=False``) with no ``config.json``
    beside it, or not named like a run's file, is a checkpoint on its own: it is
    read (regular, size-checked) without a digest to compare.

    Args:
        path: the file.
        run: whether the caller named the run folder (then ``config.json`` must be there).

    Raises:
        GFLError: naming ``config.json`` or the file, what is wrong and what to do.
    """
    path = Path(path)
    config_path = path.parent / CONFIG_FILE
    in_run = path.name in HASHED_FILES and (run or os.path.lexists(config_path))
    hashes = recorded_hashes(read_config(config_path), config_path) if in_run else None
    data = read_run_file(path)
    if in_run and hashes is None:
        log.warning("%s: written by gflkit 0.1, which recorded no SHA-256: %s is read unverified", config_path,
                    path.name)
    elif in_run and hashlib.sha256(data).hexdigest() != hashes[path.name]:
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
    while os.path.lexists(candidate) or os.path.lexists(partial_path(candidate)):
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
        refuse_link(_old_path(self.path), "a run being replaced")
        refuse_link(self.work, "a run being written")
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
        if os.path.lexists(self.work):
            log.warning("removing %s, left by an interrupted run (`resume` continues such a run)", self.work)
            _remove(self.work)
        self.work.mkdir()

    @property
    def finished(self) -> bool:
        """Whether the partial folder holds a finished run that only awaits its rename."""
        return (self.work / METRICS_FILE).is_file() and (self.work / BEST_FILE).is_file()

    def read_config(self) -> dict[str, Any]:
        """The settings written when the interrupted run started."""
        refuse_link(self.work, "a run being written")
        path = self.work / CONFIG_FILE
        try:
            return read_config(path, "start the run again")
        except FileRefused as err:
            if err.missing:
                raise GFLError(f"{path}: missing; the run was interrupted before it started, start it again") from None
            raise

    def write_config(self, meta: dict[str, Any]) -> None:
        atomic_write_text(self.work / CONFIG_FILE, json.dumps(meta, indent=1, default=str) + "\n")

    def save_last(self, ckpt: dict[str, Any]) -> None:
        """Write the resume checkpoint atomically."""
        atomic_torch_save(ckpt, self.work / LAST_FILE)

    def load_last(self) -> dict[str, Any] | None:
        """The resume checkpoint, or ``None`` when the run stopped before writing one."""
        path = self.work / LAST_FILE
        if not os.path.lexists(path):
            return None
        data = read_run_file(path, "start the run again with `force=True`")
        try:
            ckpt = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
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
