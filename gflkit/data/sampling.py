"""Cut one large graph into a family of graphs for meta-learning.

Three methods, all seeded per graph from integers (``[seed, split, index]``) so a
graph does not depend on which other graphs were drawn:

* ``walk`` (default), the GFL authors' procedure: one random walk per graph, its
  length drawn uniformly from ``[lo, hi)`` steps, started at a node with at least
  ``min_degree`` neighbours, no restart. The walked edges form the graph
  (duplicates collapsed); with ``induced=True`` the induced subgraph of the
  walked nodes is kept instead. The walk runs in Python over the CSR arrays, so
  it is reproducible bit for bit (about 20 ms per 20,000 steps).
* ``metis``: induced subgraphs of METIS parts (node-disjoint by construction).
* ``ego``: the ``ego_hops``-hop neighbourhood of a start node.

With ``disjoint=True`` the val and test graphs are drawn first and their nodes are
removed before the train graphs are drawn, so no val/test node is in a train
graph. Either way the measured overlap (:func:`node_overlap`) is kept in the
collection's ``meta["node_overlap"]``. Each graph keeps its source node ids in
``ndata["orig_id"]`` (int64).

Graphs of one split may share nodes with each other: long walks on a small graph
cover much of it, and start nodes are drawn with replacement from the nodes of
degree ``>= min_degree`` (one draw per graph). The mean pairwise Jaccard index of
the node sets of the val graphs and of the test graphs (:func:`pairwise_jaccard`)
is kept in ``meta["pairwise_jaccard"]``; above :data:`JACCARD_WARN` a warning
says that the graphs are not independent, so an interval computed over them
(one accuracy per graph) is narrower than it should be. When fewer nodes may
start a walk or an ego-net than graphs are asked for, graphs necessarily share
start nodes: a warning names the graph (the network), as it does when fewer
than half the graphs start at distinct nodes; ``meta["start_nodes"]`` records,
per split, the size of that pool and the distinct start nodes used.

:func:`sample_networks` cuts several graphs ("networks") the same way for a
cross-network collection: train/val graphs from source networks, test graphs
from target networks.
"""
from __future__ import annotations

import contextlib
import logging
import sys
from typing import Mapping, Sequence

import dgl
import numpy as np
import torch

from ..errors import GFLError
from ..names import SAMPLING_METHODS
from .collection import SPLITS, GraphCollection, build_graph
from .sources.base import SourceGraph

__all__ = ["sample_family", "sample_networks"]

log = logging.getLogger(__name__)

#: Sampling methods (:data:`gflkit.names.SAMPLING_METHODS`).
METHODS = SAMPLING_METHODS

#: A mean pairwise Jaccard index of a split's node sets above this gets a warning: the graphs
#: then share much of their nodes, and an interval over them (one accuracy per graph) is optimistic.
JACCARD_WARN = 0.1
#: :func:`pairwise_jaccard` compares every pair among at most this many graphs of a split (a seeded
#: sample of them when there are more).
JACCARD_GRAPHS = 100

#: Table 1 of the paper. The mean walk length is set to the table's "# Edges",
#: which counts walk steps (edge lines of the release), not unique edges.
FAMILY_DEFAULTS: dict[str, dict] = {
    "collaboration": dict(n_graphs=(100, 10, 20), walk_length=(10000, 20000), min_degree=50, num_classes=4),
    "reddit": dict(n_graphs=(150, 15, 25), walk_length=(5000, 9700), min_degree=50, num_classes=5),
    "citation": dict(n_graphs=(30, 3, 10), walk_length=(10000, 20000), min_degree=10, num_classes=3),
    "pubmed": dict(n_graphs=(60, 5, 15), walk_length=(3500, 7000), min_degree=10, num_classes=3),
}


def random_walk(indptr: np.ndarray, indices: np.ndarray, start: int, steps: int, rng) -> np.ndarray:
    """Node sequence of a walk of ``steps`` steps over a CSR graph (stops at a dead end).

    Shapes:
        indptr: ``(n + 1,)``; indices: ``(nnz,)``; returns ``(steps + 1,)`` or shorter.
    """
    ptr, idx = memoryview(indptr), memoryview(indices)  # int indexing without numpy scalars
    draws = rng.random(steps).tolist()
    cur, trace = int(start), [int(start)]
    for u in draws:
        lo = ptr[cur]
        deg = ptr[cur + 1] - lo
        if deg == 0:
            break
        cur = idx[lo + int(u * deg)]
        trace.append(cur)
    return np.asarray(trace, dtype=np.int64)


def _csr(g: dgl.DGLGraph) -> tuple[np.ndarray, np.ndarray]:
    indptr, indices, _ = g.adj_tensors("csr")
    return np.ascontiguousarray(indptr.numpy(), dtype=np.int64), np.ascontiguousarray(indices.numpy(), dtype=np.int64)


class _Structure:
    """The part of the source graph a split may use: CSR arrays and start candidates."""

    def __init__(self, g: dgl.DGLGraph, min_degree: int, forbid: np.ndarray | None = None) -> None:
        if forbid is not None:
            src, dst = (t.numpy() for t in g.edges())
            keep = ~(forbid[src] | forbid[dst])
            g = dgl.graph((torch.from_numpy(src[keep]), torch.from_numpy(dst[keep])), num_nodes=g.num_nodes())
        self.g = g
        self.forbidden = forbid is not None
        self.indptr, self.indices = _csr(g)
        ok = np.diff(self.indptr) >= min_degree
        if forbid is not None:
            ok &= ~forbid
        self.candidates = np.flatnonzero(ok)

    def start(self, rng, min_degree: int, what: str) -> int:
        if self.candidates.size == 0:
            raise GFLError(
                f"no node has degree >= {min_degree} {what}; lower `min_degree` "
                f"(max degree is {int(np.diff(self.indptr).max(initial=0))})"
            )
        return int(self.candidates[rng.integers(self.candidates.size)])


def _cut(source: SourceGraph, part: _Structure, nodes: np.ndarray, edges=None) -> dgl.DGLGraph:
    """A collection graph on ``nodes`` (sorted source ids) with walked ``edges`` or induced ones."""
    ids = torch.from_numpy(nodes)
    if edges is None:
        s, d = dgl.node_subgraph(part.g, ids, store_ids=False).edges()
    else:
        s, d = (torch.from_numpy(np.searchsorted(nodes, e)) for e in edges)
    out = build_graph(s, d, len(nodes), source.g.ndata["feat"][ids], source.g.ndata["label"][ids])
    out.ndata["orig_id"] = ids.clone()
    if "weight" in source.g.edata:  # e.g. joint papers of two co-authors
        u, v = out.edges()
        out.edata["weight"] = source.g.edata["weight"][source.g.edge_ids(ids[u], ids[v])]
    return out


def _one_graph(source, part, method, rng, walk_length, min_degree, induced, ego_hops, what):
    start = part.start(rng, min_degree, what)
    if method == "walk":
        trace = random_walk(part.indptr, part.indices, start, int(rng.integers(*walk_length)), rng)
        edges = None if induced else (trace[:-1], trace[1:])
        extra = {"walk_steps": int(trace.size - 1), "start_node": start}
        return _cut(source, part, np.unique(trace), edges), extra
    sub, _ = dgl.khop_in_subgraph(part.g, start, ego_hops)
    return _cut(source, part, np.sort(sub.ndata[dgl.NID].numpy())), {"ego_node": start}


def _metis_graphs(source, n_total, parts, seed):
    parts = parts or n_total
    if parts < n_total:
        raise GFLError(f"`parts={parts}` is less than the {n_total} graphs asked for; raise `parts`")
    with contextlib.redirect_stdout(sys.stderr):  # DGL prints METIS timings; stdout carries results
        assign = dgl.metis_partition_assignment(source.g, parts).numpy()
    chosen = np.random.default_rng([seed, 3]).permutation(parts)[:n_total]
    order = np.argsort(assign, kind="stable")
    bounds = np.searchsorted(assign[order], np.arange(parts + 1))
    part = _Structure(source.g, 0)
    for p in chosen:
        nodes = np.sort(order[bounds[p]:bounds[p + 1]])
        yield _cut(source, part, nodes), {"part": int(p)}


def sample_family(
    source: SourceGraph, *, method: str = "walk", n_graphs=(100, 10, 20), walk_length=(10000, 20000),
    min_degree: int = 50, induced: bool = False, disjoint: bool = False, parts: int | None = None,
    ego_hops: int = 2, seed: int = 0, name: str | None = None, progress: bool = False,
) -> GraphCollection:
    """Sample train/val/test graphs from ``source`` (see the module docstring).

    Args:
        source: the large graph, with ``feat``/``label`` node data and its classes.
        method: ``walk``, ``metis`` or ``ego``.
        n_graphs: graphs per split ``(train, val, test)``; the collection lists
            train graphs first, then val, then test.
        walk_length: ``(lo, hi)``: steps drawn uniformly from ``[lo, hi)``.
        min_degree: start nodes need at least this many neighbours.
        induced: keep induced subgraphs of walked nodes, not just walked edges.
        disjoint: no val/test node appears in a train graph.
        parts: METIS parts (default: the total number of graphs).
        ego_hops: radius of ego-nets.
        seed: seed of every random choice.
        name: collection name (default ``source.name``).
        progress: show a progress bar on stderr.
    """
    collection = _family(source, method=method, n_graphs=n_graphs, walk_length=walk_length, min_degree=min_degree,
                         induced=induced, disjoint=disjoint, parts=parts, ego_hops=ego_hops, seed=seed, name=name,
                         progress=progress)
    record_overlap(collection)
    return collection


def _family(source: SourceGraph, *, method, n_graphs, walk_length, min_degree, induced, disjoint, parts, ego_hops,
            seed, name, progress) -> GraphCollection:
    """:func:`sample_family` without measuring the overlap (a network of :func:`sample_networks` is one part)."""
    if method not in METHODS:
        raise GFLError(f"unknown sampling method {method!r}: choose one of {', '.join(METHODS)}")
    counts = [int(n) for n in n_graphs]
    lo, hi = (int(x) for x in walk_length)
    if len(counts) != 3 or min(counts) < 0 or sum(counts) == 0:
        raise GFLError(f"graphs per split must be three counts TRAIN,VAL,TEST, got {n_graphs}")
    if not 1 <= lo < hi:
        raise GFLError(f"walk length range must satisfy 1 <= LO < HI, got {lo},{hi}")
    if source.g.num_edges() == 0:
        files = source.meta.get("files") or source.name
        raise GFLError(f"{', '.join(files) if isinstance(files, list) else files}: the graph has no edges; graphs "
                       f"are cut from it along edges (walks, METIS parts, ego-nets): check the edge file")
    splits = [s for s, n in zip(SPLITS, counts) for _ in range(n)]
    results: dict[tuple[int, int], tuple] = {}
    starts: dict[str, dict] = {}
    if method == "metis":
        for k, item in enumerate(_metis_graphs(source, len(splits), parts, seed)):
            results[(SPLITS.index(splits[k]), k)] = item
    else:
        part = _Structure(source.g, min_degree)
        todo = [(s, i) for s in (2, 1, 0) for i in range(counts[s])]  # held-out splits first
        bar = _progress(len(todo), progress)
        what = f"in {source.name}"
        drawn: list[tuple[_Structure, str, int]] = []
        for s, i in todo:
            if disjoint and s == 0 and i == 0:
                forbid = np.zeros(source.g.num_nodes(), dtype=bool)
                for g, _ in results.values():
                    forbid[g.ndata["orig_id"].numpy()] = True
                part, what = _Structure(source.g, min_degree, forbid), "outside the val/test graphs"
            rng = np.random.default_rng([seed, s, i])
            results[(s, i)] = _one_graph(source, part, method, rng, (lo, hi), min_degree, induced, ego_hops, what)
            extra = results[(s, i)][1]
            drawn.append((part, SPLITS[s], extra.get("start_node", extra.get("ego_node"))))
            bar.update(1)
        bar.close()
        starts = _check_starts(source.name, drawn, min_degree, method)
    graphs, extras = zip(*(results[k] for k in sorted(results))) if results else ((), ())
    sampler = dict(method=method, n_graphs=counts, walk_length=[lo, hi], min_degree=min_degree, induced=induced,
                   disjoint=bool(disjoint), parts=parts, ego_hops=ego_hops, seed=seed)
    meta = {**source.meta, "source_nodes": source.g.num_nodes()}
    if starts:
        meta["start_nodes"] = starts
    if source.report:
        meta["bad_input"] = source.report.as_dict()
    return GraphCollection(list(graphs), splits, list(source.classes), name=name or source.name,
                           source=source.source, sampler=sampler, seed=seed, graph_extra=list(extras), meta=meta)


def _check_starts(name: str, drawn: list[tuple[_Structure, str, int]], min_degree: int,
                  method: str) -> dict[str, dict]:
    """Per split, the start-node pool and the distinct start nodes drawn; one warning per pool smaller
    than the graphs drawn from it (they then necessarily share start nodes), or whose graphs start at
    fewer distinct nodes than half their number."""
    out: dict[str, dict] = {}
    for split in SPLITS:
        mine = [(part, node) for part, s, node in drawn if s == split]
        if mine:
            out[split] = {"pool": int(mine[0][0].candidates.size), "graphs": len(mine),
                          "distinct": len({node for _, node in mine})}
    for part in {id(p): p for p, _, _ in drawn}.values():  # the whole graph, or the held-out part and the rest
        nodes = [node for p, _, node in drawn if p is part]
        splits = [s for s in SPLITS if any(p is part and sp == s for p, sp, _ in drawn)]
        pool = int(part.candidates.size)
        if pool < len(nodes) or 2 * len(set(nodes)) < len(nodes):
            where = " outside the val/test graphs" if part.forbidden else ""
            kind = "walk" if method == "walk" else "ego-net"
            log.warning("%s: only %d node(s)%s have degree >= min_degree=%d to start a %s from, for %d %s graphs: "
                        "they start at %d distinct node(s), so those graphs are not independent draws; lower "
                        "min_degree or ask for fewer graphs", name, pool, where, min_degree, kind, len(nodes),
                        "/".join(splits), len(set(nodes)))
    return out


def share_counts(total: int, parts: int) -> list[int]:
    """``total`` split over ``parts`` as evenly as possible, the first ones taking the remainder."""
    return [total // parts + (j < total % parts) for j in range(parts)] if parts else []


def network_seed(seed: int, position: int) -> int:
    """The seed of one network's graphs: a function of ``seed`` and the network's position only."""
    return int(np.random.SeedSequence([seed, 11, position]).generate_state(1)[0])


def _network_counts(names: Sequence[str], roles: Mapping[str, Sequence[str]], counts) -> dict[str, list[int]]:
    """Graphs per split that each network gives: every split's count shared over its networks."""
    out = {n: [0, 0, 0] for n in names}
    for s, split in enumerate(SPLITS):
        chosen = [n for n in names if n in set(roles.get(split, ()))]
        for n, k in zip(chosen, share_counts(counts[s], len(chosen))):
            out[n][s] = k
    return out


def _check_roles(names: Sequence[str], roles: Mapping[str, Sequence[str]]) -> None:
    unknown = sorted({n for split in SPLITS for n in roles.get(split, ()) if n not in set(names)})
    if unknown:
        raise GFLError(f"unknown network(s) {', '.join(map(repr, unknown))}: choose from {', '.join(names)}")
    both = sorted(set(roles.get("test", ())) & (set(roles.get("train", ())) | set(roles.get("val", ()))))
    if both:
        raise GFLError(f"network(s) {', '.join(map(repr, both))} serve both as a target (test) and as a source "
                       f"(train/val); a target network must be unseen in training")
    for split in ("train", "test"):
        if not roles.get(split):
            raise GFLError(f"no {split} network: name at least one source (train) and one target (test) network")


def sample_networks(
    networks: Mapping[str, SourceGraph], roles: Mapping[str, Sequence[str]], *, method: str = "walk",
    n_graphs=(100, 10, 20), walk_length=(10000, 20000), min_degree: int = 50, induced: bool = False,
    disjoint: bool = False, parts: int | None = None, ego_hops: int = 2, seed: int = 0,
    name: str = "networks", progress: bool = False,
) -> GraphCollection:
    """Cut train/val graphs from source networks and test graphs from target networks.

    Each network is cut by :func:`sample_family` with the same options and a
    seed that depends only on ``seed`` and the network's position in
    ``networks`` (:func:`network_seed`). A network may serve train and val
    (then its val graphs are carved from it, node-disjoint from its train
    graphs with ``disjoint``); a test (target) network serves nothing else, so
    no test node lies in a train graph.

    Args:
        networks: the graphs, by name, all with the same features and classes.
        roles: ``{"train": [names], "val": [names], "test": [names]}``.
        n_graphs: graphs per split ``(train, val, test)``, shared as evenly as
            possible over that split's networks (in the order of ``networks``).
        method, walk_length, min_degree, induced, disjoint, parts, ego_hops:
            as in :func:`sample_family`, applied to every network (``parts``:
            METIS parts per network).
        seed: seed of every random choice.
        name: collection name.
        progress: show progress bars on stderr.

    Returns:
        The collection, train graphs first, then val, then test, each split in
        network order. ``graph_extra[i]["network"]`` names the network graph
        ``i`` was cut from; ``ndata["orig_id"]`` is a node's position among all
        networks' nodes taken in the order of ``networks`` (so ids never clash
        across networks and :func:`node_overlap` stays meaningful).
    """
    names = list(networks)
    _check_roles(names, roles)
    counts = [int(n) for n in n_graphs]
    if len(counts) != 3 or min(counts) < 0 or counts[0] < 1 or counts[2] < 1:
        raise GFLError(f"graphs per split (`n_graphs`) must be three counts TRAIN,VAL,TEST with TRAIN and TEST >= 1, "
                       f"got {n_graphs}")
    if counts[1] and not roles.get("val"):
        raise GFLError(f"{counts[1]} val graphs asked for but no val network given; name val networks (or the "
                       f"train networks, to carve val graphs from them) or ask for 0 val graphs")
    per_network = _network_counts(names, roles, counts)
    offsets = np.cumsum([0] + [networks[n].g.num_nodes() for n in names])
    parts_of = {split: [] for split in SPLITS}  # split -> [(graph, extra)]
    families: dict[str, GraphCollection] = {}
    for j, net in enumerate(names):
        if not any(per_network[net]):
            continue
        family = _family(networks[net], method=method, n_graphs=per_network[net], walk_length=walk_length,
                         min_degree=min_degree, induced=induced, disjoint=disjoint, parts=parts, ego_hops=ego_hops,
                         seed=network_seed(seed, j), name=net, progress=progress)
        families[net] = family
        for g, split, extra in zip(family.graphs, family.splits, family.graph_extra):
            g.ndata["orig_id"] = g.ndata["orig_id"] + int(offsets[j])
            parts_of[split].append((g, {"network": net, **extra}))
    items = [(split, g, extra) for split in SPLITS for g, extra in parts_of[split]]
    first = networks[names[0]]
    sampler = dict(method=method, n_graphs=counts, walk_length=[int(x) for x in walk_length],
                   min_degree=min_degree, induced=induced, disjoint=bool(disjoint), parts=parts, ego_hops=ego_hops,
                   seed=seed, networks={split: [n for n in names if n in set(roles.get(split, ()))]
                                        for split in SPLITS})
    collection = GraphCollection([g for _, g, _ in items], [s for s, _, _ in items], list(first.classes), name=name,
                                 source=first.source, sampler=sampler, seed=seed,
                                 graph_extra=[e for _, _, e in items],
                                 meta={"source_nodes": int(offsets[-1]),
                                       "networks": {n: _network_facts(networks[n], per_network[n], families.get(n))
                                                    for n in names}})
    record_overlap(collection)
    return collection


def _network_facts(source: SourceGraph, counts: Sequence[int], family: GraphCollection | None) -> dict:
    """What the manifest records of one network: its nodes, its graphs per split, its start-node pools."""
    facts = {"num_nodes": source.g.num_nodes(), "graphs": dict(zip(SPLITS, counts))}
    if family is not None and family.meta.get("start_nodes"):
        facts["start_nodes"] = family.meta["start_nodes"]
    return facts


def _progress(total: int, enabled: bool):
    from ..progress import progress_bar

    return progress_bar(total=total, enabled=enabled, desc="sampling graphs", unit="graph")


def node_overlap(data: GraphCollection | Mapping[str, Sequence]) -> dict[str, float | None]:
    """Share of the distinct val / test nodes that also lie in some train graph.

    Args:
        data: a collection whose graphs carry ``ndata["orig_id"]``, or a mapping
            ``split -> list of node-id arrays``.

    Returns:
        ``{"val": ..., "test": ..., "val_test": ...}`` (``val_test``: share of
        test nodes also in val graphs); ``None`` where a split is empty or ids
        are unknown.
    """
    if isinstance(data, GraphCollection):
        if not data.graphs or any("orig_id" not in g.ndata for g in data.graphs):
            return {"val": None, "test": None, "val_test": None}
        data = {s: [g.ndata["orig_id"] for _, g in data.items(s)] for s in SPLITS}
    empty = [np.empty(0, np.int64)]
    ids = {s: np.unique(np.concatenate([np.asarray(a, dtype=np.int64) for a in data.get(s, [])] or empty))
           for s in SPLITS}

    def share(part: str, ref: str):
        if ids[part].size == 0 or not data.get(ref):
            return None
        return round(float(np.isin(ids[part], ids[ref], assume_unique=True).mean()), 6)

    return {"val": share("val", "train"), "test": share("test", "train"), "val_test": share("test", "val")}


def pairwise_jaccard(node_ids: Sequence, max_graphs: int = JACCARD_GRAPHS, seed: int = 0) -> float | None:
    """Mean Jaccard index ``|A & B| / |A | B|`` over the pairs of node sets in ``node_ids``.

    Every pair is compared among at most ``max_graphs`` sets: with more, a
    sample of ``max_graphs`` of them drawn with ``default_rng([seed, 17])``
    (the mean over its pairs estimates the mean over all pairs). The
    intersections of all pairs come from one product of a sparse incidence
    matrix (sets x node ids shared by two sets or more), so the cost grows
    with the number of shared memberships, not with the pairs times the set
    sizes.

    Args:
        node_ids: one array of node ids per graph (repeats are ignored).
        max_graphs: largest number of sets compared pair by pair.
        seed: seed of the sample.

    Returns:
        The mean over pairs (two empty sets count as 0), rounded to 6 digits;
        ``None`` with fewer than two sets.
    """
    import scipy.sparse as sp

    arrays = list(node_ids)
    if len(arrays) < 2:
        return None
    if len(arrays) > max_graphs:
        pick = np.sort(np.random.default_rng([seed, 17]).choice(len(arrays), size=max_graphs, replace=False))
        arrays = [arrays[i] for i in pick]
    sets = [np.unique(np.asarray(a, dtype=np.int64)) for a in arrays]
    sizes = np.array([s.size for s in sets], dtype=np.float64)
    every = np.concatenate(sets)
    ids, inverse, members = np.unique(every, return_inverse=True, return_counts=True)
    shared = members[inverse] > 1  # a node in one set only adds to no intersection
    cols = np.cumsum(members > 1)[inverse[shared]] - 1
    rows = np.repeat(np.arange(len(sets)), sizes.astype(np.int64))[shared]
    incidence = sp.csr_matrix((np.ones(cols.size, np.float32), (rows, cols)),
                              shape=(len(sets), int((members > 1).sum())))
    inter = np.asarray((incidence @ incidence.T).todense(), dtype=np.float64)
    i, j = np.triu_indices(len(sets), 1)
    union = sizes[i] + sizes[j] - inter[i, j]
    jaccard = np.divide(inter[i, j], union, out=np.zeros_like(union), where=union > 0)
    return round(float(jaccard.mean()), 6)


def split_jaccard(collection: GraphCollection, seed: int = 0) -> dict[str, float | None]:
    """:func:`pairwise_jaccard` of the val graphs and of the test graphs (by ``ndata["orig_id"]``).

    ``None`` for a split with fewer than two graphs, or when the graphs carry no ``orig_id``.
    """
    if not collection.graphs or any("orig_id" not in g.ndata for g in collection.graphs):
        return {"val": None, "test": None}
    return {s: pairwise_jaccard([g.ndata["orig_id"].numpy() for _, g in collection.items(s)], seed=seed)
            for s in ("val", "test")}


def record_overlap(collection: GraphCollection) -> None:
    """Measure how the graphs share nodes and keep it in the manifest; warn when graphs of a split overlap.

    Sets ``meta["node_overlap"]`` (:func:`node_overlap`) and
    ``meta["pairwise_jaccard"]`` (:func:`split_jaccard` plus the threshold), and
    logs one warning per split whose mean pairwise Jaccard exceeds
    :data:`JACCARD_WARN`. Graphs without ``orig_id`` record ``None``s.
    """
    overlap = node_overlap(collection)
    jaccard = split_jaccard(collection)
    collection.meta["node_overlap"] = overlap
    collection.meta["pairwise_jaccard"] = {**jaccard, "warn_above": JACCARD_WARN, "max_graphs": JACCARD_GRAPHS}
    log.info("%s: share of val/test nodes also in train graphs: %s; mean pairwise Jaccard of the val/test graphs: "
             "%s", collection.name, overlap, jaccard)
    for split, value in jaccard.items():
        if value is not None and value > JACCARD_WARN:
            log.warning("%s: the %d %s graphs share nodes (mean pairwise Jaccard %.2f > %s): they are not "
                        "independent, so an interval over graphs is optimistic (too narrow); cut fewer or shorter "
                        "graphs, or from larger graphs", collection.name, collection.splits.count(split), split,
                        value, JACCARD_WARN)
