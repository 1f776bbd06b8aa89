"""All-Graph-Finetune (AGF): pre-train a GCN classifier on every training graph, fine-tune per test graph.

Following the paper's appendix B (after Triantafillou et al. 2020), the
network, GFL's two-layer 32-unit GCN encoder and a linear layer over the
shared label set, is first trained on the meta-training graphs fed in turn,
with cross-entropy on their labelled nodes. On a test graph a copy is
fine-tuned on the support set for a fixed number of Adam steps (GFL's
learning rate, 0.01) and then classifies the queries.
"""
from __future__ import annotations

import copy
from typing import Sequence

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ...episodes import Episode
from ...graphs import receptive_field
from ...nn import GCNEncoder
from ..support_sets import check_head_classes, flat_support
from .base import TransferBaseline
from .common import support_targets

__all__ = ["GCNClassifier", "AllGraphFinetune"]

#: Graph convolutions of the network: the hops a node's output reads.
HOPS = 2


class GCNClassifier(TransferBaseline):
    """GCN encoder + linear head, pre-trained on the labelled nodes of the train graphs.

    Args:
        in_feats: node feature size.
        num_classes: size of the shared label set.
        hidden_feats, out_feats: GCN widths (paper: 32, 32).
        dropout: encoder dropout during pre-training.
        pretrain: ``"labelled"`` trains on every labelled node of a train
            graph; ``"episode"`` only on the step's support and query nodes.

    Shapes:
        ``forward(g)`` -> ``(N, num_classes)`` logits; :meth:`embed` -> ``(N, out_feats)``.
    """

    name = "gcn-classifier"
    steps_in_parts = True
    embeds = True

    def __init__(self, in_feats: int, num_classes: int, *, hidden_feats: int = 32, out_feats: int = 32,
                 dropout: float = 0.0, pretrain: str = "labelled", **options) -> None:
        if pretrain not in ("labelled", "episode"):
            raise ValueError(f"pretrain={pretrain!r}: choose labelled or episode")
        super().__init__(in_feats, num_classes, hidden_feats=hidden_feats, out_feats=out_feats,
                         dropout=dropout, pretrain=pretrain, **options)
        self.encoder = GCNEncoder(in_feats, hidden_feats, out_feats, dropout)
        self.head = nn.Linear(out_feats, num_classes)

    def embed(self, g: dgl.DGLGraph) -> torch.Tensor:
        return self.encoder(g)

    def forward(self, g: dgl.DGLGraph) -> torch.Tensor:
        return self.head(self.embed(g))

    def step_loss(self, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                  labels: Sequence[torch.Tensor]) -> torch.Tensor:
        """Cross-entropy per graph on its labelled (or episode) nodes, averaged over graphs."""
        losses = []
        for g, ep, label in zip(graphs, episodes, labels):
            if self.options["pretrain"] == "labelled":
                nodes = torch.nonzero(label >= 0).squeeze(1)
                target = label[nodes]
            else:
                support, target = support_targets(ep)
                nodes, target = torch.cat([support, ep.query]), torch.cat([target, ep.query_label])
            losses.append(F.cross_entropy(self(g)[nodes], target))
        return torch.stack(losses).mean()


class AllGraphFinetune(GCNClassifier):
    """AGF: :class:`GCNClassifier` fine-tuned on each test graph's support set.

    Args:
        finetune_steps: Adam steps on the support set of a test graph.
        finetune_lr: their learning rate (GFL's 0.01).
        (the rest as :class:`GCNClassifier`)
    """

    name = "agf"
    adapts = True
    head_classes = True

    @property
    def adapts_in_threads(self) -> bool:
        """Fine-tuning trains a copy, so graphs may be scored side by side unless dropout draws."""
        return self.encoder.dropout.p == 0

    def __init__(self, in_feats: int, num_classes: int, *, finetune_steps: int = 20,
                 finetune_lr: float = 0.01, **options) -> None:
        if finetune_steps < 0 or finetune_lr <= 0:
            raise ValueError("finetune_steps must be >= 0 and finetune_lr > 0")
        super().__init__(in_feats, num_classes, finetune_steps=finetune_steps, finetune_lr=finetune_lr, **options)

    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z: torch.Tensor | None = None, *,
                     nodes: torch.Tensor | None = None) -> torch.Tensor:
        """Class logits of every node of a graph (or of ``nodes``) after fine-tuning a copy on its
        support set (at most :attr:`num_classes` classes: the head's first ``C`` outputs). ``z`` is
        ignored: the encoder is fine-tuned too.

        Shapes:
            support: ``C`` tensors of ``(K_c,)`` ids; returns ``(N, C)`` (``(Q, C)`` with ``nodes``).
        """
        check_head_classes(self, support)
        ids, target = flat_support(support)
        logits = self._finetuned_logits(g, ids, target, len(support))
        return logits if nodes is None else logits[nodes]

    def _finetuned_logits(self, g: dgl.DGLGraph, ids: torch.Tensor, target: torch.Tensor,
                          width: int | None = None) -> torch.Tensor:
        """``finetune_steps`` Adam steps of a copy on the nodes ``ids`` (cross-entropy over the head's
        first ``width`` outputs, all by default), then its logits ``(N, width)`` of every node.

        The steps read the outputs at ``ids`` alone, so they run on their receptive field
        (:func:`~gflkit.graphs.receptive_field`, two hops for the two GCN layers): the same outputs
        from the nodes near the support set."""
        tuned = copy.deepcopy(self)
        tuned.train()
        opt = torch.optim.Adam(tuned.parameters(), lr=self.options["finetune_lr"])
        field = receptive_field(g, ids, HOPS) if self.options["finetune_steps"] else None
        near, at = field if field is not None else (g, ids)
        for _ in range(self.options["finetune_steps"]):
            loss = F.cross_entropy(tuned(near)[at][:, :width], target)
            opt.zero_grad()
            loss.backward()
            opt.step()
        tuned.eval()
        with torch.no_grad():
            return tuned(g)[:, :width]
