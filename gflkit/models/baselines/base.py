"""The interface of baselines that learn from the meta-training graphs, and their training loop."""
from __future__ import annotations

import copy
import time
from typing import Any, Sequence

import dgl
import numpy as np
import torch
from torch import nn

from ...config import EpisodeConfig, TrainConfig
from ...data import GraphCollection
from ...episodes import Episode, EpisodeSampler
from ...errors import GFLError
from ...evaluate import GraphCache, transfer_accuracies

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
            graphs: the batch's graphs with self-loops (:func:`~gflkit.models.gfl.prepare_graph`).
            episodes: one episode per graph, drawn for this step.
            labels: every node's label per graph (``-1`` unlabelled), ``(N_b,)``.
        """
        raise NotImplementedError

    def fit(self, collection: GraphCollection, episode_cfg: EpisodeConfig, train_cfg: TrainConfig,
            progress: bool = False) -> dict[str, Any]:
        """Learn from ``collection``'s train graphs, keeping the weights best on its val graphs.

        As :func:`gflkit.train.meta_train`: each step draws ``meta_batch`` train
        graphs and one episode each (seeded from ``(seed, graph_id, step)``),
        takes an Adam step on :meth:`step_loss`, and every ``eval_every``
        steps scores :meth:`predict` on the val graphs; training stops after
        ``patience`` rounds without gain.

        Returns:
            ``step`` and ``val_accuracy`` (fraction; NaN without val graphs) of
            the kept weights, and ``history``, one dict per step.
        """
        seed = train_cfg.seed
        sampler = EpisodeSampler(collection, "train", episode_cfg, seed)
        if not sampler.graph_ids:
            raise GFLError(
                f"collection {collection.name!r} has no usable train graphs for k_shot={episode_cfg.k_shot}"
            )
        val_sampler = EpisodeSampler(collection, "val", episode_cfg, seed)
        cache = GraphCache(collection)
        opt = torch.optim.Adam(self.parameters(), lr=train_cfg.lr, weight_decay=train_cfg.weight_decay)
        train_ids = np.asarray(sampler.graph_ids)
        best_val, best_step, best_state, stale = -1.0, 0, copy.deepcopy(self.state_dict()), 0
        rows: list[dict[str, float]] = []
        steps = range(1, train_cfg.steps + 1)
        bar = None
        if progress:
            from tqdm.auto import tqdm

            steps = bar = tqdm(steps, desc=f"training {self.name}", unit="step", leave=False)
        self.train()
        for step in steps:
            start = time.perf_counter()
            rng = np.random.default_rng([seed, 2, step])
            ids = rng.choice(train_ids, size=train_cfg.meta_batch, replace=len(train_ids) < train_cfg.meta_batch)
            ids = [int(gid) for gid in ids]
            loss = self.step_loss([cache[gid] for gid in ids], [sampler.episode(gid, step) for gid in ids],
                                  [collection.graphs[gid].ndata["label"] for gid in ids])
            opt.zero_grad()
            loss.backward()
            opt.step()
            row = {"step": step, "loss": float(loss.detach()), "seconds": time.perf_counter() - start}
            if step % train_cfg.eval_every == 0 or step == train_cfg.steps:
                if val_sampler.graph_ids:
                    accs = transfer_accuracies(self, val_sampler, train_cfg.val_episodes, cache)
                    self.train()
                    val = row["val_accuracy"] = float(np.mean(list(accs.values())))
                else:  # no validation graphs: keep the latest weights
                    val, row["val_accuracy"] = float(step), float("nan")
                if val > best_val:
                    best_val, best_step, stale = val, step, 0
                    best_state = copy.deepcopy(self.state_dict())
                else:
                    stale += 1
                if bar is not None:
                    bar.set_postfix(loss=f"{row['loss']:.3f}", val=f"{row['val_accuracy']:.3f}")
            rows.append(row)
            if stale >= train_cfg.patience:
                break
        if bar is not None:
            bar.close()
        self.load_state_dict(best_state)
        self.eval()
        val_accuracy = best_val if val_sampler.graph_ids else float("nan")
        return {"step": best_step, "val_accuracy": val_accuracy, "history": rows}

    def predict(self, g: dgl.DGLGraph, episode: Episode) -> torch.Tensor:
        """Predicted classes ``(Q,)`` of ``episode.query``; ``g`` has self-loops
        (:func:`gflkit.models.gfl.prepare_graph`). May adapt on the support set."""
        raise NotImplementedError
