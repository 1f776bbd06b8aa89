"""Graphs as the models see them, and meta-batches of episodes.

:func:`prepare_graph` adds self-loops and the data every step would otherwise
recompute; :class:`GraphCache` prepares each graph of a collection once (and
checks once whether it is symmetric); :func:`batch_episodes` joins a meta-batch
into one :class:`EpisodeBatch`: one ``dgl.batch`` with the episodes' node ids
shifted into it, and what the model should know about it. Threads that share
the work are in :mod:`gflkit.threads`.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Sequence

import dgl
import numpy as np
import torch

from .data import GraphCollection
from .episodes import Episode
from .nn.conv import NORM_DST, NORM_SRC, add_gcn_norm, is_symmetric

__all__ = ["prepare_graph", "batch_episodes", "EpisodeBatch"]


def prepare_graph(g: dgl.DGLGraph) -> dgl.DGLGraph:
    """The graph as the model sees it: one self-loop per node, its features, and
    what every step would otherwise recompute.

    ``ndata``: ``feat`` (the same tensor as ``g``'s, not a copy) and the GCN
    degree normalisation (:func:`~gflkit.nn.conv.add_gcn_norm`).
    """
    h = dgl.graph(g.edges(), num_nodes=g.num_nodes())
    h = add_gcn_norm(dgl.add_self_loop(dgl.remove_self_loop(h)))
    h.ndata["feat"] = g.ndata["feat"]
    return h


def _offsets(bg: dgl.DGLGraph) -> list[int]:
    sizes = bg.batch_num_nodes()
    return torch.cumsum(torch.cat([sizes.new_zeros(1), sizes[:-1]]), 0).tolist()


def _shifted_support(bg: dgl.DGLGraph, episodes: Sequence[Episode], offsets: list[int] | None = None) -> torch.Tensor:
    """The episodes' support ids in the batched graph ``bg``: ``(B, C, K)`` (``offsets``: :func:`_offsets`
    of ``bg``, when known)."""
    offsets = _offsets(bg) if offsets is None else offsets
    return torch.stack([ep.support + off for ep, off in zip(episodes, offsets)]).to(bg.device)


@dataclass(frozen=True)
class EpisodeBatch:
    """A meta-batch as the training pass of an episodic model reads it: everything it is told, in one object.

    Made by :func:`batch_episodes`.

    Attributes:
        graph: the member graphs as one ``dgl.batch`` (prepared: self-loops, the GCN normalisation;
            ``ndata["feat"]`` unless ``features`` holds the features).
        support: ``(B, C, K)`` support ids in ``graph``.
        queries: one ``(Q_b,)`` tensor of query ids in ``graph`` per member graph.
        features: each member graph's own ``(N_b, F)`` features, in the batch's order, when the batch was
            made without copying them into ``graph`` (``features=False``); else ``None``.
        symmetric: whether every member graph is symmetric (each edge has its reverse), so a backward
            pass may use ``A`` for ``A^T`` (:func:`~gflkit.nn.conv.propagate`); ``None``: not known
            (checked where a backward pass needs it).
    """

    graph: dgl.DGLGraph
    support: torch.Tensor
    queries: Sequence[torch.Tensor]
    features: tuple[torch.Tensor, ...] | None = None
    symmetric: bool | None = None


def batch_episodes(graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode], *, features: bool = True,
                   symmetric: Sequence[bool] | None = None) -> EpisodeBatch:
    """One batched graph and the episodes' node ids shifted into it.

    Args:
        graphs: prepared graphs (:func:`prepare_graph`).
        episodes: one episode per graph.
        features: concatenate the graphs' ``ndata["feat"]`` into the batch's. ``False``
            leaves them out and hands each graph's own feature tensor on
            (:attr:`EpisodeBatch.features`), for a model that reads them graph by
            graph: no copy of the features (11.5 MB per meta-batch of 5 graphs of
            4,500 nodes and 128 features).
        symmetric: whether each graph is symmetric, when the caller knows
            (:meth:`GraphCache.symmetric`); by default each graph is checked
            (:func:`~gflkit.nn.conv.is_symmetric`, about a millisecond per 25,000 edges).
    """
    graphs = list(graphs)
    if features:
        bg, parts = dgl.batch(graphs), None
    else:
        bg = dgl.batch(graphs, ndata=[k for k in graphs[0].ndata.keys() if k != "feat"])
        parts = tuple(g.ndata["feat"] for g in graphs)
    facts = [is_symmetric(g) for g in graphs] if symmetric is None else list(symmetric)
    offsets = _offsets(bg)
    queries = tuple((ep.query + off).to(bg.device) for ep, off in zip(episodes, offsets))
    return EpisodeBatch(bg, _shifted_support(bg, episodes, offsets), queries, parts, all(facts))


def receptive_field(g: dgl.DGLGraph, nodes: torch.Tensor, hops: int) -> tuple[dgl.DGLGraph, torch.Tensor] | None:
    """What ``hops`` graph convolutions read to compute the outputs of ``nodes``: the nodes within
    ``hops`` in-hops of them and every edge of ``g`` between those, with ``g``'s node data.

    On a prepared graph (:func:`prepare_graph`, which stores its GCN normalisation) a ``hops``-layer
    GCN gives ``nodes`` the same outputs on the field as on ``g``, from a fraction of its nodes when
    ``nodes`` are few. ``None`` when ``g`` does not store its normalisation (the field's own degrees
    would differ from ``g``'s). The same nodes and edges as ``dgl.khop_in_subgraph``, found from
    ``g``'s CSC arrays in a few vectorised passes.

    Shapes:
        nodes ``(B,)``; returns the field and the position of each of ``nodes`` in it ``(B,)``.
    """
    if NORM_SRC not in g.ndata or NORM_DST not in g.ndata:
        return None
    indptr, indices, _ = (t.cpu().numpy() for t in g.adj_tensors("csc"))
    wanted = nodes.cpu().numpy()
    seen = frontier = np.unique(wanted)
    for _ in range(hops):
        deg = indptr[frontier + 1] - indptr[frontier]
        first = np.repeat(indptr[frontier] - (np.cumsum(deg) - deg), deg)
        frontier = np.setdiff1d(np.unique(indices[first + np.arange(int(deg.sum()))]), seen, assume_unique=True)
        seen = np.union1d(seen, frontier)
    field = dgl.node_subgraph(g, torch.from_numpy(seen).to(g.device), store_ids=False)
    return field, torch.from_numpy(np.searchsorted(seen, wanted)).to(g.device)


def make_thread_safe(g: dgl.DGLGraph) -> None:
    """Create what DGL builds lazily on first use of a graph, so that threads
    may then read it together (a meta-batch drawn with replacement holds one
    graph several times; DGL's lazy set-up is not thread-safe)."""
    g.batch_num_nodes()
    g.batch_num_edges()
    g.create_formats_()


class GraphCache:
    """Model-ready graphs (:func:`prepare_graph`) of a collection, made once each.

    Threads may ask for graphs together (the training step prepares the next
    meta-batch on two threads, scoring shares graphs among threads): a graph is
    made by one thread, under a lock, with what DGL builds lazily built at once
    (reading a graph while DGL builds one of its formats is not safe).

    Args:
        collection: the graphs.
        device: where the prepared graphs are kept (the model's device).
    """

    def __init__(self, collection: GraphCollection, device: torch.device | str | None = None) -> None:
        self.collection = collection
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self._graphs: dict[int, object] = {}
        self._symmetric: dict[int, bool] = {}
        self._lock = threading.Lock()

    def num_nodes(self, graph_id: int) -> int:
        """Nodes of graph ``graph_id`` (without preparing it)."""
        return self.collection.graphs[graph_id].num_nodes()

    def __getitem__(self, graph_id: int):
        g = self._graphs.get(graph_id)
        if g is None:
            with self._lock:
                g = self._graphs.get(graph_id)
                if g is None:  # not made by another thread meanwhile
                    g = prepare_graph(self.collection.graphs[graph_id])
                    g = g if self.device.type == "cpu" else g.to(self.device)
                    make_thread_safe(g)
                    self._symmetric[graph_id] = is_symmetric(g)
                    self._graphs[graph_id] = g
        return g

    def symmetric(self, graph_id: int) -> bool:
        """Whether graph ``graph_id`` is symmetric (checked once, when it is prepared)."""
        self[graph_id]
        return self._symmetric[graph_id]
