"""GFL: graph few-shot learning via knowledge transfer (Yao et al., AAAI 2020).

The model is composed of the blocks of :mod:`gflkit.nn`, passed in as modules:
a node encoder (GCN by default; any ``dgl.nn`` convolution), a prototype per
class (graph-structured PGNN or a plain mean), the hierarchical graph
representation gate on the PGNN parameters, the distance, and the auxiliary
reconstruction loss. :meth:`GFL.from_config` builds them from a :class:`GFLConfig`. All graphs of
a meta-batch travel through it as one ``dgl.batch``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import dgl
import torch
from torch import nn

from ..config import GFLConfig
from ..graphs import EpisodeBatch
from ..nn import (
    Distance, GraphDecoder, GraphPrototype, HierarchicalGraphRepresentation, HierarchyGate, MeanPrototype,
    NodeEncoder, PrototypeGNN, make_encoder, recon_loss,
)
from ..nn.conv import propagate
from ..nn.distance import cross_entropy
from .base import FewShotModel
from .support_sets import chunked

__all__ = ["GFL", "GFLOutput", "upgrade_state_dict"]


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


#: Parameter names of checkpoints written before the model was composed of parts
#: (old prefix -> new prefix).
_RENAMED = {"pgnn.": "prototype.pgnn."}


def upgrade_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A GFL ``state_dict`` with the parameter names of gflkit 0.1.0 mapped to today's.

    Names already current pass through, so it is safe to apply to any GFL state.
    """
    out = {}
    for key, value in state.items():
        for old, new in _RENAMED.items():
            if key.startswith(old):
                key = new + key[len(old):]
                break
        out[key] = value
    return out


class GFL(FewShotModel):
    """The full model, composed of its parts; ablations and Protonet are configurations of it.

    A :class:`~gflkit.models.base.FewShotModel` trained by the episode engine (``episodic``):
    ``forward(batch)`` (an :class:`~gflkit.graphs.EpisodeBatch`) is the training pass and :meth:`loss` its loss;
    :meth:`class_scores` scores a graph's nodes from any support sets.

    As PyG's ``GAE(encoder, decoder)``, every part is a module passed in:
    :meth:`from_config` builds the parts a :class:`~gflkit.config.GFLConfig`
    describes (that is what the command line and checkpoints use), and
    ``GFL(in_feats, cfg)`` is short for it. Composing by hand::

        from gflkit.nn import Distance, GraphPrototype, MeanPrototype, PrototypeGNN, make_encoder

        model = GFL(make_encoder("sage", in_feats), MeanPrototype(), Distance("cosine"))

    Args:
        encoder: node encoder, called as ``encoder(g) -> (N, d)`` on a prepared
            graph (features in ``g.ndata["feat"]``, self-loops); any two
            ``dgl.nn`` convolutions in a :class:`~gflkit.nn.NodeEncoder` fit.
        prototype: :class:`~gflkit.nn.GraphPrototype` (PGNN over the relational
            structure) or :class:`~gflkit.nn.MeanPrototype` (Protonet); called as
            ``prototype(g, z, support, gate, one_graph)``.
        distance: scores of queries against prototypes (:class:`~gflkit.nn.Distance`).
        hierarchy: the hierarchical graph representation, needed with ``gate``.
        gate: scales the prototype's parameters by the graph representation.
        decoder: the auxiliary graph reconstruction's decoder (``None``: no such loss).
        gamma: weight of the reconstruction loss.
        recon_reduction: ``"mean"`` (divide by n^2 per graph) or ``"sum"``.
        recon_normalize: L2-normalise the decoder's rows.
    """

    name = "gfl"
    episodic = True
    embeds = True
    shares_embeddings = True

    def __init__(self, encoder: nn.Module | int, prototype: nn.Module | GFLConfig | None = None,
                 distance: nn.Module | None = None, *, hierarchy: nn.Module | None = None,
                 gate: nn.Module | None = None, decoder: nn.Module | None = None, gamma: float = 1.0,
                 recon_reduction: str = "mean", recon_normalize: bool = True) -> None:
        super().__init__()
        self.in_feats: int | None = None
        self.cfg: GFLConfig | None = None
        if isinstance(encoder, int):  # GFL(in_feats, cfg): the parts a config describes
            self.in_feats = encoder
            self.cfg = prototype if isinstance(prototype, GFLConfig) else GFLConfig()
            self._compose(**_parts(encoder, self.cfg))
        else:
            self._compose(encoder, prototype, distance, hierarchy=hierarchy, gate=gate, decoder=decoder, gamma=gamma,
                          recon_reduction=recon_reduction, recon_normalize=recon_normalize)
        self._register_load_state_dict_pre_hook(_upgrade_hook)

    def _compose(self, encoder: nn.Module, prototype: nn.Module | None, distance: nn.Module | None, *,
                 hierarchy: nn.Module | None, gate: nn.Module | None, decoder: nn.Module | None, gamma: float,
                 recon_reduction: str, recon_normalize: bool) -> None:
        if (gate is None) != (hierarchy is None):
            raise ValueError("the gate and the hierarchical graph representation go together: give both or neither")
        if gate is not None and not (isinstance(prototype, GraphPrototype) and prototype.num_params):
            raise ValueError("a gate needs a prototype with parameters to scale (GraphPrototype)")
        self.encoder = encoder
        self.decoder = decoder
        self.prototype = prototype if prototype is not None else MeanPrototype()
        self.hierarchy, self.gate = hierarchy, gate
        self.distance = distance if distance is not None else Distance()
        self.gamma, self.recon_reduction, self.recon_normalize = gamma, recon_reduction, recon_normalize

    @classmethod
    def from_config(cls, cfg: GFLConfig, in_feats: int) -> "GFL":
        """The model a configuration describes (the factory the CLI and checkpoints use)."""
        return cls(in_feats, cfg)

    @property
    def pgnn(self) -> nn.Module | None:
        """The prototype GNN, or ``None`` with a mean prototype."""
        return self.prototype.pgnn if isinstance(self.prototype, GraphPrototype) else None

    def embed(self, g: dgl.DGLGraph, feat: torch.Tensor | Sequence[torch.Tensor] | None = None, *,
              symmetric: bool | None = None) -> torch.Tensor:
        """Node embeddings ``Z = f_theta(A, X)``: ``(N, out_feats)``.

        ``feat``: the node features, by default ``g.ndata["feat"]``; or one
        tensor per graph of a batched ``g`` (see ``NodeEncoder.forward``).
        ``symmetric``: whether ``g`` is, where known (:class:`~gflkit.nn.NodeEncoder` passes it on)."""
        if not isinstance(self.encoder, NodeEncoder):
            return self.encoder(g) if feat is None else self.encoder(g, feat)
        return self.encoder(g, feat, symmetric=symmetric)

    def graph_gate(self, g: dgl.DGLGraph, z: torch.Tensor, z_prop: torch.Tensor | None = None, *,
                   symmetric: bool | None = None):
        """Gate values ``(B, |phi|)`` of each graph of ``g``, or ``None`` without a gate.

        ``z_prop = A_hat z`` may be passed when it is computed anyway."""
        if self.gate is None:
            return None
        _, h = self.hierarchy(g, z, z_prop, symmetric=symmetric)  # (B, graph_feats)
        return self.gate(h)

    def prototypes(self, g: dgl.DGLGraph, z: torch.Tensor, support: torch.Tensor,
                   z_prop: torch.Tensor | None = None, *, symmetric: bool | None = None):
        """Class prototypes ``(B, C, d)`` and gate values from support ids ``(B, C, K)``."""
        gate = self.graph_gate(g, z, z_prop, symmetric=symmetric)
        return self.prototype(g, z, support, gate), gate

    @property
    def needs_prepare(self) -> bool:
        """Whether :meth:`prepare` computes anything: the relational structure of a graph prototype."""
        return isinstance(self.prototype, GraphPrototype)

    def prepare(self, batch: EpisodeBatch) -> None:
        """Compute ahead what :meth:`forward` over ``batch`` reads besides the parameters: the
        prototype's relational structure (``prototype.prepare``, where the prototype has one,
        remembered by :func:`~gflkit.nn.relation.class_relations`). ``forward(batch)`` then finds
        it instead of computing it; the numbers are the same.

        Reads no parameter, so it may run on another thread while the model
        computes (the training step prepares its next meta-batch so).
        """
        if isinstance(self.prototype, GraphPrototype):
            self.prototype.prepare(batch.graph, batch.support)

    @torch.no_grad()
    def class_prototypes(self, g: dgl.DGLGraph, z: torch.Tensor, support: Sequence[torch.Tensor]) -> torch.Tensor:
        """One prototype per class of a new graph, from support sets of any sizes.

        Classes are independent in the PGNN (each has its own relation graph) and
        share the gate, which is computed once; classes with equally many support
        nodes are scored in one call.

        Shapes:
            z: ``(N, d)``; support: ``C`` tensors of ``(K_c,)`` ids; returns ``(C, d)``.
        """
        if self.pgnn is None:
            return torch.stack([z[s].mean(0) for s in support])
        gate = self.graph_gate(g, z)  # (1, |phi|) or None
        protos: list[torch.Tensor | None] = [None] * len(support)
        for k in sorted({len(s) for s in support}):
            classes = [c for c, s in enumerate(support) if len(s) == k]
            ids = torch.stack([support[c] for c in classes]).unsqueeze(0).to(z.device)  # (1, C_k, K)
            out = self.prototype(g, z, ids, gate)[0]  # (C_k, d)
            for j, c in enumerate(classes):
                protos[c] = out[j]
        return torch.stack(protos)

    @torch.no_grad()
    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z: torch.Tensor | None = None, *,
                     nodes: torch.Tensor | None = None) -> torch.Tensor:
        """Scores of every node of a graph (or of ``nodes``) for each class (any classes, any support
        sizes): the distance to each class prototype. ``z``: :meth:`embed` of ``g`` when already computed.

        Shapes:
            support: ``C`` tensors of ``(K_c,)`` ids; returns ``(N, C)`` (``(Q, C)`` with ``nodes``).
        """
        z = self.embed(g) if z is None else z
        protos = self.class_prototypes(g, z, support)
        return chunked(g.num_nodes(), lambda s: self.distance(z[s], protos),
                       nodes=None if nodes is None else nodes.to(z.device))

    @torch.no_grad()
    def shared_embeddings(self, g: dgl.DGLGraph) -> torch.Tensor:
        """The ``z`` :meth:`class_scores` takes for every support set of ``g``."""
        return self.embed(g)

    def forward(self, batch: EpisodeBatch) -> GFLOutput:
        """Score the query nodes of every graph of a batch (:func:`gflkit.graphs.batch_episodes`)."""
        g, symmetric = batch.graph, batch.symmetric
        z = self.embed(g, self._feature_parts(batch), symmetric=symmetric)
        # The decoder and the first hierarchy level are both GCN layers over z:
        # they share one propagation A_hat z.
        z_prop = propagate(g, z, symmetric) if self.decoder is not None and self.gate is not None else None
        protos, gate = self.prototypes(g, z, batch.support, z_prop, symmetric=symmetric)
        scores = self._query_scores(g, z, protos, batch.queries)
        recon = None
        if self.decoder is not None:
            d = self.decoder(g, z, z_prop, symmetric=symmetric)
            recon = recon_loss(g, d, self.recon_reduction, normalize=self.recon_normalize)
        return GFLOutput(scores, protos, recon, gate)

    @property
    def takes_feature_parts(self) -> bool:
        """Whether the encoder takes a batch's features as one tensor per graph; a batch made
        without its features (``batch_episodes(..., features=False)``) then saves their copy."""
        return isinstance(self.encoder, NodeEncoder) and self.encoder.takes_feature_parts

    def _feature_parts(self, batch: EpisodeBatch) -> list[torch.Tensor] | None:
        """The batch's features as one block of rows per graph, where the encoder takes them so
        (``takes_feature_parts``): its first layer then multiplies each graph's block and sums its
        weight gradient graph by graph (:class:`~gflkit.nn.GCNLayer`); ``None``: the features as one tensor.
        A batch made without its features gives its members' own feature tensors."""
        if batch.features is not None:
            return list(batch.features)
        if not self.takes_feature_parts:
            return None
        g = batch.graph
        return list(g.ndata["feat"].split(g.batch_num_nodes().tolist()))

    def _query_scores(self, g: dgl.DGLGraph, z: torch.Tensor, protos: torch.Tensor,
                      queries: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Each graph's query scores ``(Q_b, C)``.

        When the queries are at least half the nodes (as with all-rest
        queries) and the distance allows it, every node is scored against its
        own graph's prototypes and the queries' rows are picked from the small
        ``(N, C)`` scores (``Distance.blocks``); otherwise the queries of all
        graphs are gathered at once, so the backward pass fills one ``(N, d)``
        gradient instead of one per graph.
        """
        counts = [len(q) for q in queries]
        ids = torch.cat(list(queries))
        if isinstance(self.distance, Distance) and 2 * len(ids) >= z.shape[0]:
            every = self.distance.blocks(z, protos, g.batch_num_nodes().tolist())
            if every is not None:
                return list(every[ids].split(counts))
        z_query = z[ids].split(counts)
        return [self.distance(zq, protos[b]) for b, zq in enumerate(z_query)]

    def loss(self, out: GFLOutput, labels: Sequence[torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        """Prototypical cross-entropy (mean over each graph's queries, then over
        graphs) plus ``gamma`` times the reconstruction loss."""
        ce = torch.stack([cross_entropy(s, y) for s, y in zip(out.logits, labels)]).mean()
        total = ce
        parts = {"ce": float(ce.detach())}
        if out.recon_loss is not None:
            total = total + self.gamma * out.recon_loss
            parts["recon"] = float(out.recon_loss.detach())
        return total, parts


def _parts(in_feats: int, cfg: GFLConfig) -> dict:
    """The modules of :class:`GFL` a configuration describes, created in a fixed
    order (encoder, decoder, PGNN, hierarchy, gate) so seeded initialisations
    stay what they were."""
    encoder = make_encoder(cfg.encoder, in_feats, cfg.hidden_feats, cfg.out_feats, cfg.dropout)
    decoder = GraphDecoder(cfg.out_feats, cfg.out_feats) if cfg.recon else None
    prototype: nn.Module = MeanPrototype()
    if cfg.prototype == "pgnn":
        pgnn = PrototypeGNN(cfg.out_feats, cfg.out_feats, cfg.pool, cfg.pgnn_activation, cfg.pgnn_norm)
        prototype = GraphPrototype(pgnn, cfg.similarity, cfg.hops, cfg.mu, cfg.mu0)
    hierarchy = gate = None
    if cfg.uses_hierarchy:
        hierarchy = HierarchicalGraphRepresentation(cfg.out_feats, cfg.graph_feats, cfg.levels, cfg.clusters,
                                                    cfg.aggregator)
        gated = cfg.out_feats if cfg.gate_mode == "feature" else prototype.num_params
        gate = HierarchyGate(cfg.graph_feats, gated, mode=cfg.gate_mode)
    return dict(encoder=encoder, prototype=prototype, distance=Distance(cfg.distance, cfg.cosine_scale),
                hierarchy=hierarchy, gate=gate, decoder=decoder, gamma=cfg.gamma,
                recon_reduction=cfg.recon_reduction, recon_normalize=cfg.recon_normalize)


def _upgrade_hook(state_dict, prefix, *args) -> None:
    """``load_state_dict`` pre-hook: rename the parameters of 0.1.0 checkpoints in place."""
    own = {k[len(prefix):]: k for k in list(state_dict) if k.startswith(prefix)}
    upgraded = upgrade_state_dict({local: state_dict[full] for local, full in own.items()})
    for full in own.values():
        del state_dict[full]
    state_dict.update({prefix + k: v for k, v in upgraded.items()})
