"""Cross-network collections from multi-graph tables: train on some networks, test on others.

The tables hold several *networks* (one per value of the graph column). Source
networks give the train graphs (and, by default, the val graphs carved from
them); target networks give the test graphs only, so no test node was ever
seen in training. Roles come from names (``train``/``val``/``test`` lists, the
``--train-graphs``/``--val-graphs``/``--test-graphs`` options) or from the
split column, one value per network. Each network is either cut into
subgraphs by the sampler (:func:`gflkit.data.sampling.sample_networks`) or kept
whole.

All networks go through one feature transform. A reduction is fitted on the
train networks' nodes only and then applied to every network: the target (and
a val network named apart) plays the part of a network that arrives after
training, as a graph given to ``gflkit predict`` does. No label is used by the
fit. The manifest records ``fitted_on: "train"`` and the networks in
``fitted_graphs`` (``meta.feature_transform``). A saved transform
(``--features-from``) is applied to every network instead.
"""
from __future__ import annotations

import logging
from typing import Mapping, Sequence

import numpy as np
import torch

from ...errors import GFLError
from ..collection import SPLITS, GraphCollection
from ..sampling import record_overlap, sample_networks
from ..transform import FeatureTransform, attach_transform, fitted_on
from ..validate import guard_reader
from .base import BadInputReport, SourceGraph
from .common import select_classes
from .table_features import finish_features
from .table_nodes import TableColumns
from .tables import GraphSlices, _assign_splits, _read, _Tables, graph_rows, small_classes, table_subgraph

__all__ = ["read_cross_network"]

log = logging.getLogger(__name__)

#: The option that names each split's networks, for messages.
ROLE_OPTIONS = {"train": "`train_graphs`", "val": "`val_graphs`", "test": "`test_graphs`"}
_SHOWN = 12  # network names listed in a message at most


def _listing(names: Sequence[str]) -> str:
    more = f", ... ({len(names)} in all)" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def _named(given: Sequence[str] | None, split: str, names: Sequence[str], where: str) -> list[str] | None:
    """The networks one option names, checked; ``None`` when the option is not given."""
    if given is None:
        return None
    option = ROLE_OPTIONS[split]
    chosen = list(dict.fromkeys(str(n).strip() for n in given if str(n).strip()))
    if not chosen:
        raise GFLError(f"{option} is empty: name at least one network of {where} ({_listing(names)})")
    unknown = [n for n in chosen if n not in set(names)]
    if unknown:
        raise GFLError(f"{option}: no network named {unknown[0]!r} in {where}; choose from {_listing(names)}")
    return chosen


def network_roles(names: Sequence[str], *, train: Sequence[str] | None = None, val: Sequence[str] | None = None,
                  test: Sequence[str] | None = None, carve_val: bool = True,
                  where: str = "the graph column") -> dict[str, list[str]]:
    """Which networks serve train, val and test, from the names a user gave.

    Args:
        names: every network of the tables.
        train, val, test: networks named for each split (``None``: not given).
            Of ``train`` and ``test`` one may be left out: it then takes every
            network not named elsewhere (``test=["c"]`` alone is
            leave-one-network-out).
        carve_val: without ``val``, carve the val graphs from the train
            networks (else there are no val graphs).
        where: how to name the graph column in messages.

    Returns:
        ``{"train": [...], "val": [...], "test": [...]}`` in the order of ``names``.

    Raises:
        GFLError: an empty list, an unknown name, a target network that is also
            a source, or no network left for train or test; the message names
            the option.
    """
    named = {s: _named(g, s, names, where) for s, g in zip(SPLITS, (train, val, test))}
    if named["train"] is None and named["test"] is None:
        raise GFLError(f"name the target networks with {ROLE_OPTIONS['test']} (and the sources with "
                       f"{ROLE_OPTIONS['train']}, default: every other network); networks: {_listing(names)}")
    for split in ("train", "val"):
        both = [n for n in named[split] or () if n in set(named["test"] or ())]
        if both:
            raise GFLError(f"{ROLE_OPTIONS[split]} and {ROLE_OPTIONS['test']} both name {both[0]!r} of {where}: a "
                           f"target network must not also be a source")
    taken = set().union(*(set(v) for v in named.values() if v))
    for split, other in (("train", "test"), ("test", "train")):
        if named[split] is None:
            named[split] = [n for n in names if n not in taken]
            if not named[split]:
                raise GFLError(f"{ROLE_OPTIONS[split]}: no network left once {ROLE_OPTIONS[other]} and "
                               f"{ROLE_OPTIONS['val']} took theirs; name the {split} networks")
    if named["val"] is None:
        named["val"] = list(named["train"]) if carve_val else []
    return {s: [n for n in names if n in set(named[s])] for s in SPLITS}


def _roles_from_column(t: _Tables, slices: GraphSlices, split_col: str, carve_val: bool) -> dict[str, list[str]]:
    """Roles from the split column (each network's first node); unknown values are reported and skipped."""
    splits = _assign_splits(t, slices.bounds, None, 0, split_col)
    roles = {s: [n for n, v in zip(t.graph_names, splits) if v == s] for s in SPLITS}
    for split in ("train", "test"):
        if not roles[split]:
            raise GFLError(f"`split_col={split_col!r}`: no network marked {split!r}; a cross-network collection "
                           f"needs source (train) and target (test) networks")
    if not roles["val"] and carve_val:
        roles["val"] = list(roles["train"])
    return roles


def _keep_classes(t: _Tables, rows: np.ndarray, num_classes: int | None) -> None:
    """Keep the ``num_classes`` classes most frequent among ``rows`` (the source networks' nodes)."""
    if not num_classes:
        return
    _, kept = select_classes(t.label.numpy()[rows], t.classes, num_classes=num_classes)
    label, t.classes = select_classes(t.label.numpy(), t.classes, classes=kept)
    t.label = torch.from_numpy(label)


@guard_reader
def read_cross_network(edges, nodes, *, columns: TableColumns, train: Sequence[str] | None = None,
                       val: Sequence[str] | None = None, test: Sequence[str] | None = None,
                       sampler: Mapping | None = None, features=None, classes=None, num_classes: int | None = None,
                       feat_size: int | None = None, seed: int = 0, name: str = "tables",
                       transform: FeatureTransform | None = None, fit: bool = True, k_shot: int = 10,
                       progress: bool = False) -> tuple[GraphCollection, BadInputReport]:
    """A cross-network collection from multi-graph tables (see the module docstring).

    Args:
        edges, nodes: the tables; ``columns.graph`` names each row's network.
        columns: column names; with no ``train``/``test`` names the roles come
            from ``columns.split`` (one value per network).
        train, val, test: network names per split (:func:`network_roles`).
        sampler: keyword arguments of :func:`~gflkit.data.sampling.sample_networks`
            (``method``, ``n_graphs``, ``walk_length``, ...); ``None`` keeps every
            network whole as one graph (then there are val graphs only when
            val networks are named).
        features, classes, feat_size, transform, fit: as in
            :func:`~gflkit.data.sources.tables.read_table_collection`: a
            reduction is fitted on the train networks only.
        num_classes: keep this many classes, the most frequent on the sources.
        seed: seed of the feature reduction and of the sampler.
        name: collection name.
        k_shot: warn about classes too small for episodes of this many shots.
        progress: show the sampler's progress on stderr.

    Returns:
        The collection (``graph_extra[i]["network"]`` names each graph's
        network, ``sampler["networks"]`` the networks of each split) and the
        report of malformed input.
    """
    if not columns.graph:
        raise GFLError("a cross-network collection needs a graph column (`graph_col`) naming each node's network")
    t = _read(edges, nodes, features, columns, classes)
    slices = GraphSlices.of(t)
    where = f"column {columns.graph!r} of {nodes}"
    carve = sampler is not None
    if train is None and test is None and val is None:
        if not columns.split:
            raise GFLError(f"name the target networks (`test_graphs`) or give a split column (`split_col`); "
                           f"networks: {_listing(t.graph_names)}")
        roles = _roles_from_column(t, slices, columns.split, carve)
    else:
        if columns.split:
            raise GFLError("give the networks' roles either by `split_col` or by `train_graphs`/`test_graphs`, "
                           "not both")
        roles = network_roles(t.graph_names, train=train, val=val, test=test, carve_val=carve, where=where)
    codes = {n: i for i, n in enumerate(t.graph_names)}
    sources = sorted({codes[n] for n in roles["train"] + roles["val"]})
    _keep_classes(t, graph_rows(slices.bounds, sources), num_classes)
    train = sorted(codes[n] for n in roles["train"])
    feat, used = finish_features(t.feat, feat_size, seed, transform, fit, str(features or nodes),
                                  fit_rows=graph_rows(slices.bounds, train),
                                  fitted_on=fitted_on("train", [t.graph_names[c] for c in train]))
    if sampler is None:
        collection = _whole(t, slices, feat, roles, codes, name, seed)
    else:
        networks = _networks(t, slices, feat)
        collection = sample_networks(networks, roles, seed=seed, name=name, progress=progress, **dict(sampler))
    collection.source = "tables"
    collection.meta.update(files=[str(f) for f in (edges, nodes, features) if f], bad_input=t.report.as_dict())
    if t.label_bins is not None:
        collection.meta["label_bins"] = t.label_bins
    attach_transform(collection, used)
    warning = small_classes(collection, k_shot)
    if warning:
        log.warning("%s", warning)
    return collection, t.report


def _networks(t: _Tables, slices: GraphSlices, feat: torch.Tensor) -> dict[str, SourceGraph]:
    """Every network of the tables as a source graph, in table order.

    Networks without a role are included too: a network's seed and node
    positions then depend on the tables alone, not on which networks were named.
    """
    return {net: SourceGraph(table_subgraph(t, feat, i, slices), list(t.classes), net, "tables")
            for i, net in enumerate(t.graph_names)}


def _whole(t: _Tables, slices: GraphSlices, feat: torch.Tensor, roles, codes, name: str,
           seed: int) -> GraphCollection:
    """Every network with a role as one graph; ``orig_id`` is a node's position among the tables' nodes."""
    both = [n for n in roles["val"] if n in set(roles["train"])]
    if both:
        raise GFLError(f"`val_graphs` and `train_graphs` both name {both[0]!r}, but a network kept whole has one "
                       f"split; sample the networks (`sample=True`) to carve val graphs from it")
    graphs, splits, extras = [], [], []
    for split in SPLITS:
        for net in roles[split]:
            i = codes[net]
            g = table_subgraph(t, feat, i, slices)
            g.ndata["orig_id"] = torch.arange(int(slices.bounds[i]), int(slices.bounds[i + 1]), dtype=torch.int64)
            graphs.append(g)
            splits.append(split)
            extras.append({"graph_name": net, "network": net})
    collection = GraphCollection(graphs, splits, list(t.classes), name=name, source="tables", seed=seed,
                                 graph_extra=extras,
                                 sampler={"method": "whole", "seed": seed, "networks": roles})
    record_overlap(collection)
    return collection
