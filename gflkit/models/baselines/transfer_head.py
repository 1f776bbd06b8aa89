"""Transfer-Head: a GCN classifier over the shared label set, applied zero-shot.

The network is All-Graph-Finetune's (:class:`~gflkit.models.baselines.agf.GCNClassifier`:
GFL's two-layer 32-unit GCN encoder and a linear softmax head over the shared
classes), trained with cross-entropy on the labelled nodes of the train graphs
(selected on the val graphs). On a test graph it classifies every query with
its head and ignores the support set: a transfer baseline that needs no
few-shot adaptation at all. Where it matches a few-shot model, the test
graphs' support labels add little to what the train graphs already teach.
"""
from __future__ import annotations

from typing import Sequence

import dgl
import torch

from .agf import GCNClassifier

__all__ = ["TransferHead"]


class TransferHead(GCNClassifier):
    """Zero-shot :class:`GCNClassifier` (same options)."""

    name = "transfer-head"
    uses_support = False

    @torch.no_grad()
    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z: torch.Tensor | None = None, *,
                     nodes: torch.Tensor | None = None) -> torch.Tensor:
        """The head's logits of every node (or of ``nodes``) for the classes it was trained with; the
        support set is not read (``uses_support`` is false: it cannot predict a new graph's classes).

        Shapes:
            returns ``(N, num_classes)`` (``(Q, num_classes)`` with ``nodes``).
        """
        logits = self(g)
        return logits if nodes is None else logits[nodes]
