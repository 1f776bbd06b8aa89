"""Graphs as the models see them, and meta-batches of episodes.

:func:`prepare_graph` adds self-loops and the data every step would otherwise
recompute; :class:`GraphCache` prepares each graph of a collection once;
:func:`batch_episodes` joins a meta-batch into one ``dgl.batch`` with the
episodes' node ids shifted into it.
"""
from __future__ import annotations

from typing import Sequence

import dgl
import torch

from .data import GraphCollection
from .episodes import Episode
from .nn.conv import add_gcn_norm

__all__ = ["prepare_graph", "batch_episodes", "GraphCache"]


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


def batch_episodes(graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode]):
    """One batched graph and the episodes' node ids shifted into it.

    Returns:
        ``(bg, support (B, C, K), queries)`` with ``queries`` a list of ``(Q_b,)``.
    """
    bg = dgl.batch(list(graphs))
    sizes = bg.batch_num_nodes()
    offsets = torch.cumsum(torch.cat([sizes.new_zeros(1), sizes[:-1]]), 0).tolist()
    support = torch.stack([ep.support + off for ep, off in zip(episodes, offsets)]).to(bg.device)
    queries = [(ep.query + off).to(bg.device) for ep, off in zip(episodes, offsets)]
    return bg, support, queries


class GraphCache:
    """Model-ready graphs (:func:`prepare_graph`) of a collection, made once each.

    Args:
        collection: the graphs.
        device: where the prepared graphs are kept (the model's device).
    """

    def __init__(self, collection: GraphCollection, device: torch.device | str | None = None) -> None:
        self.collection = collection
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self._graphs: dict[int, object] = {}

    def __getitem__(self, graph_id: int):
        if graph_id not in self._graphs:
            g = prepare_graph(self.collection.graphs[graph_id])
            self._graphs[graph_id] = g if self.device.type == "cpu" else g.to(self.device)
        return self._graphs[graph_id]
