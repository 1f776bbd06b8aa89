"""``gflkit preprocess aminer|reddit|pubmed``: real raw data -> a sampled family.

Each command parses its options and calls the source's function in
:mod:`gflkit.data.pipelines`, which reads one large graph with a reader of
:mod:`gflkit.data.sources` and cuts it into train/val/test graphs with
:func:`gflkit.data.sampling.sample_family`; defaults follow the paper's Table 1
(:data:`gflkit.data.sampling.FAMILY_DEFAULTS`).
"""
from __future__ import annotations

import click

from .options import FolderName, info, graph_counts, int_tuple, sampler_options

#: Datasets ``preprocess pubmed --dataset`` reads.
PLANETOID = ("pubmed", "cora", "citeseer")


def _classes(text):
    return [c.strip() for c in text.split(",") if c.strip()] if text else None


def sampling(kw, **more):
    """The sampler options of a command (:func:`~cli.options.sampler_options`) as a ``Sampling``."""
    from gflkit.data.pipelines import Sampling

    return Sampling(method=kw["method"], n_graphs=graph_counts(kw["n_graphs"]),
                    walk_length=int_tuple(kw["walk_length"], 2, "--walk-length", min_value=1),
                    min_degree=kw["min_degree"], induced=kw["induced"], disjoint=kw["disjoint"], **more)


def _written(done) -> None:
    """The lines for people after a sampled family is written."""
    if done.report:
        click.echo(f"{done.report.total} malformed input item(s) skipped or repaired; "
                   "see the warnings above and meta.bad_input in the manifest", err=True)
    info(f"wrote {done.collection!r} to {done.path}")


def _where(kw) -> dict:
    return dict(seed=kw["seed"], out_dir=kw["out_dir"], root=kw["data_root"])


@click.command()
@click.argument("dump", required=False, type=click.Path())
@click.option("--task", type=click.Choice(["collaboration", "citation"]), default="collaboration", show_default=True,
              help="Author co-authorship graphs, or paper citation graphs.")
@click.option("--venue-map", type=click.Path(dir_okay=False), default=None,
              help="CSV with columns venue,field (default: the table shipped with gflkit).")
@click.option("--feat-size", type=click.IntRange(1, 1 << 16), default=None,
              help="Text features per node, at most the 65536 hashed terms (default 128 / 100).")
@sampler_options()
def aminer(dump, task, venue_map, feat_size, **kw):
    """AMiner citation dump -> collaboration or citation graphs.

    DUMP is the dump file or its folder (default <root>/raw/aminer/, where
    AMiner-Paper.txt, dblp.txt, outputacm.txt or else the largest *.txt is read).
    """
    from gflkit.data.pipelines import preprocess_aminer

    _written(preprocess_aminer(dump, task=task, venue_map=venue_map, feat_size=feat_size,
                               classes=_classes(kw["classes"]), num_classes=kw["num_classes"], sampling=sampling(kw),
                               name=kw["name"], **_where(kw)))


@click.command()
@click.argument("folder", required=False, type=click.Path())
@click.option("--prefix", type=FolderName("file prefix"), default=None,
              help="GraphSAGE file prefix, also the default collection name (default: from the single *-G.json).")
@sampler_options()
def reddit(folder, prefix, **kw):
    """Reddit post graph (GraphSAGE or DGL layout) -> a family of graphs.

    FOLDER defaults to <root>/raw/reddit/.
    """
    from gflkit.data.pipelines import preprocess_reddit

    _written(preprocess_reddit(folder, prefix=prefix, classes=_classes(kw["classes"]), num_classes=kw["num_classes"],
                               sampling=sampling(kw), name=kw["name"], **_where(kw)))


@click.command()
@click.argument("folder", required=False, type=click.Path())
@click.option("--dataset", type=click.Choice(PLANETOID), default="pubmed", show_default=True,
              help="Dataset to read; also the collection name.")
@sampler_options(collection_name=False)
def pubmed(folder, dataset, **kw):
    """Pubmed (Planetoid or LINQS files), Cora or Citeseer -> a family of graphs.

    FOLDER defaults to <root>/raw/pubmed/ and holds Planetoid ind.<dataset>.* files
    or, for Pubmed, the LINQS Pubmed-Diabetes tab files.
    """
    from gflkit.data.pipelines import preprocess_pubmed

    _written(preprocess_pubmed(folder, dataset=dataset, classes=_classes(kw["classes"]), num_classes=kw["num_classes"],
                               sampling=sampling(kw), **_where(kw)))
