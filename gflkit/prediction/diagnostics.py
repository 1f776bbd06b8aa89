"""What a prediction on a new graph is worth, told from that graph and the labels given with it.

A run that did well on its own collection can do badly on a user's graph, and
the predictions alone do not show it. :func:`gflkit.prediction.predictor.predict`
(``gflkit predict``) therefore checks three things and reports them:

* **An accuracy estimate from the given labels** (:func:`estimate_accuracy`).
  The labelled nodes of each class are split into folds (stratified: every
  fold holds out part of every class it can, and every class keeps at least
  one labelled node); each fold is held out in turn and predicted from the
  other labels, on the whole graph, with the same model, feature transform
  and refinement as the prediction itself. A class with at most
  :data:`ESTIMATE_FOLDS` labels is held out one label at a time (leave-one-out
  per class). This is repeated :data:`ESTIMATE_REPEATS` times with other
  random folds (seeded, so the estimate is deterministic). The estimate is the
  share of held-out labels predicted right, with a 95% Wilson score interval
  over the number of labelled nodes (the interval says how few labels there
  are; the repeats only average out the choice of folds), and the recall of
  each class. The interval treats the held-out labels as independent; with a
  refinement the accuracy depends more on which nodes are labelled, and on
  32 stochastic-block-model graphs with 5 labels per class it held the true
  accuracy on 94% of them without refinement and 91% with ``lp`` (mean
  absolute error 0.07 and 0.10; ``tests/test_predict_estimate.py``). It
  estimates the accuracy on nodes with the class mix of the given labels
  (with as many labels per class: the mean per-class recall; on a graph whose
  classes are unbalanced, the accuracy over all nodes differs by how the
  errors fall on the large classes), and assumes the labelled nodes were
  picked like the others. Each held-out prediction uses one fold fewer of
  labels than the prediction itself, so with very few labels per class the
  estimate leans low. It needs at least 2 labelled nodes in every class;
  otherwise it says why.
* **Feature shift** (:func:`feature_shift`): the graph's features (as the model
  takes them, after the run's feature transform) against the statistics of
  the training collection's train graphs, recorded by training
  (:class:`FeatureStats`). Three numbers, each with a threshold beyond which
  it warns: the *mean shift* ``sqrt(mean_j ((m_j - mu_j) / sigma_j)^2)``, the
  root mean square over dimensions of the graph's per-dimension mean ``m_j``
  away from the training mean ``mu_j`` in training standard deviations
  ``sigma_j`` (warns above :data:`MEAN_SHIFT_LIMIT` = 0.5, a "medium"
  standardised difference in a typical dimension); the *scale ratio*
  ``exp(sqrt(mean_j log(s_j / sigma_j)^2))``, the typical factor by which the
  graph's per-dimension standard deviation ``s_j`` is wider or narrower than
  the training one (warns above :data:`SCALE_LIMIT` = 1.5); and the share of
  nodes whose features are all zero, against the training share (warns when
  it is more than :data:`ZERO_ROWS_LIMIT` = 0.10 above it). The first two are
  corrected for the graph's size (:func:`feature_shift`), so a small graph
  drawn like the training graphs is not called shifted for its sampling noise.
  Graphs of fewer than :data:`MIN_SHIFT_NODES` nodes are not checked. Graphs of
  the training collection itself lie far below the thresholds (the built-in
  family's test graphs: mean shift about 0.1, scale ratio about 1.02).
* **Collapse** (:func:`collapse_warnings`): a class never predicted for any
  unlabelled node (when there are at least :data:`MIN_NODES_PER_CLASS`
  unlabelled nodes per class), or one class predicted for more than
  :data:`COLLAPSE_SHARE` (half) of the unlabelled nodes and more than
  :data:`COLLAPSE_FACTOR` (2) times its share of the given labels (with
  balanced labels: twice ``1 / classes``).

The thresholds are defined in :mod:`gflkit.names`, so the command line's help
states them without importing torch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import torch

from ..data.feature_stats import (FeatureStats, collection_feature_stats,  # noqa: F401 - still importable here
                                   feature_statistics, training_feature_stats)
from ..names import (COLLAPSE_FACTOR, COLLAPSE_SHARE, ESTIMATE_FOLDS, ESTIMATE_REPEATS, MEAN_SHIFT_LIMIT, SCALE_LIMIT,
                    ZERO_ROWS_LIMIT)

__all__ = ["Estimate", "PredictionReport"]

#: Confidence level of the estimate's interval.
LEVEL = 0.95
_Z = 1.959963984540054  # the standard normal quantile of 0.975

#: Graphs with fewer nodes are not checked for feature shift (their statistics are too noisy).
MIN_SHIFT_NODES = 10

#: A class never predicted is a warning when there are at least this many unlabelled nodes per class.
MIN_NODES_PER_CLASS = 5


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


# -- the accuracy estimate ---------------------------------------------------------------------------------------
def wilson_interval(successes: float, n: int, z: float = _Z) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``successes / n`` (``successes`` may be fractional)."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class Estimate:
    """The accuracy a prediction can be expected to have, estimated from its own labels.

    Attributes:
        accuracy: share of the held-out labels predicted right (``None``: no estimate, see ``reason``).
        interval: its 95% Wilson score interval over the labelled nodes.
        per_class_recall: per class, the share of its held-out labels predicted as it.
        labels_per_class: labelled nodes per class.
        folds, repeats, seed: how the labels were split.
        refine: the refinement the held-out labels were predicted with.
        reason: why there is no estimate (``None`` when there is one).
        level: the interval's confidence level.
        hits: per held-out label (classes in order), the share of repeats it was predicted right
            (:func:`cross_validate` fills it, so two predictors can be compared label by label).
    """

    accuracy: float | None
    interval: tuple[float, float] | None
    per_class_recall: dict[str, float]
    labels_per_class: dict[str, int]
    folds: int = 0
    repeats: int = 0
    seed: int = 0
    refine: str = "none"
    reason: str | None = None
    level: float = LEVEL
    hits: tuple[float, ...] = field(default=(), repr=False, compare=False)

    @property
    def balanced_accuracy(self) -> float | None:
        """The mean recall over the classes (equal to ``accuracy`` when every class has as many labels)."""
        if self.accuracy is None or not self.per_class_recall:
            return None
        return float(np.mean(list(self.per_class_recall.values())))

    @property
    def held_out(self) -> int:
        """Labelled nodes held out (each once per repeat)."""
        return sum(self.labels_per_class.values()) if self.accuracy is not None else 0

    @property
    def method(self) -> str:
        """How the estimate was computed, in one sentence."""
        if self.accuracy is None:
            return "not computed"
        same = (f"model, feature transform and refinement ({self.refine})" if self.refine != "none"
                else "model and feature transform")
        return (f"stratified {self.folds}-fold cross-validation over the given labels, repeated {self.repeats} "
                f"times with seed {self.seed}: each fold is held out and predicted from the other labels with "
                f"the same {same} on the whole graph; classes with at most "
                f"{self.folds} labels are held out one label at a time; interval: {int(100 * self.level)}% Wilson "
                f"score over the {self.held_out} labelled nodes")

    def lines(self) -> list[str]:
        """The estimate in two lines (accuracy with its interval; per-class recall), or its reason in one."""
        if self.accuracy is None:
            return [f"no accuracy estimate: {self.reason}"]
        lo, hi = self.interval
        recall = ", ".join(f"{name} {_pct(r)} ({self.labels_per_class[name]})"
                           for name, r in self.per_class_recall.items())
        balanced = (f"; balanced accuracy (mean recall per class) {_pct(self.balanced_accuracy)}"
                    if len(set(self.labels_per_class.values())) > 1 else
                    " (with as many labels in every class, also the balanced accuracy)")
        return [f"estimated accuracy {_pct(self.accuracy)} ({int(100 * self.level)}% interval {_pct(lo)}-{_pct(hi)})"
                f" over the given labels' class mix{balanced}: each of the {self.held_out} given labels held out in "
                f"turn and predicted from the others ({self.folds} folds x {self.repeats} repeats)",
                f"estimated recall per class (labels): {recall}"]

    def to_dict(self) -> dict[str, Any]:
        return {"accuracy": self.accuracy, "interval": list(self.interval) if self.interval else None,
                "level": self.level, "method": self.method, "folds": self.folds, "repeats": self.repeats,
                "seed": self.seed, "held_out": self.held_out, "refine": self.refine,
                "balanced_accuracy": self.balanced_accuracy,
                "per_class_recall": dict(self.per_class_recall), "labels_per_class": dict(self.labels_per_class),
                "reason": self.reason}


def estimate_accuracy(predict: Callable[[list[torch.Tensor]], torch.Tensor], names: Sequence[str],
                      support: Sequence[torch.Tensor], *, folds: int = ESTIMATE_FOLDS,
                      repeats: int = ESTIMATE_REPEATS, seed: int = 0, refine: str = "none") -> Estimate:
    """Estimate the accuracy of ``predict`` by holding out folds of the labels (see the module docstring).

    Args:
        predict: support ids per class -> the predicted class of every node ``(N,)``.
        names: the class names; ``support``: per class, the ids of its labelled nodes.
        folds: at most this many folds (fewer when no class has that many labels).
        repeats: times the folds are drawn anew.
        seed: seed of the fold draws.
        refine: name of the refinement ``predict`` applies (recorded only).
    """
    return cross_validate({refine: predict}, names, support, folds=folds, repeats=repeats, seed=seed,
                          refine={refine: refine})[refine]


def held_out_folds(support: Sequence[torch.Tensor], folds: int, repeats: int,
                   seed: int) -> Iterator[tuple[list[torch.Tensor], list[tuple[int, np.ndarray]]]]:
    """The folds of the estimate: ``(rest, held)`` per fold and repeat, ``rest`` the support ids per class
    left to predict from, ``held`` the ``(class, positions in its support)`` held out."""
    ids = [np.asarray(s.cpu().numpy() if torch.is_tensor(s) else s, dtype=np.int64) for s in support]
    rng = np.random.default_rng([int(seed), 20])
    for _ in range(repeats):
        held: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(folds)]
        for c, s in enumerate(ids):
            groups = np.array_split(rng.permutation(len(s)), min(len(s), folds))
            for group, fold in zip(groups, rng.choice(folds, size=len(groups), replace=False)):
                held[int(fold)].append((c, group))
        for fold in held:
            out = dict(fold)
            yield [torch.as_tensor(np.delete(s, out.get(c, [])), dtype=torch.int64) for c, s in enumerate(ids)], fold


def cross_validate(predicts: Mapping[str, Callable[[list[torch.Tensor]], torch.Tensor]], names: Sequence[str],
                   support: Sequence[torch.Tensor], *, folds: int = ESTIMATE_FOLDS, repeats: int = ESTIMATE_REPEATS,
                   seed: int = 0, refine: Mapping[str, str] | None = None,
                   batched: Mapping[str, Callable[[list[list[torch.Tensor]]], list[torch.Tensor]]] | None = None,
                   batch: int = 0) -> dict[str, Estimate]:
    """:func:`estimate_accuracy` of several predictors on the same folds (each fold is predicted by every
    predictor before the next is drawn), so their estimates can be compared label by label
    (:attr:`Estimate.hits`).

    Args:
        predicts: name -> support ids per class -> the predicted class of every node ``(N,)``.
        refine: name -> the refinement that predictor applies (recorded only).
        batched: name -> the same predictor given the support sets of several folds at once, returning one
            prediction per fold: the folds are then given to it ``batch`` at a time (0: all at once), before
            the other predictors predict them one by one.
    """
    counts = {str(n): len(s) for n, s in zip(names, support)}
    refine = refine or {}
    few = [f"{n!r} ({k})" for n, k in counts.items() if k < 2]
    if few:
        reason = (f"class(es) {', '.join(few)} have fewer than 2 labelled nodes; holding labels out "
                  f"to estimate the accuracy needs at least 2 per class")
        return {name: Estimate(None, None, {}, counts, refine=refine.get(name, "none"), seed=seed, reason=reason)
                for name in predicts}
    ids = [np.asarray(s.cpu().numpy() if torch.is_tensor(s) else s, dtype=np.int64) for s in support]
    n_folds = max(2, min(int(folds), max(counts.values())))
    repeats = max(1, int(repeats))
    right = {name: [np.zeros(len(s)) for s in ids] for name in predicts}
    drawn = list(held_out_folds(ids, n_folds, repeats, seed))
    size = int(batch) if batch and batch > 0 else len(drawn)
    batched = {name: many for name, many in (batched or {}).items() if name in predicts}
    for start in range(0, len(drawn), size):
        block = drawn[start:start + size]
        rests = [rest for rest, _ in block]
        early = {name: many(rests) for name, many in batched.items()}
        for i, (rest, fold) in enumerate(block):
            for name, predict in predicts.items():
                pred = np.asarray(torch.as_tensor(early[name][i] if name in early else predict(rest)).cpu().numpy())
                for c, group in fold:
                    right[name][c][group] += pred[ids[c][group]] == c
    total = sum(len(s) for s in ids)
    out = {}
    for name, hits_per_class in right.items():
        hits = float(sum(r.sum() for r in hits_per_class)) / repeats  # each label's share right over the repeats
        recall = {str(n): float(r.sum() / (repeats * len(r))) for n, r in zip(names, hits_per_class)}
        per_label = tuple(float(h) for r in hits_per_class for h in r / repeats)
        out[name] = Estimate(hits / total, wilson_interval(hits, total), recall, counts, n_folds, repeats, int(seed),
                             refine.get(name, "none"), hits=per_label)
    return out


# -- feature shift ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FeatureShift:
    """How a graph's features differ from the training collection's (see the module docstring).

    Attributes:
        mean_shift: root mean square over dimensions of the standardised mean difference.
        scale_ratio: typical factor (>= 1) between the graph's and the training standard deviations.
        zero_rows, train_zero_rows: shares of all-zero feature rows in the graph and in training.
        dims, nodes: the dimensions and the graph's nodes compared.
        source: where the training statistics come from.
        largest: the dimensions with the largest standardised mean differences (up to 5), ``(dim, z)``.
    """

    mean_shift: float
    scale_ratio: float
    zero_rows: float
    train_zero_rows: float
    dims: int
    nodes: int
    source: str = "the run"
    largest: tuple[tuple[int, float], ...] = ()

    def warnings(self, what: str) -> list[str]:
        """One line per statistic beyond its threshold."""
        out = []
        if self.mean_shift > MEAN_SHIFT_LIMIT:
            dims = ", ".join(f"{d} ({z:+.1f})" for d, z in self.largest[:3])
            out.append(f"{what}: the features are unlike the training collection's: their per-dimension means lie "
                       f"{self.mean_shift:.2f} training standard deviations from the training means (root mean "
                       f"square over {self.dims} dimensions; warned above {MEAN_SHIFT_LIMIT:g}; largest in "
                       f"dimensions {dims}); the model may not transfer to them")
        if self.scale_ratio > SCALE_LIMIT:
            out.append(f"{what}: the features are unlike the training collection's: their per-dimension spread "
                       f"differs from the training spread by a typical factor of {self.scale_ratio:.2f} (warned "
                       f"above {SCALE_LIMIT:g}); the model may not transfer to them")
        if self.zero_rows - self.train_zero_rows > ZERO_ROWS_LIMIT:
            out.append(f"{what}: {_pct(self.zero_rows)} of the nodes have all-zero features (training collection: "
                       f"{_pct(self.train_zero_rows)}; warned {100 * ZERO_ROWS_LIMIT:.0f} points above it); they "
                       f"are predicted from their neighbours alone")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"checked": True, "mean_shift": self.mean_shift, "scale_ratio": self.scale_ratio,
                "zero_rows": self.zero_rows, "train_zero_rows": self.train_zero_rows, "dims": self.dims,
                "nodes": self.nodes, "source": self.source,
                "largest_mean_shifts": [{"dim": d, "z": z} for d, z in self.largest],
                "thresholds": {"mean_shift": MEAN_SHIFT_LIMIT, "scale_ratio": SCALE_LIMIT,
                               "zero_rows_above_training": ZERO_ROWS_LIMIT}}


def feature_shift(feat: torch.Tensor | np.ndarray, stats: FeatureStats, source: str = "the run") -> FeatureShift:
    """Compare a graph's features ``(N, d)`` with training statistics of the same ``d`` dimensions.

    Both statistics are corrected for the graph's size, so a small graph drawn
    like the training graphs is not called shifted for its sampling noise
    alone: the mean shift subtracts the expected ``(s_j / sigma_j)^2 / N`` from
    each squared difference, the scale ratio the expected ``1 / (2 (N - 1))``
    from each squared log ratio (both clipped at 0).
    """
    x = feat.detach().cpu().numpy() if torch.is_tensor(feat) else np.asarray(feat)
    mine = feature_statistics([x])
    n = max(int(mine.nodes), 2)
    sigma = stats.std
    floor = 1e-3 * float(sigma.mean()) + 1e-12  # dimensions constant in training are not divided by 0
    sigma = np.maximum(sigma, floor)
    z = (mine.mean - stats.mean) / sigma
    spread = np.maximum(mine.std, floor) / sigma
    mean_sq = np.mean(z ** 2 - spread ** 2 / n)
    log_sq = np.mean(np.log(spread) ** 2) - 1 / (2 * (n - 1))
    order = np.argsort(-np.abs(z), kind="stable")[:5]
    return FeatureShift(float(np.sqrt(max(mean_sq, 0.0))), float(np.exp(np.sqrt(max(log_sq, 0.0)))),
                        float(mine.zero_rows), float(stats.zero_rows), int(len(z)), int(mine.nodes), source,
                        tuple((int(d), float(z[d])) for d in order))


# -- collapse -----------------------------------------------------------------------------------------------------
def collapse_warnings(predicted: Mapping[str, int], labels_per_class: Mapping[str, int], what: str) -> list[str]:
    """Warnings when the predictions of the unlabelled nodes collapse onto few classes.

    Args:
        predicted: per class, the unlabelled nodes predicted as it.
        labels_per_class: per class, the labelled nodes given.
        what: the graph, named in the messages.
    """
    total, given, c = sum(predicted.values()), sum(labels_per_class.values()), len(labels_per_class)
    if total == 0 or c < 2:
        return []
    out = []
    never = [name for name in labels_per_class if predicted.get(name, 0) == 0]
    if never and total >= MIN_NODES_PER_CLASS * c:
        out.append(f"{what}: the predictions collapse: class(es) {', '.join(map(repr, never))} are never predicted "
                   f"for the {total} unlabelled nodes")
    for name, k in predicted.items():
        share, expected = k / total, labels_per_class.get(name, 0) / given
        if share > COLLAPSE_SHARE and share > COLLAPSE_FACTOR * expected:
            out.append(f"{what}: the predictions collapse: class {name!r} takes {_pct(share)} of the {total} "
                       f"unlabelled nodes, {share / expected:.1f}x its {_pct(expected)} share of the given labels "
                       f"(warned above {COLLAPSE_SHARE:.0%} and {COLLAPSE_FACTOR:g}x)")
    return out


# -- the report ---------------------------------------------------------------------------------------------------
@dataclass
class PredictionReport:
    """What :func:`gflkit.prediction.predictor.predict` found about its own predictions.

    Attributes:
        graph, labels: the graph and where the labels come from, as named in messages.
        model: the run's model name.
        nodes: nodes of the graph; ``unlabelled``: those predicted.
        labels_per_class: labelled nodes per class; ``predicted_per_class``: unlabelled nodes predicted per class.
        refine: the refinement (method, alpha, steps).
        estimate: the chosen method's accuracy estimate (``None`` when not asked for).
        shift: the feature comparison (``None`` when not made; ``shift_note`` says why).
        warnings: every warning the prediction gave, one line each.
        method: the candidate that predicted (:mod:`gflkit.prediction.candidates`).
        selection: every candidate's estimate, the one chosen and why
            (:class:`~gflkit.prediction.selection.Selection`); ``candidates`` is its table.
        features: which node features the candidates fitted on the graph read.
    """

    graph: str
    labels: str
    model: str
    nodes: int
    unlabelled: int
    labels_per_class: dict[str, int]
    predicted_per_class: dict[str, int]
    refine: dict[str, Any]
    estimate: Estimate | None = None
    shift: FeatureShift | None = None
    shift_note: str | None = None
    warnings: list[str] = field(default_factory=list)
    estimate_note: str = "not asked for"
    method: str = "model"
    selection: Any = None
    features: str = ""

    @property
    def candidates(self):
        """The candidate table (:meth:`gflkit.prediction.selection.Selection.frame`), or ``None``."""
        return self.selection.frame() if self.selection is not None else None

    def to_dict(self) -> dict[str, Any]:
        """Plain values for a JSON report."""
        estimate = self.estimate.to_dict() if self.estimate is not None else {
            "accuracy": None, "interval": None, "reason": self.estimate_note}
        shift = self.shift.to_dict() if self.shift is not None else {"checked": False, "reason": self.shift_note}
        return {"graph": self.graph, "labels": self.labels, "model": self.model, "nodes": self.nodes,
                "unlabelled": self.unlabelled, "classes": list(self.labels_per_class),
                "labels_per_class": dict(self.labels_per_class), "refine": dict(self.refine), "estimate": estimate,
                "predicted_per_class": dict(self.predicted_per_class), "feature_shift": shift,
                "method": self.method, "features": self.features,
                "selection": self.selection.to_dict() if self.selection is not None else None,
                "warnings": list(self.warnings)}
