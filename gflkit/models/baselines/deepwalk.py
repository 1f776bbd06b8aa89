"""DeepWalk (Perozzi et al. 2014): uniform random walks, skip-gram, then a linear classifier.

The embedding: uniform walks from every node (:func:`dgl.sampling.random_walk`),
then skip-gram with negatives drawn from the context frequency to the power 3/4
(:func:`~.skipgram.train_skipgram`, node2vec's trainer with node2vec's budget).
As in the paper's appendix B, it is concatenated with the node features and a
multiclass logistic regression is fitted on the support nodes of the test graph.
"""
from __future__ import annotations

from typing import Callable

import dgl
import torch

from ...episodes import Episode
from .common import dgl_walks, episode_seed, fit_predict_linear, standardise, support_targets, undirected
from .skipgram import train_skipgram

__all__ = ["fit_predict_deepwalk"]


def classify_embedding(g: dgl.DGLGraph, episode: Episode, emb: torch.Tensor, *, num_classes: int,
                       feat: bool = True) -> torch.Tensor:
    """Node embedding ``emb`` joined to the features, classified linearly on the support set.

    Both blocks are standardised so neither dominates the L2 penalty.

    Shapes:
        emb ``(N, d)`` -> ``(Q,)`` predicted classes of ``episode.query``.
    """
    x = standardise(emb)
    if feat:
        x = torch.cat([standardise(g.ndata["feat"].float()), x], 1)  # (N, F + d)
    support, target = support_targets(episode)
    return fit_predict_linear(x, support, target, episode.query, num_classes)


def walk_embedding(
    h: dgl.DGLGraph,
    walk: Callable[[dgl.DGLGraph, torch.Tensor], torch.Tensor],
    *,
    seed: int,
    walks_per_node: int = 4,
    **skipgram,
) -> torch.Tensor:
    """Skip-gram embedding (:func:`~.skipgram.train_skipgram`) of ``walks_per_node`` walks from every node of ``h``.

    ``walk(h, starts)`` draws the walks (``-1`` padded) from DGL's generator, seeded with ``seed`` and run
    on one thread by :func:`~.common.dgl_walks`; the initial embedding, the pair order and the negatives
    come from a :class:`torch.Generator` seeded with ``seed``, so the global generators are left as they
    were. ``skipgram`` holds the keyword options of :func:`~.skipgram.train_skipgram`. DeepWalk and
    node2vec are this with their own walks.

    Shapes:
        returns ``(N, dim)``.
    """
    starts = torch.arange(h.num_nodes()).repeat(walks_per_node)
    traces = dgl_walks(lambda: walk(h, starts), seed)  # (N * walks_per_node, L + 1)
    return train_skipgram(traces, h.num_nodes(), generator=torch.Generator().manual_seed(seed), **skipgram)


def deepwalk_embedding(
    h: dgl.DGLGraph,
    *,
    seed: int,
    dim: int = 32,
    walk_length: int = 20,
    walks_per_node: int = 4,
    window: int = 5,
    negatives: int = 5,
    epochs: int = 1,
    pairs_per_node: int | None = 200,
    lr: float = 0.05,
) -> torch.Tensor:
    """DeepWalk's node embedding of ``h``: uniform walks from every node (:func:`dgl.sampling.random_walk`),
    then node2vec's skip-gram with the same budget (:func:`walk_embedding`), so DeepWalk and node2vec
    differ in their walks alone. Reproducible for a given ``seed``; the global torch and Python
    generators are left as they were. An isolated node's walk stops at once, so it keeps its initial
    embedding.

    Shapes:
        returns ``(N, dim)``.
    """
    return walk_embedding(h, lambda g, starts: dgl.sampling.random_walk(g, starts, length=walk_length)[0],
                          seed=seed, walks_per_node=walks_per_node, dim=dim, window=window, negatives=negatives,
                          epochs=epochs, pairs_per_node=pairs_per_node, lr=lr)


def fit_predict_deepwalk(
    g: dgl.DGLGraph,
    episode: Episode,
    *,
    num_classes: int,
    seed: int = 0,
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
    """DeepWalk embedding + features, logistic regression on the support set.

    The embedding (:func:`deepwalk_embedding`) is seeded from ``(seed,
    graph_id)`` and does not depend on the support set.

    Shapes:
        returns ``(Q,)`` predicted classes of ``episode.query``.
    """
    emb = deepwalk_embedding(undirected(g), seed=episode_seed(seed, episode.graph_id), dim=dim,
                             walk_length=walk_length, walks_per_node=walks_per_node, window=window,
                             negatives=negatives, epochs=epochs, pairs_per_node=pairs_per_node, lr=lr)
    return classify_embedding(g, episode, emb, num_classes=num_classes, feat=feat)
