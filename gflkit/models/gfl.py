"""GFL: graph few-shot learning via knowledge transfer (Yao et al., AAAI 2020).

The model composes the blocks of :mod:`gflkit.nn` as its :class:`GFLConfig`
says: a GCN node encoder, a prototype per class (graph-structured PGNN or a
plain mean), the hierarchical graph representation gate on the PGNN
parameters, the distance, and the auxiliary reconstruction loss. All graphs of
a meta-batch travel through it as one ``dgl.batch``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ..config import GFLConfig
from ..episodes import Episode
from ..nn import (
    GCNEncoder, GraphDecoder, HierarchicalGraphRepresentation, HierarchyGate, PrototypeGNN,
    logits, recon_loss, relation_weights, support_similarity,
)
from ..nn.conv import propagate
from ..nn.distance import cross_entropy

__all__ = ["GFL", "GFLOutput"]


@dataclass
class GFLOutput:
    """What one forward pass returns.

    Attributes:
        logits: per graph, ``(Q_b, C)`` class scores of its query nodes.
        prototypes: ``(B, C, d)``.
        recon_loss: the reconstruction loss, or ``None`` when switched off.
        gate: ``(B, |phi|)`` gate values, or ``None``.
    """

    logits: list[torch.Tensor]
    prototypes: torch.Tensor
    recon_loss: torch.Tensor | None = None
    gate: torch.Tensor | None = None


class GFL(nn.Module):
    """The full model; ablations and Protonet are configurations of it.

    Args:
        in_feats: node feature size of the collection.
        cfg: the model configuration.
    """

    def __init__(self, in_feats: int, cfg: GFLConfig = GFLConfig()) -> None:
        super().__init__()
        self.in_feats, self.cfg = in_feats, cfg
        self.encoder = GCNEncoder(in_feats, cfg.hidden_feats, cfg.out_feats, cfg.dropout)
        self.decoder = GraphDecoder(cfg.out_feats, cfg.out_feats) if cfg.recon else None
        self.pgnn = None
        if cfg.prototype == "pgnn":
            self.pgnn = PrototypeGNN(cfg.out_feats, cfg.out_feats, cfg.pool, cfg.pgnn_activation, cfg.pgnn_norm)
        self.hierarchy = self.gate = None
        if cfg.uses_hierarchy:
            self.hierarchy = HierarchicalGraphRepresentation(
                cfg.out_feats, cfg.graph_feats, cfg.levels, cfg.clusters, cfg.aggregator
            )
            self.gate = HierarchyGate(cfg.graph_feats, self.pgnn.num_params, mode=cfg.gate_mode)

    @classmethod
    def from_config(cls, cfg: GFLConfig, in_feats: int) -> "GFL":
        return cls(in_feats, cfg)

    def embed(self, g: dgl.DGLGraph) -> torch.Tensor:
        """Node embeddings ``Z = f_theta(A, X)``: ``(N, out_feats)``."""
        return self.encoder(g)

    def prototypes(self, g: dgl.DGLGraph, z: torch.Tensor, support: torch.Tensor,
                   z_prop: torch.Tensor | None = None):
        """Class prototypes ``(B, C, d)`` and gate values from support ids ``(B, C, K)``.

        ``z_prop = A_hat z`` may be passed when it is computed anyway."""
        if self.pgnn is None:
            return z[support].mean(2), None
        gate = None
        if self.gate is not None:
            _, h = self.hierarchy(g, z, z_prop)  # (B, graph_feats)
            gate = self.gate(h)
        return self._graph_prototypes(g, z, support, gate, one_graph=False), gate

    def _graph_prototypes(self, g: dgl.DGLGraph, z: torch.Tensor, support: torch.Tensor,
                          gate: torch.Tensor | None, one_graph: bool) -> torch.Tensor:
        """PGNN prototypes ``(E, C, d)`` of support sets ``(E, C, K)``: one per graph
        of a batched ``g`` (E = B), or, with ``one_graph``, E episodes of one graph."""
        cfg = self.cfg
        e, c, k = support.shape
        # The scores of a class depend only on its own support nodes, so E episodes
        # of one graph are scored as one episode with E * C classes.
        rows = support.reshape(1, e * c, k) if one_graph else support
        score = support_similarity(g, rows, cfg.similarity, cfg.hops).view(e, c, k, k)
        weights = relation_weights(score, cfg.similarity, cfg.mu, cfg.mu0)  # (E, C, K, K)
        return self.pgnn(z[support], weights, gate)

    @torch.no_grad()
    def score_episodes(self, g: dgl.DGLGraph, episodes: Sequence[Episode],
                       chunk_columns: int = 512, all_nodes: bool = False) -> list[torch.Tensor]:
        """Query scores of several episodes of one graph, with one encoder pass.

        The node embeddings and the hierarchical gate depend on the graph only,
        so they are computed once; each episode adds its relational structure
        and prototypes. Gives the logits :meth:`forward` gives for each episode
        (up to rounding) without the reconstruction loss.

        Args:
            g: one prepared graph (:func:`gflkit.batching.prepare_graph`).
            episodes: episodes of that graph.
            chunk_columns: at most this many support nodes are scored together,
                which bounds the ``(N, columns)`` reachability matrix.
            all_nodes: score every node of ``g`` instead of each episode's queries.

        Returns:
            one ``(Q, C)`` tensor per episode (``(N, C)`` with ``all_nodes``).
        """
        if not episodes:
            return []
        z = self.embed(g)
        support = torch.stack([ep.support for ep in episodes])  # (E, C, K)
        if self.pgnn is None:
            protos = z[support].mean(2)
        else:
            gate = self.gate(self.hierarchy(g, z)[1]) if self.gate is not None else None  # (1, |phi|)
            per_chunk = max(1, chunk_columns // support[0].numel())
            protos = torch.cat([
                self._graph_prototypes(g, z, part, None if gate is None else gate.expand(len(part), -1),
                                       one_graph=True)
                for part in support.split(per_chunk)
            ])  # (E, C, d)
        return [logits(z if all_nodes else z[ep.query], protos[i], self.cfg.distance, self.cfg.cosine_scale)
                for i, ep in enumerate(episodes)]

    def forward(self, g: dgl.DGLGraph, support: torch.Tensor, queries: Sequence[torch.Tensor]) -> GFLOutput:
        """Score the query nodes of every graph of a batch.

        Args:
            g: batched graph from :func:`gflkit.batching.batch_episodes` (self-loops, ``ndata["feat"]``).
            support: support ids in ``g``, ``(B, C, K)``.
            queries: query ids in ``g``, one ``(Q_b,)`` tensor per graph.
        """
        z = self.embed(g)
        # The decoder and the first hierarchy level are both GCN layers over z:
        # they share one propagation A_hat z.
        z_prop = propagate(g, z) if self.decoder is not None and self.gate is not None else None
        protos, gate = self.prototypes(g, z, support, z_prop)
        # One gather for the queries of all graphs: its backward pass fills one
        # (N, d) gradient instead of one per graph.
        z_query = z[torch.cat(list(queries))].split([len(q) for q in queries])
        scores = [
            logits(zq, protos[b], self.cfg.distance, self.cfg.cosine_scale) for b, zq in enumerate(z_query)
        ]
        recon = None
        if self.decoder is not None:
            d = self.decoder(g, z, z_prop)
            if self.cfg.recon_normalize:
                d = F.normalize(d, dim=-1)
            recon = recon_loss(g, d, self.cfg.recon_reduction)
        return GFLOutput(scores, protos, recon, gate)

    def loss(self, out: GFLOutput, labels: Sequence[torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        """Prototypical cross-entropy (mean over each graph's queries, then over
        graphs) plus ``gamma`` times the reconstruction loss."""
        ce = torch.stack([cross_entropy(s, y) for s, y in zip(out.logits, labels)]).mean()
        total = ce
        parts = {"ce": float(ce.detach())}
        if out.recon_loss is not None:
            total = total + self.cfg.gamma * out.recon_loss
            parts["recon"] = float(out.recon_loss.detach())
        return total, parts
