"""DeepWalk (Perozzi et al. 2014): uniform random walks, skip-gram, then a linear classifier.

As in the paper's appendix B, the unsupervised embedding is concatenated with
the node features and a multiclass logistic regression is fitted on the
support nodes of the test graph.
"""
from __future__ import annotations

import dgl
import torch

from ...episodes import Episode
from .common import dgl_walks, episode_seed, fit_predict_linear, standardise, support_targets, undirected
from .skipgram import train_skipgram

__all__ = ["fit_predict_deepwalk", "classify_with_walks"]


def classify_with_walks(
    g: dgl.DGLGraph,
    episode: Episode,
    traces: torch.Tensor,
    *,
    num_classes: int,
    generator: torch.Generator,
    feat: bool = True,
    **skipgram,
) -> torch.Tensor:
    """Skip-gram embedding of ``traces``, joined to the features, classified linearly.

    Both blocks are standardised so neither dominates the L2 penalty;
    ``skipgram`` holds the keyword options of :func:`train_skipgram`.

    Shapes:
        traces ``(W, L)`` -> ``(Q,)`` predicted classes of ``episode.query``.
    """
    emb = train_skipgram(traces, g.num_nodes(), generator=generator, **skipgram)
    x = standardise(emb)
    if feat:
        x = torch.cat([standardise(g.ndata["feat"].float()), x], 1)  # (N, F + dim)
    support, target = support_targets(episode)
    return fit_predict_linear(x, support, target, episode.query, num_classes)


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

    Walks come from :func:`dgl.sampling.random_walk`, which draws from DGL's
    own generator: it is seeded with :func:`dgl.seed` from ``(seed, graph_id)``
    and run on one thread (:func:`~.common.dgl_walks`), so a run is
    reproducible. The walks do not depend on the support set.

    Shapes:
        returns ``(Q,)`` predicted classes of ``episode.query``.
    """
    s = episode_seed(seed, episode.graph_id)
    h = undirected(g)
    starts = torch.arange(h.num_nodes()).repeat(walks_per_node)
    traces, _ = dgl_walks(lambda: dgl.sampling.random_walk(h, starts, length=walk_length), s)  # (N * walks, L + 1)
    gen = torch.Generator().manual_seed(s)
    return classify_with_walks(g, episode, traces, num_classes=num_classes, generator=gen, feat=feat, dim=dim,
                               window=window, negatives=negatives, epochs=epochs, pairs_per_node=pairs_per_node, lr=lr)
