"""An exclusive lock on a folder that one gflkit process writes (a run, a collection).

The lock is an ``flock`` on a hidden file ``.<name>.lock`` beside the folder,
taken without waiting: a second process that wants to write the same folder
stops at once with one line instead of racing the first.
"""
from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from .errors import GFLError

__all__ = []


def lock_path(folder: str | os.PathLike) -> Path:
    """The lock file of ``folder``: ``.<name>.lock`` beside it."""
    folder = Path(folder)
    return folder.with_name(f".{folder.name}.lock")


class FolderLock:
    """An exclusive ``flock`` on a lock file, removed again on release.

    Args:
        path: the lock file.
        run: the folder it guards (named in the messages).
        what: what the folder is (``run``, ``collection``), for the messages.
        advice: what to do when another process holds the lock.
    """

    def __init__(self, path: Path, run: Path, what: str = "run",
                 advice: str = "wait for it to end or choose another `run_dir`") -> None:
        self.path, self.run, self.fd = path, run, None
        self.what, self.advice = what, advice

    def acquire(self) -> "FolderLock":
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError as err:
                raise GFLError(f"{self.path}: cannot create the {self.what}'s lock file ({err.strerror})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                os.close(fd)
                if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise GFLError(
                        f"{self.run}: another gflkit process is writing this {self.what} (lock {self.path.name}); "
                        f"{self.advice}"
                    ) from None
                raise GFLError(f"{self.path}: cannot lock the {self.what} ({err.strerror})") from None
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
