"""``gflkit preprocess aminer|reddit|pubmed``: real raw data -> a sampled family.

Each command reads one large graph with a reader of :mod:`gflkit.data.sources`
and cuts it into train/val/test graphs with
:func:`gflkit.data.sampling.sample_family`; defaults follow the paper's Table 1
(:data:`gflkit.data.sampling.FAMILY_DEFAULTS`).
"""
from __future__ import annotations

import click

from gflkit.data.sampling import FAMILY_DEFAULTS, METHODS, sample_family
from gflkit.paths import processed_dir, raw_dir

from .options import data_root_option, int_list, seed_option


def _pair_or_triple(text, size, hint):
    values = int_list(text)
    if values is not None and len(values) != size:
        raise click.BadParameter(f"give {size} comma-separated integers", param_hint=hint)
    return values


def sampler_options(collection_name: bool = True):
    """Options of the sampler, shared by every real-data command."""

    def deco(f):
        opts = [
            click.option("--method", type=click.Choice(METHODS), default="walk", show_default=True,
                         help="How graphs are cut: one random walk each, METIS parts, or ego-nets."),
            click.option("--graphs", "n_graphs", default=None, metavar="TRAIN,VAL,TEST",
                         help="Graphs per split (default: the family's Table 1 counts)."),
            click.option("--walk-length", default=None, metavar="LO,HI",
                         help="Walk steps drawn from [LO, HI) (default: per family)."),
            click.option("--min-degree", type=click.IntRange(0), default=None,
                         help="Walks start at nodes with at least this many neighbours (default: per family)."),
            click.option("--induced", is_flag=True, help="Keep induced subgraphs of the walked nodes."),
            click.option("--disjoint", is_flag=True, help="No val/test node in any train graph."),
            click.option("--classes", default=None, metavar="NAME,...", help="Class names to keep."),
            click.option("--num-classes", type=click.IntRange(1), default=None,
                         help="Keep this many most frequent classes (default: per family)."),
            click.option("--out", type=click.Path(file_okay=False), default=None,
                         help="Output folder (default: <root>/processed/<name>)."),
            seed_option(), data_root_option,
        ]
        if collection_name:
            opts.append(click.option("--name", default=None, help="Collection name (default: the family name)."))
        for opt in reversed(opts):
            f = opt(f)
        return f

    return deco


def _classes(text):
    return [c.strip() for c in text.split(",") if c.strip()] if text else None


def _sample_and_save(source, family, kw, name=None):
    """Cut ``source`` into a family with the command's sampler options; write it."""
    defaults = FAMILY_DEFAULTS[family]
    collection = sample_family(
        source, method=kw["method"],
        n_graphs=_pair_or_triple(kw["n_graphs"], 3, "--graphs") or defaults["n_graphs"],
        walk_length=_pair_or_triple(kw["walk_length"], 2, "--walk-length") or defaults["walk_length"],
        min_degree=defaults["min_degree"] if kw["min_degree"] is None else kw["min_degree"],
        induced=kw["induced"], disjoint=kw["disjoint"], seed=kw["seed"], name=name or kw.get("name"), progress=True,
    )
    path = collection.save(kw["out"] or processed_dir(collection.name, kw["data_root"]))
    if source.report:
        click.echo(f"{source.report.total} malformed input item(s) skipped or repaired; "
                   "see the warnings above and meta.bad_input in the manifest", err=True)
    click.echo(f"wrote {collection!r} to {path}", err=True)


@click.command()
@click.argument("dump", required=False, type=click.Path())
@click.option("--task", type=click.Choice(["collaboration", "citation"]), default="collaboration", show_default=True,
              help="Author co-authorship graphs, or paper citation graphs.")
@click.option("--venue-map", type=click.Path(dir_okay=False), default=None,
              help="CSV with columns venue,field (default: the table shipped with gflkit).")
@click.option("--feat-size", type=click.IntRange(1), default=None, help="Text features per node (default 128 / 100).")
@sampler_options()
def aminer(dump, task, venue_map, feat_size, **kw):
    """AMiner citation dump -> collaboration or citation graphs.

    DUMP is the dump file or its folder (default <root>/raw/aminer/, where
    AMiner-Paper.txt, dblp.txt, outputacm.txt or else the largest *.txt is read).
    """
    from gflkit.data.sources.aminer import read_aminer

    source = read_aminer(
        dump or raw_dir("aminer", kw["data_root"]), task=task, venue_map=venue_map, classes=_classes(kw["classes"]),
        num_classes=kw["num_classes"] or FAMILY_DEFAULTS[task]["num_classes"], feat_size=feat_size,
        seed=kw["seed"], progress=True,
    )
    _sample_and_save(source, task, kw)


@click.command()
@click.argument("folder", required=False, type=click.Path())
@click.option("--prefix", default=None, help="GraphSAGE file prefix (default: from the single *-G.json).")
@sampler_options()
def reddit(folder, prefix, **kw):
    """Reddit post graph (GraphSAGE or DGL layout) -> a family of graphs.

    FOLDER defaults to <root>/raw/reddit/.
    """
    from gflkit.data.sources.reddit import read_reddit

    source = read_reddit(folder or raw_dir("reddit", kw["data_root"]), prefix=prefix, classes=_classes(kw["classes"]),
                         num_classes=kw["num_classes"] or FAMILY_DEFAULTS["reddit"]["num_classes"])
    _sample_and_save(source, "reddit", kw)


@click.command()
@click.argument("folder", required=False, type=click.Path())
@click.option("--name", type=click.Choice(["pubmed", "cora", "citeseer"]), default="pubmed", show_default=True,
              help="Dataset to read; also the collection name.")
@sampler_options(collection_name=False)
def pubmed(folder, name, **kw):
    """Pubmed (Planetoid or LINQS files), Cora or Citeseer -> a family of graphs.

    FOLDER defaults to <root>/raw/pubmed/ and holds Planetoid ind.<name>.* files
    or, for Pubmed, the LINQS Pubmed-Diabetes tab files.
    """
    from gflkit.data.sources.planetoid import read_pubmed

    source = read_pubmed(folder or raw_dir("pubmed", kw["data_root"]), name=name, classes=_classes(kw["classes"]),
                         num_classes=kw["num_classes"])
    _sample_and_save(source, "pubmed", kw, name=name)
