"""Options shared by several commands, defined once, and the option types they use.

Every float option takes :class:`FiniteFloatRange` (Click's ``FloatRange`` lets
``nan`` and ``inf`` through), every seed :data:`SEED`, and comma-separated
lists :class:`IntList` / :class:`NameList`, so a bad value is a one-line usage
error (exit 2) that names the option.
"""
from __future__ import annotations

import math
import sys
from typing import Any

import click

from gflkit.names import REFINE_ALPHA, REFINE_METHODS, REFINE_STEPS, SAMPLING_METHODS as METHODS


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
    """Comma-separated integers, each at least ``min_value``, optionally exactly ``size`` of them."""

    name = "integers"

    def __init__(self, min_value: int | None = None, size: int | None = None, max_value: int | None = None) -> None:
        self.min_value, self.size, self.max_value = min_value, size, max_value

    def convert(self, value: Any, param, ctx) -> list[int]:
        if isinstance(value, (list, tuple)):
            values = [int(v) for v in value]
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
        return values


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


def data_root_option(f):
    return click.option(
        "--data-root",
        type=click.Path(file_okay=False),
        default=None,
        help="Data root folder (default: $GFLKIT_DATA, else ./data if present, else ~/.gflkit/data).",
    )(f)


def seed_option(default: int = 0):
    def deco(f):
        return click.option("--seed", type=SEED, default=default, show_default=True,
                            help="Random seed (0 to 2^32-1).")(f)

    return deco


def output_options(f):
    f = click.option(
        "--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True,
        help="Format of the result table.",
    )(f)
    f = click.option(
        "-o", "--output", type=click.Path(dir_okay=False), default=None,
        help="Write the result table to this file instead of stdout.",
    )(f)
    return f


def emit(df, output: str | None, fmt: str) -> None:
    """Write a result DataFrame to ``output`` or stdout."""
    from gflkit.results import write_table

    if output:
        write_table(df, output, fmt)
        click.echo(f"wrote {output}", err=True)
    else:
        sys.stdout.write(write_table(df, None, fmt))
        sys.stdout.flush()


def int_list(text: str | list | tuple | None, hint: str | None = None, min_value: int | None = None) -> list[int] | None:
    """Parse ``"1,3,5"`` into ``[1, 3, 5]`` (for use in callbacks); a parsed list passes through."""
    if text is None:
        return None
    try:
        return IntList(min_value).convert(text, None, None)
    except click.BadParameter as err:
        raise click.BadParameter(err.message, param_hint=hint) from None


def int_tuple(text: str | None, size: int, hint: str, min_value: int | None = None) -> list[int] | None:
    """Parse exactly ``size`` comma-separated integers (``None`` stays ``None``)."""
    if text is None:
        return None
    try:
        return IntList(min_value, size).convert(text, None, None)
    except click.BadParameter as err:
        raise click.BadParameter(err.message, param_hint=hint) from None


def graph_counts(text: str | None, hint: str = "--graphs") -> list[int] | None:
    """``TRAIN,VAL,TEST`` graph counts: three integers >= 0 with at least one train graph."""
    if text is None:
        return None
    try:
        return GraphCounts().convert(text, None, None)
    except click.BadParameter as err:
        raise click.BadParameter(err.message, param_hint=hint) from None


def sampler_options(collection_name: bool = True):
    """Options of the sampler, shared by every real-data command."""

    def deco(f):
        opts = [
            click.option("--method", type=click.Choice(METHODS), default="walk", show_default=True,
                         help="How graphs are cut: one random walk each, METIS parts, or ego-nets."),
            click.option("--graphs", "n_graphs", type=GraphCounts(), default=None, metavar="TRAIN,VAL,TEST",
                         help="Graphs per split (default: the family's Table 1 counts)."),
            click.option("--walk-length", type=IntList(min_value=1, size=2), default=None, metavar="LO,HI",
                         help="Walk steps drawn from [LO, HI) (default: per family)."),
            click.option("--min-degree", type=click.IntRange(0, 2**31), default=None,
                         help="Walks start at nodes with at least this many neighbours (default: per family)."),
            click.option("--induced", is_flag=True, help="Keep induced subgraphs of the walked nodes."),
            click.option("--disjoint", is_flag=True, help="No val/test node in any train graph."),
            click.option("--classes", default=None, metavar="NAME,...", help="Class names to keep."),
            click.option("--num-classes", type=click.IntRange(1, 2**31), default=None,
                         help="Keep this many most frequent classes (default: per family)."),
            click.option("--out", type=click.Path(file_okay=False), default=None,
                         help="Output folder (default: <root>/processed/<name>)."),
            seed_option(), data_root_option,
        ]
        if collection_name:
            opts.append(click.option("--name", default=None, help="Collection name (default: the family name)."))
        for opt in reversed(opts):
            f = opt(f)
        return f

    return deco


def ci_option(f):
    """``--ci t|paper``: the interval of the result rows."""
    return click.option(
        "--ci", type=click.Choice(["t", "paper"]), default="t", show_default=True,
        help="95% interval: t (Student t, ddof=1, over test graphs, or over episodes with one test graph) "
             "or paper (1.96 x std / sqrt(n), as the paper's tables).",
    )(f)


def refine_options(several: bool = False):
    """``--refine``, ``--refine-alpha``, ``--refine-steps`` (``several``: a comma-separated list of methods)."""
    def deco(f):
        if several:
            method = click.option("--refine", default="none", show_default=True, metavar="METHOD,...",
                                  help="Refinements of the scores, one row each: none, lp (label propagation of "
                                       "the predictions), cs (Correct & Smooth); e.g. none,lp,cs.")
        else:
            method = click.option("--refine", type=click.Choice(REFINE_METHODS), default="none", show_default=True,
                                  help="Propagate the scores over the test graph, support labels clamped: "
                                       "none, lp (label propagation) or cs (Correct & Smooth).")
        opts = [
            method,
            click.option("--refine-alpha", type=click.FloatRange(0, 1, max_open=True), default=REFINE_ALPHA,
                         show_default=True, help="Weight of the propagated term per refinement step."),
            click.option("--refine-steps", type=click.IntRange(0), default=REFINE_STEPS, show_default=True,
                         help="Propagation steps of the refinement."),
        ]
        for opt in reversed(opts):
            f = opt(f)
        return f

    return deco


def refine_configs(kwargs: dict) -> list:
    """Pop the refinement options from a command's kwargs into one :class:`~gflkit.refine.RefineConfig` per method."""
    from gflkit.refine import RefineConfig

    alpha, steps = kwargs.pop("refine_alpha"), kwargs.pop("refine_steps")
    methods = [m.strip() for m in str(kwargs.pop("refine")).split(",") if m.strip()] or ["none"]
    bad = [m for m in methods if m not in REFINE_METHODS]
    if bad:
        raise click.BadParameter(f"{', '.join(bad)}: choose from {', '.join(REFINE_METHODS)}", param_hint="--refine")
    return [RefineConfig(m, alpha, steps) for m in dict.fromkeys(methods)]
