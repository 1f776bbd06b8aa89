"""Small helpers shared across gflkit: atomic writes, temporaries, memory checks and folder locks.

An atomic write goes to a hidden temporary ``.<name>.<pid>.<random>.tmp`` beside
the target, then is renamed over it. The temporary name carries the writer's
process id, so a later write to the same target removes temporaries whose
writer is gone (killed mid-write) and leaves a live writer's alone. Finished
files and folders get the permissions the umask allows (``mkstemp`` and
``mkdtemp`` create them private). Existing folders are moved and deleted only
through :func:`replace_inside` and :func:`remove_inside`, which first check
that they lie inside the folder they belong to (:func:`gflkit.paths.check_inside`).

Files gflkit reads whole (a run's ``config.json``, ``best.pt``, ...) are opened
through :func:`open_regular`: without blocking, so a FIFO never hangs a command,
and checked on the opened descriptor to be a regular file no larger than the
caller's limit, so a link to ``/dev/zero`` or a sparse file of many gigabytes
is refused before anything is read. Files gflkit creates at a fixed name (lock
files, a run's ``.<name>.partial`` and ``.<name>.old`` folders) are never
reached through a symbolic link: a link there is refused in one line
(:func:`refuse_link`, ``O_NOFOLLOW`` for lock files).
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable

import torch

from .errors import GFLError
from .paths import check_inside

__all__ = []


def _umask() -> int:
    """The process umask, read without changing it where Linux shows it (setting it is not thread-safe)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class FileRefused(GFLError):
    """A file that is not read: missing, unreadable, not a regular file, or over its size limit.

    Attributes:
        path: the file.
        problem: what is wrong, without the file name or the advice (for tables that name the file apart).
        missing: whether nothing is at ``path``.
    """

    def __init__(self, path: str | os.PathLike, problem: str, advice: str, missing: bool = False) -> None:
        super().__init__(f"{path}: {problem}; {advice}")
        self.path, self.problem, self.missing = Path(path), problem, missing


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a file")


def open_regular(path: str | os.PathLike, limit: int, advice: str) -> BinaryIO:
    """``path`` opened for reading in binary, once it is a regular file of at most ``limit`` bytes.

    The file is opened with ``O_NONBLOCK`` (a named pipe never blocks) and the
    checks are made on the opened descriptor (``fstat``), so what is checked is
    what is read. Read at most ``limit + 1`` bytes from it: a file that grows
    meanwhile is then noticed (:func:`read_regular` does).

    Raises:
        FileRefused: naming ``path``, what is wrong and ``advice``.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise FileRefused(path, "missing", advice, missing=True) from None
    except OSError as err:
        raise FileRefused(path, f"cannot read it ({err.strerror or err})", advice) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(path, f"not a regular file ({_kind(info.st_mode)})", advice)
        if info.st_size > limit:
            raise FileRefused(path, f"{human_bytes(info.st_size)}, over the {human_bytes(limit)} limit for it", advice)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike, limit: int, advice: str) -> bytes:
    """The bytes of the regular file ``path`` of at most ``limit`` bytes (:func:`open_regular`).

    Its size is also checked against the available memory before it is read.

    Raises:
        FileRefused: naming ``path``, what is wrong and ``advice``.
    """
    with open_regular(path, limit, advice) as f:
        require_memory(os.fstat(f.fileno()).st_size, path, advice)
        try:
            data = f.read(limit + 1)
        except OSError as err:
            raise FileRefused(path, f"cannot read it ({err.strerror or err})", advice) from None
    if len(data) > limit:  # it grew while it was read
        raise FileRefused(path, f"over the {human_bytes(limit)} limit for it", advice)
    return data


def sha256_regular(path: str | os.PathLike, limit: int, advice: str, chunk: int = 1 << 20) -> str:
    """The SHA-256 hex digest of the regular file ``path`` of at most ``limit`` bytes, read in chunks.

    Raises:
        FileRefused: as :func:`open_regular`, or when the file grows past ``limit`` while it is read.
    """
    digest, size = hashlib.sha256(), 0
    with open_regular(path, limit, advice) as f:
        try:
            while block := f.read(chunk):
                size += len(block)
                if size > limit:
                    raise FileRefused(path, f"over the {human_bytes(limit)} limit for it", advice)
                digest.update(block)
        except OSError as err:
            raise FileRefused(path, f"cannot read it ({err.strerror or err})", advice) from None
    return digest.hexdigest()


def refuse_link(path: str | os.PathLike, what: str) -> None:
    """Raise a one-line :class:`GFLError` when ``path``, where gflkit keeps ``what``, is a symbolic link.

    gflkit creates its lock files and hidden folders at fixed names beside a
    collection or run; a link placed there would make it create or write
    whatever the link names, outside the folder it writes to.
    """
    if os.path.islink(path):
        raise _link_error(path, what)


def _link_error(path: str | os.PathLike, what: str) -> GFLError:
    return GFLError(f"{path}: a symbolic link where gflkit keeps {what}; gflkit never follows a link there "
                    f"(it could lead outside the folder): remove the link and run again")


def apply_umask(path: str | os.PathLike, directory: bool = False) -> None:
    """Give ``path`` the mode a plain ``open``/``mkdir`` would have given it under the umask."""
    os.chmod(path, (0o777 if directory else 0o666) & ~_umask())


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_inside(path: str | os.PathLike, root: str | os.PathLike) -> None:
    """Delete the folder, file or link ``path`` (if any) once it is checked to lie inside ``root``.

    A folder's contents go with it; failures to delete are ignored (a later
    cleanup retries). A link is removed itself, never what it points to.

    Raises:
        GFLError: ``path`` resolves to somewhere outside ``root`` (:func:`~gflkit.paths.check_inside`).
    """
    path = Path(path)
    if not (path.exists() or path.is_symlink()):
        return
    check_inside(path, root)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def replace_inside(src: str | os.PathLike, dst: str | os.PathLike, root: str | os.PathLike) -> None:
    """``os.replace(src, dst)`` once both are checked to lie inside ``root``.

    Raises:
        GFLError: either resolves to somewhere outside ``root``.
        OSError: the rename failed.
    """
    check_inside(src, root)
    check_inside(dst, root)
    os.replace(src, dst)


def remove_stale_temps(path: str | os.PathLike) -> list[Path]:
    """Remove the temporaries of ``path`` left by writers that no longer run; returns them."""
    path = Path(path)
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(\d+)\.[^.]+\.tmp$")
    removed = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = pattern.match(entry.name)
        if m and not _pid_alive(int(m.group(1))):
            try:
                remove_inside(entry, path.parent)
            except GFLError:  # a link named like a temporary that leads elsewhere: not ours, left alone
                continue
            removed.append(entry)
    return removed


def make_temp(path: str | os.PathLike, directory: bool = False) -> Path:
    """A new hidden temporary file or folder beside ``path`` (its parent is created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    prefix, suffix = f".{path.name}.{os.getpid()}.", ".tmp"
    if directory:
        return Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=path.parent))
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
    os.close(fd)
    return Path(tmp)


def unwritable(path: str | os.PathLike, err: OSError) -> GFLError:
    """A one-line error naming the target ``path`` (never the temporary) and why it failed."""
    reason = err.strerror or str(err) or type(err).__name__
    return GFLError(f"cannot write {path}: {reason}; choose a writable place or free some space")


def _atomic(path: str | os.PathLike, write) -> Path:
    path = Path(path)
    try:
        tmp = make_temp(path)
    except OSError as err:
        raise unwritable(path, err) from None
    try:
        write(str(tmp))
        apply_umask(tmp)
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and not isinstance(err, GFLError):
            raise unwritable(path, err) from None
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file and a rename."""

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    return _atomic(path, write)


def atomic_write_with(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Create ``path`` by calling ``write(tmp)`` on a temporary file, then renaming it.

    For writers that take a file name (``savefig``, ``np.save``, ...).
    """
    return _atomic(path, write)


def atomic_torch_save(obj, path: str | os.PathLike) -> Path:
    """``torch.save`` through a temporary file and a rename."""
    return _atomic(path, lambda tmp: torch.save(obj, tmp))


def available_memory() -> int | None:
    """Bytes of memory available to new allocations (``MemAvailable``), or ``None`` when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def human_bytes(n: int) -> str:
    """``n`` bytes as ``"1.5 GiB"``, ``"12.0 MiB"`` or ``"900 bytes"``."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} bytes"


def require_memory(need: int, what: object, hint: str) -> None:
    """Raise a one-line :class:`GFLError` naming ``what`` when ``need`` bytes exceed the available memory.

    Callers pass what they are about to allocate, computed from declared sizes
    (headers, shapes, file sizes), so the refusal comes before the allocation.
    Nothing is checked when the available memory is unknown.
    """
    have = available_memory()
    if have is not None and need > have:
        raise GFLError(f"{what}: needs about {human_bytes(need)} of memory but {human_bytes(have)} are available; "
                       f"{hint}")


# Folder locks: an exclusive lock on a folder that one gflkit process writes (a run, a collection).
#
# The lock is an ``flock`` on a hidden file ``.<name>.lock`` beside the folder,
# taken without waiting: a second process that wants to write the same folder
# stops at once with one line instead of racing the first.


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
            refuse_link(self.path, f"the {self.what}'s lock file")
            flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
            try:
                fd = os.open(self.path, flags, 0o666)
            except OSError as err:
                if err.errno == errno.ELOOP:  # a link made after the check above
                    raise _link_error(self.path, f"the {self.what}'s lock file") from None
                raise GFLError(f"{self.path}: cannot create the {self.what}'s lock file ({err.strerror})") from None
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                os.close(fd)
                raise GFLError(f"{self.path}: not a regular file ({_kind(mode)}); the {self.what}'s lock file "
                               f"must be one: remove it and run again")
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
                now, held = os.lstat(self.path), os.fstat(fd)
                same = (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)
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
