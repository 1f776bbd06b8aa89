"""The interface of baselines that learn from the meta-training graphs."""
from __future__ import annotations

from typing import Any, Sequence

import dgl
import torch
from torch import nn

from ...config import EpisodeConfig, TrainConfig
from ...data import GraphCollection
from ...episodes import Episode, EpisodeSampler
from ...graphs import GraphCache
from ...training.loop import fit_loop
from ...evaluation.scoring import transfer_accuracies

__all__ = ["TransferBaseline"]


class TransferBaseline(nn.Module):
    """A model trained on the ``train`` graphs, then applied to each test graph.

    Subclasses set :attr:`name`, build their network in ``__init__(in_feats,
    num_classes, **options)`` (options are plain values kept in checkpoints),
    and implement :meth:`step_loss` and :meth:`predict`; the default
    :meth:`fit` runs the shared training loop.
    """

    name: str = "baseline"

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

    def fit(self, collection: GraphCollection, episode_cfg: EpisodeConfig, train_cfg: TrainConfig,
            progress: bool = False, **loop_options: Any) -> dict[str, Any]:
        """Learn from ``collection``'s train graphs, keeping the weights best on its val graphs.

        As :func:`gflkit.training.meta.meta_train`: each step draws ``meta_batch`` train
        graphs and one episode each (seeded from ``(seed, graph_id, step)``),
        takes an Adam step on :meth:`step_loss`, and every ``eval_every``
        steps scores :meth:`predict` on the val graphs; training stops after
        ``patience`` rounds without gain. ``loop_options`` (``resume``,
        ``save``, ``checkpoint_every``) go to :func:`gflkit.training.loop.fit_loop`.

        Returns:
            ``step`` and ``val_accuracy`` (fraction; NaN without val graphs) of
            the kept weights, and ``history``, one dict per step.
        """
        def step_loss(cache: GraphCache, sampler: EpisodeSampler, ids: list[int], step: int):
            graphs = [cache[gid] for gid in ids]
            episodes = [sampler.episode(gid, step) for gid in ids]
            return self.step_loss(graphs, episodes, [collection.graphs[gid].ndata["label"] for gid in ids]), {}

        rows, best_step, best_val = fit_loop(
            self, collection, episode_cfg, train_cfg, step_loss=step_loss, score=transfer_accuracies,
            name=self.name, progress=progress, **loop_options,
        )
        return {"step": best_step, "val_accuracy": best_val, "history": rows}

    def predict(self, g: dgl.DGLGraph, episode: Episode) -> torch.Tensor:
        """Predicted classes ``(Q,)`` of ``episode.query``; ``g`` has self-loops
        (:func:`gflkit.graphs.prepare_graph`). May adapt on the support set."""
        raise NotImplementedError
