"""``gflkit stats``: Table 1 of the paper for one or more collections."""
from __future__ import annotations

import click

from .options import data_root_option, emit, output_options


@click.command()
@click.argument("data", nargs=-1)
@data_root_option
@output_options
def stats(data, data_root, output, fmt):
    """Per-collection statistics as one CSV row each.

    DATA are collection folders or names under <root>/processed/ (default: the
    built-in family). Columns: average nodes, unique undirected edges and walk
    steps (when recorded) per graph, features, classes, graphs per split and the
    share of val/test nodes also found in train graphs.
    """
    from gflkit.data import load_collection
    from gflkit.data.stats import stats_table

    emit(stats_table(load_collection(d, data_root) for d in (data or [None])), output, fmt)
