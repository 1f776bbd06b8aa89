"""Counts and sizes from settings, checked before the work they start.

A setting that sets how much is allocated or done (a number of classes, a
mean degree, a layer width, a resolution, a number of episodes) is checked
against what fits before anything is allocated: against the memory available
now (:func:`gflkit.io.available_memory`, the estimate the data readers use)
through a function that tells the bytes a value needs, or against a bound the
data sets (a collection's class sizes). A value that does not fit raises one
:class:`~gflkit.errors.SizeError` naming the setting and the largest value
that fits; the command line shows it as a usage error of its option (exit 2).
"""
from __future__ import annotations

import math
from typing import Callable

from .errors import SizeError
from .io import available_memory, human_bytes

__all__: list[str] = []  # used inside gflkit; not part of the public API


def largest_fitting(need: Callable[[int], float], budget: float, low: int, high: int) -> int | None:
    """The largest integer ``v`` in ``[low, high]`` with ``need(v) <= budget`` (``need`` grows with ``v``).

    ``None`` when not even ``low`` fits. Found by bisection: ``need`` is called
    about ``log2(high - low)`` times.
    """
    if need(low) > budget:
        return None
    while low < high:
        mid = (low + high + 1) // 2
        if need(mid) <= budget:
            low = mid
        else:
            high = mid - 1
    return low


def require_fit(setting: str, value: float, need: Callable[[float], float], what: str, *, low: int = 1,
                budget: float | None = None) -> None:
    """Raise :class:`SizeError` when ``need(value)`` bytes exceed the memory available (or ``budget``).

    Args:
        setting: the parameter named in the message (the command line names its option).
        value: the value given.
        need: bytes needed for a value of the setting, growing with it.
        what: what the memory is for, for the message.
        low: the smallest value the setting takes.
        budget: bytes to fit in; default: :func:`gflkit.io.available_memory`
            (nothing is checked when that is unknown).
    """
    budget = available_memory() if budget is None else budget
    if budget is None:
        return
    needed = need(value)
    if needed <= budget:
        return
    high = max(low, int(value) if math.isfinite(value) else low)
    largest = largest_fitting(need, budget, low, high)
    fits = f"at most {largest} fits" if largest is not None else "no value fits with the other settings"
    raise SizeError(setting, _shown(value), f"{what} needs about {human_bytes(int(needed))} of memory but "
                    f"{human_bytes(int(budget))} are available; {fits}", largest)


def require_at_most(setting: str, value: int, largest: int, why: str, hint: str = "") -> None:
    """Raise :class:`SizeError` when ``value`` exceeds ``largest``, the most that ``why`` allows (``hint``:
    what else to do)."""
    if value > largest:
        raise SizeError(setting, value, f"{why}; at most {largest} fits{'; ' + hint if hint else ''}", largest)


def _shown(value: float) -> object:
    return int(value) if isinstance(value, float) and value.is_integer() and abs(value) < 1e15 else value
