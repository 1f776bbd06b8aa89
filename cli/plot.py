"""``gflkit plot``: figures from result CSVs and runs (needs ``gflkit[plot]``)."""
from __future__ import annotations

from pathlib import Path

import click

from gflkit import plotting

from .options import data_root_option, seed_option


def _png(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if Path(value).suffix.lower() != ".png":
        raise click.BadParameter(f"{value!r}: the figure is a PNG; give a file name ending in .png")
    return value


def output_png_option(f):
    return click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), callback=_png,
                        help="PNG file to write (written atomically).")(f)


def _wrote(path) -> None:
    click.echo(f"wrote {path}", err=True)


@click.group()
def plot() -> None:
    """Draw the paper's figures as PNG (install with: pip install 'gflkit[plot]')."""


@plot.command()
@click.argument("results", type=click.Path(dir_okay=False))
@output_png_option
def shots(results, output):
    """Accuracy against shots with 95% CI bands, one line per model.

    RESULTS is a CSV with columns model, k_shot, accuracy, ci95 (and
    optionally dataset: one panel per dataset), e.g. a sweep over --param
    k-shot.
    """
    _wrote(plotting.plot_shots(results, output))


@plot.command()
@click.argument("results", type=click.Path(dir_okay=False))
@output_png_option
def bars(results, output):
    """Accuracy bars with 95% CI error bars, one group per dataset.

    RESULTS holds rows of 'gflkit compare' (one bar per model; GFL rows are
    named by aggregator, gfl-mean / gfl-att) or of 'gflkit ablate' (one bar
    per variant).
    """
    _wrote(plotting.plot_bars(results, output))


@plot.command()
@click.argument("run")
@click.argument("data", required=False)
@click.option("--baseline-run", default=None, help="A second GFL run (e.g. Protonet), drawn as a second row.")
@click.option("--graph-id", type=click.IntRange(0), default=None, help="Graph to draw [default: first test graph].")
@click.option("--negatives", type=click.IntRange(1), default=1000, show_default=True,
              help="Most nodes of other classes drawn in each class's panel.")
@seed_option()
@data_root_option
@output_png_option
def tsne(run, data, baseline_run, graph_id, negatives, seed, data_root, output):
    """t-SNE of RUN's node embeddings on one graph, a panel per class.

    Each panel shows the nodes of one class against up to --negatives nodes of
    the others. DATA defaults to the collection the run was trained on. Only
    GFL runs (gfl, protonet) have node embeddings.
    """
    _wrote(plotting.plot_tsne(run, output, data, baseline_run=baseline_run, graph_id=graph_id,
                              negatives=negatives, seed=seed, root=data_root))
