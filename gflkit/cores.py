"""How many processes and threads this machine takes: the cores it gives this process, and the limit on them.

Importing it loads neither torch nor DGL, so the command line checks its
options with it as it parses them.
"""
from __future__ import annotations

import os

from .errors import GFLError

__all__ = []

#: Processes, or threads per process, a command may start per usable core: a few times the cores still
#: repeats a run made on a larger machine; far more would only exhaust memory and the process table.
PER_CORE = 4


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it, else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def worker_limit() -> int:
    """The most processes (or threads per process) :func:`check_workers` accepts: :data:`PER_CORE` per usable core."""
    return PER_CORE * usable_cores()


def check_workers(count: int, name: str) -> int:
    """``count`` when it is at most :func:`worker_limit`.

    Raises:
        GFLError: naming the parameter ``name`` and the cores of this machine.
    """
    if count > worker_limit():
        raise GFLError(f"{name}={count} is more than {PER_CORE} per core of the {usable_cores()} usable cores "
                       f"of this machine (at most {worker_limit()}); give fewer")
    return count
