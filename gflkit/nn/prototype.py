"""The graph-structured prototype: PGNN over each class's relational structure.

``c_k = Pool_j( PGNN_phi(R_k, f(S_k))[j] )`` (paper Eq. 4). PGNN is one weighted
GCN layer with parameters ``phi = (W, b)`` and a tanh; with the gate, each graph
``i`` of a batch uses its own ``phi_i = g_i * phi`` (Eq. 7).
"""
from __future__ import annotations

import dgl
import torch
from torch import nn

from ..names import LEARNED_SIMILARITIES
from .relation import RelationScorer, class_relations

__all__ = ["PrototypeGNN", "GraphPrototype", "MeanPrototype"]


class PrototypeGNN(nn.Module):
    """One weighted graph-convolution layer over the support nodes of a class.

    ``H' = tanh(D^-1 R H W + b)`` with ``R`` the relation weights (self-loops
    1) and ``D`` its weighted degrees; then mean or max pooling. With mean
    pooling, support node ``j`` weighs ``sum_i R_ij / D_i`` in the prototype:
    nodes weakly related to the rest of their class (outliers) count less.
    (The row-normalised mean is the default rather than GCN's symmetric
    ``D^-1/2 R D^-1/2``, whose weights only grow with the square root of a
    node's relations and so discount outliers less; ``norm="sym"`` gives the
    GCN normalisation, the paper's literal choice.)

    Args:
        in_feats: node embedding size.
        out_feats: prototype size (equal to the query embedding size).
        pool: ``"mean"`` or ``"max"``.
        activation: ``"tanh"`` or ``"none"``.
        norm: ``"row"`` (``D^-1 R``) or ``"sym"`` (``D^-1/2 R D^-1/2``).

    Shapes:
        support ``(B, C, K, in_feats)``, weights ``(B, C, K, K)``, gate
        ``(B, num_params)`` (one value per parameter), ``(B, out_feats)`` (one
        per output feature: column ``f`` of ``W`` and ``b_f`` scaled) or
        ``None`` -> prototypes ``(B, C, out_feats)``.
    """

    def __init__(self, in_feats: int, out_feats: int, pool: str = "mean", activation: str = "tanh",
                 norm: str = "row") -> None:
        super().__init__()
        if pool not in ("mean", "max"):
            raise ValueError(f"pool must be 'mean' or 'max', not {pool!r}")
        if activation not in ("tanh", "none"):
            raise ValueError(f"activation must be 'tanh' or 'none', not {activation!r}")
        if norm not in ("row", "sym"):
            raise ValueError(f"norm must be 'row' or 'sym', not {norm!r}")
        self.in_feats, self.out_feats, self.pool, self.activation = in_feats, out_feats, pool, activation
        self.norm = norm
        self.weight = nn.Parameter(torch.empty(in_feats, out_feats))
        self.bias = nn.Parameter(torch.empty(out_feats))
        self.reset_parameters()

    @property
    def num_params(self) -> int:
        """``|phi|``: the number of values the gate modulates."""
        return self.weight.numel() + self.bias.numel()

    def reset_parameters(self) -> None:
        # Start from (a squashed) relation-weighted mean of the support
        # embeddings, i.e. close to a Protonet prototype, and learn from there.
        with torch.no_grad():
            self.weight.copy_(torch.eye(self.in_feats, self.out_feats))
            self.weight.add_(torch.empty_like(self.weight).uniform_(-0.01, 0.01))
        nn.init.zeros_(self.bias)

    def extra_repr(self) -> str:
        return (f"in_feats={self.in_feats}, out_feats={self.out_feats}, pool={self.pool}, "
                f"activation={self.activation}, norm={self.norm}")

    def forward(self, support: torch.Tensor, weights: torch.Tensor, gate: torch.Tensor | None = None) -> torch.Tensor:
        b, c, k, d = support.shape
        # R_k has K nodes: the weighted aggregation at node j, sum_i R_ij h_i / sum_i R_ij,
        # is one small dense product per (graph, class), all in one batched matmul.
        w = weights.reshape(b * c, k, k)  # (BC, K, K): entry (i, j) weighs the edge i -> j
        degree = w.sum(1).clamp(min=1e-12).unsqueeze(-1)  # (BC, K, 1) weighted in-degree
        h = support.reshape(b * c, k, d)
        if self.norm == "row":
            agg = torch.bmm(w.transpose(1, 2), h) / degree  # (BC, K, d)
        else:  # D^-1/2 R^T D^-1/2 H, with the out-degrees on the source side
            out_degree = w.sum(2).clamp(min=1e-12).unsqueeze(-1)
            agg = torch.bmm(w.transpose(1, 2), h * out_degree.rsqrt()) * degree.rsqrt()
        agg = agg.view(b, c * k, d)
        if gate is None:
            out = agg @ self.weight + self.bias
        elif gate.shape[-1] == self.out_feats:  # one value per output feature: scales W's columns and b
            out = torch.bmm(agg, self.weight.unsqueeze(0) * gate.unsqueeze(1)) + (self.bias * gate).unsqueeze(1)
        else:
            n_w = self.weight.numel()
            w = self.weight.unsqueeze(0) * gate[:, :n_w].view(b, d, self.out_feats)  # (B, d, out)
            bias = self.bias.unsqueeze(0) * gate[:, n_w:]  # (B, out)
            out = torch.bmm(agg, w) + bias.unsqueeze(1)
        if self.activation == "tanh":
            out = torch.tanh(out)
        out = out.view(b, c, k, self.out_feats)
        return out.mean(2) if self.pool == "mean" else out.amax(2)


class GraphPrototype(nn.Module):
    """The graph-structured prototype of GFL: each class's relational structure, then the PGNN.

    The relation weights among the K support nodes of a class come from their
    similarity in the graph (:func:`~gflkit.nn.relation.support_similarity`,
    thresholded by :func:`~gflkit.nn.relation.relation_weights`); the PGNN pools
    their embeddings along those relations into the prototype.

    With ``similarity="learned"`` or ``"combined"`` the weights are computed from
    the support embeddings at every forward pass by a
    :class:`~gflkit.nn.relation.RelationScorer` (``scorer``, trained with the
    rest; the gate does not scale it); ``combined`` adds its graph part (the
    ``ppr`` score, remembered as the fixed weights are).

    Args:
        pgnn: the prototype GNN; its parameters are the ones the gate scales.
        similarity: similarity behind the relational structure (``khop-cn``, ...).
        hops: k of the k-hop similarity.
        mu, mu0: relation weights below ``mu`` become ``mu0`` (learned weights: ``mu0`` is their floor).

    Shapes:
        z ``(N, d)``, support ``(E, C, K)`` ids in ``g``, gate ``(E, num_params)``
        or ``None`` -> ``(E, C, d)``.
    """

    def __init__(self, pgnn: PrototypeGNN, similarity: str = "khop-cn", hops: int = 3, mu: float = 0.5,
                 mu0: float = 0.1) -> None:
        super().__init__()
        self.pgnn = pgnn
        self.similarity, self.hops, self.mu, self.mu0 = similarity, hops, mu, mu0
        self.scorer = (RelationScorer(pgnn.in_feats, structure=similarity == "combined", mu0=mu0)
                       if similarity in LEARNED_SIMILARITIES else None)

    @property
    def num_params(self) -> int:
        """``|phi|``: the number of values a gate modulates."""
        return self.pgnn.num_params

    def extra_repr(self) -> str:
        return f"similarity={self.similarity}, hops={self.hops}, mu={self.mu}, mu0={self.mu0}"

    def relations(self, g: dgl.DGLGraph, support: torch.Tensor, one_graph: bool = False) -> torch.Tensor | None:
        """The graph's part of the relation weights ``(E, C, K, K)`` among each class's support nodes:
        the weights of a similarity from the graph; the ``ppr`` scores of ``combined``;
        ``None`` for ``learned``.

        They depend on the graph and the support sets only, not on any
        parameter: :func:`~gflkit.nn.relation.class_relations` computes them and
        remembers the last few hundred (evaluation scores the same episodes of a
        graph in every validation round, and :meth:`prepare` computes a batch's
        weights before its forward pass).
        """
        if self.similarity == "learned":
            return None
        return class_relations(g, support, self.similarity, self.hops, self.mu, self.mu0, one_graph=one_graph,
                               scores_only=self.scorer is not None)

    def prepare(self, g: dgl.DGLGraph, support: torch.Tensor) -> None:
        """Compute the relation weights of a batched ``g``'s support sets ahead (they are
        remembered): :meth:`forward` on the same graph and support then finds them."""
        self.relations(g, support)

    def forward(self, g: dgl.DGLGraph, z: torch.Tensor, support: torch.Tensor, gate: torch.Tensor | None = None,
                one_graph: bool = False) -> torch.Tensor:
        """Prototypes of support sets ``(E, C, K)``: one set per graph of a batched
        ``g`` (E = B), or, with ``one_graph``, E episodes of one graph."""
        h = z[support]
        return self.pgnn(h, self._weights(g, h, support, one_graph), gate)

    def weights(self, g: dgl.DGLGraph, z: torch.Tensor, support: torch.Tensor, one_graph: bool = False) -> torch.Tensor:
        """The relation weights ``(E, C, K, K)`` the PGNN reads for these support sets (from the
        graph, or learned from ``z``: then with their gradient)."""
        return self._weights(g, z[support], support, one_graph)

    def _weights(self, g: dgl.DGLGraph, h: torch.Tensor, support: torch.Tensor, one_graph: bool) -> torch.Tensor:
        structure = self.relations(g, support, one_graph)
        return structure if self.scorer is None else self.scorer(h, structure)


class MeanPrototype(nn.Module):
    """Protonet's prototype: the mean embedding of each class's support nodes.

    Takes the arguments of :class:`GraphPrototype` and ignores the graph and the gate.
    """

    num_params = 0

    def forward(self, g: dgl.DGLGraph, z: torch.Tensor, support: torch.Tensor, gate: torch.Tensor | None = None,
                one_graph: bool = False) -> torch.Tensor:
        return z[support].mean(2)
