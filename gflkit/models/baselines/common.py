"""Pieces shared by the baselines: seeds, support targets, a linear classifier."""
from __future__ import annotations

import dgl
import numpy as np
import torch
import torch.nn.functional as F

from ...episodes import Episode

__all__ = []


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


def fit_linear(
    xs: torch.Tensor,
    target: torch.Tensor,
    num_classes: int,
    *,
    weight_decay: float = 1e-3,
    max_iter: int = 500,
    tol: float = 1e-9,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Multiclass logistic regression fitted on the rows ``xs``: its weight and bias, in float64.

    Minimises mean cross-entropy ``+ weight_decay * ||W||^2`` (bias not
    penalised) with L-BFGS and a strong-Wolfe line search, in float64, until
    the gradient or the change in loss falls below ``tol``: the penalty makes
    the loss strictly convex, so the solver reaches its unique minimum from the
    zero start and the result depends on the inputs alone. Works under
    ``torch.no_grad()`` too (the fit enables gradients for itself).

    Shapes:
        xs ``(S, F)``, target ``(S,)`` -> weight ``(F, num_classes)``, bias ``(num_classes,)``.
    """
    xs = xs.detach().double()
    weight = torch.zeros(xs.shape[1], num_classes, dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(num_classes, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([weight, bias], lr=1.0, max_iter=max_iter, tolerance_grad=tol,
                            tolerance_change=tol, history_size=20, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(xs @ weight + bias, target) + weight_decay * weight.pow(2).sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(closure)
    return weight.detach(), bias.detach()


def fit_predict_linear(
    x: torch.Tensor,
    support: torch.Tensor,
    target: torch.Tensor,
    query: torch.Tensor,
    num_classes: int,
    *,
    weight_decay: float = 1e-3,
    max_iter: int = 500,
    tol: float = 1e-9,
) -> torch.Tensor:
    """Multiclass logistic regression (:func:`fit_linear`) fitted on the support rows of ``x``.

    It stands in for the scikit-learn classifier of the paper's appendix B.

    Shapes:
        x ``(N, F)``; support, target ``(S,)``; query ``(Q,)`` -> ``(Q,)`` classes.
    """
    weight, bias = fit_linear(x[support], target, num_classes, weight_decay=weight_decay, max_iter=max_iter, tol=tol)
    with torch.no_grad():
        return (x[query].double() @ weight + bias).argmax(1)
