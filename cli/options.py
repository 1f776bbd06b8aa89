"""Options shared by several commands, defined once, as decorators; the option types (:mod:`.params`), output
helpers (:mod:`.output`) and ``--config`` (:mod:`.settings`) are importable from here too.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gflkit.names import REFINE_ALPHA, REFINE_METHODS, REFINE_STEPS, SAMPLING_METHODS as METHODS

from .output import (deprecation_warning, emit, flag_names, info, quiet, warning_line)  # noqa: F401
from .params import (SEED, SPLITS, ChoiceList, DeviceType, FiniteFloatRange, FolderName, GraphCounts,  # noqa: F401
                     IntList, NameList, Span, WorkerCount, _SplitChoice)
from .settings import (CONFIG_SECTIONS, RUN_SETTINGS, SETTINGS_MAX_BYTES, SETTINGS_MAX_DEPTH,  # noqa: F401
                       config_option, read_settings, settings_defaults)


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


def adjust_option(f):
    """``--adjust holm|bh|none``: how a table's p-values are adjusted over its comparisons."""
    return click.option(
        "--adjust", type=click.Choice(["holm", "bh", "none"]), default="holm", show_default=True,
        help="p_adjusted: the p-values adjusted over every comparison the table prints, by Holm's step-down "
             "method (family-wise error), Benjamini-Hochberg (false discovery rate) or none. A difference is "
             "shown when its adjusted p-value is below 0.05.",
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


def split_option(help_: str):
    """``--split test|val|train``: the split a command scores."""

    def deco(f):
        return click.option("--split", type=_SplitChoice(SPLITS), default="test", show_default=True, help=help_)(f)

    return deco
