"""Independent runs in a pool of processes (``compare`` / ``ablate`` / ``sweep --jobs N``).

Each run seeds itself, so a run gives the same numbers in a worker process as
in the parent; :func:`run_jobs` returns the results in the order of the tasks.
Workers are spawned (never forked: torch's and DGL's thread pools do not
survive a fork) and each uses ``cores / jobs`` threads.
"""
from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterable, Iterator, TypeVar

import torch

from .data import GraphCollection
from .errors import GFLError

__all__ = ["run_jobs", "default_threads", "portable", "shared_collection"]

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

_COLLECTIONS: dict[str, GraphCollection] = {}


def default_threads(nproc: int) -> int:
    """Threads per process when ``nproc`` processes share this machine's cores (at least 1)."""
    return max(1, (os.cpu_count() or 1) // max(1, nproc))


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    """Set environment variables while child processes start (they inherit them), then restore."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _init_worker(threads: int, log_level: int) -> None:
    torch.set_num_threads(threads)
    logging.basicConfig(level=log_level, format="%(levelname)s %(name)s: %(message)s", force=True)


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop a pool's workers now (Ctrl-C or a failed task), not after the queued tasks."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # no public API before Python 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(5)


def run_jobs(fn: Callable[[T], R], tasks: Iterable[T], jobs: int = 1, *, threads: int | None = None) -> list[R]:
    """``[fn(task) for task in tasks]``, over ``jobs`` spawned processes when ``jobs > 1``.

    Args:
        fn: a module-level function (it is sent to the workers by name).
        tasks: picklable arguments, one call each.
        jobs: processes; 1 runs everything here, in order.
        threads: threads per worker (default: cores / jobs).

    Returns:
        The results in the order of ``tasks``.

    Raises:
        The first failed task's exception (the other tasks are cancelled), or
        :class:`GFLError` when a worker process dies.
    """
    tasks = list(tasks)
    if jobs <= 1 or len(tasks) <= 1:
        return [fn(task) for task in tasks]
    jobs = min(jobs, len(tasks))
    threads = threads or default_threads(jobs)
    log.info("running %d tasks in %d processes of %d threads", len(tasks), jobs, threads)
    with _environ(OMP_NUM_THREADS=str(threads)):
        pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker,
                                   initargs=(threads, logging.getLogger().getEffectiveLevel()))
        futures = [pool.submit(fn, task) for task in tasks]
    try:
        return [f.result() for f in futures]
    except BrokenProcessPool:
        _terminate(pool)
        raise GFLError("a --jobs worker process died (killed, or out of memory?): rerun with fewer --jobs") from None
    except BaseException:
        _terminate(pool)
        raise
    finally:
        pool.shutdown(wait=True)


def portable(collection: GraphCollection) -> Any:
    """What to send to a worker: the collection's folder when it has one (cheap), else the collection."""
    return collection.path if collection.path is not None else collection


def shared_collection(data: Any) -> GraphCollection:
    """The collection behind :func:`portable`'s value, loaded once per process."""
    if isinstance(data, GraphCollection):
        return data
    if data not in _COLLECTIONS:
        _COLLECTIONS[data] = GraphCollection.load(data)
    return _COLLECTIONS[data]
