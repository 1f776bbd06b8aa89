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

import dgl
import torch

from ...episodes import Episode
from .agf import GCNClassifier

__all__ = ["TransferHead"]


class TransferHead(GCNClassifier):
    """Zero-shot :class:`GCNClassifier` (same options)."""

    name = "transfer-head"

    @torch.no_grad()
    def node_scores(self, g: dgl.DGLGraph, episode: Episode) -> torch.Tensor:
        """Class logits of every node; the support set is not used.

        Shapes:
            returns ``(N, num_classes)``.
        """
        return self(g)

    @torch.no_grad()
    def predict(self, g: dgl.DGLGraph, episode: Episode) -> torch.Tensor:
        """Shapes: returns ``(Q,)`` classes of ``episode.query``."""
        return self(g)[episode.query].argmax(1)
