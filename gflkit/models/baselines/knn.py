"""K-NN: the pre-trained GCN embedding, then k-nearest-neighbour voting among the support nodes.

The encoder is pre-trained exactly as All-Graph-Finetune's
(:class:`~gflkit.models.baselines.agf.GCNClassifier`, after Triantafillou
et al. 2020); on a test graph nothing is trained: each query takes the
majority class of its ``k`` nearest support nodes in the embedding.
"""
from __future__ import annotations

from typing import Sequence

import dgl
import torch
import torch.nn.functional as F

from ..support_sets import chunked, flat_support
from .agf import GCNClassifier

__all__ = ["KNearestNeighbours"]


def knn_predict(query: torch.Tensor, support: torch.Tensor, support_label: torch.Tensor, num_classes: int,
                k: int, metric: str = "cosine") -> torch.Tensor:
    """Majority vote of the ``k`` nearest supports.

    Neighbours are ranked by cosine similarity or Euclidean distance, equal
    distances by support order; a tied vote goes to the tied class whose
    member ranks nearest.

    Shapes:
        query ``(Q, d)``, support ``(S, d)``, support_label ``(S,)`` -> ``(Q,)``.
    """
    if metric == "cosine":
        dist = -F.normalize(query, dim=1) @ F.normalize(support, dim=1).T  # (Q, S)
    elif metric == "euclidean":
        dist = torch.cdist(query, support)
    else:
        raise ValueError(f"metric={metric!r}: choose cosine or euclidean")
    k = min(k, support.shape[0])
    order = torch.sort(dist, dim=1, stable=True).indices[:, :k]  # (Q, k), nearest first
    nbr = support_label[order]  # (Q, k)
    votes = F.one_hot(nbr, num_classes).sum(1)  # (Q, C)
    tied = votes == votes.max(1, keepdim=True).values  # (Q, C)
    first = tied.gather(1, nbr).float().argmax(1)  # nearest neighbour of a tied class
    return nbr.gather(1, first[:, None]).squeeze(1)


class KNearestNeighbours(GCNClassifier):
    """K-NN on the pre-trained GCN embedding.

    Args:
        k: neighbours that vote (default 5: with 10 supports per class a
            query is not left to one outlying support, while its neighbours
            stay within the reach of one class).
        metric: ``"cosine"`` (default) or ``"euclidean"``.
        (the rest as :class:`GCNClassifier`)
    """

    name = "knn"
    shares_embeddings = True

    def __init__(self, in_feats: int, num_classes: int, *, k: int = 5, metric: str = "cosine", **options) -> None:
        if k < 1:
            raise ValueError(f"k={k}: need at least one neighbour")
        if metric not in ("cosine", "euclidean"):
            raise ValueError(f"metric={metric!r}: choose cosine or euclidean")
        super().__init__(in_feats, num_classes, k=k, metric=metric, **options)

    @torch.no_grad()
    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z: torch.Tensor | None = None, *,
                     nodes: torch.Tensor | None = None) -> torch.Tensor:
        """Vote shares among the ``k`` nearest supports of every node of a graph, or of ``nodes`` (log,
        so a softmax returns them); the winner of :func:`knn_predict`'s rule gets the largest. ``z``:
        :meth:`embed` of ``g`` when already computed.

        Shapes:
            support: ``C`` tensors of ``(K_c,)`` ids; returns ``(N, C)`` (``(Q, C)`` with ``nodes``).
        """
        z = self.embed(g) if z is None else z
        ids, target = flat_support(support)
        k, metric, c = min(self.options["k"], len(ids)), self.options["metric"], len(support)

        def score(s):
            if metric == "cosine":
                dist = -F.normalize(z[s], dim=1) @ F.normalize(z[ids], dim=1).T
            else:
                dist = torch.cdist(z[s], z[ids])
            order = torch.sort(dist, dim=1, stable=True).indices[:, :k]
            votes = F.one_hot(target[order], c).sum(1).float() / k  # (Q, C)
            winner = knn_predict(z[s], z[ids], target, c, k, metric)
            votes[torch.arange(len(winner)), winner] += 1e-6  # the model's own tie-break decides the label
            return votes.clamp_min(1e-12).log()

        return chunked(g.num_nodes(), score, nodes=nodes)

    @torch.no_grad()
    def shared_embeddings(self, g: dgl.DGLGraph) -> torch.Tensor:
        """The ``z`` :meth:`class_scores` takes for every support set of ``g``."""
        return self.embed(g)
