"""``gflkit preprocess tables`` and ``gflkit preprocess gfl-release``.

``tables`` reads a user's own edge and node tables: one large graph is cut into
a family by :func:`gflkit.data.sampling.sample_family`; with ``--graph-col``
the tables' graphs are kept as they are. ``gfl-release`` keeps the GFL
authors' released graphs as given.
"""
from __future__ import annotations

from pathlib import Path

import click

from gflkit.paths import processed_dir, raw_dir

from .options import data_root_option, graph_counts, int_tuple, sampler_options, seed_option


def _table(folder: Path, given: str | None, stem: str) -> Path:
    if given:
        return Path(given)
    for suffix in (".csv", ".tsv", ".parquet"):
        if (folder / f"{stem}{suffix}").is_file():
            return folder / f"{stem}{suffix}"
    return folder / f"{stem}.csv"


def _report_and_save(collection, report, out, data_root) -> None:
    for line in report.summary():
        click.echo(f"warning: {line}", err=True)
    if report:
        click.echo(f"{report.total} malformed input item(s) skipped or repaired (meta.bad_input in the manifest)",
                   err=True)
    path = collection.save(out or processed_dir(collection.name, data_root))
    click.echo(f"node overlap with train graphs: {collection.meta.get('node_overlap')}", err=True)
    click.echo(f"wrote {collection!r} to {path}", err=True)


@click.command()
@click.argument("folder", required=False, type=click.Path(file_okay=False))
@click.option("--edges", default=None, help="Edge table, CSV/TSV/Parquet (default: FOLDER/edges.csv).")
@click.option("--nodes", default=None, help="Node table, CSV/TSV/Parquet (default: FOLDER/nodes.csv).")
@click.option("--features", default=None, type=click.Path(dir_okay=False),
              help="Feature file instead of feature columns: .npy/.npz (row = node id) or .json (id -> feature ids).")
@click.option("--src-col", default="src", show_default=True, help="Edge table: source node column.")
@click.option("--dst-col", default="dst", show_default=True, help="Edge table: target node column.")
@click.option("--id-col", default="id", show_default=True, help="Node table: node id column.")
@click.option("--label-col", default="label", show_default=True, help="Node table: label column.")
@click.option("--graph-col", default=None, help="Graph column in both tables: keep those graphs, do not sample.")
@click.option("--split-col", default=None, help="Node table column with train/val/test per graph (with --graph-col).")
@click.option("--feature-cols", default=None, metavar="PREFIX|A,B,...",
              help="Node table feature columns: a name prefix or a comma-separated list.")
@click.option("--feat-size", type=click.IntRange(1), default=None,
              help="Reduce features to this many dims by randomized SVD (default: 128 for a sparse bag, else keep).")
@click.option("--parts", type=click.IntRange(1), default=None, help="METIS parts (default: the number of graphs).")
@click.option("--ego-hops", type=click.IntRange(1), default=2, show_default=True, help="Radius of ego-nets.")
@sampler_options()
def tables(folder, edges, nodes, features, src_col, dst_col, id_col, label_col, graph_col, split_col, feature_cols,
           feat_size, parts, ego_hops, **kw):
    """Your own edge and node tables -> a collection.

    FOLDER (default <root>/raw/tables/) holds edges.csv (src,dst) and nodes.csv
    (id,label,features...). Without --graph-col the tables are one large graph,
    sampled into --graphs (default 100,10,20) graphs.
    """
    import torch

    from gflkit.data.sampling import sample_family
    from gflkit.data.sources.common import select_classes
    from gflkit.data.sources.tables import TableColumns, read_table_collection, read_table_graph

    folder = Path(folder) if folder else raw_dir("tables", kw["data_root"])
    edges, nodes = _table(folder, edges, "edges"), _table(folder, nodes, "nodes")
    if feature_cols and "," in feature_cols:
        feature_cols = [c.strip() for c in feature_cols.split(",") if c.strip()]
    columns = TableColumns(src=src_col, dst=dst_col, id=id_col, label=label_col, graph=graph_col, split=split_col,
                           features=feature_cols)
    classes = [c.strip() for c in kw["classes"].split(",") if c.strip()] if kw["classes"] else None
    common = dict(features=features, columns=columns, classes=classes, feat_size=feat_size, seed=kw["seed"],
                  name=kw["name"] or "tables")
    n_graphs = graph_counts(kw["n_graphs"])
    if graph_col:
        collection, report = read_table_collection(edges, nodes, n_graphs=n_graphs, **common)
        return _report_and_save(collection, report, kw["out"], kw["data_root"])
    source = read_table_graph(edges, nodes, **common)
    if kw["num_classes"]:
        label, source.classes = select_classes(source.g.ndata["label"].numpy(), source.classes,
                                               num_classes=kw["num_classes"])
        source.g.ndata["label"] = torch.from_numpy(label)
    collection = sample_family(
        source, method=kw["method"], n_graphs=n_graphs or (100, 10, 20),
        walk_length=int_tuple(kw["walk_length"], 2, "--walk-length", min_value=1) or (10000, 20000),
        min_degree=50 if kw["min_degree"] is None else kw["min_degree"], induced=kw["induced"],
        disjoint=kw["disjoint"], parts=parts, ego_hops=ego_hops, seed=kw["seed"], progress=True,
    )
    _report_and_save(collection, source.report, kw["out"], kw["data_root"])


@click.command("gfl-release")
@click.argument("folder", required=False, type=click.Path(file_okay=False))
@click.option("--val", "n_val", type=click.IntRange(0), default=0, show_default=True,
              help="Meta-train graphs held out for validation (chosen by --seed).")
@click.option("--name", default="gfl_release", show_default=True, help="Collection name.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Output folder (default: <root>/processed/<name>).")
@seed_option()
@data_root_option
def gfl_release(folder, n_val, name, out, seed, data_root):
    """The GFL authors' released graphs (graph/, feature.txt), kept as given.

    FOLDER defaults to <root>/raw/gfl_release/. graph_<i> files become train
    graphs and test_graph_<i> files test graphs.
    """
    from gflkit.data.sources.gfl_release import read_gfl_release

    collection, report = read_gfl_release(folder or raw_dir("gfl_release", data_root), n_val=n_val, seed=seed,
                                          name=name)
    _report_and_save(collection, report, out, data_root)
