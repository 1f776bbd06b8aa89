"""Raw data -> a collection on disk, one function per source: read, sample (or keep as given), save.

``gflkit preprocess <source>`` parses its options and calls the function of
that source; a script or notebook calls the same function and gets the same
files::

    from gflkit.data.pipelines import Sampling, preprocess_synthetic, preprocess_tables
    from gflkit.data.sources.tables import TableColumns

    done = preprocess_synthetic(name="mine", seed=1, root="data")
    done = preprocess_tables("data/samples/tables", columns=TableColumns(graph="graph", features="f"),
                             sampling=Sampling(n_graphs=(4, 1, 1)), name="tables_sample", root="data")
    print(done.path, done.warnings)

Each function writes to ``out_dir``, else ``<root>/processed/<name>``,
holding that folder's lock meanwhile (a second writer is refused at once:
:func:`gflkit.data.folder.lock_collection`), and returns a
:class:`Preprocessed`: the collection, its folder, the report of malformed
input skipped or repaired, and one-line warnings for people (which classes
are too small for episodes, ...). Nothing is printed. Sampling a large graph
into a family is :func:`gflkit.data.sampling.sample_family`; its options are
one :class:`Sampling`, with the family's defaults (the paper's Table 1,
:data:`gflkit.data.sampling.FAMILY_DEFAULTS`) where it leaves one out.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..errors import GFLError
from ..names import DEFAULT_COLLECTION
from ..paths import processed_dir, raw_dir
from .collection import GraphCollection
from .folder import lock_collection
from .sources.base import BadInputReport, SourceGraph
from .sources.table_nodes import TableColumns
from .synthetic import SyntheticSpec, make_synthetic_family

__all__ = ["Preprocessed", "Sampling", "sample_source", "preprocess_synthetic", "preprocess_aminer",
           "preprocess_reddit", "preprocess_pubmed", "preprocess_tables", "preprocess_gfl_release"]

#: The sampler's defaults for a user's own tables (one large graph, or networks cut into subgraphs).
TABLE_SAMPLING = dict(n_graphs=(100, 10, 20), walk_length=(10000, 20000), min_degree=50)


@dataclass
class Preprocessed:
    """What a ``preprocess_<source>`` function wrote.

    Attributes:
        collection: the collection, as saved.
        path: its folder.
        report: malformed input items skipped or repaired (also in the manifest's
            ``meta.bad_input``), or ``None`` when the source keeps no report.
        warnings: one-line warnings for people (``gflkit preprocess`` prints each as ``warning: ...``).
    """

    collection: GraphCollection
    path: Path
    report: BadInputReport | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Sampling:
    """How a large graph is cut into a family (:func:`gflkit.data.sampling.sample_family`).

    ``None`` takes the family's default (:data:`gflkit.data.sampling.FAMILY_DEFAULTS`, or
    :data:`TABLE_SAMPLING` for tables).
    """

    method: str = "walk"
    n_graphs: Sequence[int] | None = None  # (train, val, test)
    walk_length: Sequence[int] | None = None  # (lo, hi)
    min_degree: int | None = None
    induced: bool = False
    disjoint: bool = False
    parts: int | None = None  # METIS parts (default: the number of graphs)
    ego_hops: int = 2

    def options(self, defaults: dict) -> dict:
        """The keyword options of ``sample_family``, the ``defaults`` filling what is ``None``."""
        return dict(method=self.method, n_graphs=self.n_graphs or defaults["n_graphs"],
                    walk_length=self.walk_length or defaults["walk_length"],
                    min_degree=defaults["min_degree"] if self.min_degree is None else self.min_degree,
                    induced=self.induced, disjoint=self.disjoint, parts=self.parts, ego_hops=self.ego_hops)


def collection_target(name: str, out_dir: str | os.PathLike | None = None,
                      root: str | os.PathLike | None = None) -> Path:
    """The folder a collection called ``name`` is written to: ``out_dir``, else ``<root>/processed/<name>``."""
    return Path(out_dir) if out_dir else processed_dir(name, root)


def preprocess_synthetic(spec: SyntheticSpec | None = None, *, name: str = DEFAULT_COLLECTION, seed: int = 0,
                         out_dir: str | os.PathLike | None = None, root: str | os.PathLike | None = None,
                         progress: bool = True) -> Preprocessed:
    """The built-in seeded family of attributed graphs (``spec``, default :class:`SyntheticSpec`)."""
    with lock_collection(collection_target(name, out_dir, root)) as target:
        collection = make_synthetic_family(spec or SyntheticSpec(), seed=seed, name=name, progress=progress)
        return Preprocessed(collection, collection.save(target))


def sample_source(read: Callable[[], SourceGraph], family: str | dict, *, name: str,
                  sampling: Sampling | None = None, seed: int = 0, out_dir: str | os.PathLike | None = None,
                  root: str | os.PathLike | None = None, progress: bool = True) -> Preprocessed:
    """Read one large graph (``read()``, called under the folder's lock), cut it into a family, save it.

    ``family`` names the sampler's defaults in :data:`gflkit.data.sampling.FAMILY_DEFAULTS`, or is
    a dict of them (``n_graphs``, ``walk_length``, ``min_degree``). A feature transform the reader
    fitted is saved with the collection (``predict`` reuses it).
    """
    from .sampling import FAMILY_DEFAULTS, sample_family
    from .transform import attach_transform

    defaults = FAMILY_DEFAULTS[family] if isinstance(family, str) else family
    with lock_collection(collection_target(name, out_dir, root)) as target:
        source = read()
        collection = sample_family(source, **(sampling or Sampling()).options(defaults), seed=seed, name=name,
                                   progress=progress)
        if getattr(source, "transform", None) is not None:
            attach_transform(collection, source.transform)
        return Preprocessed(collection, collection.save(target), source.report)


def preprocess_aminer(dump: str | os.PathLike | None = None, *, task: str = "collaboration",
                      venue_map: str | os.PathLike | None = None, feat_size: int | None = None,
                      classes: Sequence[str] | None = None, num_classes: int | None = None,
                      sampling: Sampling | None = None, name: str | None = None, seed: int = 0,
                      out_dir: str | os.PathLike | None = None, root: str | os.PathLike | None = None,
                      progress: bool = True) -> Preprocessed:
    """An AMiner citation dump -> collaboration or citation graphs (:func:`gflkit.data.sources.aminer.read_aminer`).

    ``dump`` is the dump file or its folder (default ``<root>/raw/aminer/``);
    ``name`` defaults to ``task``.
    """
    from .sampling import FAMILY_DEFAULTS
    from .sources.aminer import read_aminer

    def read():
        return read_aminer(dump or raw_dir("aminer", root), task=task, venue_map=venue_map, classes=classes,
                           num_classes=num_classes or FAMILY_DEFAULTS[task]["num_classes"], feat_size=feat_size,
                           seed=seed, progress=progress)

    return sample_source(read, task, name=name or task, sampling=sampling, seed=seed, out_dir=out_dir, root=root,
                         progress=progress)


def preprocess_reddit(folder: str | os.PathLike | None = None, *, prefix: str | None = None,
                      classes: Sequence[str] | None = None, num_classes: int | None = None,
                      sampling: Sampling | None = None, name: str | None = None, seed: int = 0,
                      out_dir: str | os.PathLike | None = None, root: str | os.PathLike | None = None,
                      progress: bool = True) -> Preprocessed:
    """Reddit's post graph (GraphSAGE or DGL layout, default ``<root>/raw/reddit/``) -> a family of graphs."""
    from .sampling import FAMILY_DEFAULTS
    from .sources.reddit import read_reddit, source_name

    folder = folder or raw_dir("reddit", root)

    def read():
        return read_reddit(folder, prefix=prefix, classes=classes,
                           num_classes=num_classes or FAMILY_DEFAULTS["reddit"]["num_classes"])

    return sample_source(read, "reddit", name=name or source_name(folder, prefix), sampling=sampling, seed=seed,
                         out_dir=out_dir, root=root, progress=progress)


def preprocess_pubmed(folder: str | os.PathLike | None = None, *, dataset: str = "pubmed",
                      classes: Sequence[str] | None = None, num_classes: int | None = None,
                      sampling: Sampling | None = None, seed: int = 0, out_dir: str | os.PathLike | None = None,
                      root: str | os.PathLike | None = None, progress: bool = True) -> Preprocessed:
    """Pubmed (Planetoid or LINQS files), Cora or Citeseer (``dataset``, also the collection's name) -> a family.

    ``folder`` (default ``<root>/raw/pubmed/``) holds the Planetoid ``ind.<dataset>.*`` files or,
    for Pubmed, the LINQS Pubmed-Diabetes tab files.
    """
    from .sources.planetoid import read_pubmed

    def read():
        return read_pubmed(folder or raw_dir("pubmed", root), name=dataset, classes=classes, num_classes=num_classes)

    return sample_source(read, "pubmed", name=dataset, sampling=sampling, seed=seed, out_dir=out_dir, root=root,
                         progress=progress)


def preprocess_gfl_release(folder: str | os.PathLike | None = None, *, n_val: int = 0, name: str = "gfl_release",
                           seed: int = 0, out_dir: str | os.PathLike | None = None,
                           root: str | os.PathLike | None = None) -> Preprocessed:
    """The GFL authors' released graphs (``graph/``, ``feature.txt``; default ``<root>/raw/gfl_release/``),
    kept as given: ``graph_<i>`` train graphs (``n_val`` of them, drawn with ``seed``, held out for
    validation) and ``test_graph_<i>`` test graphs."""
    from .sources.gfl_release import read_gfl_release

    with lock_collection(collection_target(name, out_dir, root)) as target:
        collection, report = read_gfl_release(folder or raw_dir("gfl_release", root), n_val=n_val, seed=seed,
                                              name=name)
        return _kept(collection, report, target)


def _kept(collection: GraphCollection, report: BadInputReport, target: Path, features_from=None,
          warnings: Sequence[str] = ()) -> Preprocessed:
    """Write a collection read as given (its graphs not sampled here)."""
    if features_from:
        collection.meta["features_from"] = str(features_from)
    return Preprocessed(collection, collection.save(target), report, list(warnings))


def table_file(folder: Path, given: str | os.PathLike | None, stem: str) -> Path:
    """``given``, else ``<folder>/<stem>`` with the first of ``.csv``, ``.tsv``, ``.parquet`` there (else ``.csv``)."""
    if given:
        return Path(given)
    for suffix in (".csv", ".tsv", ".parquet"):
        if (folder / f"{stem}{suffix}").is_file():
            return folder / f"{stem}{suffix}"
    return folder / f"{stem}.csv"


def _transform_from(features_from: str | os.PathLike | None, root):
    """The saved transform of ``features_from`` and whether to fit one (no: keep that collection's features)."""
    if not features_from:
        return None, True
    from .transform import collection_folder, load_transform

    return load_transform(collection_folder(features_from, root)), False


def preprocess_tables(folder: str | os.PathLike | None = None, *, edges: str | os.PathLike | None = None,
                      nodes: str | os.PathLike | None = None, features: str | os.PathLike | None = None,
                      columns: TableColumns = TableColumns(), classes: Sequence[str] | None = None,
                      num_classes: int | None = None, feat_size: int | None = None,
                      features_from: str | os.PathLike | None = None, k_shot: int = 10,
                      structural_features: bool = False, train_graphs: Sequence[str] | None = None,
                      val_graphs: Sequence[str] | None = None, test_graphs: Sequence[str] | None = None,
                      sample: bool | None = None, sampling: Sampling | None = None, name: str = "tables",
                      seed: int = 0, out_dir: str | os.PathLike | None = None, root: str | os.PathLike | None = None,
                      progress: bool = True) -> Preprocessed:
    """A user's own edge and node tables -> a collection (:mod:`gflkit.data.sources.tables`).

    ``folder`` (default ``<root>/raw/tables/``) holds ``edges.csv`` and ``nodes.csv`` (or
    ``.tsv``/``.parquet``) unless ``edges``/``nodes`` name them. Without ``columns.graph`` the
    tables are one large graph, cut into a family (``sampling``); with it every graph is kept as
    it is, or, when the networks get roles (``train_graphs``, ``val_graphs``, ``test_graphs``) or
    ``sample`` is true, the collection is cross-network
    (:func:`gflkit.data.sources.cross_network.read_cross_network`; ``sample=False`` keeps each
    network whole). ``features_from`` (a collection) applies that collection's saved feature
    transform instead of fitting one; ``structural_features`` computes node features from the
    edges of each graph (one large graph, no read features). Classes with fewer than
    ``k_shot + 1`` labelled nodes in every graph are named in a warning.
    """
    if structural_features and (features or columns.graph or columns.features or features_from):
        raise GFLError("structural_features computes the features: give neither features, columns.features, "
                       "features_from nor columns.graph")
    roles = dict(train=train_graphs, val=val_graphs, test=test_graphs)
    if (any(v is not None for v in roles.values()) or sample is not None) and not columns.graph:
        raise GFLError("the networks' roles (train_graphs, val_graphs, test_graphs) and sample need "
                       "columns.graph: the column that names each node's network")
    folder = Path(folder) if folder else raw_dir("tables", root)
    edges, nodes = table_file(folder, edges, "edges"), table_file(folder, nodes, "nodes")
    transform, fit = _transform_from(features_from, root)
    common = dict(features=features, columns=columns, classes=classes, feat_size=feat_size, seed=seed, name=name,
                  transform=transform)
    with lock_collection(collection_target(name, out_dir, root)) as target:
        if any(v is not None for v in roles.values()) or sample:
            return _cross_network_tables(edges, nodes, roles, sample, sampling, k_shot, fit, features_from, common,
                                         num_classes, progress, target)
        if columns.graph:
            from .sources.tables import read_table_collection

            n_graphs = sampling.n_graphs if sampling else None
            collection, report = read_table_collection(edges, nodes, n_graphs=n_graphs, k_shot=k_shot, fit=fit,
                                                       **common)
            return _kept(collection, report, target, features_from)
        return _one_large_graph(edges, nodes, common, fit, num_classes, structural_features, sampling, k_shot,
                                features_from, progress, target)


def _one_large_graph(edges, nodes, common, fit, num_classes, structural_features, sampling, k_shot, features_from,
                     progress, target) -> Preprocessed:
    import torch

    from .sampling import sample_family
    from .sources.common import select_classes
    from .sources.tables import read_table_graph, small_classes
    from .transform import attach_transform

    source = read_table_graph(edges, nodes, fit=fit, featureless=structural_features, **common)
    if num_classes:
        label, source.classes = select_classes(source.g.ndata["label"].numpy(), source.classes,
                                               num_classes=num_classes)
        source.g.ndata["label"] = torch.from_numpy(label)
    collection = sample_family(source, **(sampling or Sampling()).options(TABLE_SAMPLING), seed=common["seed"],
                               name=common["name"], progress=progress)
    attach_transform(collection, source.transform)
    if structural_features:
        from .structure import give_structural_features

        give_structural_features(collection, seed=common["seed"])
    warning = small_classes(collection, k_shot)
    return _kept(collection, source.report, target, features_from, [warning] if warning else [])


def _cross_network_tables(edges, nodes, roles, sample, sampling, k_shot, fit, features_from, common, num_classes,
                          progress, target) -> Preprocessed:
    from .sources.cross_network import read_cross_network

    options = None
    if sample is False:
        if sampling is not None and sampling.n_graphs:
            raise GFLError("n_graphs counts subgraphs; with sample=False every named network is one graph")
    else:
        options = (sampling or Sampling()).options(TABLE_SAMPLING)
    collection, report = read_cross_network(edges, nodes, sampler=options, num_classes=num_classes, k_shot=k_shot,
                                            fit=fit, progress=progress, **roles, **common)
    return _kept(collection, report, target, features_from)
