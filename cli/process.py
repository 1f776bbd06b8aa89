"""What the ``gflkit`` command sets for its own process before it computes anything.

The library never changes the process it runs in; the command does, once, at
start (:func:`configure_process`, called by :func:`gflkit_cli.main.main` and by
``python -m gflkit``), before torch is imported:

glibc's allocator keeps freed memory for reuse. By default glibc hands the
top of its heap back to the kernel whenever more than its trim threshold is
free there, and serves blocks above its (moving) mmap threshold from pages it
maps and unmaps for each block. A training step allocates and frees many
tensors of megabytes, so each step's memory was returned and faulted in again
on first write, thousands of page faults per step. With the trim threshold at
:data:`TRIM_BYTES` and the mmap threshold at glibc's largest, 32 MB, the
process keeps what a step freed for the next one. It pays in resident
memory: what a step freed stays counted after it (docs/performance.md gives
the measured figures).

``GFLKIT_NO_MALLOPT=1`` leaves glibc as it is; so does any of glibc's own
variables (``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_MMAP_MAX_``, ``GLIBC_TUNABLES``) set by the user. Off glibc nothing is done.
"""
from __future__ import annotations

import ctypes
import os

#: The opt-out: set to anything but ``""`` or ``"0"`` to keep glibc's defaults.
OPT_OUT = "GFLKIT_NO_MALLOPT"
#: glibc's variables; the user's own setting of any of them wins over the command's.
GLIBC_VARIABLES = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_MMAP_MAX_", "GLIBC_TUNABLES")
#: ``mallopt`` parameter numbers (glibc's malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: Freed memory at the top of the heap that glibc keeps before it trims: 1 GiB.
TRIM_BYTES = 2**30
#: glibc's largest mmap threshold on 64-bit systems (``DEFAULT_MMAP_THRESHOLD_MAX``): 32 MiB.
MMAP_BYTES = 32 * 2**20
#: What :func:`configure_process` sets: ``mallopt`` parameter, value and the variable that tells child processes.
SETTINGS = ((M_TRIM_THRESHOLD, TRIM_BYTES, "MALLOC_TRIM_THRESHOLD_"),
            (M_MMAP_THRESHOLD, MMAP_BYTES, "MALLOC_MMAP_THRESHOLD_"))


def _mallopt(param: int, value: int) -> bool:
    """glibc's ``mallopt(param, value)``; whether glibc took it.

    The process's own symbols (``CDLL(None)``) include glibc's; ``ctypes.util.find_library``
    would start ``ldconfig`` to find it, which costs the command's ``--help`` a noticeable moment.
    """
    libc = ctypes.CDLL(None)
    return libc.mallopt(ctypes.c_int(param), ctypes.c_int(value)) == 1


def on_glibc() -> bool:
    """Whether this process runs with glibc (``os.confstr`` names it there only)."""
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (AttributeError, ValueError, OSError):  # no confstr, or no such name: not glibc
        return False


def configure_process() -> bool:
    """Set glibc's trim and mmap thresholds for this process and the processes it starts.

    Returns whether they were set: ``False`` with ``GFLKIT_NO_MALLOPT=1``, when
    one of glibc's own variables is set, off glibc, or when glibc refused.
    The same values go into the environment as glibc's variables, so that the
    worker processes the command spawns (``--jobs``, ``--nproc``) start with them.
    """
    if os.environ.get(OPT_OUT, "").strip() not in ("", "0"):
        return False
    if any(name in os.environ for name in GLIBC_VARIABLES) or not on_glibc():
        return False
    try:
        done = all([_mallopt(param, value) for param, value, _ in SETTINGS])
    except (OSError, AttributeError):
        return False
    if done:
        for _, value, name in SETTINGS:
            os.environ[name] = str(value)
    return done
