"""Transductive refinement of few-shot predictions over the test graph.

A few-shot model scores every node of a test graph from the support set
alone; the graph itself says more: neighbours tend to share a class. Two
refinements propagate the model's soft predictions over the graph, with the
support labels clamped (they add no training):

* ``lp``: label propagation of the soft predictions (Zhou et al. 2004, with the
  model's scores as the prior): ``Y <- alpha A_hat Y + (1 - alpha) Y0``,
  support rows reset to their one-hot labels after every step.
* ``cs``: Correct & Smooth (Huang et al. 2021): the residuals ``E = Y_S - P_S``
  on the support are propagated over the graph (support rows clamped to their
  residual) and added to the predictions; then the corrected predictions are
  smoothed as in ``lp``.

``A_hat = D^-1/2 (A + I) D^-1/2`` is the GCN normalisation of the prepared
graph (:func:`gflkit.graphs.prepare_graph`); every step is one sparse product
(:func:`gflkit.nn.conv.propagate`), so memory is linear in nodes and edges.

Both also solve ``F`` problems on one graph side by side (the folds of a
cross-validation: the same graph, other support sets): ``probs`` is then
``(N, F, C)`` and the support is given as rows of ``probs.reshape(-1, C)``
(:func:`stacked_rows`), so each step is one sparse product of width ``F * C``
instead of ``F`` products of width ``C``. Every column is propagated on its
own, so each problem's result is the one it gets alone.
"""
from __future__ import annotations

from dataclasses import dataclass

import dgl
import torch
import torch.nn.functional as F

from .errors import GFLError
from .names import REFINE_ALPHA, REFINE_METHODS, REFINE_STEPS
from .nn.conv import propagate

__all__ = ["RefineConfig", "label_propagation", "correct_and_smooth"]


@dataclass(frozen=True)
class RefineConfig:
    """Settings of the refinement.

    Attributes:
        method: ``none``, ``lp`` or ``cs``.
        alpha: weight of the propagated term in each step, in ``[0, 1)``.
        steps: propagation steps (of each stage for ``cs``).
    """

    method: str = "none"
    alpha: float = REFINE_ALPHA
    steps: int = REFINE_STEPS

    def __post_init__(self) -> None:
        if self.method not in REFINE_METHODS:
            raise GFLError(f"`refine={self.method!r}`: choose one of {', '.join(REFINE_METHODS)}")
        if not 0 <= self.alpha < 1:
            raise GFLError(f"`refine_alpha={self.alpha}`: give a value in [0, 1)")
        if self.steps < 0:
            raise GFLError(f"`refine_steps={self.steps}`: give a non-negative number of steps")

    @property
    def active(self) -> bool:
        return self.method != "none"


def stacked_rows(nodes: list[torch.Tensor], problems: int | None = None) -> torch.Tensor:
    """The rows of ``probs.reshape(-1, C)`` for ``probs`` of shape ``(N, F, C)`` that hold node ``nodes[f]``
    of problem ``f``: ``nodes[f] * F + f``, problems in order.

    Shapes:
        ``F`` tensors of ``(S_f,)`` -> ``(sum S_f,)``.
    """
    problems = len(nodes) if problems is None else problems
    return torch.cat([torch.as_tensor(t, dtype=torch.int64) * problems + f for f, t in enumerate(nodes)])


def _smooth(g: dgl.DGLGraph, y0: torch.Tensor, nodes: torch.Tensor, clamp: torch.Tensor,
            alpha: float, steps: int) -> torch.Tensor:
    """``steps`` rounds of ``y <- alpha A_hat y + (1 - alpha) y0`` with rows ``nodes`` of ``y.reshape(-1, C)`` set to
    ``clamp``; ``y0`` is ``(N, C)`` or ``(N, F, C)`` (module docstring)."""
    shape, c = y0.shape, y0.shape[-1]
    y0 = y0.reshape(shape[0], -1).clone()  # (N, F * C)
    y0.view(-1, c)[nodes] = clamp
    base = (1 - alpha) * y0
    y = y0
    for _ in range(steps):
        y = propagate(g, y).mul_(alpha).add_(base)  # alpha A_hat y + (1 - alpha) y0, in the product's buffer
        y.view(-1, c)[nodes] = clamp
    return y.reshape(shape)


def label_propagation(g: dgl.DGLGraph, probs: torch.Tensor, support: torch.Tensor, target: torch.Tensor,
                      alpha: float = REFINE_ALPHA, steps: int = REFINE_STEPS) -> torch.Tensor:
    """Propagate soft predictions with the support labels clamped.

    Args:
        g: the test graph with self-loops.
        probs: class probabilities of every node, of one problem or of ``F`` side by side.
        support: support node ids (with ``F`` problems: rows, :func:`stacked_rows`); target: their classes.

    Shapes:
        probs ``(N, C)`` or ``(N, F, C)``; support, target ``(S,)`` -> the shape of ``probs``.
    """
    onehot = F.one_hot(target, probs.shape[-1]).to(probs.dtype)
    return _smooth(g, probs, support, onehot, alpha, steps)


def correct_and_smooth(g: dgl.DGLGraph, probs: torch.Tensor, support: torch.Tensor, target: torch.Tensor,
                       alpha: float = REFINE_ALPHA, steps: int = REFINE_STEPS) -> torch.Tensor:
    """Correct the predictions with propagated support residuals, then smooth them.

    The propagated residual is added at the scale of the support residuals
    (the "autoscale" of Huang et al.): each node's correction is rescaled to
    the mean L1 norm of the support residuals, so a node far from any support
    node is corrected as much as its direction, not its faded magnitude,
    says.

    With ``F`` problems side by side (``probs`` ``(N, F, C)``, ``support`` rows of
    :func:`stacked_rows`), each problem is corrected at the scale of its own residuals.

    Shapes:
        probs ``(N, C)`` or ``(N, F, C)``; support, target ``(S,)`` -> the shape of ``probs``.
    """
    c = probs.shape[-1]
    onehot = F.one_hot(target, c).to(probs.dtype)
    residual = onehot - probs.reshape(-1, c)[support]  # (S, C)
    error = _smooth(g, torch.zeros_like(probs), support, residual, alpha, steps)
    size = residual.abs().sum(1)
    if probs.ndim == 2:
        scale = size.mean()
    else:
        problems = probs.shape[1]
        problem = support % problems
        scale = torch.stack([size[problem == f].mean() for f in range(problems)]).view(1, problems, 1)
    norm = error.abs().sum(-1, keepdim=True).clamp_min(1e-12)
    corrected = probs + scale * error / norm
    corrected.view(-1, c)[support] = probs.reshape(-1, c)[support] + residual
    return _smooth(g, corrected, support, onehot, alpha, steps)


def refine_scores(g: dgl.DGLGraph, scores: torch.Tensor, support: torch.Tensor, cfg: RefineConfig) -> torch.Tensor:
    """Refined class scores of every node from a model's scores.

    Args:
        g: the test graph with self-loops.
        scores: class scores (logits) of every node, ``(N, C)``.
        support: the episode's support ids, ``(C, K)`` with row ``c`` of class ``c``.
        cfg: the refinement; ``none`` returns ``scores`` unchanged.

    Returns:
        ``(N, C)`` scores whose argmax is the refined prediction (support rows
        are their one-hot labels).
    """
    if not cfg.active:
        return scores
    c, k = support.shape
    target = torch.arange(c, device=scores.device).repeat_interleave(k)
    return refine_nodes(g, scores, support.reshape(-1), target, cfg)


def refine_nodes(g: dgl.DGLGraph, scores: torch.Tensor, nodes: torch.Tensor, target: torch.Tensor,
                 cfg: RefineConfig) -> torch.Tensor:
    """:func:`refine_scores` with the support given as node ids and their classes (any number per class), or
    ``F`` problems side by side (``scores`` ``(N, F, C)``, ``nodes`` rows of :func:`stacked_rows`).

    Shapes:
        scores ``(N, C)`` or ``(N, F, C)``; nodes, target ``(S,)`` -> the shape of ``scores``.
    """
    if not cfg.active:
        return scores
    nodes, target = nodes.to(scores.device), target.to(scores.device)
    probs = torch.softmax(scores.detach().float(), dim=-1)
    refine = label_propagation if cfg.method == "lp" else correct_and_smooth
    return refine(g, probs, nodes, target, cfg.alpha, cfg.steps)
