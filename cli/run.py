"""``gflkit train`` and ``gflkit evaluate``."""
from __future__ import annotations

from pathlib import Path

import click

import gflkit
from gflkit.config import AGGREGATORS, DISTANCES, PRESETS, SIMILARITIES, EpisodeConfig, GFLConfig, TrainConfig
from gflkit.names import CHECKPOINT_EVERY, PER_GRAPH_MODELS as PER_GRAPH, TRANSFER_MODELS as TRANSFER

from .options import (FiniteFloatRange, IntList, ci_option, data_root_option, emit, int_list, output_options,
                      refine_configs, refine_options, seed_option)

_DEFAULT = GFLConfig()

# (flag, config field, click type, help). Defaults come from the model preset.
_MODEL_FLAGS = [
    ("--aggregator", "aggregator", click.Choice(AGGREGATORS), "Aggregator of the hierarchy levels (GFL-mean / GFL-att)."),
    ("--prototype", "prototype", click.Choice(["pgnn", "mean"]), "Graph-structured (pgnn) or mean (Protonet) prototype."),
    ("--pool", "pool", click.Choice(["mean", "max"]), "Pooling of PGNN outputs into a prototype."),
    ("--pgnn-activation", "pgnn_activation", click.Choice(["tanh", "none"]), "Activation of the PGNN layer."),
    ("--similarity", "similarity", click.Choice(SIMILARITIES), "Similarity behind the relational structure."),
    ("--hops", "hops", click.IntRange(1), "k of the k-hop common-neighbour similarity."),
    ("--mu", "mu", FiniteFloatRange(0, 1), "Threshold: relation weights below it become mu0."),
    ("--mu0", "mu0", FiniteFloatRange(0, 1), "Weight given to relations below mu."),
    ("--gate/--no-gate", "gate", None, "Hierarchical graph representation gate on the PGNN."),
    ("--levels", "levels", click.IntRange(1), "R, levels of the hierarchical graph representation."),
    ("--clusters", "clusters", IntList(min_value=1, max_value=1 << 16), "Clusters of levels 2..R, comma-separated."),
    ("--graph-feats", "graph_feats", click.IntRange(1), "Size of the graph representation."),
    ("--recon/--no-recon", "recon", None, "Auxiliary graph reconstruction loss."),
    ("--gamma", "gamma", FiniteFloatRange(0), "Weight of the reconstruction loss."),
    ("--recon-reduction", "recon_reduction", click.Choice(["mean", "sum"]), "Divide the reconstruction loss by n^2 (mean) or not."),
    ("--recon-normalize/--no-recon-normalize", "recon_normalize", None, "L2-normalise decoder rows (bounded loss)."),
    ("--distance", "distance", click.Choice(DISTANCES), "Distance between queries and prototypes."),
    ("--cosine-scale", "cosine_scale", FiniteFloatRange(0, min_open=True), "Logit scale of the cosine distance."),
    ("--hidden-feats", "hidden_feats", click.IntRange(1), "Hidden units of the GCN encoder."),
    ("--out-feats", "out_feats", click.IntRange(1), "Embedding size of the GCN encoder."),
    ("--dropout", "dropout", FiniteFloatRange(0, 1, max_open=True), "Dropout in the encoder."),
]
_MODEL_KEYS = [field for _, field, _, _ in _MODEL_FLAGS]


def model_options(f):
    """Every GFL hyperparameter as a flag; unset flags keep the preset's value."""
    for flag, field, type_, help_ in reversed(_MODEL_FLAGS):
        default = getattr(_DEFAULT, field)
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
        kwargs = {"default": None, "help": f"{help_} [default: {shown}]"}
        if type_ is not None:
            kwargs["type"] = type_
        f = click.option(flag, field, **kwargs)(f)
    return f


def episode_options(f):
    f = click.option("--on-small", type=click.Choice(["skip", "error"]), default="skip", show_default=True,
                     help="Graphs with a class of fewer than k_shot + 1 labelled nodes: skip (and list) or fail.")(f)
    f = click.option("--n-query", type=click.IntRange(1), default=None,
                     help="Cap on query nodes per graph (default: every other labelled node).")(f)
    f = click.option("--k-shot", type=click.IntRange(1), default=10, show_default=True,
                     help="Labelled support nodes per class.")(f)
    return f


def train_options(f):
    t = TrainConfig()
    specs = [
        ("--steps", click.IntRange(1), t.steps, "Maximum meta-training steps."),
        ("--meta-batch", click.IntRange(1), t.meta_batch, "Graphs per meta-training step."),
        ("--lr", FiniteFloatRange(0, min_open=True), t.lr, "Adam learning rate."),
        ("--weight-decay", FiniteFloatRange(0), t.weight_decay, "Adam weight decay."),
        ("--eval-every", click.IntRange(1), t.eval_every, "Steps between validation rounds."),
        ("--patience", click.IntRange(1), t.patience, "Validation rounds without gain before stopping."),
        ("--val-episodes", click.IntRange(1), t.val_episodes, "Support draws per validation graph."),
        ("--grad-clip", FiniteFloatRange(0, min_open=True), t.grad_clip, "Clip the gradient norm to this value (default: no clipping)."),
    ]
    for flag, type_, default, help_ in reversed(specs):
        f = click.option(flag, type=type_, default=default, show_default=True, help=help_)(f)
    return f


def model_overrides(kwargs: dict) -> dict:
    """Pop the model flags from a command's kwargs into config overrides."""
    overrides = {key: kwargs.pop(key) for key in _MODEL_KEYS}
    if overrides.get("clusters") is not None:
        overrides["clusters"] = tuple(int_list(overrides["clusters"]))
    return overrides


def episode_config(kwargs: dict) -> EpisodeConfig:
    return EpisodeConfig(kwargs.pop("k_shot"), kwargs.pop("n_query"), kwargs.pop("on_small"))


def train_config(kwargs: dict, seed: int) -> TrainConfig:
    keys = ["steps", "meta_batch", "lr", "weight_decay", "eval_every", "patience", "val_episodes", "grad_clip"]
    return TrainConfig(**{k: kwargs.pop(k) for k in keys}, seed=seed)


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
             "eval_every", "patience", "val_episodes", "grad_clip", "seed", "options", "out", "force"]


def _check_resume(ctx: click.Context) -> None:
    flags = {param.name: param.opts[0] for param in ctx.command.params}
    given = [flags[name] for name in _SETTINGS if ctx.get_parameter_source(name).name not in ("DEFAULT", "DEFAULT_MAP")]
    if given:
        raise click.UsageError(f"--resume continues a run with its own settings; drop {', '.join(given)}")


@click.command()
@click.argument("data", required=False)
@click.option("--model", type=click.Choice(list(PRESETS) + list(TRANSFER)), default="gfl", show_default=True,
              help="GFL, a GFL configuration (protonet), or a transfer baseline.")
@model_options
@episode_options
@train_options
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Run folder for config.json, metrics.csv and best.pt "
                   "(default: runs/<dataset>-<model>[-<aggregator>]-s<seed>-<hash of the settings>).")
@click.option("--force", is_flag=True, help="Replace the run folder if it exists (else that is an error).")
@click.option("--resume", type=click.Path(file_okay=False), default=None, metavar="RUN",
              help="Continue the interrupted run RUN from its last checkpoint, with its own settings "
                   "(a finished RUN is only scored).")
@click.option("--checkpoint-every", type=click.IntRange(1), default=CHECKPOINT_EVERY, show_default=True,
              help="Steps between resume checkpoints (last.pt in the hidden .<run>.partial folder).")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Option of a transfer baseline, repeatable (e.g. --option k=5); values are read as JSON.")
@click.option("--split", type=click.Choice(["test", "val", "none"]), default="test", show_default=True,
              help="Split to evaluate the selected checkpoint on ('none' to skip).")
@click.option("--episodes", type=click.IntRange(1), default=1, show_default=True,
              help="Support draws per graph in that evaluation.")
@refine_options()
@ci_option
@seed_option()
@data_root_option
@output_options
def train(data, model, out, force, resume, checkpoint_every, options, split, episodes, seed, ci, data_root, output,
          fmt, **kwargs):
    """Meta-train on DATA's train graphs and print the test result as CSV.

    DATA is a collection folder or a name under <root>/processed/; without it
    the built-in synthetic family is used (generated on first use).

    The run folder appears only when training has finished: until then the
    run lives in the hidden folder .<run>.partial beside it, with a resume
    checkpoint every --checkpoint-every steps. After a crash, kill or Ctrl-C,
    'gflkit train --resume RUN' continues it and ends with the same best.pt
    and row as an uninterrupted run (at the same thread count). An existing
    run folder is replaced only with --force.
    """
    from gflkit.api import default_run_dir
    from gflkit.run_folder import partial_path

    eval_split = None if split == "none" else split
    refine = refine_configs(kwargs)[0]
    if resume is not None:
        _check_resume(click.get_current_context())
        target = resume
        call = dict(resume=resume)
    else:
        overrides = model_overrides(kwargs)
        ep_cfg = episode_config(kwargs)
        tr_cfg = train_config(kwargs, seed)
        model_cfg = gflkit.model_config(model, **overrides) if model in PRESETS else None
        if options and model not in TRANSFER:
            raise click.UsageError(f"--option applies to transfer baselines ({', '.join(TRANSFER)}), not {model}")
        collection = gflkit.load_collection(data, data_root)
        parsed = parse_options(options)
        if out is None:
            out = default_run_dir(collection, model, model_cfg, ep_cfg, tr_cfg, parsed)
        target, data = out, collection
        call = dict(model_cfg=model_cfg, episode_cfg=ep_cfg, train_cfg=tr_cfg, model=model, options=parsed,
                    out=out, force=force)
    try:
        result, table = gflkit.train(data, root=data_root, eval_split=eval_split, episodes=episodes,
                                     checkpoint_every=checkpoint_every, refine=refine, ci=ci, **call)
    except KeyboardInterrupt:
        if not partial_path(target).is_dir():
            raise click.ClickException("interrupted before training started") from None
        raise click.ClickException(f"interrupted; continue with: gflkit train --resume {target}") from None
    click.echo(f"run written to {result.run_dir}", err=True)
    if len(table):
        emit(table, output, fmt)


@click.command()
@click.argument("run", required=False)
@click.argument("data", required=False)
@click.option("--model", type=click.Choice(list(PER_GRAPH)), default=None,
              help="Score a baseline that needs no meta-training instead of a run; then the first argument is DATA.")
@episode_options
@click.option("--split", type=click.Choice(["test", "val", "train"]), default="test", show_default=True,
              help="Split to evaluate on.")
@click.option("--episodes", type=click.IntRange(1), default=1, show_default=True,
              help="Support draws per graph (accuracy per graph is their mean).")
@refine_options()
@ci_option
@click.option("--force", is_flag=True, help="Evaluate even when DATA's feature fingerprint differs from the run's.")
@seed_option(None)
@data_root_option
@output_options
def evaluate(run, data, model, split, episodes, force, seed, ci, data_root, output, fmt, **kwargs):
    """Score RUN (a run folder or checkpoint) on DATA's test graphs as CSV.

    Accuracy is computed per graph (the mean over its episodes), then averaged
    over graphs with a t-based 95% interval over graphs (over episodes with one
    test graph; --ci paper for 1.96 x std / sqrt(n)), in percent. Without DATA the
    collection the run was trained on is used (give --data-root when it lives
    under another data root). Without --seed and the episode flags the run's
    own are used, so the row repeats the one training printed; the seed used
    is printed on stderr. A per-graph baseline is scored
    with --model NAME [DATA] (or with its name in place of RUN).
    """
    refine = refine_configs(kwargs)[0]
    ctx = click.get_current_context()
    episode_given = any(ctx.get_parameter_source(k).name != "DEFAULT" for k in ("k_shot", "n_query", "on_small"))
    ep_cfg = episode_config(kwargs)
    if model is None and run in PER_GRAPH and not Path(run).exists():
        model, run = run, None
    if model is not None:
        if data is None and run is not None:
            data, run = run, None
        if refine.active:
            raise click.UsageError(f"--refine applies to trained runs, not to the per-graph baseline {model}")
        table = gflkit.evaluate_baseline(model, data, split=split, episodes=episodes, episode_cfg=ep_cfg,
                                         seed=0 if seed is None else seed, root=data_root, ci=ci)
    else:
        if run is None:
            raise click.UsageError("give a RUN folder (from gflkit train) or --model NAME")
        table = gflkit.evaluate(run, data, split=split, episodes=episodes,
                                episode_cfg=ep_cfg if episode_given else None, seed=seed, root=data_root,
                                refine=refine, ci=ci, force=force)
    if len(table):
        whose = " (the run's)" if seed is None and model is None else ""
        click.echo(f"scored with seed {table['seed'].iloc[0]}{whose}", err=True)
    emit(table, output, fmt)


COMMANDS = [train, evaluate]
