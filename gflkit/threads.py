"""The threads gflkit computes on side by side, and torch's thread count around them.

:func:`map_graphs` computes items (graphs being scored) side by side, one torch
thread each, on a pool made once per process (:func:`worker_pool`, also the
training step's parts); :func:`one_thread` keeps small work on one thread.
"""
from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Sequence

import torch

__all__: list[str] = []

_PART_THREAD = "gflkit-part"
_POOL: dict[int, ThreadPoolExecutor] = {}
_POOL_LOCK = threading.Lock()
if hasattr(os, "register_at_fork"):  # a forked child has none of the parent's pool threads
    os.register_at_fork(after_in_child=_POOL.clear)


def worker_pool(workers: int) -> ThreadPoolExecutor:
    """The threads gflkit computes on side by side (graphs being scored, a step's parts),
    ``workers`` of them, made once per process."""
    with _POOL_LOCK:
        if workers not in _POOL:
            _POOL[workers] = ThreadPoolExecutor(workers, thread_name_prefix=_PART_THREAD)
        return _POOL[workers]


def map_graphs(fn: Callable[[Any], Any], items: Sequence[Any], workers: int | None = None) -> list[Any]:
    """``[fn(x) for x in items]`` with the items shared among threads, one torch thread each.

    Scoring a graph is a chain of small kernels: spreading each of them over
    all cores costs more in waking threads than it saves (two threads took
    1.4 times as long as one to score the default family's validation graphs).
    Here each thread takes the next item and computes it alone, so the cores
    work on different graphs. With two workers or more, each item's result is
    what one thread computes, whatever their number; results come back in the
    order of ``items``.

    Args:
        fn: called once per item; it must not depend on the other items' calls.
        items: e.g. graph ids.
        workers: threads; by default one per torch thread. With one worker
            (or one item) the items are computed in the calling thread as usual.

    Returns:
        the results, in the order of ``items``.
    """
    threads = torch.get_num_threads()
    workers = threads if workers is None else workers
    workers = max(1, min(workers, len(items)))
    if threading.current_thread().name.startswith(_PART_THREAD):  # already on a pool thread: no nesting
        workers = 1
    if workers == 1:  # one item (or one worker asked for): computed here, on the caller's threads
        return [fn(x) for x in items]
    grad = torch.is_grad_enabled()  # grad mode is per thread: the workers take the caller's
    results: list[Any] = [None] * len(items)
    errors: list[BaseException] = []
    queue = iter(range(len(items)))
    lock = threading.Lock()

    def work() -> None:
        torch.set_num_threads(1)  # a pool thread's own setting (the caller's is set by one_thread)
        with torch.set_grad_enabled(grad):
            while not errors:  # after an error, each thread stops at its next item
                with lock:
                    i = next(queue, None)
                if i is None:
                    return
                try:
                    results[i] = fn(items[i])
                except BaseException as err:  # raised in the caller once every thread has stopped
                    errors.append(err)

    with one_thread():  # the caller's setting comes back afterwards, whatever happens
        others = [worker_pool(workers - 1).submit(work) for _ in range(workers - 1)]
        work()
        for f in others:
            f.result()
    if errors:
        raise errors[0]
    return results


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch computes on one thread in this block.

    For the small tensors between the parallel parts of a step (gradient sums,
    the optimizer's update): an operation on a few thousand numbers is split
    over the threads all the same, and waking a sleeping thread for it costs
    more than the work (Adam's update of GFL's parameters took 1.2 ms on 2
    threads and 0.2 ms on one).
    """
    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
