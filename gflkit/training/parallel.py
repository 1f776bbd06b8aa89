"""Work in several processes of this machine.

* :func:`run_jobs`: independent runs in a pool (``compare`` / ``ablate`` /
  ``sweep --jobs N``). Each run seeds itself, so it gives the same numbers in a
  worker as in the parent; results come back in the order of the tasks.
* :func:`launch`: N cooperating processes (the ranks of ``train --nproc N``,
  see :mod:`gflkit.training.distributed`), watched so that one that fails ends them all.

Processes are spawned (never forked: torch's and DGL's thread pools do not
survive a fork) and each uses ``cores / processes`` threads.
"""
from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

import torch
import torch.distributed as tdist

from ..devices import check_workers
from ..data import GraphCollection
from ..errors import GFLError
from ..interrupts import leave_now, on_sigint, set_sigint
from ..io import remove_inside

__all__ = []

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


def run_jobs(fn: Callable[[T], R], tasks: Iterable[T], jobs: int = 1, *, threads: int | None = None,
             on_result: Callable[[int], None] | None = None) -> list[R]:
    """``[fn(task) for task in tasks]``, over ``jobs`` spawned processes when ``jobs > 1``.

    Args:
        fn: a module-level function (it is sent to the workers by name).
        tasks: picklable arguments, one call each.
        jobs: processes; 1 runs everything here, in order.
        threads: threads per worker (default: cores / jobs).
        on_result: called here with a task's index as its result comes back
            (in the order the tasks end).

    Returns:
        The results in the order of ``tasks``.

    Raises:
        The first failed task's exception (the other tasks are cancelled), or
        :class:`GFLError` when a worker process dies.
    """
    tasks = list(tasks)
    if jobs <= 1 or len(tasks) <= 1:
        results = []
        for i, task in enumerate(tasks):
            results.append(fn(task))
            if on_result is not None:
                on_result(i)
        return results
    jobs = check_workers(min(jobs, len(tasks)), "jobs")
    threads = check_workers(threads or default_threads(jobs), "threads")
    log.info("running %d tasks in %d processes of %d threads", len(tasks), jobs, threads)
    with _environ(OMP_NUM_THREADS=str(threads)):
        pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker,
                                   initargs=(threads, logging.getLogger().getEffectiveLevel()))
        futures = [pool.submit(fn, task) for task in tasks]
    try:
        index = {f: i for i, f in enumerate(futures)}
        for f in as_completed(futures):
            f.result()  # the first failure ends the pool
            if on_result is not None:
                on_result(index[f])
        return [f.result() for f in futures]
    except BrokenProcessPool:
        _terminate(pool)
        raise GFLError("a worker process died (killed, or out of memory?): rerun with fewer `jobs`") from None
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


# -- cooperating processes -----------------------------------------------------------------


def _entry(worker: Callable, rank: int, nproc: int, threads: int, folder: str, args: tuple,
           env: dict[str, str]) -> None:
    """What a spawned rank runs: ``worker(rank, nproc, folder, *args)`` with ``env`` set.

    Errors are reported in one line.
    """
    set_sigint(on_sigint)  # a Ctrl-C is raised only where it can be (never in an import or a weakref callback)
    try:
        os.environ.update(env)  # this process's own environment: the launching process's stays as it is
        torch.set_num_threads(threads)
        worker(rank, nproc, folder, *args)
    except KeyboardInterrupt:
        os._exit(130)
    except BaseException as err:  # noqa: BLE001  (reported to the launcher, which ends the job)
        text = str(err).strip().splitlines()
        peer = isinstance(err, getattr(tdist, "DistError", ())) or "gloo" in str(err).lower()
        message = f"{type(err).__name__}: {text[0] if text else ''}".rstrip(": ")
        Path(folder, f"error-{rank}.txt").write_text(f"{int(peer)}\n{message}\n", encoding="utf-8")
        os._exit(1)
    leave_now(0)  # a finished rank leaves at once, as a failed one does (about one in five aborted at shutdown)


def _failure(rank: int, exitcode: int, folder: str) -> tuple[int, str]:
    """``(priority, message)`` of a failed rank; lower priority is likelier the cause."""
    path = Path(folder, f"error-{rank}.txt")
    if path.is_file():
        peer, message = path.read_text(encoding="utf-8").split("\n", 1)
        return (2 if peer == "1" else 0), f"rank {rank} failed: {message.strip()}"
    if exitcode < 0:
        return 0, f"rank {rank} died: killed by signal {signal.Signals(-exitcode).name}"
    return 1, f"rank {rank} exited with status {exitcode}"


def _stop(procs: list, interrupted: bool = False) -> None:
    """End every process; ``interrupted`` (Ctrl-C): first let them stop as on Ctrl-C, closing what they write."""
    try:
        if interrupted:
            wait([p.sentinel for p in procs], timeout=1.0)  # a Ctrl-C in the terminal reached them too
            for p in procs:
                if p.is_alive():
                    os.kill(p.pid, signal.SIGINT)
            end = time.monotonic() + 5.0
            while any(p.is_alive() for p in procs) and time.monotonic() < end:
                wait([p.sentinel for p in procs if p.is_alive()], timeout=max(0.0, end - time.monotonic()))
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()


def _watch(procs: list, folder: str, grace: float) -> None:
    """Wait for every rank; on the first failure, wait ``grace`` s for the cause to show, then raise."""
    pending = list(procs)
    while pending:
        wait([p.sentinel for p in pending], timeout=1.0)
        pending = [p for p in pending if p.exitcode is None]
        if any(p.exitcode not in (None, 0) for p in procs):
            wait([p.sentinel for p in pending], timeout=grace)
            time.sleep(0.1)
            failed = [_failure(r, p.exitcode, folder) for r, p in enumerate(procs) if p.exitcode not in (None, 0)]
            raise GFLError(min(failed)[1])


def launch(worker: Callable, args: tuple, nproc: int, *, threads: int | None = None,
           env: dict[str, str] | None = None, grace: float = 3.0) -> Path:
    """Run ``worker(rank, nproc, folder, *args)`` in ``nproc`` spawned processes and wait for all.

    ``folder`` is a temporary folder shared by the processes (for results); it
    is returned, and the caller removes it. ``env`` is set in each process
    before ``worker`` runs (never in this process's environment). When one
    fails, the others are stopped and a :class:`GFLError` names it in one line
    (a rank that was killed, or raised on its own, is named rather than the
    peers that lost it). Ctrl-C stops all (each gets the interrupt and a few
    seconds to stop on its own before it is terminated). ``nproc`` and ``threads`` are
    checked by :func:`gflkit.devices.check_workers`.
    """
    check_workers(nproc, "nproc")
    threads = check_workers(threads or default_threads(nproc), "threads")
    mp = torch.multiprocessing.get_context("spawn")
    folder = tempfile.mkdtemp(prefix="gflkit-ranks-")
    procs = []
    # OpenMP reads its thread count when the library loads, before _entry runs: it goes in at the start.
    with _environ(OMP_NUM_THREADS=str(threads)):
        for rank in range(nproc):
            p = mp.Process(target=_entry, args=(worker, rank, nproc, threads, folder, args, dict(env or {})),
                           daemon=True)
            p.start()
            procs.append(p)
    log.info("started %d ranks (%d threads each): %s", nproc, threads,
             ", ".join(f"rank {r} pid {p.pid}" for r, p in enumerate(procs)))
    try:
        _watch(procs, folder, grace)
    except BaseException as err:
        _stop(procs, interrupted=isinstance(err, KeyboardInterrupt))
        remove_inside(folder, tempfile.gettempdir())
        raise
    return Path(folder)
