"""One switch for every progress bar gflkit draws on stderr.

Library functions take ``progress=True`` to ask for a bar; the bar is drawn only
when :func:`progress_enabled` also says yes. The command line turns bars off for
``--no-progress`` and ``-q`` through :func:`set_progress`; from Python, call
``gflkit.progress.set_progress(False)``.
"""
from __future__ import annotations

import sys
import time
from typing import Any, Callable, Iterable, TextIO

__all__ = ["RunCounter", "progress_bar", "progress_enabled", "set_progress"]

_state = {"enabled": True}


def progress_enabled() -> bool:
    """Whether progress bars may be drawn (default yes)."""
    return bool(_state["enabled"])


def set_progress(enabled: bool) -> None:
    """Allow (``True``) or forbid (``False``) progress bars for this process."""
    _state["enabled"] = bool(enabled)


def progress_bar(iterable: Iterable | None = None, *, enabled: bool = True, **kwargs: Any):
    """A tqdm bar on stderr, drawn only when ``enabled`` and :func:`progress_enabled`.

    Args:
        iterable: what to iterate over (``None`` for a manual ``update()`` bar).
        enabled: the caller's own wish (e.g. a function's ``progress`` argument).
        **kwargs: passed to ``tqdm`` (``desc``, ``total``, ``unit``, ``leave``...).
    """
    from tqdm.auto import tqdm

    kwargs.setdefault("file", sys.stderr)
    return tqdm(iterable, disable=not (enabled and progress_enabled()), **kwargs)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class RunCounter:
    """Overall progress of a table of runs: one line on stderr as each run starts.

    ``compare: run 3 of 15 (gfl-att, seed 0), 2 done in 1m04s, about 6m24s left``.
    The estimate is the mean time of the runs done so far times the runs left.
    Nothing is written unless ``enabled`` and :func:`progress_enabled`.

    Args:
        total: number of runs.
        label: what the runs make up (``"compare"``), the start of each line.
        enabled: the caller's own wish (e.g. a function's ``progress`` argument).
        stream: where to write (default: ``sys.stderr`` at each write).
        clock: seconds, monotonic (for tests).
    """

    def __init__(self, total: int, label: str, *, enabled: bool = True, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.label, self.enabled = total, label, enabled
        self.stream, self.clock = stream, clock
        self.done = 0
        self._start = clock()

    def eta(self) -> float | None:
        """Seconds left, estimated from the runs done so far (``None`` before the first ends)."""
        if self.done == 0:
            return None
        return (self.clock() - self._start) / self.done * (self.total - self.done)

    def start(self, what: str) -> None:
        """Announce the next run (``what``: its model, variant or value and seed)."""
        if not (self.enabled and progress_enabled()):
            return
        line = f"{self.label}: run {self.done + 1} of {self.total} ({what})"
        eta = self.eta()
        if eta is not None:
            line += f", {self.done} done in {_duration(self.clock() - self._start)}, about {_duration(eta)} left"
        stream = self.stream or sys.stderr
        stream.write(line + "\n")
        stream.flush()

    def finish(self) -> None:
        """Count the current run as done."""
        self.done += 1

    def finished(self, what: str) -> None:
        """Count a run as done and say so (runs in a pool, which end in any order)."""
        self.done += 1
        if not (self.enabled and progress_enabled()):
            return
        line = f"{self.label}: {self.done} of {self.total} done ({what}) in {_duration(self.clock() - self._start)}"
        eta = self.eta()
        if eta and self.done < self.total:
            line += f", about {_duration(eta)} left"
        stream = self.stream or sys.stderr
        stream.write(line + "\n")
        stream.flush()
