"""Meta-testing: accuracy per graph, then mean and 95% CI over graphs.

As in the paper's tables, each test graph gets K labelled support nodes per
class and every other labelled node is a query; a graph's accuracy is averaged
over ``episodes`` support draws, and the table reports the mean over graphs
with ``1.96 * std / sqrt(n_graphs)``.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

from .data import GraphCollection
from .episodes import Episode, EpisodeSampler
from .batching import GraphCache, batch_episodes
from .models.gfl import GFL
from .results import mean_ci

__all__ = ["graph_accuracies", "baseline_accuracies", "transfer_accuracies", "summarise"]


@torch.no_grad()
def graph_accuracies(
    model: GFL,
    sampler: EpisodeSampler,
    episodes: int = 1,
    cache: GraphCache | None = None,
    batch_size: int = 5,
) -> dict[int, float]:
    """Query accuracy of ``model`` on each graph of ``sampler``, averaged over episodes."""
    cache = cache or GraphCache(sampler.collection)
    was_training = model.training
    model.eval()
    acc: dict[int, list[float]] = {gid: [] for gid in sampler.graph_ids}
    for gid in sampler.graph_ids:  # the episodes of a graph share one encoder pass
        eps = [sampler.episode(gid, e) for e in range(episodes)]
        for scores, ep in zip(model.score_episodes(cache[gid], eps), eps):
            acc[gid].append(float((scores.argmax(1) == ep.query_label).float().mean()))
    model.train(was_training)
    return {gid: float(np.mean(v)) for gid, v in acc.items()}


def baseline_accuracies(
    fit_predict: Callable[..., torch.Tensor],
    sampler: EpisodeSampler,
    episodes: int = 1,
    seed: int = 0,
    **kwargs,
) -> dict[int, float]:
    """Accuracy of a per-graph baseline ``fit_predict(g, episode, seed=...) -> predictions``."""
    acc = {}
    for gid in sampler.graph_ids:
        g = sampler.collection.graphs[gid]
        vals = []
        for e in range(episodes):
            ep: Episode = sampler.episode(gid, e)
            pred = fit_predict(g, ep, num_classes=sampler.num_classes, seed=seed, **kwargs)
            vals.append(float((pred == ep.query_label).float().mean()))
        acc[gid] = float(np.mean(vals))
    return acc


@torch.no_grad()
def transfer_accuracies(model, sampler: EpisodeSampler, episodes: int = 1,
                        cache: GraphCache | None = None) -> dict[int, float]:
    """Accuracy of a :class:`~gflkit.models.baselines.TransferBaseline` per graph."""
    cache = cache or GraphCache(sampler.collection)
    model.eval()
    acc = {}
    for gid in sampler.graph_ids:
        vals = []
        for e in range(episodes):
            ep = sampler.episode(gid, e)
            with torch.enable_grad():  # baselines may adapt on the support set
                pred = model.predict(cache[gid], ep)
            vals.append(float((pred == ep.query_label).float().mean()))
        acc[gid] = float(np.mean(vals))
    return acc


def summarise(per_graph: dict[int, float] | Sequence[float]) -> dict[str, float]:
    """``accuracy``, ``ci95`` and ``std`` in percent over graphs."""
    values = list(per_graph.values()) if isinstance(per_graph, dict) else list(per_graph)
    mean, ci, std = mean_ci([100 * v for v in values])
    return {"n_graphs": len(values), "accuracy": mean, "ci95": ci, "std": std}
