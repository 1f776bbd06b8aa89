"""Matching Network (Vinyals et al. 2016) with GFL's GCN node encoder.

A query's class distribution is an attention-weighted sum of the support
labels, ``P(y | q) = sum_s a(q, s) y_s`` with ``a = softmax_s(scale * cos(f(q), f(s)))``
(paper eq. 1-2, without the full-context embeddings), trained episodically on
the train graphs by the negative log-likelihood of the query labels. For
evaluation the paper's appendix B matches each query to its most similar
support node and takes its label (``predict="nearest"``, the default);
``predict="attention"`` takes the most probable class under ``P(y | q)``.
"""
from __future__ import annotations

from typing import Sequence

import dgl
import torch
import torch.nn.functional as F

from ...episodes import Episode
from ...nn import GCNEncoder
from ...graphs import batch_episodes
from ..support_sets import chunked, flat_support
from .base import TransferBaseline

__all__ = ["MatchingNetwork"]


def _cosine(query: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    c, k, d = support.shape
    return F.normalize(query, dim=1) @ F.normalize(support.reshape(c * k, d), dim=1).T  # (Q, C * K)


def matching_log_probs(query: torch.Tensor, support: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """``log P(y = c | q)``: log of the attention mass on class ``c``'s supports.

    Shapes:
        query ``(Q, d)``, support ``(C, K, d)`` (row ``c`` of class ``c``) -> ``(Q, C)``.
    """
    c, k, _ = support.shape
    att = scale * _cosine(query, support).view(-1, c, k)  # (Q, C, K)
    return att.logsumexp(2) - att.flatten(1).logsumexp(1, keepdim=True)


def nearest_support(query: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """Class of each query's most cosine-similar support (first one on ties).

    Shapes:
        query ``(Q, d)``, support ``(C, K, d)`` -> ``(Q,)``.
    """
    return _cosine(query, support).argmax(1) // support.shape[1]


class MatchingNetwork(TransferBaseline):
    """Episodically trained matching network on the GCN embedding.

    Args:
        in_feats: node feature size.
        num_classes: size of the shared label set.
        hidden_feats, out_feats: GCN widths (paper: 32, 32).
        dropout: encoder dropout during training.
        scale: multiplier of the cosine before the softmax (a plain cosine
            in ``[-1, 1]`` gives nearly uniform attention).
        predict: ``"nearest"`` (paper, default) or ``"attention"``.
    """

    name = "matchingnet"
    steps_in_parts = True
    embeds = True
    shares_embeddings = True

    def __init__(self, in_feats: int, num_classes: int, *, hidden_feats: int = 32, out_feats: int = 32,
                 dropout: float = 0.0, scale: float = 10.0, predict: str = "nearest") -> None:
        if predict not in ("nearest", "attention"):
            raise ValueError(f"predict={predict!r}: choose nearest or attention")
        if scale <= 0:
            raise ValueError(f"scale={scale} must be positive")
        super().__init__(in_feats, num_classes, hidden_feats=hidden_feats, out_feats=out_feats,
                         dropout=dropout, scale=scale, predict=predict)
        self.encoder = GCNEncoder(in_feats, hidden_feats, out_feats, dropout)

    def embed(self, g: dgl.DGLGraph) -> torch.Tensor:
        return self.encoder(g)

    def step_loss(self, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                  labels: Sequence[torch.Tensor]) -> torch.Tensor:
        """Query NLL under the attention distribution, averaged per graph then over graphs."""
        batch = batch_episodes(graphs, episodes)
        z = self.encoder(batch.graph, symmetric=batch.symmetric)
        losses = [
            F.nll_loss(matching_log_probs(z[q], z[s], self.options["scale"]), ep.query_label)
            for s, q, ep in zip(batch.support, batch.queries, episodes)
        ]
        return torch.stack(losses).mean()

    @torch.no_grad()
    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z: torch.Tensor | None = None, *,
                     nodes: torch.Tensor | None = None) -> torch.Tensor:
        """``log P(y | v)`` of every node of a graph (or of ``nodes``): the attention mass on each class's
        supports (any support sizes); with ``predict="nearest"`` the nearest support's class is raised
        above the rest. ``z``: :meth:`embed` of ``g`` when already computed.

        Shapes:
            support: ``C`` tensors of ``(K_c,)`` ids; returns ``(N, C)`` (``(Q, C)`` with ``nodes``).
        """
        z = self.embed(g) if z is None else z
        ids, target = flat_support(support)
        sup = F.normalize(z[ids], dim=1)
        onehot = F.one_hot(target, len(support)).bool()  # (S, C)
        scale = self.options["scale"]

        def score(s):
            att = scale * F.normalize(z[s], dim=1) @ sup.T  # (Q, S)
            per_class = att.unsqueeze(2).masked_fill(~onehot, float("-inf")).logsumexp(1)  # (Q, C)
            out = per_class - att.logsumexp(1, keepdim=True)
            if self.options["predict"] == "nearest":  # the paper's rule: the nearest support's class wins
                out[torch.arange(len(out)), target[att.argmax(1)]] += 1e3
            return out

        return chunked(g.num_nodes(), score, nodes=nodes)

    @torch.no_grad()
    def shared_embeddings(self, g: dgl.DGLGraph) -> torch.Tensor:
        """The ``z`` :meth:`class_scores` takes for every support set of ``g``."""
        return self.embed(g)

