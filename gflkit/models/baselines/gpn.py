"""Graph Prototypical Networks (Ding et al., CIKM 2020) with GFL's GCN layers.

Two GCNs read the same graph: an encoder ``f`` that embeds each node (``z_i``)
and a scoring network that gives each node one number, its importance ``s_i``.
The importance is scaled by the node's degree centrality,

    s~_i = sigmoid(log(deg_i / mean_deg + eps)) * s_i,

with ``deg_i`` the node's in-degree without its self-loop and ``mean_deg`` the
mean over its own graph. A class's prototype weighs its support nodes by a
softmax of ``s~`` over that class's supports, ``p_c = sum_i w_i z_i``; a node's
score for class ``c`` is ``-||z - p_c||^2``. The model is trained episodically
on the train graphs by the query cross-entropy, with dropout (0.5, GPN's
setting) on the hidden layer of both networks during training, where GPN's
code applies it (the input features are not dropped: on dense features, a
mask on the input as well leaves the model at chance). It trains with GPN's own Adam
settings, learning rate 0.005 and weight decay 5e-4, unless others are given
(:func:`gflkit.config.optimizer_defaults`).

Everything is per node or per edge: memory is ``O(N + E)``.
"""
from __future__ import annotations

from typing import Sequence

import dgl
import torch
import torch.nn.functional as F

from ...episodes import Episode
from ...graphs import batch_episodes
from ...nn import GCNEncoder
from ..support_sets import chunked, flat_support
from .base import TransferBaseline

__all__ = []  # reached by its model name: gflkit.models.baselines.TRANSFER["gpn"]


def degree_centrality(g: dgl.DGLGraph, eps: float = 1e-10) -> torch.Tensor:
    """``sigmoid(log(deg / mean_deg + eps))`` of every node, ``deg`` its in-degree without self-loops.

    The mean is taken over each graph of a batched ``g`` separately; a graph
    without edges has every centrality ``sigmoid(log(eps))``, near 0.

    Shapes:
        returns ``(N,)``.
    """
    src, dst = g.edges()
    n = g.num_nodes()
    deg = torch.bincount(dst[src != dst], minlength=n).to(torch.float32)
    sizes = g.batch_num_nodes().to(deg.device)
    graph_of = torch.repeat_interleave(torch.arange(len(sizes), device=deg.device), sizes)
    total = torch.zeros(len(sizes), device=deg.device).index_add_(0, graph_of, deg)
    mean = (total / sizes.clamp_min(1))[graph_of]
    return torch.sigmoid(torch.log(deg / mean.clamp_min(eps) + eps))


def support_weights(scores: torch.Tensor) -> torch.Tensor:
    """Weights of each class's support nodes: a softmax of their adjusted scores within the class.

    Shapes:
        scores ``(..., K)`` -> ``(..., K)``, summing to 1 over the last axis.
    """
    return torch.softmax(scores, dim=-1)


def class_weights(scores: torch.Tensor, target: torch.Tensor, num_classes: int) -> torch.Tensor:
    """:func:`support_weights` of support sets of any sizes: a softmax of ``scores`` among the
    supports of the same class.

    Shapes:
        scores, target ``(S,)`` (``target`` the class of each support) -> ``(S,)``.
    """
    top = scores.new_full((num_classes,), float("-inf")).scatter_reduce(0, target, scores, "amax")
    e = torch.exp(scores - top[target])
    return e / e.new_zeros(num_classes).index_add_(0, target, e)[target]


def squared_distances(query: torch.Tensor, protos: torch.Tensor) -> torch.Tensor:
    """``||q - p||^2`` of each query and prototype. Shapes: ``(Q, d)``, ``(C, d)`` -> ``(Q, C)``."""
    return (query.pow(2).sum(1, keepdim=True) - 2 * query @ protos.T + protos.pow(2).sum(1)).clamp_min(0)


class GraphPrototypicalNetwork(TransferBaseline):
    """Prototypes weighted by learned, degree-adjusted node importance.

    Args:
        in_feats: node feature size.
        num_classes: size of the shared label set (any number of classes can be scored on a new graph).
        hidden_feats, out_feats: widths of the encoder (32, 32, as the other baselines); the scoring
            network has the same hidden width and one output.
        dropout: dropout on the hidden layer of both networks during training (GPN: 0.5).
        eps: added inside the logarithm of the degree centrality.

    Shapes:
        :meth:`embed` ``(N, out_feats)``; :meth:`node_importance` ``(N,)``.
    """

    name = "gpn"
    embeds = True
    shares_embeddings = True

    def __init__(self, in_feats: int, num_classes: int, *, hidden_feats: int = 32, out_feats: int = 32,
                 dropout: float = 0.5, eps: float = 1e-10) -> None:
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout={dropout} must be in [0, 1)")
        if eps <= 0:
            raise ValueError(f"eps={eps} must be positive")
        super().__init__(in_feats, num_classes, hidden_feats=hidden_feats, out_feats=out_feats,
                         dropout=dropout, eps=eps)
        self.encoder = GCNEncoder(in_feats, hidden_feats, out_feats, dropout, input_dropout=False)
        self.scorer = GCNEncoder(in_feats, hidden_feats, 1, dropout, input_dropout=False)

    def embed(self, g: dgl.DGLGraph) -> torch.Tensor:
        """Node embeddings ``z`` of the encoder. Shapes: returns ``(N, out_feats)``."""
        return self.encoder(g)

    def node_importance(self, g: dgl.DGLGraph, *, symmetric: bool | None = None) -> torch.Tensor:
        """Degree-adjusted importance ``s~`` of every node (``symmetric``: whether ``g`` is, where known).
        Shapes: returns ``(N,)``."""
        scores = self.scorer(g) if symmetric is None else self.scorer(g, symmetric=symmetric)
        return degree_centrality(g, self.options["eps"]) * scores.squeeze(1)

    def prototypes(self, z: torch.Tensor, importance: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
        """Importance-weighted prototypes of support ids ``(C, K)`` (row ``c`` of class ``c``).

        Shapes:
            z ``(N, d)``, importance ``(N,)`` -> ``(C, d)``.
        """
        w = support_weights(importance[support])  # (C, K)
        return (w.unsqueeze(2) * z[support]).sum(1)

    def step_loss(self, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                  labels: Sequence[torch.Tensor]) -> torch.Tensor:
        """Query cross-entropy under ``softmax(-||z - p_c||^2)``, averaged per graph then over graphs."""
        batch = batch_episodes(graphs, episodes)
        z = self.encoder(batch.graph, symmetric=batch.symmetric)
        importance = self.node_importance(batch.graph, symmetric=batch.symmetric)
        losses = [
            F.cross_entropy(-squared_distances(z[q], self.prototypes(z, importance, s)), ep.query_label)
            for s, q, ep in zip(batch.support, batch.queries, episodes)
        ]
        return torch.stack(losses).mean()

    @torch.no_grad()
    def shared_embeddings(self, g: dgl.DGLGraph) -> torch.Tensor:
        """What :meth:`class_scores` takes as ``z`` for every support set of ``g``: the embeddings with
        each node's importance as one more column. Shapes: returns ``(N, out_feats + 1)``."""
        return torch.cat([self.embed(g), self.node_importance(g).unsqueeze(1)], 1)

    @torch.no_grad()
    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z: torch.Tensor | None = None, *,
                     nodes: torch.Tensor | None = None) -> torch.Tensor:
        """``-||z_v - p_c||^2`` of every node of a graph (or of ``nodes``) and each class (any classes, any
        support sizes: each class's weights are a softmax over its own supports). ``z``:
        :meth:`shared_embeddings` of ``g`` when already computed.

        Shapes:
            support: ``C`` tensors of ``(K_c,)`` ids; returns ``(N, C)`` (``(Q, C)`` with ``nodes``).
        """
        z = self.shared_embeddings(g) if z is None else z
        if z.dim() != 2 or z.shape[1] != self.options["out_feats"] + 1:
            raise ValueError(f"z has shape {tuple(z.shape)}: pass shared_embeddings(g), "
                             f"(N, {self.options['out_feats'] + 1})")
        emb, importance = z[:, :-1], z[:, -1]
        ids, target = (t.to(z.device) for t in flat_support(support))
        w = class_weights(importance[ids], target, len(support))
        protos = emb.new_zeros(len(support), emb.shape[1]).index_add_(0, target, w[:, None] * emb[ids])
        return chunked(g.num_nodes(), lambda s: -squared_distances(emb[s], protos), nodes=nodes)

