"""One switch for the progress gflkit shows on stderr: bars, their log lines, and run counters.

Library functions take ``progress=True`` to ask for progress; what is shown
then depends on where stderr goes and on two switches of this module:

* a progress bar (:func:`progress_bar`) is a tqdm bar when stderr is a
  terminal (or in a Jupyter notebook, where tqdm draws a widget); otherwise,
  in a log file or a pipe, it is a :class:`ProgressLines`: a line now and
  then with the count and an estimate of the time left, and one when it ends,
  never a carriage return. :func:`set_progress` ``(False)`` hides both forms;
* a :class:`RunCounter` (the runs of ``compare``, ``ablate``, ``sweep``) writes
  log lines, not bars: it is hidden only by ``set_progress(..., counters=False)``.

The command line calls ``set_progress(False)`` for ``--no-progress`` (bars
only) and ``set_progress(False, counters=False)`` for ``-q``.
"""
from __future__ import annotations

import sys
import time
from typing import Any, Callable, Iterable, Iterator, TextIO

__all__ = []

_state = {"bars": True, "counters": True}


def progress_enabled() -> bool:
    """Whether progress bars (or their log lines) may be shown (default yes)."""
    return bool(_state["bars"])


def counters_enabled() -> bool:
    """Whether run counters (:class:`RunCounter`) may write their lines (default yes)."""
    return bool(_state["counters"])


def set_progress(enabled: bool, *, counters: bool | None = None) -> None:
    """Allow (``True``) or forbid (``False``) progress bars for this process.

    Args:
        enabled: progress bars, drawn or as log lines.
        counters: the run counters' lines too (``None``: leave them as they are).
    """
    _state["bars"] = bool(enabled)
    if counters is not None:
        _state["counters"] = bool(counters)


def draws_bars(stream: TextIO | None = None) -> bool:
    """Whether a progress bar on ``stream`` (default stderr) is drawn: a terminal, or a notebook's widget.

    Anywhere else (a file, a pipe, a captured stream) progress is written as
    log lines (:class:`ProgressLines`).
    """
    from tqdm.auto import tqdm

    if tqdm.__module__.startswith("tqdm.notebook"):  # a Jupyter widget, not text on the stream
        return True
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class ProgressLines:
    """A progress bar for logs: a line at most every :attr:`EVERY_FRACTION` of the total and
    :attr:`EVERY_SECONDS` (whichever is rarer), and one when it ends.

    ``training gfl: 120/400 steps (30%), 1m00s so far, about 2m20s left, loss=0.512, val=0.640``;
    at the end ``training gfl: 400/400 steps in 3m10s, loss=0.301, val=0.702``.
    Without a total, a line every :attr:`EVERY_SECONDS`. It takes the parts of
    tqdm's interface that gflkit uses: iteration, ``update``, ``set_postfix``,
    ``close`` and ``with``.

    Args:
        iterable: what to iterate over (``None``: count with :meth:`update`).
        desc, total, unit, initial, unit_scale: as tqdm's.
        file: where to write (default: ``sys.stderr`` at each write).
        clock: seconds, monotonic (for tests).
        **ignored: tqdm options that mean nothing in a log (``leave``, ``position`` ...).
    """

    EVERY_FRACTION = 0.1
    EVERY_SECONDS = 30.0

    def __init__(self, iterable: Iterable | None = None, *, desc: str | None = None, total: float | None = None,
                 unit: str = "it", initial: float = 0, unit_scale: bool = False, file: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, **ignored: Any) -> None:
        if total is None and iterable is not None:
            try:
                total = len(iterable)  # type: ignore[arg-type]
            except (TypeError, AttributeError):
                total = None
        self.iterable, self.desc, self.total, self.unit = iterable, desc or "progress", total, unit
        self.unit_scale, self.file, self.clock = unit_scale, file, clock
        self.n = self.initial = initial
        self.postfix = ""
        self.closed = False
        self._start = self._last_time = clock()
        self._last_n = initial

    def __iter__(self) -> Iterator:
        if self.iterable is None:
            raise TypeError("ProgressLines without an iterable: count with update()")
        for item in self.iterable:
            yield item
            self.update(1)
        self.close()

    def __len__(self) -> int:
        return int(self.total or 0)

    def __enter__(self) -> ProgressLines:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.close()
        return False

    def _amount(self, value: float) -> str:
        if self.unit_scale:
            from tqdm.std import tqdm

            return tqdm.format_sizeof(value)
        return f"{value:g}" if isinstance(value, float) else str(value)

    def _count(self) -> str:
        done, unit = self._amount(self.n), self.unit
        if unit.isalpha() and unit.islower() and len(unit) > 2 and not unit.endswith("s"):
            unit += "s"  # "40/400 steps", as a sentence says it (tqdm's units are singular)
        return f"{done}/{self._amount(self.total)} {unit}" if self.total else f"{done} {unit}"

    def _write(self, line: str) -> None:
        stream = self.file or sys.stderr
        stream.write(line + (f", {self.postfix}" if self.postfix else "") + "\n")
        stream.flush()

    def update(self, n: float = 1) -> None:
        """Count ``n`` more; write a line when both a tenth of the total and 30 seconds have passed."""
        self.n += n
        if self.closed:
            return
        now = self.clock()
        if now - self._last_time < self.EVERY_SECONDS:
            return
        if self.total and (self.n - self._last_n) < self.EVERY_FRACTION * self.total:
            return
        if self.total and self.n >= self.total:  # the closing line says it
            return
        self._last_time, self._last_n = now, self.n
        line = f"{self.desc}: {self._count()}"
        elapsed = now - self._start
        if self.total:
            line += f" ({100 * self.n / self.total:.0f}%), {_duration(elapsed)} so far"
            done = self.n - self.initial
            if done > 0:
                line += f", about {_duration(elapsed / done * (self.total - self.n))} left"
        else:
            line += f", {_duration(elapsed)} so far"
        self._write(line)

    def set_postfix(self, ordered_dict: dict | None = None, refresh: bool = True, **kwargs: Any) -> None:
        """Values to append to each line (``loss=0.512, val=0.640``)."""
        values = {**(ordered_dict or {}), **kwargs}
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = str(s)

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc or self.desc

    def refresh(self) -> None:
        """Nothing to redraw in a log."""

    def close(self) -> None:
        """Write the closing line (once): the count reached and the time taken."""
        if self.closed:
            return
        self.closed = True
        self._write(f"{self.desc}: {self._count()} in {_duration(self.clock() - self._start)}")


def progress_bar(iterable: Iterable | None = None, *, enabled: bool = True, **kwargs: Any):
    """Progress on stderr when ``enabled`` and :func:`progress_enabled`: a bar or log lines.

    A tqdm bar when stderr is a terminal or a notebook (:func:`draws_bars`),
    else a :class:`ProgressLines`; when not enabled, a disabled tqdm bar
    (iterating and ``update`` still work, nothing is written).

    Args:
        iterable: what to iterate over (``None`` for a manual ``update()`` bar).
        enabled: the caller's own wish (e.g. a function's ``progress`` argument).
        **kwargs: passed to ``tqdm`` (``desc``, ``total``, ``unit``, ``leave``, ``initial``...).
    """
    from tqdm.auto import tqdm

    kwargs.setdefault("file", sys.stderr)
    shown = enabled and progress_enabled()
    if shown and not draws_bars(kwargs["file"]):
        return ProgressLines(iterable, **kwargs)
    return tqdm(iterable, disable=not shown, **kwargs)


class RunCounter:
    """Overall progress of a table of runs: one line on stderr as each run starts.

    ``compare: run 3 of 15 (gfl-att, seed 0), 2 done in 1m04s, about 6m24s left``.
    The estimate is the mean time of the runs done so far times the runs left.
    These are log lines, not bars: they are written unless ``enabled`` is false
    or :func:`counters_enabled` says no (``-q``), also without progress bars.

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

    def _shown(self) -> bool:
        return self.enabled and counters_enabled()

    def eta(self) -> float | None:
        """Seconds left, estimated from the runs done so far (``None`` before the first ends)."""
        if self.done == 0:
            return None
        return (self.clock() - self._start) / self.done * (self.total - self.done)

    def start(self, what: str) -> None:
        """Announce the next run (``what``: its model, variant or value and seed)."""
        if not self._shown():
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
        if not self._shown():
            return
        line = f"{self.label}: {self.done} of {self.total} done ({what}) in {_duration(self.clock() - self._start)}"
        eta = self.eta()
        if eta and self.done < self.total:
            line += f", about {_duration(eta)} left"
        stream = self.stream or sys.stderr
        stream.write(line + "\n")
        stream.flush()
