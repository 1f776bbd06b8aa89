"""Choosing the candidate a user's labels support best, with a rule that resists selection noise.

Every candidate (:mod:`gflkit.prediction.candidates`) is cross-validated on
the same folds of the given labels (:func:`~gflkit.prediction.diagnostics.cross_validate`,
the folds of predict's accuracy estimate), so two candidates are compared
label by label. Each is scored by its **balanced accuracy** (the mean over
classes of the share of a class's held-out labels predicted right; with as
many labels in every class, the plain accuracy over the labels).

The rule (``auto``): take the candidate with the highest estimate; every
candidate whose estimate lies within :data:`TOLERANCE` paired standard errors
of it (the standard error of the per-label difference between the two, over
the labelled nodes), or within :func:`margin` of it (a margin in balanced
accuracy that is large when the labels per class are few), is as good as the
labels can tell, and among those the first in :data:`ORDER` is chosen: the run's model first, then the methods
that read the graph's edges (fewest fitted numbers first), then those that read
the features alone. Picking the plain maximum instead chases noise: with few
labels the best estimate is often a lucky one. ``scripts/predict_selection.py``
simulates both and measures how often each picks a worse candidate and what
that costs; ``scripts/predict_candidates.py`` measures the rules on graphs with
known labels (``docs/tutorials/predict.md``). The margin is there because one
standard error is not enough with 3 labels per class: among nine candidates,
some estimate from 12 labels runs more than a standard error ahead of the run's
model by luck alone, and the fitted methods auto then took were 20-30 points
below the model on the model's own family. Without an estimate (a class with a
single label, or ``estimate=False``) the first available candidate of
:data:`ORDER` is taken.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import torch

from ..names import PREDICT_MARGIN, PREDICT_ORDER, PREDICT_TOLERANCE
from .diagnostics import Estimate, _pct, cross_validate

__all__ = []

#: Candidates in the order ``auto`` prefers among those the labels cannot tell apart: the run's model (trained
#: for graphs like this one, when its features fit), then the methods that read the graph's edges, fewest
#: fitted numbers first, then those that read the features alone.
ORDER = PREDICT_ORDER
#: Candidates within this many paired standard errors of the best estimate are taken as tied with it.
TOLERANCE = PREDICT_TOLERANCE
#: Balanced accuracy within which an earlier candidate is kept with 3 labels per class (:func:`margin`).
MARGIN = PREDICT_MARGIN
#: Folds propagated side by side hold at most about this many scores (``N x folds x C``; 64 MB in float32).
FOLD_BLOCK = 2 ** 24


@dataclass
class Contender:
    """A candidate ready on one graph: ``candidate`` scores ``graph`` (its ``z`` computed once)."""

    candidate: Any
    graph: Any
    what: str = ""
    z: Any = None
    ready: bool = False

    @property
    def name(self) -> str:
        return self.candidate.name

    def predicted(self, support: Sequence[torch.Tensor], rows: torch.Tensor) -> torch.Tensor:
        """The predicted class of the nodes ``rows`` (the held-out labels), ``-1`` elsewhere: ``(N,)``.
        Candidates that can (``scores_rows``) score those rows alone."""
        if not self.candidate.scores_rows:
            return self.probabilities(support).argmax(1)
        if not self.ready:
            self.z, self.ready = self.candidate.shared_embeddings(self.graph), True
        out = torch.full((self.graph.num_nodes(),), -1, dtype=torch.int64)
        out[rows] = self.candidate.class_scores(self.graph, support, self.z, nodes=rows).argmax(1).cpu()
        return out

    def predicted_folds(self, supports: Sequence[Sequence[torch.Tensor]]) -> list[torch.Tensor]:
        """The predicted class of every node from each support set: ``F`` tensors ``(N,)``, all propagated at
        once (candidates with ``fold_scores``)."""
        if not self.ready:
            self.z, self.ready = self.candidate.shared_embeddings(self.graph), True
        scores = self.candidate.fold_scores(self.graph, supports, self.z)  # (N, F, C)
        return list(torch.softmax(scores.detach().float().cpu(), dim=-1).argmax(-1).unbind(1))  # as probabilities

    def probabilities(self, support: Sequence[torch.Tensor]) -> torch.Tensor:
        """Class probabilities of every node from ``support``: ``(N, C)`` on the CPU."""
        if not self.ready:
            self.z, self.ready = self.candidate.shared_embeddings(self.graph), True
        scores = self.candidate.class_scores(self.graph, support, self.z)  # no torch.no_grad: MAML adapts by gradients
        return torch.softmax(scores.detach().float().cpu(), dim=1)


@dataclass
class Selection:
    """Every candidate's estimate, the one chosen and why.

    Attributes:
        chosen: the chosen candidate's name.
        reason: why, in one sentence.
        estimates: name -> its cross-validated :class:`~gflkit.prediction.diagnostics.Estimate`.
        gaps: name -> how far (balanced accuracy) below the best estimate, in paired standard errors.
        method: what was asked (``auto`` or a candidate's name).
        skipped: name -> why a candidate was left out.
        features: which node features the fitted candidates read.
    """

    chosen: str
    reason: str
    estimates: dict[str, Estimate]
    gaps: dict[str, float] = field(default_factory=dict)
    method: str = "auto"
    skipped: dict[str, str] = field(default_factory=dict)
    features: str = ""

    def frame(self) -> pd.DataFrame:
        """One row per candidate: ``candidate, balanced_accuracy, accuracy, low, high, gap_se, chosen``
        (``low, high``: the 95% interval of ``accuracy``)."""
        rows = []
        for name, est in self.estimates.items():
            lo, hi = est.interval or (None, None)
            rows.append({"candidate": name, "balanced_accuracy": est.balanced_accuracy, "accuracy": est.accuracy,
                         "low": lo, "high": hi, "gap_se": self.gaps.get(name), "chosen": name == self.chosen})
        return pd.DataFrame(rows, columns=["candidate", "balanced_accuracy", "accuracy", "low", "high", "gap_se",
                                           "chosen"])

    def lines(self) -> list[str]:
        """One line per candidate, then the choice and its reason."""
        out = []
        for name, est in self.estimates.items():
            mark = "*" if name == self.chosen else " "
            if est.accuracy is None:
                out.append(f"{mark} {name}: no estimate")
                continue
            lo, hi = est.interval
            gap = self.gaps.get(name)
            out.append(f"{mark} {name}: balanced accuracy {_pct(est.balanced_accuracy)}, accuracy {_pct(est.accuracy)} "
                       f"({_pct(lo)}-{_pct(hi)})" + (f", {gap:.1f} SE below the best" if gap else ""))
        for name, why in self.skipped.items():
            out.append(f"  {name}: not a candidate: {why}")
        return [f"candidates (each held out on the same folds of the given labels; features: {self.features}):",
                *out, f"predicted with {self.chosen}: {self.reason}"]

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "chosen": self.chosen, "reason": self.reason, "features": self.features,
                "rule": {"tolerance_se": TOLERANCE, "margin_at_3_labels": MARGIN, "order": list(ORDER),
                         "score": "balanced accuracy"},
                "candidates": [{**row, "estimate": self.estimates[row["candidate"]].to_dict()}
                               for row in self.frame().drop(columns=["accuracy", "low", "high"]).to_dict("records")],
                "skipped": dict(self.skipped)}


def margin(labels_per_class: int) -> float:
    """How far (balanced accuracy) the best estimate must be ahead of an earlier candidate, besides
    :data:`TOLERANCE` standard errors, for ``auto`` to leave it: ``MARGIN x (3 / k)^2`` with ``k`` the fewest
    labels of a class (0.25 at 3 labels per class, 0.09 at 5, 0.0225 at 10). Selection noise grows as the labels
    get fewer, faster than the paired standard error says when the best of nine estimates is taken."""
    return MARGIN * (3 / max(int(labels_per_class), 1)) ** 2


def balanced_weights(est: Estimate) -> np.ndarray:
    """Weight of each held-out label in the balanced accuracy: ``1 / (classes x labels of its class)``."""
    counts = list(est.labels_per_class.values())
    return np.concatenate([np.full(k, 1.0 / (len(counts) * k)) for k in counts])


def paired_gap(best: Estimate, other: Estimate) -> float:
    """How far ``other``'s balanced accuracy lies below ``best``'s, in standard errors of the per-label paired
    difference (0 when they never differ)."""
    w = balanced_weights(best)
    d = np.asarray(best.hits) - np.asarray(other.hits)
    mean = float(w @ d)
    n = len(d)
    se = math.sqrt(float(w * w @ (d - mean) ** 2) * n / max(n - 1, 1))
    return 0.0 if mean <= 0 else (mean / se if se > 0 else math.inf)


def choose(estimates: dict[str, Estimate], available: Sequence[str], tolerance: float = TOLERANCE,
           order: Sequence[str] = ORDER, margin_of: Callable[[int], float] | None = margin
           ) -> tuple[str, str, dict[str, float]]:
    """The rule of ``auto`` (module docstring): the chosen name, why, and each candidate's gap in SE.

    ``margin_of`` gives the margin from the fewest labels of a class (``None``: no margin, standard errors
    alone)."""
    names = [n for n in order if n in available] + [n for n in available if n not in order]
    scored = {n: estimates[n] for n in names if n in estimates and estimates[n].accuracy is not None}
    if not scored:
        return names[0], "no estimate to compare the candidates by: the first available in the fixed order", {}
    best = max(scored, key=lambda n: (scored[n].balanced_accuracy, -names.index(n)))
    gaps = {n: paired_gap(scored[best], est) for n, est in scored.items()}
    top = scored[best].balanced_accuracy
    room = margin_of(min(scored[best].labels_per_class.values())) if margin_of else 0.0
    chosen = next(n for n in names if n in scored and (gaps[n] <= tolerance
                                                        or top - scored[n].balanced_accuracy <= room))
    if chosen == best:
        why = "the best estimate"
    else:
        within = f"{tolerance:g} standard error" + (f" or {100 * room:.1f} points" if room else "")
        why = (f"within {within} of the best estimate ({best}: {_pct(top)}) "
               f"and first in the fixed order {', '.join(order)}")
    return chosen, why, gaps


def fold_predictors(contenders: Sequence[Contender], ids: Sequence[torch.Tensor]
                    ) -> tuple[dict[str, Callable], dict[str, Callable], int]:
    """What :func:`~gflkit.prediction.diagnostics.cross_validate` takes to estimate ``contenders``: each one's
    prediction from one support set (only of the labelled nodes, when it can), the prediction from several
    support sets at once of those that propagate them side by side (``fold_scores``), and how many folds
    fit in :data:`FOLD_BLOCK`."""
    labelled = torch.cat([torch.as_tensor(t, dtype=torch.int64) for t in ids])
    predicts: dict[str, Callable] = {c.name: (lambda rest, c=c: c.predicted(rest, labelled)) for c in contenders}
    batched: dict[str, Callable] = {c.name: c.predicted_folds for c in contenders
                                    if hasattr(c.candidate, "fold_scores")}
    nodes = max((c.graph.num_nodes() for c in contenders), default=1)
    return predicts, batched, max(1, FOLD_BLOCK // max(1, nodes * len(ids)))


def select(contenders: Sequence[Contender], names: Sequence[str], ids: Sequence[torch.Tensor], *,
           method: str = "auto", estimate: bool = True, seed: int = 0, skipped: dict[str, str] | None = None,
           features: str = "") -> tuple[Contender, Selection]:
    """Cross-validate ``contenders`` on the labels and choose one by ``method`` (``auto``: :func:`choose`).

    With a forced method only that candidate is estimated (and only with ``estimate``).
    """
    by_name = {c.name: c for c in contenders}
    todo = contenders if method == "auto" else [by_name[method]]
    estimates: dict[str, Estimate] = {}
    if estimate:
        predicts, batched, batch = fold_predictors(todo, ids)
        refine = {c.name: getattr(getattr(c.candidate, "refine", None), "method", "none") for c in todo}
        estimates = cross_validate(predicts, names, ids, seed=seed, refine=refine, batched=batched, batch=batch)
    if method != "auto":
        chosen, why, gaps = method, f"asked for (`method={method}`)", {}
    else:
        chosen, why, gaps = choose(estimates, [c.name for c in todo])
    return by_name[chosen], Selection(chosen, why, estimates, gaps, method, dict(skipped or {}), features)
