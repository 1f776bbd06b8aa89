"""The interface of baselines that learn from the meta-training graphs."""
from __future__ import annotations

from typing import Any

import dgl
import torch
from torch import nn

from ...config import EpisodeConfig, TrainConfig
from ...data import GraphCollection
from ...episodes import Episode

__all__ = ["TransferBaseline"]


class TransferBaseline(nn.Module):
    """A model trained on the ``train`` graphs, then applied to each test graph.

    Subclasses set :attr:`name`, build their network in ``__init__(in_feats,
    num_classes, **options)`` (options are plain values kept in checkpoints),
    and implement :meth:`fit` and :meth:`predict`.
    """

    name: str = "baseline"

    def __init__(self, in_feats: int, num_classes: int, **options: Any) -> None:
        super().__init__()
        self.in_feats, self.num_classes, self.options = in_feats, num_classes, dict(options)

    def fit(self, collection: GraphCollection, episode_cfg: EpisodeConfig, train_cfg: TrainConfig,
            progress: bool = False) -> dict[str, Any]:
        """Learn from ``collection``'s train (and val) graphs; returns facts to record."""
        raise NotImplementedError

    def predict(self, g: dgl.DGLGraph, episode: Episode) -> torch.Tensor:
        """Predicted classes ``(Q,)`` of ``episode.query``; ``g`` has self-loops
        (:func:`gflkit.models.gfl.prepare_graph`). May adapt on the support set."""
        raise NotImplementedError
