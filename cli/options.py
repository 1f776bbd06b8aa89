"""Options shared by several commands, defined once, and the option types they use.

Every float option takes :class:`FiniteFloatRange` (Click's ``FloatRange`` lets
``nan`` and ``inf`` through), every seed :data:`SEED`, and comma-separated
lists :class:`IntList` / :class:`NameList`, and every name that becomes a
folder name :class:`FolderName`, so a bad value is a one-line usage error
(exit 2) that names the option.
"""
from __future__ import annotations

import math
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
        if self.unique and len(set(values)) != len(values):
            self.fail(f"give each value once, got {value!r}.", param, ctx)
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


#: What the command line advises for a one-seed result, by the warning's context.
_ONE_SEED_ADVICE = {
    "experiment": "run with several seeds: --seed 0,1,2 (the default)",
    "run": "train several seeds and compare them: gflkit compare --seed 0,1,2",
}


def warning_line(message: Warning) -> str:
    """The one stderr line of a gflkit warning, with command-line advice where the library names parameters."""
    from gflkit.errors import OneSeedWarning

    if isinstance(message, OneSeedWarning):
        advice = _ONE_SEED_ADVICE.get(message.context, _ONE_SEED_ADVICE["experiment"])
        return f"warning: {OneSeedWarning.WHAT}; to include it, {advice}"
    return "warning: " + " ".join(str(message).split())


def deprecation_warning(old: str, new: str) -> None:
    """One line on stderr: ``old`` still works for this release, ``new`` is the spelling to use."""
    click.echo(f"warning: {old} is deprecated and will be removed in the next release; use {new}", err=True)


def deprecated_alias(old: str, new: str, dest: str, **option_kwargs: Any):
    """Keep the old spelling ``old`` of the option ``new`` (parameter ``dest``) working, with a warning.

    Registers a hidden option ``old`` (same type as ``new``: pass ``type=...``,
    ``is_flag=...``); when it is given, a deprecation warning goes to stderr and
    its value is used for ``dest``. Giving both spellings is a usage error.
    Apply it below ``@click.command()`` like any option decorator.

    Args:
        old: the old flag, e.g. ``"--out"``.
        new: the flag that replaces it, e.g. ``"--run-dir"`` (for the messages).
        dest: the parameter name of ``new`` in the command function.
        **option_kwargs: passed to :func:`click.option` for the hidden option.
    """
    import functools

    hidden = "deprecated_" + old.lstrip("-").replace("-", "_")

    def deco(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            value = kwargs.pop(hidden, None)
            if value is None:
                return f(*args, **kwargs)
            ctx = click.get_current_context()
            if ctx.get_parameter_source(dest) is click.core.ParameterSource.COMMANDLINE:
                raise click.UsageError(f"give {new} only ({old} is its deprecated spelling)")
            deprecation_warning(old, new)
            kwargs[dest] = value
            return f(*args, **kwargs)

        option_kwargs.setdefault("default", None)
        return click.option(old, hidden, hidden=True, **option_kwargs)(wrapper)

    return deco


def collection_dir_option(f):
    """``--out-dir DIR``: the collection folder a preprocess command writes (old spelling ``--out``)."""
    f = deprecated_alias("--out", "--out-dir", "out_dir", type=click.Path(file_okay=False))(f)
    return click.option("--out-dir", "out_dir", type=click.Path(file_okay=False), default=None,
                        help="Collection folder to write (default: <root>/processed/<name>).")(f)


def runs_root_option(f):
    """``--runs-root DIR``: a folder that holds run folders (old spelling ``--runs``)."""
    f = click.option("--force", is_flag=True,
                     help="Replace run folders that already exist under --runs-root (else that is an error).")(f)
    f = deprecated_alias("--runs", "--runs-root", "runs_root", type=click.Path(file_okay=False))(f)
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
    return click.option("--jobs", type=click.IntRange(1), default=1, show_default=True,
                        help="Processes to spread the independent runs over (each gets cores / jobs threads).")(f)


def distributed_options(f):
    """``--nproc``, ``--threads-per-proc``, ``--timeout``: one training run over several processes."""
    from gflkit.names import DEFAULT_TIMEOUT

    f = click.option("--timeout", type=FiniteFloatRange(1), default=DEFAULT_TIMEOUT, show_default=True,
                     help="Seconds a process waits for a dead or stuck peer before the run fails.")(f)
    f = click.option("--threads-per-proc", type=click.IntRange(1), default=None,
                     help="Threads of each process with --nproc or torchrun [default: cores / processes].")(f)
    return click.option("--nproc", type=click.IntRange(1), default=1, show_default=True,
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
    """``--run-dir DIR``: the folder of one run (old spelling ``--out``)."""
    f = deprecated_alias("--out", "--run-dir", "run_dir", type=click.Path(file_okay=False))(f)
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


def read_settings(path: str) -> dict[str, Any]:
    """The sections of a settings file: a run's ``config.json`` or a ``.toml`` file with the same keys.

    Raises:
        GFLError: the file cannot be read or parsed, or a section holds a key
            its config does not have.
    """
    import json
    import tomllib
    from dataclasses import fields

    from gflkit import config as configs
    from gflkit.errors import GFLError

    try:
        text = open(path, encoding="utf-8").read()
        data = tomllib.loads(text) if str(path).lower().endswith(".toml") else json.loads(text)
    except OSError as err:
        raise GFLError(f"--config {path}: cannot read it ({err.strerror or err})") from None
    except (ValueError, tomllib.TOMLDecodeError) as err:
        raise GFLError(f"--config {path}: not valid {'TOML' if str(path).endswith('.toml') else 'JSON'} "
                       f"({' '.join(str(err).split())})") from None
    if not isinstance(data, dict):
        raise GFLError(f"--config {path}: expected an object with model_config, episode_config, train_config")
    for section, cls_name in CONFIG_SECTIONS.items():
        values = data.get(section) or {}
        if not isinstance(values, dict):
            raise GFLError(f"--config {path}: {section} must be a table/object of settings")
        known = {f.name for f in fields(getattr(configs, cls_name))}
        unknown = sorted(set(values) - known)
        if unknown:
            raise GFLError(f"--config {path}: {section} has no setting {', '.join(unknown)} "
                           f"(known: {', '.join(sorted(known))})")
    return data


def settings_defaults(data: dict[str, Any], params: set[str]) -> dict[str, Any]:
    """Map the sections of a settings file onto a command's parameter names (those in ``params``)."""
    flat: dict[str, Any] = {}
    for section in CONFIG_SECTIONS:
        flat.update(data.get(section) or {})
    if isinstance(data.get("model"), str):
        flat["model"] = data["model"]
    if isinstance(data.get("options"), dict) and data["options"]:
        import json

        flat["options"] = tuple(f"{k}={json.dumps(v)}" for k, v in data["options"].items())
    return {k: v for k, v in flat.items() if k in params and v is not None}


def _apply_settings(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from gflkit.errors import GFLError

    try:
        data = read_settings(value)
    except GFLError as err:
        raise click.BadParameter(" ".join(str(err).split()).removeprefix(f"--config {value}: "),
                                 ctx=ctx, param=param) from None
    names = {p.name for p in ctx.command.params if p.name and not p.name.startswith("deprecated_")}
    if ctx.command.name != "train":  # a run's model and options select what train runs, not what compare runs
        names -= {"model", "options"}
    ctx.default_map = {**(ctx.default_map or {}), **settings_defaults(data, names)}
    return value


def config_option(f):
    """``--config FILE``: defaults from a run's ``config.json`` or a TOML file; flags given override them."""
    return click.option(
        "--config", "config_file", type=click.Path(dir_okay=False, exists=True), default=None, is_eager=True,
        expose_value=False, callback=_apply_settings,
        help="Take settings from a run's config.json or a TOML file with the same tables (model_config, "
             "episode_config, train_config); options given on the command line override them.",
    )(f)
