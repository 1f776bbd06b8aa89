"""Options shared by several commands, defined once, and the option types they use.

Every float option takes :class:`FiniteFloatRange` (Click's ``FloatRange`` lets
``nan`` and ``inf`` through), every seed :data:`SEED`, and comma-separated
lists :class:`IntList` / :class:`NameList`, and every name that becomes a
folder name :class:`FolderName`, so a bad value is a one-line usage error
(exit 2) that names the option.
"""
from __future__ import annotations

import math
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import click

from gflkit.errors import GFLError
from gflkit.names import REFINE_ALPHA, REFINE_METHODS, REFINE_STEPS, SAMPLING_METHODS as METHODS
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


#: The section of ``--help`` that takes the options no section names.
OTHER_SECTION = "Advanced"


class SectionedCommand(click.Command):
    """A command whose ``--help`` lists its options in titled sections, the common ones first.

    ``sections`` is a list of ``(title, parameter names)``; options named in no
    section (a new option, ``--help``) are listed last under
    :data:`OTHER_SECTION`. Hidden options stay hidden. Give it as
    ``@click.command(cls=SectionedCommand, sections=[...])``.
    """

    def __init__(self, *args: Any, sections: list[tuple[str, list[str]]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sections = list(sections or [])

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None and not isinstance(param, click.Argument):  # arguments are in the usage line
                records[param.name] = record
        titles = [title for title, _ in self.sections]
        if OTHER_SECTION not in titles:
            titles.append(OTHER_SECTION)
        rows: dict[str, list[tuple[str, str]]] = {title: [] for title in titles}
        for title, names in self.sections:
            rows[title] += [records.pop(name) for name in names if name in records]
        rows[OTHER_SECTION] += list(records.values())  # in the command's own order
        for title in titles:
            if rows[title]:
                with formatter.section(f"{title} options"):
                    formatter.write_dl(rows[title])


@contextmanager
def writing_collection(out_dir: str | None, name: str, data_root: str | None) -> Iterator[Path]:
    """The folder a preprocess command writes (``--out-dir``, else ``<root>/processed/<name>``), locked meanwhile.

    A second process writing the same folder is refused at once
    (:func:`gflkit.data.collection.lock_collection`).
    """
    from gflkit.data.collection import lock_collection
    from gflkit.paths import processed_dir

    target = Path(out_dir) if out_dir else processed_dir(name, data_root)
    with lock_collection(target):
        yield target


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with the one line to show for it (e.g. how to continue); the command then exits 130 like any Ctrl-C."""

    def __init__(self, message: str = "interrupted") -> None:
        super().__init__(message)
        self.message = message


def data_root_option(f):
    """The ``--data-root`` option."""
    return click.option(
        "--data-root",
        type=click.Path(file_okay=False),
        default=None,
        help="Data root folder (default: $GFLKIT_DATA, else ./data if present, else ~/.gflkit/data).",
    )(f)


def seed_option(default: int = 0):
    """The ``--seed`` option, with ``default`` as its default."""
    def deco(f):
        return click.option("--seed", type=SEED, default=default, show_default=True,
                            help="Random seed (0 to 2^32-1).")(f)

    return deco


def output_options(f):
    """The ``--format`` and ``-o/--output`` options of a result table."""
    f = click.option(
        "--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True,
        help="Format of the result table.",
    )(f)
    f = click.option(
        "-o", "--output", type=click.Path(dir_okay=False), default=None,
        help="Write the result table to this file instead of stdout.",
    )(f)
    return f


def quiet() -> bool:
    """Whether the command runs under ``gflkit -q`` (warnings and errors only on stderr)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.find_root().params.get("quiet"))


def info(message: str) -> None:
    """A line for people on stderr (what was written, which seed was used); ``-q`` leaves it out.

    Warnings and errors do not go through here: ``-q`` keeps them.
    """
    if not quiet():
        click.echo(message, err=True)


def emit(df, output: str | None, fmt: str) -> None:
    """Write a result DataFrame to ``output`` or stdout."""
    from gflkit.evaluation.tables import write_table

    if output:
        write_table(df, output, fmt)
        info(f"wrote {output}")
    else:
        sys.stdout.write(write_table(df, None, fmt))
        sys.stdout.flush()


def int_list(text: str | list | tuple | None, hint: str | None = None,
             min_value: int | None = None) -> list[int] | None:
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
            collection_dir_option, seed_option(), data_root_option,
        ]
        if collection_name:
            opts.append(click.option("--name", type=FolderName(), default=None,
                                     help="Collection name (default: the family name)."))
        for opt in reversed(opts):
            f = opt(f)
        return f

    return deco


def ci_option(f):
    """``--ci t|paper``: the interval of the result rows."""
    return click.option(
        "--ci", type=click.Choice(["t", "paper"]), default="t", show_default=True,
        help="95% intervals of accuracy and delta: t (over (seed, graph) units, each a run's mean over a "
             "graph's episodes; seeds and graphs as two levels, each with its own t quantile; over graphs with "
             "one seed, over episodes with one seed and one test graph; ci_over says which) or paper "
             "(1.96 x std / sqrt(n) over test graphs, seeds averaged, as the paper's tables).",
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
            click.option("--refine-alpha", type=FiniteFloatRange(0, 1, max_open=True), default=REFINE_ALPHA,
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


#: What the command line advises for a one-seed result, by the warning's context.
_ONE_SEED_ADVICE = {
    "experiment": "run with several seeds: --seed 0,1,2 (the default)",
    "run": "train several seeds and compare them: gflkit compare --seed 0,1,2",
}


def _options(command: click.Command) -> Iterator[click.Option]:
    """The options of ``command`` and of the commands under it (a group's)."""
    todo = [command]
    while todo:
        command = todo.pop()
        yield from (param for param in command.params if isinstance(param, click.Option))
        if isinstance(command, click.Group):
            todo.extend(command.commands.values())


def _flag(option: click.Option, value: str | None) -> str:
    """How the command line spells the setting ``option.name=value``."""
    if option.is_flag and not option.count:
        if value in (None, "True"):
            return max(option.opts, key=len)
        if value == "False" and option.secondary_opts:
            return max(option.secondary_opts, key=len)
        return f"no {max(option.opts, key=len)}" if value == "False" else f"{max(option.opts, key=len)} {value}"
    return max(option.opts, key=len) if value is None else f"{max(option.opts, key=len)} {value}"


def flag_names(text: str, ctx: click.Context | None = None, invoked: click.Command | None = None) -> str:
    """``text`` (a gflkit message) with each parameter reference (:data:`gflkit.errors.PARAMETER`,
    e.g. ```run_dir=runs/x```) spelled as the command line's option (``--run-dir runs/x``).

    The option is the invoked command's of that name (``invoked``, else the
    command of ``ctx``, by default the current context), else any command's; a
    name no command takes is left as it is.
    """
    from gflkit.errors import PARAMETER

    ctx = ctx or click.get_current_context(silent=True)
    if ctx is None or "`" not in text:
        return text
    commands = [invoked] if invoked is not None else []
    while ctx is not None:
        commands.append(ctx.command)
        ctx = ctx.parent
    options: dict[str, click.Option] = {}
    for command in reversed(commands):  # the invoked command's own options win
        options.update((option.name, option) for option in _options(command) if not option.hidden)

    def spell(match) -> str:
        option = options.get(match.group(1))
        return match.group(0) if option is None else _flag(option, match.group(2))

    return PARAMETER.sub(spell, text)


def warning_line(message: Warning) -> str:
    """The one stderr line of a gflkit warning, with command-line advice where the library names parameters."""
    from gflkit.errors import OneSeedWarning

    if isinstance(message, OneSeedWarning):
        advice = _ONE_SEED_ADVICE.get(message.context, _ONE_SEED_ADVICE["experiment"])
        return f"warning: {OneSeedWarning.WHAT}; to include it, {advice}"
    return "warning: " + " ".join(flag_names(str(message)).split())


def deprecation_warning(old: str, new: str) -> None:
    """One line on stderr: ``old`` still works for this release, ``new`` is the spelling to use."""
    click.echo(f"warning: {old} is deprecated and will be removed in the next release; use {new}", err=True)


def _collection_dir(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse a collection folder that is the current folder or holds it: writing one replaces the folder."""
    if value is None:
        return None
    target, here = Path(value).resolve(), Path.cwd().resolve()
    if target == here or target in here.parents:
        where = "the current folder" if target == here else "a folder that holds the current folder"
        raise click.BadParameter(f"{value!r} is {where}; a collection is written as a folder of its own, which "
                                 f"replaces it: name a new folder, e.g. {str(Path(value) / 'NAME')!r}")
    return value


def collection_dir_option(f):
    """``--out-dir DIR``: the collection folder a preprocess command writes (not the current folder or above)."""
    return click.option("--out-dir", "out_dir", type=click.Path(file_okay=False), default=None,
                        callback=_collection_dir,
                        help="Collection folder to write (default: <root>/processed/<name>).")(f)


def runs_root_option(f):
    """``--runs-root DIR``: a folder that holds run folders."""
    f = click.option("--force", is_flag=True,
                     help="Replace run folders that already exist under --runs-root (else that is an error).")(f)
    return click.option("--runs-root", "runs_root", type=click.Path(file_okay=False), default=None,
                        help="Keep every trained run under this folder (default: keep none).")(f)


def cross_network_options(f):
    """The options that give networks their roles in a cross-network collection."""
    opts = [
        click.option("--train-graphs", default=None, metavar="NAME,...",
                     help="Source networks (values of --graph-col) that give the train graphs (default: every "
                          "network not named by --test-graphs or --val-graphs)."),
        click.option("--val-graphs", default=None, metavar="NAME,...",
                     help="Networks that give the val graphs (default: carved from the train networks; none with "
                          "--keep-whole)."),
        click.option("--test-graphs", default=None, metavar="NAME,...",
                     help="Target networks that give the test graphs (default: every network not named by "
                          "--train-graphs or --val-graphs)."),
        click.option("--sample/--keep-whole", "sample", default=None,
                     help="Cut the networks into subgraphs with the sampler options (default with --train-graphs/"
                          "--test-graphs) or keep each as one graph (default otherwise)."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


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


def jobs_option(f):
    """``--jobs N``: processes to spread a table's independent runs over."""
    return click.option("--jobs", type=WorkerCount("processes"), default=1, show_default=True,
                        help="Processes to spread the independent runs over (each gets cores / jobs threads).")(f)


def distributed_options(f):
    """``--nproc``, ``--threads-per-proc``, ``--timeout``: one training run over several processes."""
    from gflkit.names import DEFAULT_TIMEOUT

    f = click.option("--timeout", type=FiniteFloatRange(1), default=DEFAULT_TIMEOUT, show_default=True,
                     help="Seconds a process waits for a dead or stuck peer before the run fails.")(f)
    f = click.option("--threads-per-proc", type=WorkerCount("threads"), default=None,
                     help="Threads of each process with --nproc or torchrun [default: cores / processes].")(f)
    return click.option("--nproc", type=WorkerCount("processes"), default=1, show_default=True,
                        help="Processes that train the one model together (torch.distributed, gloo); "
                             "ignored under torchrun.")(f)


class DeviceType(click.ParamType):
    """``cpu``, ``cuda`` or ``cuda:N``; whether this machine can use it is checked when the command runs."""

    name = "device"

    def convert(self, value: Any, param, ctx) -> str:
        import re

        text = str(value).strip().lower()
        if not re.fullmatch(r"cpu|cuda(:\d+)?", text):
            self.fail(f"{value!r}: choose cpu, cuda or cuda:N.", param, ctx)
        return text


def device_option(f):
    """``--device cpu|cuda|cuda:N``: where a GFL model computes."""
    return click.option("--device", type=DeviceType(), default="cpu", show_default=True, metavar="cpu|cuda[:N]",
                        help="Where the GFL model computes; cuda needs CUDA builds of torch and of DGL "
                             "(DGL's own wheels: PyPI's DGL is CPU-only).")(f)


def run_dir_option(f):
    """``--run-dir DIR``: the folder of one run."""
    return click.option("--run-dir", "run_dir", type=click.Path(file_okay=False), default=None,
                        help="Run folder for config.json, metrics.csv and best.pt "
                             "(default: runs/<dataset>-<model>[-<aggregator>]-s<seed>-<hash of the settings>).")(f)


#: Splits a command can score.
SPLITS = ("test", "val", "train")


class _SplitChoice(click.Choice):
    """:data:`SPLITS`, plus the deprecated ``none`` of ``train --split`` (now ``--no-eval``), unlisted."""

    def convert(self, value: Any, param, ctx):
        if value == "none":
            return value
        return super().convert(value, param, ctx)


def split_option(help_: str):
    """``--split test|val|train``: the split a command scores."""

    def deco(f):
        return click.option("--split", type=_SplitChoice(SPLITS), default="test", show_default=True, help=help_)(f)

    return deco


#: Sections of a run's config.json (and of a TOML settings file), by config dataclass name.
CONFIG_SECTIONS = {"model_config": "GFLConfig", "episode_config": "EpisodeConfig", "train_config": "TrainConfig"}
#: Settings outside the sections: ``model`` (``train --model``) and ``options`` (``train --option``).
RUN_SETTINGS = ("model", "options")
#: The largest settings file ``--config`` reads (a run's config.json is a few KB).
SETTINGS_MAX_BYTES = 4 * 2**20
#: The deepest nesting of tables and lists a settings file may have (a run's config.json has 4).
SETTINGS_MAX_DEPTH = 32


def _shown(key: Any) -> str:
    """A key of a settings file as a message shows it: plain when it looks like a name, else quoted and cut."""
    import re

    text = str(key)
    return text if re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", text) else repr(text[:64] + ("..." if len(text) > 64 else ""))


def _closest(key: str, known: list[str], listed: list[str]) -> str:
    """`` (did you mean X?)`` for the known name closest to ``key``, else the names in ``listed``."""
    import difflib

    match = difflib.get_close_matches(str(key)[:200], known, n=1)
    return f" (did you mean {match[0]}?)" if match else f" (choose from {', '.join(listed)})"


def _read_text(path: str) -> str:
    """The text of a regular file of at most :data:`SETTINGS_MAX_BYTES`, without blocking on a pipe or device."""
    import stat

    from gflkit.errors import GFLError

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    limit = f"{SETTINGS_MAX_BYTES // 2**20} MiB"
    try:
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise GFLError(f"{path}: not a regular file; give a run's config.json or a .toml settings file")
            if info.st_size > SETTINGS_MAX_BYTES:
                raise GFLError(f"{path}: larger than {limit}; a settings file is a few KB")
            data = f.read(SETTINGS_MAX_BYTES + 1)
    except OSError as err:
        raise GFLError(f"{path}: cannot read it ({err.strerror or err})") from None
    if len(data) > SETTINGS_MAX_BYTES:  # it grew while being read
        raise GFLError(f"{path}: larger than {limit}; a settings file is a few KB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise GFLError(f"{path}: not UTF-8 text (byte {err.start})") from None


class _RepeatedKey(Exception):
    """A key given twice in one JSON object (JSON parsers keep the last silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members, refusing a key given twice (``json.loads``' ``object_pairs_hook``)."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _RepeatedKey(key)
        data[key] = value
    return data


def _too_deep(data: Any) -> bool:
    """Whether tables and lists nest deeper than :data:`SETTINGS_MAX_DEPTH` (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > SETTINGS_MAX_DEPTH:
                return True
            stack.extend((item, depth + 1) for item in (value.values() if isinstance(value, dict) else value))
    return False


def read_settings(path: str) -> dict[str, Any]:
    """The sections of a settings file: a run's ``config.json`` or a ``.toml`` file with the same keys.

    The file must be a regular file of at most :data:`SETTINGS_MAX_BYTES`
    whose tables and lists nest at most :data:`SETTINGS_MAX_DEPTH` deep. Its
    keys are the sections of :data:`CONFIG_SECTIONS`, :data:`RUN_SETTINGS` and
    what a run's ``config.json`` records besides
    (:data:`gflkit.runs.checkpoints.RUN_RECORD_KEYS`, read and not used); a section holds
    fields of its config. The values are checked by :func:`settings_defaults`.

    Raises:
        GFLError: one line naming ``path``: it cannot be read, is not a
            regular file, is too large, too deeply nested or not valid JSON /
            TOML, holds a section or key that does not exist (with the
            closest valid name), or a ``model`` that is not a name or
            ``options`` that are not a table of option names.
    """
    import json
    import tomllib
    from dataclasses import fields

    from gflkit import config as configs
    from gflkit.errors import GFLError
    from gflkit.runs.checkpoints import RUN_RECORD_KEYS

    text = _read_text(path)
    kind = "TOML" if str(path).lower().endswith(".toml") else "JSON"
    deep = f"{path}: tables or lists nested more than {SETTINGS_MAX_DEPTH} deep; a settings file has a few levels"
    try:
        data = tomllib.loads(text) if kind == "TOML" else json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:  # the parsers recurse once per level: deeper than the interpreter allows
        raise GFLError(deep) from None
    except _RepeatedKey as err:
        raise GFLError(f"{path}: the key {_shown(err.args[0])} appears twice in one object; keep one") from None
    except ValueError as err:  # JSONDecodeError, TOMLDecodeError, numbers beyond int's digit limit
        raise GFLError(f"{path}: not valid {kind} ({' '.join(str(err).split())[:200]})") from None
    if not isinstance(data, dict):
        raise GFLError(f"{path}: expected a {'table' if kind == 'TOML' else 'JSON object'} with the sections "
                       f"{', '.join(CONFIG_SECTIONS)}")
    if _too_deep(data):
        raise GFLError(deep)
    top = [*CONFIG_SECTIONS, *RUN_SETTINGS, *RUN_RECORD_KEYS]
    for key in data:
        if key not in top:
            raise GFLError(f"{path}: no section {_shown(key)}{_closest(key, top, list(CONFIG_SECTIONS))}")
    for section, cls_name in CONFIG_SECTIONS.items():
        values = data.get(section)
        if values is None:
            continue
        if not isinstance(values, dict):
            raise GFLError(f"{path}: {section} must be a table/object of settings")
        known = [f.name for f in fields(getattr(configs, cls_name))]
        for key in values:
            if key not in known:
                raise GFLError(f"{path}: {section} has no setting {_shown(key)}{_closest(key, known, known)}")
    if data.get("model") is not None and not isinstance(data["model"], str):
        raise GFLError(f"{path}: model: expected a model name")
    options = data.get("options")
    if options is not None:
        if not isinstance(options, dict):
            raise GFLError(f"{path}: options: expected a table/object of baseline options")
        bad = [k for k in options if not k.strip() or "=" in k]
        if bad:
            raise GFLError(f"{path}: options: {_shown(bad[0])} is not an option name")
    return data


class _NotAValue(Exception):
    """A settings value of a kind the command line cannot give (a table, a list for one value ...)."""


def _scalar_text(value: Any) -> str:
    """A number, text or true/false as it is typed on the command line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    raise _NotAValue(f"expected a number, text or true/false, got a {type(value).__name__}")


def _command_line(value: Any, param: click.Parameter) -> str | tuple[str, ...]:
    """``value`` of a settings file as the command line gives it to ``param``: the text its type converts.

    ``options`` (a table, as :func:`read_settings` checked) become ``KEY=VALUE`` texts with JSON values.
    """
    import json

    if param.name == "options":  # --option KEY=VALUE, repeated; the value is read as JSON
        return tuple(f"{k}={json.dumps(v)}" for k, v in value.items())
    if isinstance(value, dict):
        raise _NotAValue("expected a value, got a table/object")
    if isinstance(param.type, click.types.BoolParamType):  # a --flag/--no-flag pair
        if not isinstance(value, bool):
            raise _NotAValue(f"expected true or false, got {_shown(_scalar_text(value))}")
        return _scalar_text(value)
    if isinstance(value, list):
        if not isinstance(param.type, IntList):
            raise _NotAValue("expected one value, got a list")
        if any(isinstance(v, (list, dict)) for v in value):
            raise _NotAValue("expected a list of numbers, got a nested list")
        return ",".join(_scalar_text(v) for v in value)
    return _scalar_text(value)


def settings_defaults(ctx: click.Context, path: str, data: dict[str, Any]) -> dict[str, Any]:
    """The command-line values of the settings in ``data`` (from :func:`read_settings`), by parameter name.

    Each value is turned into the text the command line would give (numbers
    as typed, lists comma-separated, true/false only for flags) and converted
    by the type and callback of the command's option of the same name, so it
    is checked exactly as the option is. A ``null`` leaves a setting whose
    default is none at its default.

    Raises:
        click.BadParameter: one line naming ``path``, the key and the option.
    """
    from dataclasses import fields

    from gflkit import config as configs

    params = {p.name: p for p in ctx.command.params if p.name}
    entries: list[tuple[str, str, Any, bool]] = []  # (where, name, value, null allowed)
    for section, cls_name in CONFIG_SECTIONS.items():
        optional = {f.name for f in fields(getattr(configs, cls_name)) if f.default is None}
        entries += [(f"{section}.{key}", key, value, key in optional)
                    for key, value in (data.get(section) or {}).items()]
    entries += [(name, name, data[name], True) for name in RUN_SETTINGS if name in data]

    def fail(where: str, param: click.Parameter | None, message: str) -> click.BadParameter:
        flag = f" ({param.opts[0]})" if param is not None and param.opts else ""
        return click.BadParameter(" ".join(f"{path}: {where}{flag}: {message}".split()))

    # A run's model and options select what train runs, not what compare runs (read_settings checked their form).
    used = {name for name in params if ctx.command.name == "train" or name not in RUN_SETTINGS}
    defaults: dict[str, Any] = {}
    for where, name, value, nullable in entries:
        param = params.get(name)
        if value is None:
            if not nullable:
                raise fail(where, param, "null is not a value here; leave the key out to keep the default")
            continue
        if param is None or name not in used:  # a setting this command takes no option for
            continue
        try:
            text = _command_line(value, param)
            converted = param.type_cast_value(ctx, text)
            if param.callback is not None:
                param.callback(ctx, param, converted)
        except _NotAValue as err:
            raise fail(where, param, str(err)) from None
        except click.BadParameter as err:
            raise fail(where, param, err.message) from None
        defaults[name] = text
    return defaults


def _apply_settings(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from gflkit.errors import GFLError

    try:
        defaults = settings_defaults(ctx, value, read_settings(value))
    except GFLError as err:
        raise click.BadParameter(" ".join(flag_names(str(err), ctx).split()), ctx=ctx, param=param) from None
    except click.BadParameter as err:
        raise click.BadParameter(err.message, ctx=ctx, param=param) from None
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


def config_option(f):
    """``--config FILE``: defaults from a run's ``config.json`` or a TOML file; flags given override them."""
    return click.option(
        "--config", "config_file", type=click.Path(dir_okay=False, exists=True), default=None, is_eager=True,
        expose_value=False, callback=_apply_settings,
        help="Take settings from a run's config.json or a TOML file with the same tables (model_config, "
             "episode_config, train_config); options given on the command line override them.",
    )(f)
