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
from ..nn import (
    GCNEncoder, GraphDecoder, HierarchicalGraphRepresentation, HierarchyGate, PrototypeGNN,
    logits, recon_loss, relation_weights, support_similarity,
)
from ..nn.conv import propagate

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
        if cfg.prototype != "mean":
            self.pgnn = PrototypeGNN(cfg.out_feats, cfg.out_feats, cfg.pool, cfg.pgnn_activation)
            if cfg.prototype == "residual":  # start from the mean prototype exactly
                torch.nn.init.zeros_(self.pgnn.weight)
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
        s = z[support]  # (B, C, K, d)
        if self.pgnn is None:
            return s.mean(2), None
        cfg = self.cfg
        score = support_similarity(g, support, cfg.similarity, cfg.hops)
        weights = relation_weights(score, cfg.similarity, cfg.mu, cfg.mu0)  # (B, C, K, K)
        gate = None
        if self.gate is not None:
            _, h = self.hierarchy(g, z, z_prop)  # (B, graph_feats)
            gate = self.gate(h)
        protos = self.pgnn(s, weights, gate)
        if self.cfg.prototype == "residual":
            protos = s.mean(2) + protos
        return protos, gate

    def forward(self, g: dgl.DGLGraph, support: torch.Tensor, queries: Sequence[torch.Tensor]) -> GFLOutput:
        """Score the query nodes of every graph of a batch.

        Args:
            g: batched graph from :func:`gflkit.batching.batch_episodes` (self-loops, ``ndata["feat"]``).
            support: support ids in ``g``, ``(B, C, K)``.
            queries: query ids in ``g``, one ``(Q_b,)`` tensor per graph.
        """
        z = self.embed(g)
        # The decoder and the first hierarchy level are both GraphConvs over z:
        # they share one propagation A_hat z.
        z_prop = propagate(g, z) if self.decoder is not None and self.gate is not None else None
        protos, gate = self.prototypes(g, z, support, z_prop)
        scores = [
            logits(z[q], protos[b], self.cfg.distance, self.cfg.cosine_scale) for b, q in enumerate(queries)
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
        ce = torch.stack([F.cross_entropy(s, y) for s, y in zip(out.logits, labels)]).mean()
        total = ce
        parts = {"ce": float(ce.detach())}
        if out.recon_loss is not None:
            total = total + self.cfg.gamma * out.recon_loss
            parts["recon"] = float(out.recon_loss.detach())
        return total, parts
