"""``gflkit compare``, ``gflkit ablate`` and ``gflkit sweep``: the paper's tables as CSV."""
from __future__ import annotations

import click

import gflkit
from gflkit.config import ABLATIONS, AGGREGATORS
from gflkit.names import DEFAULT_SEEDS, SWEEP_PARAM_NAMES, model_names

from .options import (ChoiceList, IntList, NameList, SectionedCommand, adjust_option, ci_option, config_option,
                      data_root_option, device_option, emit, info, jobs_option, output_options, refine_configs,
                      refine_options, runs_root_option)
from .run import (EPISODE_SECTION, MODEL_SECTION, SCORING_SECTION, TRAIN_SECTION, episode_config, episode_options,
                  model_options, model_options_with, model_overrides, parse_options, train_config, train_options)

#: The ``--help`` sections of compare, ablate and sweep after their own common options.
_TABLE_SECTIONS = [MODEL_SECTION, EPISODE_SECTION, TRAIN_SECTION, SCORING_SECTION,
                   ("Run and output", ["runs_root", "force", "config_file", "fmt"]), ("Advanced", [])]
_TABLE_COMMON = ["seed", "k_shot", "steps", "episodes", "jobs", "data_root", "output", "records"]


def _sections(first: list[str], model: list[str] = ()) -> list[tuple[str, list[str]]]:
    """``--help`` sections of a table command: its own options and the common ones, then :data:`_TABLE_SECTIONS`."""
    title, keys = MODEL_SECTION
    return [("Common", [*first, *_TABLE_COMMON]), (title, [*model, *keys]), *_TABLE_SECTIONS[1:]]


def _emit(table, output, fmt: str, records: str | None) -> None:
    """The table to stdout or ``output``; its records, when asked for, to ``records`` (written first)."""
    if records is not None:
        from gflkit.io import atomic_write_text

        atomic_write_text(records, table.attrs["records"].to_csv(index=False))
        info(f"wrote {records}")
    emit(table, output, fmt)


def _common(f):
    """Options every experiment shares: episodes, training, seeds, output."""
    f = click.option("--records", "records", type=click.Path(dir_okay=False), default=None, metavar="FILE",
                     help="Also write every record the rows summarise (one line per row, seed, test graph and "
                          "episode) to this CSV; `gflkit summarize FILE` prints the same table from it.")(f)
    f = output_options(f)
    f = data_root_option(f)
    f = jobs_option(f)
    f = device_option(f)
    f = runs_root_option(f)
    f = click.option("--episodes", type=click.IntRange(1), default=1, show_default=True,
                     help="Support draws per test graph.")(f)
    f = click.option("--reference", default=None, metavar="NAME",
                     help="Row the others are paired with: delta, its interval, p-value and probability of "
                          "improvement over the same (seed, graph) units (the reference row's are empty). "
                          "compare: a model (protonet, gfl-att...; default the first), paired under each row's "
                          "own refinement (gfl-mean+lp with protonet+lp); MODEL+METHOD (protonet+lp, "
                          "protonet+none): that one row for every row; +METHOD (+none, +lp, +cs): each row with "
                          "its own model under METHOD (+none: against itself unrefined). ablate: a variant "
                          "(default full); sweep: a model or a value.")(f)
    f = adjust_option(f)
    f = ci_option(f)
    f = config_option(f)
    f = train_options(f)
    f = episode_options(f)
    return f


def seeds_option(f):
    """``--seed S[,S...]``: training seeds, one run each, aggregated in each row."""
    seeds = IntList(0, max_value=2**32 - 1, unique=True)
    return click.option("--seed", type=seeds, default=",".join(map(str, DEFAULT_SEEDS)), show_default=True,
                        metavar="S[,S...]",
                        help="Training seeds, comma-separated: one run per seed and model; intervals are over "
                             "(seed, graph) units. One seed leaves training randomness out of the intervals.")(f)


def models_option(default_help: str):
    """``--model NAME[,NAME...]``: the models to run."""

    def deco(f):
        return click.option("--model", type=NameList(), default=None, metavar="NAME[,NAME...]", help=default_help)(f)

    return deco


def _split_names(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


@click.command(cls=SectionedCommand, sections=_sections(["model"], ["majority", "options"]))
@click.argument("data", required=False)
@models_option("Models to run (default: all): " + ", ".join(model_names()) + ", and majority; gfl gives a row per "
               "--aggregator, gfl-mean and gfl-att one.")
@seeds_option
@click.option("--majority/--no-majority", default=True, show_default=True,
              help="Add the majority-class reference row (rate of each episode's most frequent query class).")
@click.option("--option", "options", multiple=True, metavar="MODEL.KEY=VALUE",
              help="Option of a transfer baseline in the table, repeatable (e.g. --option "
                   "tlp.transductive_steps=0); values are read as JSON.")
@refine_options(several=True)
@model_options_with({"aggregator": "mean and att, a row each"}, {"aggregator": ChoiceList(AGGREGATORS)})
@_common
def compare(data, model, seed, majority, options, reference, ci, adjust, runs_root, force, jobs, device, episodes,
            data_root, output, fmt, records, **kwargs):
    """Table 2: GFL against the baselines on DATA's test graphs, as CSV.

    One row per (model, refinement), each model trained once per --seed
    (default 0,1,2): accuracy with a 95% interval over (seed, graph) units
    (percent; n_seeds, n_graphs and ci_over say what it covers), balanced
    accuracy, macro-F1, and the paired difference to the --reference row
    (default: the first model, under the same refinement) over the same units
    and episodes, with prob_improvement. GFL gives a GFL-mean and a GFL-att row
    unless --aggregator picks (--aggregator mean,att lists them; --model gfl-att
    names one); a majority row comes last (--no-majority drops it).
    """
    refines = refine_configs(kwargs)
    overrides = {k: v for k, v in model_overrides(kwargs).items() if v is not None}
    aggregators = overrides.pop("aggregator", None) or AGGREGATORS
    from gflkit import experiments

    table = experiments.compare(
        data, _split_names(model), aggregators=aggregators,
        model_overrides=overrides, episode_cfg=episode_config(kwargs), train_cfg=train_config(kwargs, seed[0]),
        episodes=episodes, seeds=seed, refines=refines, reference=reference, majority=majority,
        ci=ci, adjust=adjust, root=data_root, runs_root=runs_root, force=force, jobs=jobs, device=device,
        options=_model_options(options),
    )
    _emit(table, output, fmt, records)


def _model_options(pairs: tuple[str, ...]) -> dict[str, dict]:
    """``("tlp.tau=0.5", "tlp.max_nodes=512")`` -> ``{"tlp": {"tau": 0.5, "max_nodes": 512}}``."""
    options: dict[str, dict] = {}
    for pair in pairs:
        name, dot, rest = pair.partition("=")[0].partition(".")
        if not dot or not name or not rest:
            raise click.BadParameter(f"expected MODEL.KEY=VALUE (e.g. tlp.transductive_steps=0), got {pair!r}",
                                     param_hint="--option")
        options.setdefault(name.strip(), {}).update(parse_options((pair[len(name) + 1:],)))
    return options


@click.command(cls=SectionedCommand, sections=_sections(["drop", "all_"]))
@click.argument("data", required=False)
@click.option("--drop", multiple=True, type=click.Choice(list(ABLATIONS)),
              help="Component to remove (repeatable): structure (M1a), gate (M2a), hierarchy (M2b), recon (M3).")
@click.option("--all", "all_", is_flag=True, help="Run every ablation of the paper's Table 3.")
@seeds_option
@model_options
@_common
def ablate(data, drop, all_, seed, reference, ci, adjust, runs_root, force, jobs, device, episodes, data_root, output,
           fmt, records, **kwargs):
    """Table 3: the full model against variants without a component, as CSV.

    One row per variant (one run per --seed, default 0,1,2) with accuracy,
    its interval over (seed, graph) units and the paired difference to the
    full model (or --reference VARIANT) over the same units: delta, delta_lo,
    delta_hi, prob_improvement, p_value. Example: gflkit ablate --drop gate >
    ablation.csv
    """
    if not drop and not all_:
        raise click.UsageError("give --drop COMPONENT (repeatable) or --all")
    seed_list = list(seed)
    base = gflkit.model_config("gfl", **model_overrides(kwargs))
    from gflkit import experiments

    table = experiments.ablate(
        data, list(ABLATIONS) if all_ else list(drop), base=base, seeds=seed_list,
        episode_cfg=episode_config(kwargs), train_cfg=train_config(kwargs, seed_list[0]),
        episodes=episodes, reference=reference or "full", ci=ci, adjust=adjust, root=data_root, runs_root=runs_root,
        force=force, jobs=jobs, device=device,
    )
    _emit(table, output, fmt, records)


@click.command(cls=SectionedCommand, sections=_sections(["param", "values", "model"]))
@click.argument("data", required=False)
@click.option("--param", type=click.Choice(list(SWEEP_PARAM_NAMES)), required=True,
              help="Hyperparameter to vary.")
@click.option("--values", type=NameList(), required=True, metavar="V,...",
              help="Comma-separated values, e.g. 0.5,0.6,0.7,0.8 or jaccard,adamic-adar,pagerank,khop-cn.")
@models_option("Models (default: gfl; for k-shot gfl, protonet and maml).")
@seeds_option
@model_options
@_common
def sweep(data, param, values, model, seed, reference, ci, adjust, runs_root, force, jobs, device, episodes,
          data_root, output, fmt, records, **kwargs):
    """Sensitivity (Tables 4-6, Figure 3): one CSV row per (value, model).

    Each model is trained once per --seed (default 0,1,2). Each row is paired
    with --reference over the same (seed, graph) units: a model (the same
    value) or a value (the same model); default the first model when several
    are swept, else the first value.
    """
    base = gflkit.model_config("gfl", **model_overrides(kwargs))
    from gflkit import experiments

    table = experiments.sweep(
        data, param, _split_names(values), _split_names(model), base=base,
        episode_cfg=episode_config(kwargs), train_cfg=train_config(kwargs, seed[0]), seeds=seed,
        reference=reference, ci=ci, adjust=adjust, episodes=episodes, root=data_root, runs_root=runs_root,
        force=force, jobs=jobs, device=device,
    )
    _emit(table, output, fmt, records)


@click.command()
@click.argument("records_files", metavar="RECORDS...", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False))
@ci_option
@adjust_option
@click.option("--reference", default=None, metavar="ROW",
              help="Pair every row with this row instead (a label of the records' row column: gcn, gfl-mean...); "
                   "p_adjusted is then over these comparisons.")
@click.option("--records", "records", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Also write the records the table summarises (the files joined, paired as printed) to this "
                   "CSV; `gflkit summarize FILE` prints the same table from it.")
@output_options
def summarize(records_files, ci, adjust, reference, output, fmt, records):
    """The table of compare, ablate or sweep again, from the records it wrote (--records RECORDS).

    With the command's --ci and --adjust the rows are the ones it printed, to
    the last digit; another --ci, --adjust or --reference rechecks the same
    records (gflkit summarize R.csv --reference gcn: every model against the
    non-transfer GCN). Several RECORDS of runs on the same test graphs, seeds
    and episodes make one table, rows in the order they first appear, a row
    found again in a later file replaced by that file's records: a model
    compared later, or rerun after a fix, beside a stored table (gflkit
    summarize table.csv new.csv --reference gfl-mean --records joined.csv).
    """
    from gflkit.evaluation.summary import join_records, read_records, summarize as summarize_records

    joined = join_records([read_records(f) for f in records_files], names=list(records_files))
    _emit(summarize_records(joined, ci=ci, adjust=adjust, reference=reference), output, fmt, records)


COMMANDS = [compare, ablate, sweep, summarize]
