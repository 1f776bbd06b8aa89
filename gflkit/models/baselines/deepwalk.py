"""DeepWalk (Perozzi et al. 2014): uniform random walks, skip-gram, then a linear classifier.

The embedding is :class:`dgl.nn.DeepWalk` (walks by :func:`dgl.sampling.random_walk`,
skip-gram with negatives drawn from the degree distribution to the power 3/4).
As in the paper's appendix B, it is concatenated with the node features and a
multiclass logistic regression is fitted on the support nodes of the test graph.
"""
from __future__ import annotations

import dgl
import torch

from ...episodes import Episode
from ...threads import one_thread
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
    """Skip-gram embedding of ``traces`` (:func:`~.skipgram.train_skipgram`), then :func:`classify_embedding`.

    ``skipgram`` holds the keyword options of :func:`~.skipgram.train_skipgram`.

    Shapes:
        traces ``(W, L)`` -> ``(Q,)`` predicted classes of ``episode.query``.
    """
    emb = train_skipgram(traces, g.num_nodes(), generator=generator, **skipgram)
    return classify_embedding(g, episode, emb, num_classes=num_classes, feat=feat)


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
    batch_size: int = 64,
    lr: float = 0.05,
) -> torch.Tensor:
    """Train :class:`dgl.nn.DeepWalk` on ``h`` and return its node embedding.

    Reproducible for a given ``seed``, and the global torch and Python
    generators are left as they were: the initial embedding and the walk
    order come from a seeded :class:`torch.Generator`; the walks and the negatives (``fast_neg=False``:
    :func:`dgl.random.choice`) come from DGL's generator, seeded and run on one
    thread by :func:`~.common.dgl_walks`; the training runs on one torch thread, since on several the
    sparse gradients' repeated rows are summed in an order that changes from run to run. Isolated
    nodes get a self-loop, so no walk stops early (``DeepWalk`` cannot take padded walks).

    Shapes:
        returns ``(N, dim)``.
    """
    from dgl.nn import DeepWalk

    gen = torch.Generator().manual_seed(seed)
    isolated = torch.nonzero(h.in_degrees() == 0).flatten()
    h = dgl.add_edges(h, isolated, isolated)

    def train() -> torch.Tensor:
        with torch.random.fork_rng(devices=[]):  # DeepWalk's own init draws from the global generator
            model = DeepWalk(h, emb_dim=dim, walk_length=walk_length + 1, window_size=window,
                             negative_size=negatives, fast_neg=False, sparse=True)
        with torch.no_grad():  # so it is drawn again, from ours
            model.node_embed.weight.uniform_(-1.0 / dim, 1.0 / dim, generator=gen)
        opt = torch.optim.SparseAdam(list(model.parameters()), lr=lr)
        starts = torch.arange(h.num_nodes()).repeat(walks_per_node)
        for _ in range(epochs):
            for batch in starts[torch.randperm(starts.numel(), generator=gen)].split(batch_size):
                loss = model(model.sample(batch))  # walks (B, walk_length + 1)
                opt.zero_grad()
                loss.backward()
                opt.step()
        return model.node_embed.weight.detach().clone()

    with one_thread():  # on several threads the sparse gradients' repeated rows are summed in a varying order
        return dgl_walks(train, seed)


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
    batch_size: int = 64,
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
                             negatives=negatives, epochs=epochs, batch_size=batch_size, lr=lr)
    return classify_embedding(g, episode, emb, num_classes=num_classes, feat=feat)
