"""MAML (Finn, Abbeel & Levine, ICML 2017) with GFL's GCN encoder and a linear head.

For each graph of a meta-batch the shared initialisation ``theta`` takes a
few gradient steps on the episode's support set (inner learning rate 0.001,
as in the paper's appendix B), ``theta' = theta - alpha grad L_S(theta)``;
the meta-loss is the query cross-entropy under ``theta'``, minimised over
``theta`` by Adam (the training loop's learning rate, 0.01). The network runs
on weights given as tensors (:func:`gflkit.nn.encoder.gcn_blocks`, then the head)
so ``theta'`` stays in the autograd graph and the module's parameters are never
rebound: a meta-batch may be computed in parts side by side, and graphs scored
side by side; ``first_order=True`` drops the second derivatives.
"""
from __future__ import annotations

from typing import Sequence

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ...episodes import Episode
from ...graphs import receptive_field
from ...nn import GCNEncoder
from ...nn.encoder import gcn_blocks
from ..support_sets import check_head_classes, flat_support
from .base import TransferBaseline
from .common import support_targets

__all__ = ["MAML"]

Params = dict[str, torch.Tensor]

#: Graph convolutions of the network: the hops a node's output reads.
HOPS = 2


class MAML(TransferBaseline):
    """Model-agnostic meta-learning of a GCN node classifier.

    Args:
        in_feats: node feature size.
        num_classes: size of the shared label set.
        hidden_feats, out_feats: GCN widths (paper: 32, 32).
        inner_lr: step size of the inner loop (paper: 0.001).
        inner_steps: inner steps during meta-training.
        test_steps: inner steps when adapting to a test graph (more than in
            training, as Finn et al. do).
        first_order: first-order MAML, without second derivatives (default):
            the second-order term is scaled by ``inner_lr`` (0.001), so it
            changes the meta-gradient little, yet it doubles the cost of a
            step on 4.5k-node graphs.

    Shapes:
        ``forward(g)`` -> ``(N, num_classes)`` logits.
    """

    name = "maml"
    embeds = True
    adapts = True
    head_classes = True

    def __init__(self, in_feats: int, num_classes: int, *, hidden_feats: int = 32, out_feats: int = 32,
                 inner_lr: float = 0.001, inner_steps: int = 5, test_steps: int = 10,
                 first_order: bool = True) -> None:
        if inner_lr <= 0 or inner_steps < 1 or test_steps < 0:
            raise ValueError("MAML needs inner_lr > 0, inner_steps >= 1 and test_steps >= 0")
        super().__init__(in_feats, num_classes, hidden_feats=hidden_feats, out_feats=out_feats,
                         inner_lr=inner_lr, inner_steps=inner_steps, test_steps=test_steps,
                         first_order=first_order)
        self.encoder = GCNEncoder(in_feats, hidden_feats, out_feats)
        self.head = nn.Linear(out_feats, num_classes)

    steps_in_parts = True
    adapts_in_threads = True

    def forward(self, g: dgl.DGLGraph) -> torch.Tensor:
        return self.head(self.encoder(g))

    def _logits(self, params: Params, g: dgl.DGLGraph) -> torch.Tensor:
        """:meth:`forward` under the weights ``params`` (named as :meth:`named_parameters` names them)."""
        encoder = {name[len("encoder."):]: p for name, p in params.items() if name.startswith("encoder.")}
        h = gcn_blocks([encoder], g, g.ndata["feat"], [g.num_nodes()])
        return F.linear(h, params["head.weight"], params["head.bias"])

    def embed(self, g: dgl.DGLGraph) -> torch.Tensor:
        """Node embeddings of the meta-learned (unadapted) encoder. Shapes: ``(N, out_feats)``."""
        return self.encoder(g)

    def adapt(self, g: dgl.DGLGraph, episode: Episode, steps: int | None = None,
              create_graph: bool = False) -> tuple[Params, list[float]]:
        """Inner loop: SGD steps from ``theta`` on the support cross-entropy.

        Args:
            g: graph with self-loops.
            episode: its support set is the adaptation data.
            steps: number of steps (default ``test_steps``).
            create_graph: keep second derivatives (second-order meta-gradient).

        Returns:
            The adapted parameters ``theta'`` (differentiable with respect to
            ``theta``) and the support loss before each step and after the last.
        """
        support, target = support_targets(episode)
        return self._adapt(g, support, target, steps, create_graph)

    def _adapt(self, g: dgl.DGLGraph, ids: torch.Tensor, target: torch.Tensor, steps: int | None = None,
               create_graph: bool = False, final_loss: bool = True) -> tuple[Params, list[float]]:
        """:meth:`adapt` on the nodes ``ids`` of classes ``target``; ``final_loss=False`` skips the
        loss after the last step.

        The support loss reads the network's outputs at ``ids`` alone, so the inner steps run on
        their receptive field (:func:`~gflkit.graphs.receptive_field`, two hops for the two GCN
        layers): the same outputs from the few hundred nodes near the support set.
        """
        steps = self.options["test_steps"] if steps is None else steps
        field = receptive_field(g, ids, HOPS)
        if field is not None:
            g, ids = field
        params: Params = dict(self.named_parameters())
        losses = []
        for _ in range(steps):
            loss = F.cross_entropy(self._logits(params, g)[ids], target)
            grads = torch.autograd.grad(loss, list(params.values()), create_graph=create_graph)
            params = {name: p - self.options["inner_lr"] * d for (name, p), d in zip(params.items(), grads)}
            losses.append(float(loss.detach()))
        if final_loss:
            with torch.no_grad():
                losses.append(float(F.cross_entropy(self._logits(params, g)[ids], target)))
        return params, losses

    def step_loss(self, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                  labels: Sequence[torch.Tensor]) -> torch.Tensor:
        """Mean over graphs of the query loss after the inner loop (the meta-objective)."""
        second_order = not self.options["first_order"]
        losses = []
        for g, ep in zip(graphs, episodes):
            params, _ = self.adapt(g, ep, self.options["inner_steps"], create_graph=second_order)
            losses.append(F.cross_entropy(self._logits(params, g)[ep.query], ep.query_label))
        return torch.stack(losses).mean()

    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z: torch.Tensor | None = None, *,
                     nodes: torch.Tensor | None = None) -> torch.Tensor:
        """Adapt on a graph's support set (``test_steps`` steps); the head's first ``C`` logits of
        every node, or of ``nodes`` (at most :attr:`num_classes` classes). ``z`` is ignored: ``theta``
        adapts as a whole.

        Shapes:
            support: ``C`` tensors of ``(K_c,)`` ids; returns ``(N, C)`` (``(Q, C)`` with ``nodes``).
        """
        check_head_classes(self, support)
        ids, target = flat_support(support)
        params, _ = self._adapt(g, ids, target, final_loss=False)
        with torch.no_grad():
            logits = self._logits(params, g)[:, : len(support)]
        return logits if nodes is None else logits[nodes]
