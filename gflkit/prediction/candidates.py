"""Candidate methods for labelling a user's graph, each fitted on that graph's labels alone or read from a run.

Every candidate answers ``class_scores(g, support, z=None)`` as the models do
(:mod:`gflkit.prediction.class_scores`): ``g`` a prepared graph
(:func:`gflkit.graphs.prepare_graph`: self-loops and the GCN normalisation)
whose ``ndata["feat"]`` holds the features the candidate reads, ``support``
the labelled node ids of each class, and ``(N, C)`` scores before the softmax
back. ``shared_embeddings(g)`` computes what every support set of ``g`` shares
(the scaled and propagated features), so cross-validating a candidate over
many support sets computes it once. The candidates whose ``scores_rows`` is
true also score a few nodes alone (``class_scores(..., nodes=ids)``), which is
all the cross-validation needs of them. The candidates that propagate over
the graph (``lp``, ``cs``, the run's model with its refinements) answer
``fold_scores(g, supports, z)`` too: the scores of several support sets at
once, ``(N, F, C)``, propagated as one sparse product of width ``F * C`` per
step (:mod:`gflkit.refine`), each the same as ``class_scores`` of its support set.

* :class:`LabelPropagation` (``lp``): the labels alone spread over the graph
  (:func:`gflkit.refine.label_propagation` from a uniform prior).
* :class:`NearestCentroid` (``centroid``, ``centroid-sgc``): each node to the
  class whose mean labelled feature vector is nearest (squared Euclidean).
* :class:`RidgeClassifier` (``ridge``, ``ridge-sgc``): a least-squares linear
  map from features to one-hot labels with an L2 penalty, in closed form
  (the "LinearGNN" of GraphAny, Zhao et al., ICLR 2025).
* :class:`CorrectAndSmooth` (``cs``): the ridge classifier on the raw features,
  corrected and smoothed over the graph (:func:`gflkit.refine.correct_and_smooth`,
  Huang et al., ICLR 2021).
* :class:`RunModel` (``model``, ``model+lp``, ``model+cs``): a run's model, plain
  or refined as ``--refine`` refines it.

The ``-sgc`` variants read ``A_hat^k X`` (:data:`SGC_HOPS` hops of the GCN
propagation, as SGC does, Wu et al., ICML 2019) instead of ``X``. Features are
centred per column and scaled to a mean squared row norm of 1 before (and
again after) propagation, so the ridge penalty means the same on every graph.
Everything is sparse products and ``(N, d)`` or ``(S, S)`` dense blocks
(``S`` the labelled nodes): memory linear in nodes + edges.
"""
from __future__ import annotations

from typing import Sequence

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ..models.support_sets import flat_support
from ..names import REFINE_ALPHA, REFINE_STEPS
from ..nn.conv import propagate
from ..refine import RefineConfig, correct_and_smooth, label_propagation, refine_nodes, stacked_rows
from .checks import normalised
from .class_scores import class_scores, shared_embeddings

__all__ = ["LabelPropagation", "NearestCentroid", "RidgeClassifier", "CorrectAndSmooth"]

#: Propagation hops of the ``-sgc`` candidates.
SGC_HOPS = 2
#: Label propagation: weight of the propagated term and steps (more than refinement's: labels alone must reach far).
LP_ALPHA = 0.9
LP_STEPS = 50
#: The ridge penalty, relative to the mean squared norm of the labelled nodes' feature rows.
RIDGE_PENALTY = 1.0


def _stacked_targets(supports: Sequence[Sequence[torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`~gflkit.models.support_sets.flat_support` of ``F`` support sets side by side: rows of an
    ``(N, F, C)`` block (:func:`~gflkit.refine.stacked_rows`) and their classes, ``(sum S_f,)`` each."""
    pairs = [flat_support(support) for support in supports]
    return stacked_rows([nodes for nodes, _ in pairs]), torch.cat([target for _, target in pairs])


def _log_probs(p: torch.Tensor) -> torch.Tensor:
    """Propagated scores as log-probabilities (:func:`~gflkit.prediction.checks.normalised`: clipped at 0,
    rows normalised, argmax kept), each row of the last dimension on its own."""
    return normalised(p.reshape(-1, p.shape[-1])).clamp_min(1e-12).log().reshape(p.shape)


def _unit_rows(x: torch.Tensor) -> torch.Tensor:
    """``x`` with columns centred and scaled to a mean squared row norm of 1."""
    x = x - x.mean(0)
    scale = (x * x).sum(1).mean().sqrt()
    return x / scale if scale > 0 else x


def scaled_features(g: dgl.DGLGraph, hops: int = 0) -> torch.Tensor:
    """The graph's features centred and scaled (:func:`_unit_rows`), propagated ``hops`` times over ``g``.

    Shapes:
        returns ``(N, d)`` float32.
    """
    x = _unit_rows(g.ndata["feat"].float())
    if hops:
        with torch.no_grad():
            for _ in range(hops):
                x = propagate(g, x)
        x = _unit_rows(x)
    return x


class LabelPropagation:
    """The labels spread over the graph: ``Y <- alpha A_hat Y + (1 - alpha) Y0``, support rows clamped to their
    one-hot labels, from a uniform ``Y0`` (Zhou et al., 2004). Reads no features."""

    name = "lp"
    reads_features = False
    scores_rows = False  # class_scores(..., nodes=) scores some nodes only

    def __init__(self, alpha: float = LP_ALPHA, steps: int = LP_STEPS):
        self.alpha, self.steps = alpha, steps

    def shared_embeddings(self, g: dgl.DGLGraph) -> None:
        return None

    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z=None) -> torch.Tensor:
        return self.fold_scores(g, [support], z)[:, 0]

    def fold_scores(self, g: dgl.DGLGraph, supports: Sequence[Sequence[torch.Tensor]], z=None) -> torch.Tensor:
        """The scores of each support set, side by side: ``(N, F, C)``."""
        rows, target = _stacked_targets(supports)
        c = len(supports[0])
        prior = torch.full((g.num_nodes(), len(supports), c), 1.0 / c)
        with torch.no_grad():
            return _log_probs(label_propagation(g, prior, rows, target, self.alpha, self.steps))


class NearestCentroid:
    """Each node to the class with the nearest mean labelled feature vector (squared Euclidean distance),
    on the raw features (``hops=0``) or on ``A_hat^hops X``."""

    reads_features = True
    scores_rows = True

    def __init__(self, hops: int = 0):
        self.hops = hops
        self.name = "centroid" if hops == 0 else "centroid-sgc"

    def shared_embeddings(self, g: dgl.DGLGraph) -> torch.Tensor:
        return scaled_features(g, self.hops)

    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z=None,
                     nodes: torch.Tensor | None = None) -> torch.Tensor:
        """Scores of every node, or of ``nodes`` only (``(len(nodes), C)``)."""
        z = self.shared_embeddings(g) if z is None else z  # (N, d)
        centres = torch.stack([z[torch.as_tensor(t, dtype=torch.int64)].mean(0) for t in support])  # (C, d)
        return -torch.cdist(z if nodes is None else z[nodes], centres).square()


def ridge_weights(x: torch.Tensor, y: torch.Tensor,
                  penalty: float = RIDGE_PENALTY) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The ridge solution on labelled rows ``x`` (a constant column added) for targets ``y``, as ``(Xs, alpha)``
    with scores ``[X, 1] Xs^T alpha`` (dual form, when there are fewer labelled rows than features) or
    ``(W, None)`` with scores ``[X, 1] W`` (primal). The penalty is ``penalty`` times the mean squared row norm.

    Shapes:
        x ``(S, d)``, y ``(S, C)``.
    """
    xs = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], 1).double()  # (S, d + 1)
    lam = penalty * float((xs * xs).sum(1).mean())
    if len(xs) <= xs.shape[1]:
        k = xs @ xs.T
        alpha = torch.linalg.solve(k + lam * torch.eye(len(xs), dtype=k.dtype), y.double())  # (S, C)
        return xs, alpha
    gram = xs.T @ xs
    w = torch.linalg.solve(gram + lam * torch.eye(len(gram), dtype=gram.dtype), xs.T @ y.double())  # (d + 1, C)
    return w, None


class RidgeClassifier:
    """A linear map from features to one-hot labels by L2-penalised least squares in closed form, on the raw
    features (``hops=0``) or on ``A_hat^hops X``; the penalty is :data:`RIDGE_PENALTY` times the mean squared
    norm of the labelled feature rows."""

    reads_features = True
    scores_rows = True

    def __init__(self, hops: int = 0, penalty: float = RIDGE_PENALTY):
        self.hops, self.penalty = hops, penalty
        self.name = "ridge" if hops == 0 else "ridge-sgc"

    def shared_embeddings(self, g: dgl.DGLGraph) -> torch.Tensor:
        return scaled_features(g, self.hops)

    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z=None,
                     nodes: torch.Tensor | None = None) -> torch.Tensor:
        """Scores of every node, or of ``nodes`` only (``(len(nodes), C)``)."""
        z = self.shared_embeddings(g) if z is None else z  # (N, d)
        labelled, target = flat_support(support)
        y = F.one_hot(target, len(support)).float()
        w, alpha = ridge_weights(z[labelled], y, self.penalty)
        w = (w.T @ alpha if alpha is not None else w).to(z.dtype)  # (d + 1, C): solved in float64, applied as z
        rows = z if nodes is None else z[nodes]
        return rows @ w[:-1] + w[-1]


class CorrectAndSmooth:
    """:class:`RidgeClassifier` on the raw features, its errors on the labelled nodes spread over the graph and
    added (correct), then its predictions smoothed with the labels clamped (smooth)."""

    name = "cs"
    reads_features = True
    scores_rows = False

    def __init__(self, alpha: float = REFINE_ALPHA, steps: int = REFINE_STEPS):
        self.base, self.alpha, self.steps = RidgeClassifier(0), alpha, steps

    def shared_embeddings(self, g: dgl.DGLGraph) -> torch.Tensor:
        return self.base.shared_embeddings(g)

    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z=None) -> torch.Tensor:
        return self.fold_scores(g, [support], z)[:, 0]

    def fold_scores(self, g: dgl.DGLGraph, supports: Sequence[Sequence[torch.Tensor]], z=None) -> torch.Tensor:
        """The scores of each support set, side by side: ``(N, F, C)``."""
        z = self.shared_embeddings(g) if z is None else z
        probs = torch.stack([_log_probs(self.base.class_scores(g, support, z)).exp() for support in supports], 1)
        rows, target = _stacked_targets(supports)
        with torch.no_grad():
            return _log_probs(correct_and_smooth(g, probs, rows, target, self.alpha, self.steps))


class RunModel:
    """A run's model (:func:`~gflkit.prediction.class_scores.class_scores`), refined by ``refine``.

    Its variants on one graph share the model's scores of each support set (``share``: the same
    :class:`RunModel` whose last scores this one reuses), so ``model``, ``model+lp`` and ``model+cs``
    score each fold with the model once.
    """

    reads_features = True
    scores_rows = False

    def __init__(self, module: nn.Module, refine: RefineConfig | None = None, share: "RunModel | None" = None):
        self.module, self.refine = module, refine or RefineConfig()
        self.name = "model" if not self.refine.active else f"model+{self.refine.method}"
        self._last = share._last if share is not None else [None, None, None]  # [g, support, scores]
        self._folds = share._folds if share is not None else [None, None, None]  # [g, supports, (N, F, C) scores]

    def shared_embeddings(self, g: dgl.DGLGraph) -> torch.Tensor | None:
        self.module.eval()
        return shared_embeddings(self.module, g)

    def model_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z=None) -> torch.Tensor:
        """The model's own scores ``(N, C)``, reused when its variants asked for the same support set."""
        last = self._last
        if last[0] is not g or last[1] is not support:  # no torch.no_grad: MAML adapts its head by gradients
            last[:] = [g, support, class_scores(self.module, g, support, z).detach()]
        return last[2]

    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z=None) -> torch.Tensor:
        scores = self.model_scores(g, support, z)
        if not self.refine.active:
            return scores.cpu()
        nodes, target = flat_support(support)
        with torch.no_grad():
            return _log_probs(refine_nodes(g, scores, nodes, target, self.refine).cpu())

    def fold_scores(self, g: dgl.DGLGraph, supports: Sequence[Sequence[torch.Tensor]], z=None) -> torch.Tensor:
        """The scores of each support set, side by side: ``(N, F, C)``; the model scores each support set once
        for all its variants that ask for the same ``supports``, and a refinement propagates them all at once."""
        folds = self._folds
        if folds[0] is not g or folds[1] is not supports:
            folds[:] = [g, supports, torch.stack([self.model_scores(g, s, z) for s in supports], 1)]
        scores = folds[2]
        if not self.refine.active:
            return scores.cpu()
        rows, target = _stacked_targets(supports)
        with torch.no_grad():
            return _log_probs(refine_nodes(g, scores, rows, target, self.refine).cpu())
