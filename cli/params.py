"""The option types of the command line: each refuses a bad value as a one-line usage error (exit 2) naming its
option.

Every float option takes :class:`FiniteFloatRange` (Click's ``FloatRange`` lets
``nan`` and ``inf`` through), every seed :data:`SEED`, and comma-separated
lists :class:`IntList` / :class:`NameList`, and every name that becomes a
folder name :class:`FolderName`.
"""
from __future__ import annotations

import math
from typing import Any

import click

from gflkit.errors import GFLError
from gflkit.paths import check_name


class FiniteFloatRange(click.FloatRange):
    """A :class:`click.FloatRange` that refuses ``nan`` and ``inf``."""

    name = "finite float range"

    def convert(self, value: Any, param, ctx) -> float:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


#: Seeds: 0 .. 2**32 - 1 (NumPy's legacy range; derived seeds stay within torch's limits).
SEED = click.IntRange(0, 2**32 - 1)


class IntList(click.ParamType):
    """Comma-separated integers, each at least ``min_value``, optionally exactly ``size`` of them, or each once."""

    name = "integers"

    def __init__(self, min_value: int | None = None, size: int | None = None, max_value: int | None = None,
                 unique: bool = False) -> None:
        self.min_value, self.size, self.max_value, self.unique = min_value, size, max_value, unique

    def convert(self, value: Any, param, ctx) -> list[int]:
        if isinstance(value, (list, tuple)):  # a parsed list (a default): each item an integer or its text
            if not all(isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)) for v in value):
                self.fail(f"expected integers, got {list(value)!r}.", param, ctx)
            parts = [str(v).strip() for v in value]
        else:
            parts = [x.strip() for x in str(value).split(",")]
        try:
            values = [int(x) for x in parts if x]
        except ValueError:
            self.fail(f"expected comma-separated integers, got {value!r}.", param, ctx)
        if not values:
            self.fail(f"expected comma-separated integers, got {value!r}.", param, ctx)
        if self.size is not None and len(values) != self.size:
            self.fail(f"give {self.size} comma-separated integers, got {value!r}.", param, ctx)
        low = [v for v in values if self.min_value is not None and v < self.min_value]
        high = [v for v in values if self.max_value is not None and v > self.max_value]
        if low or high:
            bound = f">= {self.min_value}" if low else f"<= {self.max_value}"
            self.fail(f"every value must be {bound}, got {value!r}.", param, ctx)
        if self.unique and len(set(values)) != len(values):
            self.fail(f"give each value once, got {value!r}.", param, ctx)
        return values


class Span(click.ParamType):
    """One number or a ``MIN,MAX`` range, each finite and within ``[low, high]``; returns ``(min, max)``.

    A single value ``v`` gives ``(v, v)``. With ``integer`` the values are integers.
    """

    name = "span"

    def __init__(self, low: float | None = None, high: float | None = None, integer: bool = False) -> None:
        self.low, self.high, self.integer = low, high, integer

    def get_metavar(self, param, *args, **kwargs) -> str:
        return "N|MIN,MAX" if self.integer else "X|MIN,MAX"

    def convert(self, value: Any, param, ctx) -> tuple:
        if isinstance(value, (list, tuple)):
            parts = [str(v).strip() for v in value]
        else:
            parts = [x.strip() for x in str(value).split(",")]
        kind = "integer" if self.integer else "number"
        try:
            values = [int(x) if self.integer else float(x) for x in parts]
        except ValueError:
            self.fail(f"expected one {kind} or MIN,MAX, got {value!r}.", param, ctx)
        if len(values) not in (1, 2) or not all(math.isfinite(v) for v in values):
            self.fail(f"expected one finite {kind} or MIN,MAX, got {value!r}.", param, ctx)
        if (self.low is not None and min(values) < self.low) or (self.high is not None and max(values) > self.high):
            bounds = " and ".join(b for b in (f">= {self.low}" if self.low is not None else "",
                                              f"<= {self.high}" if self.high is not None else "") if b)
            self.fail(f"every value must be {bounds}, got {value!r}.", param, ctx)
        if values[0] > values[-1]:
            self.fail(f"give MIN,MAX with MIN <= MAX, got {value!r}.", param, ctx)
        return values[0], values[-1]


class GraphCounts(IntList):
    """``TRAIN,VAL,TEST`` graph counts: three integers >= 0 with at least one train graph."""

    def __init__(self) -> None:
        super().__init__(min_value=0, size=3)

    def convert(self, value: Any, param, ctx) -> list[int]:
        values = super().convert(value, param, ctx)
        if values[0] < 1:
            self.fail("at least one train graph is needed (TRAIN,VAL,TEST).", param, ctx)
        return values


class NameList(click.ParamType):
    """Comma-separated non-empty names (``a,b,c``); an empty list is a usage error."""

    name = "names"

    def convert(self, value: Any, param, ctx) -> str:
        if not [x for x in str(value).split(",") if x.strip()]:
            self.fail("give at least one value (comma-separated).", param, ctx)
        return str(value)


class ChoiceList(click.ParamType):
    """Comma-separated names, each one of ``choices`` (``mean,att``); returns the list, repeats dropped."""

    name = "choices"

    def __init__(self, choices) -> None:
        self.choices = tuple(choices)

    def get_metavar(self, param, *args, **kwargs) -> str:
        return "[" + "|".join(self.choices) + "][,...]"

    def convert(self, value: Any, param, ctx) -> list[str]:
        if isinstance(value, (list, tuple)):
            names = [str(v) for v in value]
        else:
            names = [x.strip() for x in str(value).split(",") if x.strip()]
        if not names:
            self.fail("give at least one value (comma-separated).", param, ctx)
        bad = [n for n in names if n not in self.choices]
        if bad:
            self.fail(f"{', '.join(map(repr, bad))}: choose from {', '.join(self.choices)} (comma-separated).",
                      param, ctx)
        return list(dict.fromkeys(names))


class FolderName(click.ParamType):
    """A name that becomes a folder or file name: one plain path component (:func:`gflkit.paths.check_name`)."""

    name = "name"

    def __init__(self, what: str = "collection name") -> None:
        self.what = what

    def convert(self, value: Any, param, ctx) -> str:
        try:
            return check_name(value, what=self.what)
        except GFLError as err:
            self.fail(str(err), param, ctx)



class WorkerCount(click.IntRange):
    """A number of processes or threads to start: at least 1, at most :func:`gflkit.devices.worker_limit`."""

    def __init__(self, what: str) -> None:
        super().__init__(1)
        self.what = what

    def convert(self, value: Any, param, ctx) -> int:
        from gflkit.devices import PER_CORE, usable_cores, worker_limit

        count = super().convert(value, param, ctx)
        if count > worker_limit():
            self.fail(f"{count} {self.what} is more than {PER_CORE} per core of the {usable_cores()} usable cores "
                      f"of this machine (at most {worker_limit()}).", param, ctx)
        return count


class DeviceType(click.ParamType):
    """``cpu``, ``cuda`` or ``cuda:N``; whether this machine can use it is checked when the command runs."""

    name = "device"

    def convert(self, value: Any, param, ctx) -> str:
        import re

        text = str(value).strip().lower()
        if not re.fullmatch(r"cpu|cuda(:\d+)?", text):
            self.fail(f"{value!r}: choose cpu, cuda or cuda:N.", param, ctx)
        return text


#: Splits a command can score.
SPLITS = ("test", "val", "train")


class _SplitChoice(click.Choice):
    """:data:`SPLITS`, plus the deprecated ``none`` of ``train --split`` (now ``--no-eval``), unlisted."""

    def convert(self, value: Any, param, ctx):
        if value == "none":
            return value
        return super().convert(value, param, ctx)
