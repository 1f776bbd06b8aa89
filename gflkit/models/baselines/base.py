"""The interface of baselines that learn from the meta-training graphs."""
from __future__ import annotations

from typing import Any, Sequence

import dgl
import torch
from torch import nn

from ...episodes import Episode

__all__ = ["TransferBaseline"]


class TransferBaseline(nn.Module):
    """A model trained on the ``train`` graphs, then applied to each test graph.

    Subclasses set :attr:`name`, build their network in ``__init__(in_feats,
    num_classes, **options)`` (options are plain values kept in checkpoints),
    and implement :meth:`step_loss` and :meth:`predict`;
    :func:`gflkit.training.meta.fit_transfer` runs the shared training loop on
    :meth:`step_loss`.
    """

    name: str = "baseline"
    #: Whether :meth:`class_scores` (where defined) adapts a classifier head, and so scores at most
    #: :attr:`num_classes` classes; models that compare embeddings score any classes.
    head_classes: bool = False

    def __init__(self, in_feats: int, num_classes: int, **options: Any) -> None:
        super().__init__()
        self.in_feats, self.num_classes, self.options = in_feats, num_classes, dict(options)

    def step_loss(self, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                  labels: Sequence[torch.Tensor]) -> torch.Tensor:
        """The training loss of one step on a meta-batch.

        Args:
            graphs: the batch's graphs with self-loops (:func:`~gflkit.graphs.prepare_graph`).
            episodes: one episode per graph, drawn for this step.
            labels: every node's label per graph (``-1`` unlabelled), ``(N_b,)``.
        """
        raise NotImplementedError

    def predict(self, g: dgl.DGLGraph, episode: Episode) -> torch.Tensor:
        """Predicted classes ``(Q,)`` of ``episode.query``; ``g`` has self-loops
        (:func:`gflkit.graphs.prepare_graph`). May adapt on the support set."""
        raise NotImplementedError
