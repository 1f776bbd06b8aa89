"""The AMiner citation-network text dump -> a collaboration or a citation graph.

The dump (https://www.aminer.org/citation: ``citation-network1``, DBLP-Citation-
network V4..V14 in text form, or ``AMiner-Paper.txt``) holds one record per paper,
records separated by blank lines::

    #* title            #@ author one, author two   (";" also separates authors)
    #t year             #c venue
    #index 42           #% 17      (one referenced paper id per line, repeatable)
    #! abstract         (other tags such as #o are ignored)

Both tasks of the GFL paper (section 5) are built from it:

* ``collaboration``: authors linked by co-authorship, ``edata["weight"]`` = the
  number of joint papers; label = the majority field of the author's papers (ties:
  the field that sorts first); features: 128-dim embedding of the author's titles
  and abstracts taken together.
* ``citation``: papers linked by references (undirected); label = the field of the
  paper's venue; features: 100-dim embedding of title and abstract.

A paper's field comes from its venue via :class:`~.venues.VenueMap`; papers of
unmapped venues stay, unlabelled. Then the most frequent fields are kept as the
classes (Table 1: 4 for collaboration, 3 for citation). Text embeddings are
described in :mod:`.text_features`.

The dump is read line by line; per paper only integers and a hashed term-count
row are kept. Malformed input is counted in the :class:`BadInputReport`.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import scipy.sparse as sp
import torch

from ...errors import GFLError
from ..collection import build_graph
from ..validate import guard_reader, reading
from .base import BadInputReport, SourceGraph
from .aminer_dump import DumpParser
from .common import missing_file, select_classes
from .text_features import fit_text_transform
from .venues import VenueMap

__all__ = ["read_aminer"]

log = logging.getLogger(__name__)

TASKS = {"collaboration": dict(feat_size=128, num_classes=4), "citation": dict(feat_size=100, num_classes=3)}
#: File names looked for in a folder, in order; else the largest other ``*.txt``.
DUMP_NAMES = ("AMiner-Paper.txt", "dblp.txt", "outputacm.txt", "citation-network1.txt")
_NOT_PAPERS = {"AMiner-Author.txt", "AMiner-Coauthor.txt", "AMiner-Author2Paper.txt"}


def find_aminer_dump(path: str | os.PathLike) -> Path:
    """The dump file: ``path`` itself, or the dump inside the folder ``path``."""
    path = Path(path)
    if path.is_file():
        return path
    if path.is_dir():
        for name in DUMP_NAMES:
            if (path / name).is_file():
                return path / name
        others = sorted((p for p in path.glob("*.txt") if p.name not in _NOT_PAPERS), key=lambda p: -p.stat().st_size)
        if others:
            return others[0]
        raise missing_file(path / DUMP_NAMES[0], "aminer", path)
    if path.suffix:  # looks like a file name
        raise missing_file(path, "aminer", path.parent)
    raise missing_file(path / DUMP_NAMES[0], "aminer", path)


@guard_reader
def read_aminer(
    path: str | os.PathLike,
    task: str = "collaboration",
    venue_map: str | os.PathLike | VenueMap | None = None,
    classes: Sequence[str] | None = None,
    num_classes: int | None = None,
    feat_size: int | None = None,
    n_buckets: int = 1 << 16,
    seed: int = 0,
    progress: bool = False,
) -> SourceGraph:
    """Read an AMiner paper dump into one large graph (see the module docstring).

    Args:
        path: the dump file, or a folder holding it (:func:`find_aminer_dump`).
        task: ``collaboration`` (author graph) or ``citation`` (paper graph).
        venue_map: ``venue,field`` CSV (or a loaded map); default the shipped table.
        classes: field names to keep as classes; default the ``num_classes`` most
            frequent (4 for collaboration, 3 for citation, as in Table 1).
        num_classes: how many of the most frequent fields to keep.
        feat_size: text-embedding size (default 128 / 100 as in Table 1).
        n_buckets: hashed vocabulary size of the text features.
        seed: seed of the SVD's start vector.
        progress: progress bar by bytes read, on stderr.
    """
    if task not in TASKS:
        raise GFLError(f"unknown AMiner task {task!r}: choose one of {', '.join(TASKS)}")
    dump = find_aminer_dump(path)
    if isinstance(venue_map, VenueMap):
        venues = venue_map
    else:
        with reading(venue_map or "the venue map", "give a CSV with columns venue,field"):
            venues = VenueMap.load(venue_map)
    report = BadInputReport(str(dump))
    parser = DumpParser(task, venues, report, n_buckets)
    parser.parse(dump, progress)
    n_papers = len(parser.field)
    if n_papers == 0:
        raise GFLError(f"{dump}: no paper record could be read; is it an AMiner citation dump?")
    field = np.frombuffer(parser.field, dtype=np.int16).astype(np.int64)
    counts = parser.text.matrix()
    dim = feat_size or TASKS[task]["feat_size"]
    if task == "citation":
        (feat, transform), (lo, hi), weight = fit_text_transform(counts, dim, seed), _citations(parser, report), None
        label = field
        n = n_papers
    else:
        n = len(parser.authors)
        rows, cols = (np.frombuffer(a, dtype=np.int64) for a in parser.paper_author)
        incidence = sp.csr_matrix((np.ones(len(rows), np.float32), (cols, rows)), shape=(n, n_papers))
        feat, transform = fit_text_transform(incidence @ counts, dim, seed)  # author text = all their papers' text
        mapped = field >= 0
        per_field = incidence @ sp.csr_matrix(
            (np.ones(int(mapped.sum())), (np.flatnonzero(mapped), field[mapped])), shape=(n_papers, len(venues.fields))
        )
        per_field = per_field.toarray()
        label = np.where(per_field.sum(axis=1) > 0, per_field.argmax(axis=1), -1)  # argmax: first max wins
        key, weight = np.unique(np.frombuffer(parser.pairs[0], np.int64) * n + np.frombuffer(parser.pairs[1], np.int64),
                                return_counts=True)
        lo, hi = key // n, key % n
    wanted = num_classes or (None if classes else TASKS[task]["num_classes"])
    label, names = select_classes(label, venues.fields, classes, wanted)
    g = build_graph(torch.from_numpy(lo), torch.from_numpy(hi), n, torch.from_numpy(feat), torch.from_numpy(label))
    if weight is not None:
        u, v = (t.numpy() for t in g.edges())
        at = np.searchsorted(key, np.minimum(u, v) * n + np.maximum(u, v))  # align with DGL's edge order
        g.edata["weight"] = torch.from_numpy(weight[at].astype(np.float32))
    report.log(log)
    meta = {
        "dump": str(dump), "task": task, "lines": parser.lines, "papers": n_papers,
        "papers_unmapped_venue": int((field < 0).sum()), "unmapped_venues_top": dict(parser.unmapped.most_common(10)),
        "venue_map": venues.origin,
        "features": f"hashed TF-IDF ({n_buckets} buckets) + truncated SVD to {dim}, seed {seed}",
    }
    if task == "collaboration":
        meta["authors"] = n
    log.info("%s: %d papers -> %s graph of %d nodes, %d edges", dump, n_papers, task, n, g.num_edges() // 2)
    meta["feature_transform"] = transform.describe()
    return SourceGraph(g=g, classes=names, name=task, source="aminer", report=report, meta=meta, transform=transform)


def _citations(parser: DumpParser, report: BadInputReport) -> tuple[np.ndarray, np.ndarray]:
    """(citing row, cited row) of references to papers that have a record."""
    src, target, line = (np.frombuffer(a, dtype=np.int64) for a in parser.refs)
    dst = np.frombuffer(parser.row_of, dtype=np.int64)[target] if len(target) else target
    unknown = dst < 0
    if unknown.any():
        report.add("reference to unknown paper", None, int(unknown.sum()))
        report.examples["reference to unknown paper"] = line[unknown][: report.keep].tolist()
    selfref = (src == dst) & ~unknown
    if selfref.any():
        report.add("paper citing itself", None, int(selfref.sum()))
        report.examples["paper citing itself"] = line[selfref][: report.keep].tolist()
    keep = ~unknown & ~selfref
    return src[keep], dst[keep]
