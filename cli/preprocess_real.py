"""``gflkit preprocess aminer|reddit|pubmed``: real raw data -> a sampled family.

Each command reads one large graph with a reader of :mod:`gflkit.data.sources`
and cuts it into train/val/test graphs with
:func:`gflkit.data.sampling.sample_family`; defaults follow the paper's Table 1
(:data:`gflkit.data.sampling.FAMILY_DEFAULTS`).
"""
from __future__ import annotations

import click

from gflkit.paths import raw_dir

from .options import FolderName, info, graph_counts, int_tuple, sampler_options, writing_collection

#: Datasets ``preprocess pubmed --dataset`` reads.
PLANETOID = ("pubmed", "cora", "citeseer")


def _classes(text):
    return [c.strip() for c in text.split(",") if c.strip()] if text else None


def _sample_and_save(source, family, kw, target, name):
    """Cut ``source`` into a family called ``name`` with the command's sampler options; write it to ``target``."""
    from gflkit.data.sampling import FAMILY_DEFAULTS, sample_family

    defaults = FAMILY_DEFAULTS[family]
    collection = sample_family(
        source, method=kw["method"],
        n_graphs=graph_counts(kw["n_graphs"]) or defaults["n_graphs"],
        walk_length=int_tuple(kw["walk_length"], 2, "--walk-length", min_value=1) or defaults["walk_length"],
        min_degree=defaults["min_degree"] if kw["min_degree"] is None else kw["min_degree"],
        induced=kw["induced"], disjoint=kw["disjoint"], seed=kw["seed"], name=name, progress=True,
    )
    if getattr(source, "transform", None) is not None:  # saved with the collection, reused by predict
        from gflkit.data.transform import attach_transform

        attach_transform(collection, source.transform)
    path = collection.save(target)
    if source.report:
        click.echo(f"{source.report.total} malformed input item(s) skipped or repaired; "
                   "see the warnings above and meta.bad_input in the manifest", err=True)
    info(f"wrote {collection!r} to {path}")


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
    from gflkit.data.sampling import FAMILY_DEFAULTS
    from gflkit.data.sources.aminer import read_aminer

    name = kw["name"] or task
    with writing_collection(kw["out_dir"], name, kw["data_root"]) as target:
        source = read_aminer(
            dump or raw_dir("aminer", kw["data_root"]), task=task, venue_map=venue_map,
            classes=_classes(kw["classes"]), num_classes=kw["num_classes"] or FAMILY_DEFAULTS[task]["num_classes"],
            feat_size=feat_size, seed=kw["seed"], progress=True,
        )
        _sample_and_save(source, task, kw, target, name)


@click.command()
@click.argument("folder", required=False, type=click.Path())
@click.option("--prefix", type=FolderName("file prefix"), default=None,
              help="GraphSAGE file prefix, also the default collection name (default: from the single *-G.json).")
@sampler_options()
def reddit(folder, prefix, **kw):
    """Reddit post graph (GraphSAGE or DGL layout) -> a family of graphs.

    FOLDER defaults to <root>/raw/reddit/.
    """
    from gflkit.data.sampling import FAMILY_DEFAULTS
    from gflkit.data.sources.reddit import read_reddit, source_name

    folder = folder or raw_dir("reddit", kw["data_root"])
    name = kw["name"] or source_name(folder, prefix)
    with writing_collection(kw["out_dir"], name, kw["data_root"]) as target:
        source = read_reddit(folder, prefix=prefix, classes=_classes(kw["classes"]),
                             num_classes=kw["num_classes"] or FAMILY_DEFAULTS["reddit"]["num_classes"])
        _sample_and_save(source, "reddit", kw, target, name)


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
    from gflkit.data.sources.planetoid import read_pubmed

    name = dataset
    with writing_collection(kw["out_dir"], name, kw["data_root"]) as target:
        source = read_pubmed(folder or raw_dir("pubmed", kw["data_root"]), name=name,
                             classes=_classes(kw["classes"]), num_classes=kw["num_classes"])
        _sample_and_save(source, "pubmed", kw, target, name)
