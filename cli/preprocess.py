"""``gflkit preprocess <source>``: raw data -> a graph collection on disk."""
from __future__ import annotations

import click

from gflkit.errors import GFLError
from gflkit.names import DEFAULT_COLLECTION

from .options import (FiniteFloatRange, FolderName, collection_dir_option, GraphCounts, Span, data_root_option,
                      info, seed_option)

#: Where ``preprocess synthetic --small`` writes unless given --name.
SMALL_COLLECTION = f"{DEFAULT_COLLECTION}-small"


@click.group()
def preprocess() -> None:
    """Turn raw data into a collection of graphs under <root>/processed/."""


@preprocess.command()
@click.option("--name", type=FolderName(), default=None,
              help="Collection name (default: synthetic, or synthetic-small with --small).")
@collection_dir_option
@click.option("--small", is_flag=True,
              help="A small family for tests and quick trials (16/4/8 graphs of 200-400 nodes, 32 features).")
@click.option("--graphs", "n_graphs", type=GraphCounts(), default=None, metavar="TRAIN,VAL,TEST",
              help="Graphs per split (default 100,10,20; with --small 16,4,8).")
@click.option("--nodes", type=Span(1, integer=True), default=None,
              help="Nodes per graph: N, or a range MIN,MAX drawn per graph (default 3000,6000; --small 200,400).")
@click.option("--degree", type=Span(2), default=None,
              help="Mean degree of a graph: X >= 2, or a range MIN,MAX drawn per graph (default 3,5).")
@click.option("--homophily", type=Span(0, 1), default=None,
              help="Share of a node's edges inside its community, in [0, 1]: X, or a range MIN,MAX drawn per "
                   "graph (default 0.5,0.9).")
@click.option("--snr", type=FiniteFloatRange(0), default=None,
              help="Feature signal-to-noise: spread of the class centres over the feature noise, per feature "
                   "(default 0.16; --small 0.32).")
@click.option("--test-shift", type=FiniteFloatRange(0), default=None,
              help="A family-level shift of the test graphs' features (not train or val), per feature, in the "
                   "units of --snr (default 0: none).")
@click.option("--classes", "num_classes", type=click.IntRange(2), default=None, help="Number of classes (default 4).")
@click.option("--feat-size", type=click.IntRange(1), default=None, help="Features per node (default 128).")
@click.option("--outlier-rate", type=FiniteFloatRange(0, 1), default=None,
              help="Share of nodes carrying another class's feature profile (default 0.15).")
@seed_option()
@data_root_option
def synthetic(name, out_dir, small, n_graphs, nodes, degree, homophily, snr, test_shift, num_classes, feat_size,
              outlier_rate, seed, data_root):
    """The built-in seeded family of attributed graphs (the default data).

    Each of --nodes, --degree, --homophily, --snr, --test-shift and --classes
    changes one property of the family and leaves the others as they are; the
    manifest records every setting (sampler). Without them the family is the
    default one, number for number.
    """
    from gflkit.data import SMALL_SPEC, SyntheticSpec
    from gflkit.config import EpisodeConfig
    from gflkit.data.pipelines import preprocess_synthetic
    from gflkit.data.synthetic import check_memory, thin_classes, varied
    from gflkit.errors import SizeError

    from .options import flag_names

    if small and name == DEFAULT_COLLECTION:
        raise click.BadParameter(f"--small never writes over the default family {DEFAULT_COLLECTION!r}; "
                                 f"leave --name out (gives {SMALL_COLLECTION!r}) or choose another name",
                                 param_hint="--name")
    name = name or (SMALL_COLLECTION if small else DEFAULT_COLLECTION)
    spec = SMALL_SPEC if small else SyntheticSpec()
    given = {"num_classes": num_classes, "nodes": nodes, "degree": degree, "feat_size": feat_size, "snr": snr,
             "test_shift": test_shift}
    try:
        spec = varied(spec, n_graphs=n_graphs, nodes=nodes, degree=degree, homophily=homophily, snr=snr,
                      test_shift=test_shift, num_classes=num_classes, feat_size=feat_size, outlier_rate=outlier_rate)
        check_memory(spec, [k for k, v in given.items() if v is not None])  # before anything is allocated
    except SizeError:  # names its option and the largest value that fits (exit 2)
        raise
    except GFLError as err:
        raise click.UsageError(f"{err} (--graphs, --nodes, --degree, --classes, --feat-size)") from None
    thin = thin_classes(spec, EpisodeConfig().k_shot)
    if thin:
        click.echo(f"warning: {flag_names(thin)}", err=True)
    done = preprocess_synthetic(spec, name=name, seed=seed, out_dir=out_dir, root=data_root)
    info(f"wrote {done.collection!r} to {done.path}")


# Further sources register here.
from .preprocess_real import aminer, pubmed, reddit  # noqa: E402

for _command in (aminer, reddit, pubmed):
    preprocess.add_command(_command)

from .preprocess_tables import gfl_release, tables  # noqa: E402

preprocess.add_command(tables)
preprocess.add_command(gfl_release)
