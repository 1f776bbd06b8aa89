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

    DATA are collection folders or names under <root>/processed/; without DATA,
    every collection under the data root gets a row. Columns: average nodes,
    unique undirected edges and walk steps (when recorded) per graph, features,
    classes, graphs per split, the share of val/test nodes also found in
    train graphs (overlap_val, overlap_test), the networks of each split, and
    the mean pairwise Jaccard index of the val/test graphs' node sets
    (jaccard_val, jaccard_test; above 0.1 the graphs share much of their
    nodes and an interval over them is optimistic).
    """
    from gflkit.data import load_collection
    from gflkit.data.stats import stats_table
    from gflkit.errors import GFLError
    from gflkit.paths import collection_names, data_root as root_of, processed_dir

    if not data:
        data = [processed_dir(name, data_root) for name in collection_names(data_root)]
        if not data:
            raise GFLError(f"no collections under {root_of(data_root) / 'processed'}: build one with "
                           f"'gflkit preprocess synthetic', or give a collection folder")
    emit(stats_table(load_collection(d, data_root) for d in data), output, fmt)
