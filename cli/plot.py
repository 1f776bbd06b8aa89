"""``gflkit plot``: figures from result CSVs and runs (needs ``gflkit[plot]``)."""
from __future__ import annotations

from pathlib import Path

import click

from gflkit.names import FIGURE_FORMATS

from .options import data_root_option, info, seed_option


def _figure_name(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if Path(value).suffix.lower().lstrip(".") not in FIGURE_FORMATS:
        raise click.BadParameter(f"{value!r}: give a file name ending in .png, .pdf or .svg")
    return value


def figure_options(f):
    """``-o FILE``, ``--format`` and ``--dpi``, shared by every figure."""
    f = click.option("--dpi", type=click.IntRange(30, 1200), default=150, show_default=True,
                     help="Resolution of PNG figures (dots per inch).")(f)
    f = click.option("--format", "fmt", type=click.Choice(FIGURE_FORMATS), default=None,
                     help="Figure format [default: from the file name's suffix].")(f)
    return click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), callback=_figure_name,
                        help="Figure file to write: .png, .pdf or .svg (written atomically).")(f)


def _wrote(path) -> None:
    info(f"wrote {path}")


@click.group()
def plot() -> None:
    """Draw the paper's figures as PNG, PDF or SVG (needs: pip install 'gflkit[plot]').

    Figures use the paper's model names ("Majority class" for the majority
    row) and name ablations by what they remove; each model keeps one colour
    in every figure. Rows of one seed each are averaged, with 95% intervals
    over seeds; a row over several seeds (compare --seed 0,1,2) keeps its own.
    """


@plot.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@figure_options
def shots(results, output, fmt, dpi):
    """Accuracy against shots with 95% CI bands, one line per model.

    RESULTS are CSVs with columns model, k_shot, accuracy, ci95 (and
    optionally dataset: one panel per dataset; seed: several seeds are
    averaged), e.g. a sweep over --param k-shot.
    """
    from gflkit import plotting

    _wrote(plotting.plot_shots(list(results), output, fmt=fmt, dpi=dpi))


@plot.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@figure_options
def bars(results, output, fmt, dpi):
    """Accuracy bars with 95% CI error bars, one group per dataset.

    RESULTS hold rows of 'gflkit compare' (a group of bars per dataset, one
    per model, GFL-mean and GFL-att apart, refined rows hatched; the legend
    above) or of 'gflkit ablate' (a panel per dataset, each variant named
    under its bar by what it removes). Rows of one seed each (e.g. two ablate
    CSVs) are averaged. When the bars differ by little, the y axis starts
    above 0 and each bar's value is written above its error bar.
    """
    from gflkit import plotting

    _wrote(plotting.plot_bars(list(results), output, fmt=fmt, dpi=dpi))


@plot.command()
@click.argument("run")
@click.argument("data", required=False)
@click.option("--baseline-run", default=None, help="A second GFL run (e.g. Protonet), drawn as a second row.")
@click.option("--graph-id", type=click.IntRange(0), default=None, help="Graph to draw [default: first test graph].")
@click.option("--negatives", type=click.IntRange(1), default=1000, show_default=True,
              help="Most nodes of other classes drawn in each class's panel.")
@seed_option()
@data_root_option
@figure_options
def tsne(run, data, baseline_run, graph_id, negatives, seed, data_root, output, fmt, dpi):
    """t-SNE of RUN's node embeddings on one graph, a panel per class.

    Each panel shows the nodes of one class against up to --negatives nodes of
    the others. DATA defaults to the collection the run was trained on. Only
    GFL runs (gfl, protonet) have node embeddings.
    """
    from gflkit.plotting import tsne as tsne_figure

    _wrote(tsne_figure.plot_tsne(run, output, data, baseline_run=baseline_run, graph_id=graph_id,
                                 negatives=negatives, seed=seed, root=data_root, fmt=fmt, dpi=dpi))


def _property_options(f):
    f = click.option("--value", type=click.Choice(["delta", "accuracy"]), default=None,
                     help="What is drawn: the delta to the compare reference row, or the accuracy.")(f)
    return f


@plot.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--x", "x", required=True, metavar="COLUMN", help="Property column of the horizontal axis.")
@click.option("--y", "y", required=True, metavar="COLUMN", help="Property column of the vertical axis.")
@click.option("--model", default=None, metavar="NAME",
              help="The model drawn (gfl-mean, protonet, lp, protonet+lp...) [default: the first with a value].")
@_property_options
@figure_options
def heatmap(results, x, y, model, value, output, fmt, dpi):
    """One model's delta to the reference over two properties of a regime map.

    RESULTS are 'gflkit compare' CSVs (with --reference) concatenated, each row
    carrying its family's property values as extra columns, as
    scripts/regime_map.py writes them: a cell per pair of --x and --y values,
    its delta written in it (bold with * when the delta is shown: its
    p_adjusted below 0.05, or its p_value adjusted by Holm over the map in a
    file without p_adjusted, or its 95% interval excluding 0 in a file
    without p-values). --value accuracy draws the accuracy instead.
    """
    from gflkit.plotting import regimes

    _wrote(regimes.plot_heatmap(list(results), output, x=x, y=y, model=model, value=value or "delta", fmt=fmt,
                                dpi=dpi))


@plot.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--x", "x", required=True, metavar="COLUMN",
              help="Column of the horizontal axis: a property of a regime map, or k_shot.")
@click.option("--panel", default=None, metavar="COLUMN",
              help="A panel per value of this column [default: per dataset when there are several].")
@_property_options
@figure_options
def lines(results, x, panel, value, output, fmt, dpi):
    """Accuracy against one property, a line with a 95% band per model.

    RESULTS are 'gflkit compare' CSVs with a column per property (a regime
    map's, see 'plot heatmap'); --panel draws a panel per value of a second
    property. Rows of one seed each are averaged. --value delta draws each
    model's delta to the reference instead.
    """
    from gflkit.plotting import regimes

    _wrote(regimes.plot_lines(list(results), output, x=x, panel=panel, value=value or "accuracy", fmt=fmt,
                              dpi=dpi))
