"""``gflkit predict``, ``gflkit embed`` and ``gflkit export-graph``: a trained run on a new graph."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from gflkit.names import (COLLAPSE_FACTOR, COLLAPSE_SHARE, ESTIMATE_FOLDS, ESTIMATE_REPEATS, MEAN_SHIFT_LIMIT,
                          PREDICT_ORDER, PREDICT_TOLERANCE, SCALE_LIMIT, ZERO_ROWS_LIMIT)

from .options import SEED, data_root_option, device_option, info, refine_configs, refine_options, seed_option
from .preprocess_tables import graph_table_options, table_columns


def _graph_source(f):
    f = click.option("--force", is_flag=True,
                     help="Use a collection graph even when its feature fingerprint differs from the run's.")(f)
    f = click.option("--graph", default=None, metavar="COLLECTION:GRAPH_ID",
                     help="A graph of a collection instead of tables (node ids as export-graph writes them: the "
                          "graph's orig_id, else positions).")(f)
    return device_option(graph_table_options(f))


def _graph_kwargs(kw: dict) -> dict:
    columns = table_columns(kw, label=False)
    return dict(edges=kw.pop("edges"), nodes=kw.pop("nodes"), features=kw.pop("features"), graph=kw.pop("graph"),
                columns=columns, root=kw.pop("data_root"), force=kw.pop("force"), device=kw.pop("device"))


def _write_frame(df, output: str | None, fmt: str) -> None:
    from gflkit.io import atomic_write_with

    from .options import emit

    if fmt != "parquet":
        return emit(df, output, fmt)
    if not output:
        raise click.UsageError("--format parquet needs -o FILE")
    atomic_write_with(output, lambda tmp: df.to_parquet(tmp, index=False))
    info(f"wrote {output}")


_PREDICT_HELP = """Label every node of a new graph from a few labelled ones, by the method they support best.

    The candidates: RUN's model, plain and refined (model, model+lp, model+cs),
    and methods fitted on the graph's own labels: label propagation (lp),
    Correct-and-Smooth (cs), nearest centroid and ridge regression on the
    features (centroid, ridge) and on features propagated twice over the graph
    (centroid-sgc, ridge-sgc). --method auto (the default) estimates each on
    the same folds of the given labels and picks the best, or the first in
    the order {order} whose estimate is within {tolerance:g}
    standard error of it; --method NAME forces one. RUN is optional: without
    it, only the fitted methods.

    The graph is an edge table, with node features (a .npy with one row per
    node and an edge table over ids 0..n-1 is enough; or a node table, feature
    columns, .npz, JSON; the options of 'preprocess tables') or without (the
    fitted methods then read features computed from the edges: degree profile
    and spectral coordinates; a run's model that needs features is left out,
    with one warning), or --graph COLLECTION:GRAPH_ID. Edges are undirected (one direction is enough;
    self-loops and duplicates are dropped). Raw features go through the saved
    feature transform of the run's collection. The classes need not be the
    training classes: GFL, protonet, knn, matchingnet, gpn, gmeta and the tlp models take any classes with
    at least one labelled node each (maml and agf at most the run's number of
    classes); a warning names classes with fewer labelled nodes than the run's
    k_shot. --refine lp|cs means --method model+lp|cs (with --refine-alpha,
    --refine-steps).

    Prints one row per node: node (its id in the tables), label, score_<class>
    (the chosen method's class probabilities), is_support (the given labels,
    kept). Class names are written as given: a name starting with = + - @
    (or a tab) is read as a formula by spreadsheets; --csv-escape-formulas
    prefixes such cells with a quote.

    \b
    On stderr it says what the labels are worth (--report FILE: as JSON):
    - every candidate's estimated balanced accuracy (mean recall per class)
      and accuracy over the given labels with its interval, the chosen one and why;
    - the chosen method's estimated accuracy with its 95% interval, and the recall per class:
      each class's labels are split into up to {folds} folds (one label per fold
      for a class with at most {folds}), each fold is predicted from the other
      labels with the same model, transform and refinement, {repeats} times with
      folds drawn from --seed; the interval is a Wilson interval over the
      labelled nodes. It needs 2 labels per class (else one line says why).
    - when the run's model predicts, a warning when the features (after the
      transform) are unlike the training collection's train features: their per-dimension means lie
      more than {mean_limit:g} training standard deviations from the training means
      (root mean square over dimensions), their per-dimension spread differs
      by a typical factor above {scale_limit:g}, or their share of all-zero rows is
      more than {zero_points:.0f} points above the training share;
    - a warning when the predictions collapse: a class never predicted, or
      one class taking more than {share:.0%} of the unlabelled nodes and more
      than {factor:g}x its share of the given labels.
""".format(
    folds=ESTIMATE_FOLDS, repeats=ESTIMATE_REPEATS, mean_limit=MEAN_SHIFT_LIMIT, scale_limit=SCALE_LIMIT,
    zero_points=100 * ZERO_ROWS_LIMIT, share=COLLAPSE_SHARE, factor=COLLAPSE_FACTOR, tolerance=PREDICT_TOLERANCE,
    order=", ".join(PREDICT_ORDER))

#: ``--method`` choices (``gflkit.prediction.predictor.METHODS``, without importing torch).
METHODS = ("auto", *PREDICT_ORDER)


@click.command(help=_PREDICT_HELP)
@click.argument("run", required=False, type=click.Path(exists=True))
@_graph_source
@click.option("--labels", required=True, type=click.Path(dir_okay=False),
              help="Table node,label of the labelled nodes (CSV/TSV/Parquet); every other node is predicted.")
@click.option("--classes", default=None, metavar="NAME,...",
              help="Classes to predict (default: the labels' classes); each needs a labelled node.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the table to this file instead of stdout.")
@click.option("--format", "fmt", type=click.Choice(["csv", "json", "parquet"]), default="csv", show_default=True,
              help="Format of the table (parquet needs -o).")
@click.option("--method", type=click.Choice(METHODS), default="auto", show_default=True,
              help="The method: auto (estimate every candidate on the labels, pick by the rule above) or one "
                   "candidate. --refine lp|cs means model+lp|cs.")
@click.option("--csv-escape-formulas", is_flag=True,
              help="Prefix with ' the CSV cells and column names that start with = + - @, tab or CR, so "
                   "spreadsheets show them as text instead of running them as formulas.")
@refine_options()
@click.option("--estimate/--no-estimate", default=True, show_default=True,
              help="Estimate the accuracy from the given labels, each class's labels held out fold by fold "
                   "(--no-estimate: faster).")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Seed of the accuracy estimate's folds (0 to 2^32-1).")
@click.option("--report", "report_file", type=click.Path(dir_okay=False), default=None,
              help="Write a JSON report: the accuracy estimate (interval, how it was computed, per-class recall), "
                   "labels and predictions per class, the feature comparison and every warning.")
@data_root_option
def predict(run, labels, classes, output, fmt, method, csv_escape_formulas, estimate, seed, report_file, **kw):
    """Label every node of a new graph from a few labelled ones (see the help above)."""
    import json
    import warnings

    import gflkit
    from gflkit.io import atomic_write_text
    from gflkit.prediction.checks import escape_formulas

    names = [c.strip() for c in classes.split(",") if c.strip()] if classes else None
    label_col = kw["label_col"]
    refine = refine_configs(kw)[0]
    if refine.active and method not in ("auto", f"model+{refine.method}"):
        raise click.UsageError(f"--refine {refine.method} refines the run's model: it goes with --method "
                               f"model+{refine.method} (or auto), not {method}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # their lines are logged on stderr already
        table, report = gflkit.predict(run, labels=labels, classes=names, label_col=label_col, refine=refine,
                                       method=method, estimate=estimate, seed=seed, return_report=True,
                                       **_graph_kwargs(kw))
    if csv_escape_formulas and fmt == "csv":
        table = escape_formulas(table)
    _write_frame(table, output, fmt)
    if report_file:
        if not estimate:
            report.estimate_note = "not computed (--no-estimate)"
        data = {"run": str(run), **report.to_dict()}
        atomic_write_text(report_file, json.dumps(data, indent=1) + "\n")
        click.echo(f"wrote {report_file}", err=True)


@click.command()
@click.argument("run", type=click.Path(exists=True))
@_graph_source
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Output file: .npy (rows follow the sorted node ids), .parquet or .csv (node, z_0, ...); "
                   "default: CSV on stdout.")
@data_root_option
def embed(run, output, **kw):
    """Node embeddings Z of RUN's encoder on a graph (same graph options as predict)."""
    import numpy as np
    import pandas as pd

    import gflkit
    from gflkit.io import atomic_write_with

    ids, z = gflkit.embed(run, **_graph_kwargs(kw))
    suffix = Path(output).suffix.lower() if output else ".csv"
    if suffix == ".npy":
        def write(tmp: str) -> None:
            with open(tmp, "wb") as f:
                np.save(f, z)

        atomic_write_with(output, write)
    else:
        df = pd.DataFrame(z, columns=[f"z_{i}" for i in range(z.shape[1])])
        df.insert(0, "node", ids)
        if suffix in (".parquet", ".pq"):
            atomic_write_with(output, lambda tmp: df.to_parquet(tmp, index=False))
        elif suffix in (".csv", ".tsv"):
            text = df.to_csv(index=False, sep="\t" if suffix == ".tsv" else ",", float_format="%.6g")
            if not output:
                sys.stdout.write(text)
                return
            from gflkit.io import atomic_write_text

            atomic_write_text(output, text)
        else:
            raise click.BadParameter("write .npy, .parquet or .csv", param_hint="-o")
    info(f"wrote {z.shape[0]} x {z.shape[1]} embeddings to {output}")


@click.command("export-graph")
@click.argument("graph", metavar="COLLECTION:GRAPH_ID")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--labels-per-class", type=click.IntRange(1), default=10, show_default=True,
              help="Labelled nodes per class in labels.csv: the support set of evaluation episode 0 with --seed.")
@seed_option()
@data_root_option
def export_graph(graph, folder, labels_per_class, seed, data_root):
    """Write a collection graph as tables, e.g. a held-out test graph to try predict on.

    FOLDER gets edges.csv (src,dst), nodes.csv (id,label: the truth, empty when
    unlabelled) and labels.csv (node,label: --labels-per-class nodes per class,
    the support nodes 'gflkit evaluate --seed SEED' draws). Ids are the graph's
    ndata orig_id: the node ids of a --graph-col table, or for a graph sampled
    from one large graph its position among the source's sorted ids (the ids
    themselves when they run 0..n-1, as in MUSAE), so the source's raw feature
    file applies to them.
    """
    from gflkit.prediction.inputs import export_tables

    written = export_tables(graph, folder, labels_per_class, seed, data_root)
    info(f"wrote {', '.join(map(str, written))}")


COMMANDS = [predict, embed, export_graph]
