"""Pieces shared by the per-graph baselines: seeds, support targets, a linear classifier."""
from __future__ import annotations

import dgl
import numpy as np
import torch
import torch.nn.functional as F

from ...episodes import Episode

__all__ = ["episode_seed", "support_targets", "undirected", "standardise", "fit_predict_linear", "dgl_walks"]


def episode_seed(seed: int, graph_id: int, stream: int = 0) -> int:
    """An integer seed drawn from ``(seed, graph_id, stream)``, never from ``hash()``."""
    return int(np.random.default_rng([seed, graph_id, stream]).integers(0, 2**31 - 1))


def dgl_walks(walk, seed: int):
    """Run ``walk()`` (a :mod:`dgl.sampling` walk) reproducibly.

    DGL draws walks from per-thread generators, so the walks change with
    the number of OpenMP threads (which a loaded machine may lower): the
    walk runs on one DGL thread, after :func:`dgl.seed`.
    """
    threads = dgl.utils.get_num_threads()
    dgl.seed(seed)
    dgl.utils.set_num_threads(1)
    try:
        return walk()
    finally:
        dgl.utils.set_num_threads(threads)


def support_targets(episode: Episode) -> tuple[torch.Tensor, torch.Tensor]:
    """The support nodes flattened and their classes.

    Shapes:
        returns ``(C * K,)`` node ids and ``(C * K,)`` classes (row ``c`` of
        ``episode.support`` is class ``c``).
    """
    c, k = episode.support.shape
    return episode.support.reshape(-1), torch.arange(c).repeat_interleave(k)


def undirected(g: dgl.DGLGraph) -> dgl.DGLGraph:
    """Structure only: both directions of every edge, no self-loops or duplicates."""
    src, dst = g.edges()
    keep = src != dst
    src, dst = src[keep], dst[keep]
    h = dgl.graph((torch.cat([src, dst]), torch.cat([dst, src])), num_nodes=g.num_nodes())
    return dgl.to_simple(h)


def standardise(x: torch.Tensor) -> torch.Tensor:
    """Columns scaled to zero mean and unit variance over the graph's nodes.

    Shapes:
        ``(N, F)`` -> ``(N, F)``.
    """
    return (x - x.mean(0)) / x.std(0).clamp_min(1e-6)


def fit_predict_linear(
    x: torch.Tensor,
    support: torch.Tensor,
    target: torch.Tensor,
    query: torch.Tensor,
    num_classes: int,
    *,
    steps: int = 200,
    lr: float = 0.05,
    weight_decay: float = 1e-3,
) -> torch.Tensor:
    """Multiclass logistic regression fitted on the support rows of ``x``.

    The loss is convex, so the weights start at zero and full-batch Adam
    needs no generator: the result depends on the inputs alone. It stands in
    for the scikit-learn classifier of the paper's appendix B.

    Shapes:
        x ``(N, F)``; support, target ``(S,)``; query ``(Q,)`` -> ``(Q,)`` classes.
    """
    weight = torch.zeros(x.shape[1], num_classes, requires_grad=True)
    bias = torch.zeros(num_classes, requires_grad=True)
    opt = torch.optim.Adam([weight, bias], lr=lr, weight_decay=0.0)
    xs = x[support].detach()
    for _ in range(steps):
        loss = F.cross_entropy(xs @ weight + bias, target) + weight_decay * weight.pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return (x[query] @ weight + bias).argmax(1)
