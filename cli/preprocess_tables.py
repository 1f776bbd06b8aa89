"""``gflkit preprocess tables`` and ``gflkit preprocess gfl-release``.

``tables`` reads a user's own edge and node tables: one large graph is cut into
a family by :func:`gflkit.data.sampling.sample_family`; with ``--graph-col``
the tables' graphs are kept as they are. ``gfl-release`` keeps the GFL
authors' released graphs as given. Both parse their options and call
:func:`gflkit.data.pipelines.preprocess_tables` or
:func:`~gflkit.data.pipelines.preprocess_gfl_release`.
"""
from __future__ import annotations

from dataclasses import replace

import click

from .options import (FolderName, collection_dir_option, cross_network_options, data_root_option, info,
                      sampler_options, seed_option)


def _written(done) -> None:
    """The lines for people after a collection is written: warnings, malformed input, node overlap, where."""
    for line in done.warnings + (done.report.summary() if done.report else []):
        click.echo(f"warning: {line}", err=True)
    if done.report:
        click.echo(f"{done.report.total} malformed input item(s) skipped or repaired (meta.bad_input in the manifest)",
                   err=True)
    info(f"node overlap with train graphs: {done.collection.meta.get('node_overlap')}")
    info(f"wrote {done.collection!r} to {done.path}")


def graph_table_options(f):
    """The options that describe a user's graph tables, shared by ``preprocess tables``,
    ``predict`` and ``embed`` (read by :func:`table_columns`)."""
    from gflkit.names import FEATURE_KEYS

    opts = [
        click.option("--edges", default=None, help="Edge table, CSV/TSV/Parquet."),
        click.option("--nodes", default=None, help="Node table, CSV/TSV/Parquet (ids, labels, feature columns)."),
        click.option("--features", default=None, type=click.Path(dir_okay=False),
                     help="Feature file instead of feature columns: .npy/.npz (dense or scipy-sparse), .json "
                          "(node id -> active feature ids), or with --feature-key graph-node an .npz of one array "
                          "per graph."),
        click.option("--feature-key", type=click.Choice(FEATURE_KEYS), default=None,
                     help="How feature-file rows map to nodes: 'row' = row i is the node-table row i (default with "
                          "a node table), 'node' = row i is node id i (default for .json and without a node "
                          "table), 'graph-node' = .npz with one array per graph, row = node id in that graph."),
        click.option("--src-col", default="src", show_default=True, help="Edge table: source node column."),
        click.option("--dst-col", default="dst", show_default=True, help="Edge table: target node column."),
        click.option("--id-col", default="id", show_default=True, help="Node table: node id column."),
        click.option("--label-col", default="label", show_default=True, help="Label column."),
        click.option("--feature-cols", default=None, metavar="PREFIX|A,B,...",
                     help="Node table feature columns: a name prefix or a comma-separated list."),
        click.option("--unlabelled", default="-1", show_default=True, metavar="VALUE[,VALUE...]",
                     help="Label values that mean 'no label', besides an empty cell and NaN ('' for none)."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def table_columns(kw: dict, graph_col: str | None = None, split_col: str | None = None, label: bool = True):
    """Pop the :func:`graph_table_options` (except the files) from ``kw`` into a ``TableColumns``."""
    from gflkit.data.sources.tables import TableColumns

    feature_cols = kw.pop("feature_cols")
    if feature_cols and "," in feature_cols:
        feature_cols = [c.strip() for c in feature_cols.split(",") if c.strip()]
    label_col = kw.pop("label_col")
    return TableColumns(src=kw.pop("src_col"), dst=kw.pop("dst_col"), id=kw.pop("id_col"),
                        label=label_col if label else None, graph=graph_col, split=split_col,
                        features=feature_cols, feature_key=kw.pop("feature_key"),
                        unlabelled=tuple(v.strip() for v in kw.pop("unlabelled").split(",") if v.strip()))


@click.command()
@click.argument("folder", required=False, type=click.Path(file_okay=False))
@graph_table_options
@click.option("--graph-col", default=None,
              help="Graph column in both tables: one graph (network) per value, kept whole unless "
                   "--test-graphs/--train-graphs or --sample cut them.")
@click.option("--split-col", default=None,
              help="Node table column with train/val/test per graph (with --graph-col; with --sample each "
                   "network's role).")
@click.option("--feat-size", type=click.IntRange(1), default=None,
              help="Reduce features to this many dims by randomized SVD (default: 128 for a sparse bag, else keep).")
@click.option("--features-from", default=None, metavar="COLLECTION",
              help="Apply this collection's saved feature transform instead of fitting a new one (same raw "
                   "features, e.g. a second family for one model).")
@click.option("--bin-quantiles", "label_quantiles", type=click.IntRange(2), default=None, metavar="N",
              help="Bin a numeric label column into N quantile classes named 0 (lowest) .. N-1; the bins are "
                   "recorded in the manifest (meta.label_bins).")
@click.option("--k-shot", type=click.IntRange(1), default=10, show_default=True,
              help="Warn about classes with fewer than k_shot + 1 labelled nodes in every graph.")
@click.option("--parts", type=click.IntRange(1), default=None,
              help="METIS parts (default: the number of graphs; per network when cutting networks).")
@click.option("--ego-hops", type=click.IntRange(1), default=2, show_default=True, help="Radius of ego-nets.")
@click.option("--structural-features", is_flag=True,
              help="Node features computed from each graph's edges (the local degree profile: degree and the "
                   "mean, min, max and spread of the neighbours' degrees) instead of read ones, for a network "
                   "without node features; a run trained on them computes them for a graph predicted without "
                   "features. One large graph only (no --graph-col), no --features.")
@cross_network_options
@sampler_options()
def tables(folder, edges, nodes, features, graph_col, split_col, feat_size, features_from, label_quantiles, k_shot,
           parts, ego_hops, structural_features, **kw):
    """Your own edge and node tables -> a collection.

    FOLDER (default <root>/raw/tables/) holds edges.csv (src,dst) and nodes.csv
    (id,label,features...). Without --graph-col the tables are one large graph,
    sampled into --graphs (default 100,10,20) graphs. Labels -1, empty and NaN
    mean unlabelled (--unlabelled); --bin-quantiles N bins a numeric label
    column (a count) into N quantile classes. A reduction of the features is fitted once
    and saved with the collection (transform.npz); --features-from reuses one.
    With --graph-col it is fitted on the train graphs (networks) only, never on
    a test graph, and applied to all (the manifest's fitted_on says so).

    Cross-network: with --graph-col, --test-graphs c [--train-graphs a,b] (or
    --split-col with --sample) cuts train/val graphs from the source networks
    and test graphs from the target networks with the sampler options;
    --keep-whole keeps each network as one graph.
    """
    from gflkit.data.pipelines import preprocess_tables

    from .preprocess_real import sampling

    if structural_features and (features or graph_col or kw["feature_cols"] or features_from):
        raise click.UsageError("--structural-features computes the features: give neither --features, "
                               "--feature-cols, --features-from nor --graph-col")
    columns = replace(table_columns(kw, graph_col, split_col), label_quantiles=label_quantiles)
    roles = {f"{s}_graphs": _names(kw.pop(f"{s}_graphs")) for s in ("train", "val", "test")}
    _check_networks(graph_col, split_col, roles, kw["sample"], kw["n_graphs"])
    classes = [c.strip() for c in kw["classes"].split(",") if c.strip()] if kw["classes"] else None
    _written(preprocess_tables(folder, edges=edges, nodes=nodes, features=features, columns=columns, classes=classes,
                               num_classes=kw["num_classes"], feat_size=feat_size, features_from=features_from,
                               k_shot=k_shot, structural_features=structural_features, sample=kw["sample"],
                               sampling=sampling(kw, parts=parts, ego_hops=ego_hops), name=kw["name"] or "tables",
                               seed=kw["seed"], out_dir=kw["out_dir"], root=kw["data_root"], **roles))


def _names(text: str | None) -> list[str] | None:
    """``"a,b"`` -> ``["a", "b"]``; ``None`` stays ``None`` and ``""`` gives ``[]`` (an error, later)."""
    return None if text is None else [n.strip() for n in text.split(",") if n.strip()]


def _check_networks(graph_col, split_col, roles, sample, n_graphs) -> None:
    """The network options checked under the command line's names (the library checks them again under its own)."""
    from gflkit.errors import GFLError

    named = [option for option, value in zip(("--train-graphs", "--val-graphs", "--test-graphs"), roles.values())
             if value is not None]
    if (named or sample is not None) and not graph_col:
        what = named[0] if named else ("--sample" if sample else "--keep-whole")
        raise GFLError(f"{what} needs --graph-col: the column that names each node's network")
    if sample and not named and not split_col:
        raise GFLError("--sample needs the networks' roles: --test-graphs (and --train-graphs) or --split-col")
    if sample is False and named and n_graphs:
        raise GFLError("--graphs counts subgraphs; with --keep-whole every named network is one graph")


@click.command("gfl-release")
@click.argument("folder", required=False, type=click.Path(file_okay=False))
@click.option("--val", "n_val", type=click.IntRange(0), default=0, show_default=True,
              help="Meta-train graphs held out for validation (chosen by --seed).")
@click.option("--name", type=FolderName(), default="gfl_release", show_default=True, help="Collection name.")
@collection_dir_option
@seed_option()
@data_root_option
def gfl_release(folder, n_val, name, out_dir, seed, data_root):
    """The GFL authors' released graphs (graph/, feature.txt), kept as given.

    FOLDER defaults to <root>/raw/gfl_release/. graph_<i> files become train
    graphs and test_graph_<i> files test graphs.
    """
    from gflkit.data.pipelines import preprocess_gfl_release

    _written(preprocess_gfl_release(folder, n_val=n_val, name=name, seed=seed, out_dir=out_dir, root=data_root))
