"""node2vec (Grover & Leskovec 2016): biased second-order walks, then as DeepWalk.

The return parameter ``p`` and the in-out parameter ``q`` bias each step of a
walk (:func:`dgl.sampling.node2vec_random_walk`); ``p = q = 1`` gives DeepWalk's
uniform walks. Embedding and classifier are DeepWalk's
(:func:`~gflkit.models.baselines.deepwalk.walk_embedding`, then
:func:`~gflkit.models.baselines.deepwalk.classify_embedding`).
"""
from __future__ import annotations

import dgl
import torch

from ...episodes import Episode
from .common import episode_seed, undirected
from .deepwalk import classify_embedding, walk_embedding

__all__ = ["fit_predict_node2vec"]


def fit_predict_node2vec(
    g: dgl.DGLGraph,
    episode: Episode,
    *,
    num_classes: int,
    seed: int = 0,
    p: float = 1.0,
    q: float = 0.5,
    dim: int = 32,
    walk_length: int = 20,
    walks_per_node: int = 4,
    window: int = 5,
    negatives: int = 5,
    epochs: int = 1,
    pairs_per_node: int | None = 200,
    lr: float = 0.05,
    feat: bool = True,
) -> torch.Tensor:
    """node2vec embedding + features, logistic regression on the support set.

    ``q < 1`` (default 0.5) favours outward, DFS-like walks that reach a
    node's community; DGL's walk generator is seeded with :func:`dgl.seed`
    from ``(seed, graph_id)``.

    Shapes:
        returns ``(Q,)`` predicted classes of ``episode.query``.
    """
    if p <= 0 or q <= 0:
        raise ValueError(f"node2vec needs p > 0 and q > 0, got p={p}, q={q}")

    def walk(h: dgl.DGLGraph, starts: torch.Tensor) -> torch.Tensor:  # biased second-order walks
        return dgl.sampling.node2vec_random_walk(h, starts, p, q, walk_length)

    emb = walk_embedding(undirected(g), walk, seed=episode_seed(seed, episode.graph_id), walks_per_node=walks_per_node,
                         dim=dim, window=window, negatives=negatives, epochs=epochs, pairs_per_node=pairs_per_node,
                         lr=lr)
    return classify_embedding(g, episode, emb, num_classes=num_classes, feat=feat)
