"""``gflkit train`` and ``gflkit evaluate``."""
from __future__ import annotations

from pathlib import Path

import click

import gflkit
from gflkit import distributed
from gflkit.config import AGGREGATORS, DISTANCES, PRESETS, SIMILARITIES, EpisodeConfig, GFLConfig, TrainConfig
from gflkit.models.baselines import PER_GRAPH, TRANSFER
from gflkit.paths import runs_dir

from .options import data_root_option, emit, int_list, output_options, seed_option

_DEFAULT = GFLConfig()

# (flag, config field, click type, help). Defaults come from the model preset.
_MODEL_FLAGS = [
    ("--aggregator", "aggregator", click.Choice(AGGREGATORS), "Aggregator of the hierarchy levels (GFL-mean / GFL-att)."),
    ("--prototype", "prototype", click.Choice(["pgnn", "mean"]), "Graph-structured (pgnn) or mean (Protonet) prototype."),
    ("--pool", "pool", click.Choice(["mean", "max"]), "Pooling of PGNN outputs into a prototype."),
    ("--pgnn-activation", "pgnn_activation", click.Choice(["tanh", "none"]), "Activation of the PGNN layer."),
    ("--similarity", "similarity", click.Choice(SIMILARITIES), "Similarity behind the relational structure."),
    ("--hops", "hops", click.IntRange(1), "k of the k-hop common-neighbour similarity."),
    ("--mu", "mu", click.FloatRange(0, 1), "Threshold: relation weights below it become mu0."),
    ("--mu0", "mu0", click.FloatRange(0, 1), "Weight given to relations below mu."),
    ("--gate/--no-gate", "gate", None, "Hierarchical graph representation gate on the PGNN."),
    ("--levels", "levels", click.IntRange(1), "R, levels of the hierarchical graph representation."),
    ("--clusters", "clusters", str, "Clusters of levels 2..R, comma-separated."),
    ("--graph-feats", "graph_feats", click.IntRange(1), "Size of the graph representation."),
    ("--recon/--no-recon", "recon", None, "Auxiliary graph reconstruction loss."),
    ("--gamma", "gamma", click.FloatRange(0), "Weight of the reconstruction loss."),
    ("--recon-reduction", "recon_reduction", click.Choice(["mean", "sum"]), "Divide the reconstruction loss by n^2 (mean) or not."),
    ("--recon-normalize/--no-recon-normalize", "recon_normalize", None, "L2-normalise decoder rows (bounded loss)."),
    ("--distance", "distance", click.Choice(DISTANCES), "Distance between queries and prototypes."),
    ("--cosine-scale", "cosine_scale", click.FloatRange(0, min_open=True), "Logit scale of the cosine distance."),
    ("--hidden-feats", "hidden_feats", click.IntRange(1), "Hidden units of the GCN encoder."),
    ("--out-feats", "out_feats", click.IntRange(1), "Embedding size of the GCN encoder."),
    ("--dropout", "dropout", click.FloatRange(0, 1, max_open=True), "Dropout in the encoder."),
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
        ("--lr", click.FloatRange(0, min_open=True), t.lr, "Adam learning rate."),
        ("--weight-decay", click.FloatRange(0), t.weight_decay, "Adam weight decay."),
        ("--eval-every", click.IntRange(1), t.eval_every, "Steps between validation rounds."),
        ("--patience", click.IntRange(1), t.patience, "Validation rounds without gain before stopping."),
        ("--val-episodes", click.IntRange(1), t.val_episodes, "Support draws per validation graph."),
        ("--grad-clip", click.FloatRange(0, min_open=True), t.grad_clip, "Clip the gradient norm to this value (default: no clipping)."),
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


@click.command()
@click.argument("data", required=False)
@click.option("--model", type=click.Choice(list(PRESETS) + list(TRANSFER)), default="gfl", show_default=True,
              help="GFL, a GFL configuration (protonet), or a transfer baseline.")
@model_options
@episode_options
@train_options
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Run folder for config.json, metrics.csv and best.pt (default: runs/<dataset>-<model>-s<seed>).")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Option of a transfer baseline, repeatable (e.g. --option k=5); values are read as JSON.")
@click.option("--split", type=click.Choice(["test", "val", "none"]), default="test", show_default=True,
              help="Split to evaluate the selected checkpoint on ('none' to skip).")
@click.option("--episodes", type=click.IntRange(1), default=1, show_default=True,
              help="Support draws per graph in that evaluation.")
@click.option("--nproc", type=click.IntRange(1), default=1, show_default=True,
              help="Processes that train the one model together (torch.distributed, gloo); ignored under torchrun.")
@click.option("--threads-per-proc", type=click.IntRange(1), default=None,
              help="Threads of each process with --nproc or torchrun [default: cores / processes].")
@click.option("--timeout", type=click.FloatRange(1), default=distributed.DEFAULT_TIMEOUT, show_default=True,
              help="Seconds a process waits for a dead or stuck peer before the run fails.")
@seed_option()
@data_root_option
@output_options
def train(data, model, out, options, split, episodes, nproc, threads_per_proc, timeout, seed, data_root, output, fmt,
          **kwargs):
    """Meta-train on DATA's train graphs and print the test result as CSV.

    DATA is a collection folder or a name under <root>/processed/; without it
    the built-in synthetic family is used (generated on first use). --nproc N
    splits each meta-batch over N processes of this machine; the same command
    runs under torchrun (python -m gflkit train ...) across machines.
    """
    overrides = model_overrides(kwargs)
    ep_cfg = episode_config(kwargs)
    tr_cfg = train_config(kwargs, seed)
    model_cfg = gflkit.model_config(model, **overrides) if model in PRESETS else None
    collection = gflkit.load_collection(data, data_root)
    if out is None:
        suffix = f"-{model_cfg.aggregator}" if model_cfg is not None and model_cfg.uses_hierarchy else ""
        out = runs_dir() / f"{collection.name}-{model}{suffix}-s{seed}"
    if options and model not in TRANSFER:
        raise click.UsageError(f"--option applies to transfer baselines ({', '.join(TRANSFER)}), not {model}")
    _, table = gflkit.train(
        collection, model_cfg, ep_cfg, tr_cfg, model=model, options=parse_options(options), out=out, root=data_root,
        eval_split=None if split == "none" else split, episodes=episodes,
        nproc=nproc, threads_per_proc=threads_per_proc, timeout=timeout,
    )
    if not distributed.is_main_process():  # torchrun: rank 0 reports
        return
    click.echo(f"run written to {out}", err=True)
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
@seed_option()
@data_root_option
@output_options
def evaluate(run, data, model, split, episodes, seed, data_root, output, fmt, **kwargs):
    """Score RUN (a run folder or checkpoint) on DATA's test graphs as CSV.

    Accuracy is computed per graph, then averaged over graphs with a 95%
    confidence interval (1.96 x std / sqrt(n)), in percent. Without DATA the
    collection the run was trained on is used. A per-graph baseline is scored
    with --model NAME [DATA] (or with its name in place of RUN).
    """
    ctx = click.get_current_context()
    episode_given = any(ctx.get_parameter_source(k).name != "DEFAULT" for k in ("k_shot", "n_query", "on_small"))
    ep_cfg = episode_config(kwargs)
    if model is None and run in PER_GRAPH and not Path(run).exists():
        model, run = run, None
    if model is not None:
        if data is None and run is not None:
            data, run = run, None
        table = gflkit.evaluate_baseline(model, data, split=split, episodes=episodes, episode_cfg=ep_cfg,
                                         seed=seed, root=data_root)
    else:
        if run is None:
            raise click.UsageError("give a RUN folder (from gflkit train) or --model NAME")
        table = gflkit.evaluate(run, data, split=split, episodes=episodes,
                                episode_cfg=ep_cfg if episode_given else None, seed=seed, root=data_root)
    emit(table, output, fmt)


COMMANDS = [train, evaluate]
