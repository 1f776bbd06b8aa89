"""``gflkit train`` and ``gflkit evaluate``."""
from __future__ import annotations

from pathlib import Path

import click
from click.core import ParameterSource

import gflkit
from gflkit.errors import GFLError
from gflkit.config import (AGGREGATORS, DISTANCES, GATE_MODES, PGNN_NORMS, PRESETS, SIMILARITIES, EpisodeConfig,
                           GFLConfig, TrainConfig, field_default, field_help)
from gflkit.names import CHECKPOINT_EVERY, ENCODERS, PER_GRAPH_MODELS as PER_GRAPH, TRANSFER_MODELS as TRANSFER

from .options import (FiniteFloatRange, IntList, Interrupted, SectionedCommand, ci_option, config_option,
                      data_root_option, deprecation_warning, device_option, distributed_options, emit, info, int_list,
                      output_options, refine_configs, refine_options, run_dir_option, seed_option, split_option)

# (flag, config field, click type); help and default come from the config's fields.
_MODEL_FLAGS = [
    ("--encoder", "encoder", click.Choice(ENCODERS)),
    ("--aggregator", "aggregator", click.Choice(AGGREGATORS)),
    ("--prototype", "prototype", click.Choice(["pgnn", "mean"])),
    ("--pool", "pool", click.Choice(["mean", "max"])),
    ("--pgnn-activation", "pgnn_activation", click.Choice(["tanh", "none"])),
    ("--pgnn-norm", "pgnn_norm", click.Choice(PGNN_NORMS)),
    ("--similarity", "similarity", click.Choice(SIMILARITIES)),
    ("--hops", "hops", click.IntRange(1)),
    ("--mu", "mu", FiniteFloatRange(0, 1)),
    ("--mu0", "mu0", FiniteFloatRange(0, 1)),
    ("--gate/--no-gate", "gate", None),
    ("--gate-mode", "gate_mode", click.Choice(GATE_MODES)),
    ("--levels", "levels", click.IntRange(1)),
    ("--clusters", "clusters", IntList(min_value=1, max_value=1 << 16)),
    ("--graph-feats", "graph_feats", click.IntRange(1)),
    ("--recon/--no-recon", "recon", None),
    ("--gamma", "gamma", FiniteFloatRange(0)),
    ("--recon-reduction", "recon_reduction", click.Choice(["mean", "sum"])),
    ("--recon-normalize/--no-recon-normalize", "recon_normalize", None),
    ("--distance", "distance", click.Choice(DISTANCES)),
    ("--cosine-scale", "cosine_scale", FiniteFloatRange(0, min_open=True)),
    ("--hidden-feats", "hidden_feats", click.IntRange(1)),
    ("--out-feats", "out_feats", click.IntRange(1)),
    ("--dropout", "dropout", FiniteFloatRange(0, 1, max_open=True)),
]
_MODEL_KEYS = [field for _, field, _ in _MODEL_FLAGS]
#: Parameters of :func:`episode_options` and :func:`train_options`, in their order.
EPISODE_KEYS = ["k_shot", "n_query", "on_small"]
TRAIN_KEYS = ["steps", "meta_batch", "lr", "weight_decay", "eval_every", "patience", "val_episodes", "grad_clip",
              "val_from_train", "parallel_steps"]
#: ``--help`` sections shared by the commands that train and score (a parameter is listed in its first section).
MODEL_SECTION = ("Model", _MODEL_KEYS)
EPISODE_SECTION = ("Episode", EPISODE_KEYS)
TRAIN_SECTION = ("Training", [*TRAIN_KEYS, "device"])
SCORING_SECTION = ("Scoring", ["reference", "split", "no_eval", "episodes", "ci", "refine", "refine_alpha",
                               "refine_steps"])

#: ``gflkit train --help``: the common options first.
TRAIN_HELP_SECTIONS = [
    ("Common", ["model", "k_shot", "steps", "seed", "run_dir", "config_file", "data_root", "output"]),
    ("Model", ["options", *_MODEL_KEYS]), EPISODE_SECTION, TRAIN_SECTION, SCORING_SECTION,
    ("Run and output", ["force", "resume", "checkpoint_every", "fmt"]),
    ("Advanced", ["nproc", "threads_per_proc", "timeout"]),
]
#: The end of ``gflkit train --help``: how the settings combine, where the run lives, processes.
TRAIN_EPILOG = """
Model flags left unset keep the --model preset's values (the defaults shown
are the full GFL's); --config FILE takes settings from a run's config.json or
a TOML file, and flags given override them.

The run folder appears only when training has finished: until then the run
lives in the hidden folder .<run>.partial beside it, with a resume checkpoint
every --checkpoint-every steps. After a crash, kill or Ctrl-C, 'gflkit train
--resume RUN' continues it and ends with the same best.pt and row as an
uninterrupted run (at the same thread count). An existing run folder is
replaced only with --force.

--nproc N splits each meta-batch over N processes of this machine; the same
command runs under torchrun (python -m gflkit train ...) across machines.
"""
#: ``gflkit evaluate --help``.
EVALUATE_HELP_SECTIONS = [
    ("Common", ["baseline", "split", "episodes", "seed", "data_root", "output"]),
    EPISODE_SECTION, SCORING_SECTION, ("Run and output", ["fmt"]), ("Advanced", ["force", "device"]),
]


def model_options_with(shown: dict[str, str] | None = None, types: dict[str, click.ParamType] | None = None):
    """Every GFL hyperparameter as a flag; unset flags keep the preset's value.

    Help texts and the defaults shown come from :class:`~gflkit.config.GFLConfig`'s
    field metadata; ``shown`` replaces the default shown for a field where a
    command does something else when the flag is unset (``compare`` runs both
    aggregators), and ``types`` the type of a field's flag (``compare`` takes a
    list of aggregators).
    """
    shown, types = shown or {}, types or {}

    def deco(f):
        for flag, field, type_ in reversed(_MODEL_FLAGS):
            kwargs = {"default": field_default(GFLConfig, field), "help": field_help(GFLConfig, field),
                      "show_default": True}
            if field in shown:
                kwargs.update(default=None, show_default=shown[field])
            type_ = types.get(field, type_)
            if type_ is not None:
                kwargs["type"] = type_
            f = click.option(flag, field, **kwargs)(f)
        return f

    return deco


#: :func:`model_options_with` with the presets' defaults shown.
model_options = model_options_with()


def _config_option(cls, flag: str, type_, **extra):
    """An option for the field of ``cls`` named like ``flag``, with that field's help and default."""
    field = flag.lstrip("-").replace("-", "_")
    default = field_default(cls, field)
    return click.option(flag, type=type_, default=default, show_default=default is not None,
                        help=field_help(cls, field), **extra)


def episode_options(f):
    """``--k-shot``, ``--n-query`` and ``--on-small`` (:class:`~gflkit.config.EpisodeConfig`)."""
    for opt in reversed([
        _config_option(EpisodeConfig, "--k-shot", click.IntRange(1)),
        _config_option(EpisodeConfig, "--n-query", click.IntRange(1)),
        _config_option(EpisodeConfig, "--on-small", click.Choice(["skip", "error"])),
    ]):
        f = opt(f)
    return f


def train_options(f):
    """The meta-training settings of :class:`~gflkit.config.TrainConfig` (except the seed)."""
    specs = [
        ("--steps", click.IntRange(1)),
        ("--meta-batch", click.IntRange(1)),
        ("--lr", FiniteFloatRange(0, min_open=True)),
        ("--weight-decay", FiniteFloatRange(0)),
        ("--eval-every", click.IntRange(1)),
        ("--patience", click.IntRange(1)),
        ("--val-episodes", click.IntRange(1)),
        ("--grad-clip", FiniteFloatRange(0, min_open=True)),
        ("--val-from-train", click.IntRange(0)),
    ]
    f = click.option("--parallel-steps/--serial-steps", "parallel_steps", default=field_default(TrainConfig,
                     "parallel_steps"), show_default=True, help=field_help(TrainConfig, "parallel_steps"))(f)
    for flag, type_ in reversed(specs):
        f = _config_option(TrainConfig, flag, type_)(f)
    return f


def model_overrides(kwargs: dict) -> dict:
    """Pop the model flags from a command's kwargs into config overrides (``None``: keep the preset's value).

    A flag left at its default keeps the preset's value (``--model protonet``
    has no gate although the flag's default is ``--gate``).
    """
    ctx = click.get_current_context(silent=True)

    def given(key: str) -> bool:
        return ctx is None or ctx.get_parameter_source(key) is not ParameterSource.DEFAULT

    values = {key: kwargs.pop(key) for key in _MODEL_KEYS}
    overrides = {key: value if given(key) else None for key, value in values.items()}
    if overrides.get("clusters") is not None:
        overrides["clusters"] = tuple(int_list(overrides["clusters"]))
    return overrides


def episode_config(kwargs: dict) -> EpisodeConfig:
    """The episode options taken out of a command's ``kwargs``."""
    return EpisodeConfig(kwargs.pop("k_shot"), kwargs.pop("n_query"), kwargs.pop("on_small"))


def train_config(kwargs: dict, seed: int) -> TrainConfig:
    """The training options taken out of a command's ``kwargs``, with ``seed``."""
    return TrainConfig(**{k: kwargs.pop(k) for k in TRAIN_KEYS}, seed=seed)


def parse_options(pairs: tuple[str, ...]) -> dict:
    """``("k=5", "predict=attention")`` -> ``{"k": 5, "predict": "attention"}``."""
    import json

    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--option")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    return options


#: Parameters that set what a run is; --resume takes them from the run instead.
_SETTINGS = [*_MODEL_KEYS, "model", "k_shot", "n_query", "on_small", "steps", "meta_batch", "lr", "weight_decay",
             "eval_every", "patience", "val_episodes", "grad_clip", "val_from_train", "parallel_steps", "seed",
             "options", "run_dir", "force"]


def _check_resume(ctx: click.Context, resume: str) -> None:
    """The flags given with ``--resume``, refused by the library's one check, as a usage error."""
    from gflkit.config import refuse_settings_on_resume

    flags = {param.name: param.opts[0] for param in ctx.command.params}
    # A default from the environment (GFLKIT_TRAIN_STEPS, ...) is a default, not a setting the user typed.
    defaults = ("DEFAULT", "DEFAULT_MAP", "ENVIRONMENT")
    given = [flags[name] for name in _SETTINGS if ctx.get_parameter_source(name).name not in defaults]
    try:
        refuse_settings_on_resume(resume, given)
    except gflkit.GFLError as err:
        raise click.UsageError(str(err)) from None


@click.command(cls=SectionedCommand, sections=TRAIN_HELP_SECTIONS, epilog=TRAIN_EPILOG)
@click.argument("data", required=False)
@config_option
@click.option("--model", type=click.Choice(list(PRESETS) + list(TRANSFER)), default="gfl", show_default=True,
              help="GFL, a GFL configuration (protonet), or a transfer baseline.")
@model_options
@episode_options
@train_options
@run_dir_option
@click.option("--force", is_flag=True, help="Replace the run folder if it exists (else that is an error).")
@click.option("--resume", type=click.Path(file_okay=False), default=None, metavar="RUN",
              help="Continue the interrupted run RUN from its last checkpoint, with its own settings "
                   "(a finished RUN is only scored).")
@click.option("--checkpoint-every", type=click.IntRange(1), default=CHECKPOINT_EVERY, show_default=True,
              help="Steps between resume checkpoints (last.pt in the hidden .<run>.partial folder).")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Option of a transfer baseline, repeatable (e.g. --option k=5); values are read as JSON.")
@split_option("Split to score the selected checkpoint on after training.")
@click.option("--no-eval", is_flag=True, help="Do not score the checkpoint after training (no CSV row).")
@click.option("--episodes", type=click.IntRange(1), default=1, show_default=True,
              help="Support draws per graph in that evaluation.")
@distributed_options
@device_option
@refine_options()
@ci_option
@seed_option()
@data_root_option
@output_options
def train(data, model, run_dir, force, resume, checkpoint_every, options, split, no_eval, episodes, nproc,
          threads_per_proc, timeout, device, seed, ci, data_root,
          output, fmt, **kwargs):
    """Meta-train on DATA's train graphs and print the test result as CSV.

    DATA is a collection folder or a name under <root>/processed/; without it
    the built-in synthetic family is used (generated on first use). The run is
    kept in runs/<name> (--run-dir). Example: gflkit train DATA --k-shot 5
    """
    from gflkit.training import distributed
    from gflkit.config import RunSettings
    from gflkit.runs.settings import default_run_dir
    from gflkit.runs.folder import partial_path
    from gflkit.devices import resolve_device

    device = resolve_device(device)  # before any data is read or generated; passed on resolved

    if split == "none":
        deprecation_warning("--split none", "--no-eval")
    eval_split = None if no_eval or split == "none" else split
    out = run_dir
    refine = refine_configs(kwargs)[0]
    if resume is not None:
        _check_resume(click.get_current_context(), resume)
        target, configs = resume, {}
    else:
        overrides = model_overrides(kwargs)
        ep_cfg = episode_config(kwargs)
        tr_cfg = train_config(kwargs, seed)
        model_cfg = gflkit.model_config(model, **overrides) if model in PRESETS else None
        if options and model not in TRANSFER:
            raise click.UsageError(f"--option applies to transfer baselines ({', '.join(TRANSFER)}), not {model}")
        collection = gflkit.load_collection(data, data_root)
        parsed = parse_options(options)
        if model in TRANSFER:  # names and types checked now, as the command line's own options are
            from gflkit.errors import SettingError
            from gflkit.models.baselines import TRANSFER as BASELINES
            from gflkit.training.model_size import check_options

            try:
                check_options(model, BASELINES[model], parsed)
            except GFLError as err:
                raise click.BadParameter(err.reason if isinstance(err, SettingError) else str(err),
                                         param_hint="--option") from None
        if out is None:
            out = default_run_dir(collection, model, model_cfg, ep_cfg, tr_cfg, parsed)
        target, data = out, collection
        configs = dict(model_cfg=model_cfg, episode_cfg=ep_cfg, train_cfg=tr_cfg, model=model, options=parsed)
    run = RunSettings(run_dir=out, force=force, resume=resume, checkpoint_every=checkpoint_every, nproc=nproc,
                      threads_per_proc=threads_per_proc, timeout=timeout, device=device, root=data_root,
                      eval_split=eval_split, episodes=episodes, refine=refine, ci=ci)
    try:
        result, table = gflkit.train(data, run=run, return_result=True, **configs)
    except KeyboardInterrupt:
        if not partial_path(target).is_dir():
            raise Interrupted("interrupted before training started") from None
        raise Interrupted(f"interrupted; continue with: gflkit train --resume {target}") from None
    if not distributed.is_main_process():  # torchrun: rank 0 reports
        return
    info(f"run written to {result.run_dir}")
    if len(table):
        emit(table, output, fmt)


@click.command(cls=SectionedCommand, sections=EVALUATE_HELP_SECTIONS)
@click.argument("run", required=False)
@click.argument("data", required=False)
@click.option("--baseline", type=click.Choice(list(PER_GRAPH)), default=None,
              help="Score this baseline, which needs no meta-training, instead of a run; the argument is then DATA.")
@episode_options
@split_option("Split to evaluate on.")
@click.option("--episodes", type=click.IntRange(1), default=1, show_default=True,
              help="Support draws per graph (accuracy per graph is their mean).")
@refine_options()
@ci_option
@click.option("--force", is_flag=True, help="Evaluate even when DATA's feature fingerprint differs from the run's.")
@device_option
@seed_option(None)
@data_root_option
@output_options
def evaluate(run, data, baseline, split, episodes, force, device, seed, ci, data_root, output, fmt, **kwargs):
    """Score RUN (a run folder or checkpoint) on DATA's test graphs as CSV.

    Accuracy is computed per graph (the mean over its episodes), then averaged
    over graphs with a t-based 95% interval over graphs (over episodes with one
    test graph; --ci paper for 1.96 x std / sqrt(n)), in percent. That
    interval is of one trained run: it leaves training randomness out (a
    warning says so); gflkit compare --seed 0,1,2 includes it. Without DATA the
    collection the run was trained on is used (give --data-root when it lives
    under another data root). Without --seed and the episode flags the run's
    own are used, so the row repeats the one training printed; the seed used
    is printed on stderr. A per-graph baseline is scored
    with --baseline NAME [DATA].
    """
    if split == "none":
        raise click.BadParameter("'none' is not one of 'test', 'val', 'train'.", param_hint="--split")
    refine = refine_configs(kwargs)[0]
    ctx = click.get_current_context()
    episode_given = any(ctx.get_parameter_source(k).name != "DEFAULT" for k in ("k_shot", "n_query", "on_small"))
    ep_cfg = episode_config(kwargs)
    model = baseline
    if model is None and run in PER_GRAPH and not Path(run).exists():
        deprecation_warning(f"naming a baseline in place of RUN ({run})", f"--baseline {run}")
        model, run = run, None
    if model is not None:
        if data is None and run is not None:
            data, run = run, None
        if refine.active:
            raise click.UsageError(f"--refine applies to trained runs, not to the per-graph baseline {model}")
        if device != "cpu":
            raise click.UsageError(f"--device applies to trained GFL runs; the per-graph baseline {model} runs on "
                                   f"the CPU")
        table = gflkit.evaluate_baseline(model, data, split=split, episodes=episodes, episode_cfg=ep_cfg,
                                         seed=0 if seed is None else seed, root=data_root, ci=ci)
    else:
        if run is None:
            raise click.UsageError("give a RUN folder (from gflkit train) or --baseline NAME")
        table = gflkit.evaluate(run, data, split=split, episodes=episodes,
                                episode_cfg=ep_cfg if episode_given else None, seed=seed, root=data_root,
                                refine=refine, ci=ci, force=force, device=device)
    if len(table):
        whose = " (the run's)" if seed is None and model is None else ""
        info(f"scored with seed {table['seed'].iloc[0]}{whose}")
    emit(table, output, fmt)


COMMANDS = [train, evaluate]
