"""predict's candidates fitted on a graph's labels alone, as per-graph baselines (``gflkit compare`` rows).

Each is registered in :data:`gflkit.names.PER_GRAPH_BASELINES` and answers
``fit_predict(g, episode, *, num_classes, seed)`` as the other per-graph
baselines do: the candidate (:mod:`gflkit.prediction.candidates`) scores the
episode's query nodes from its support set on the graph predict would give it
(:func:`~gflkit.prediction.predictor.candidate_graph`: the graph's own
features, or structural ones when it has none), so a compare row is the same
method ``gflkit predict --method NAME`` runs, scored on the same episodes as
the other rows. The candidates draw nothing at random (structural features
are computed with predict's default seed): ``seed`` is unused.
"""
from __future__ import annotations

import dgl
import torch

from .candidates import SGC_HOPS, NearestCentroid, RidgeClassifier
from .predictor import candidate_graph

__all__ = []


class CandidateBaseline:
    """A candidate that scores rows (``scores_rows``) as ``fit_predict(g, episode, *, num_classes, seed)``."""

    def __init__(self, candidate):
        self.candidate = candidate
        self.name = candidate.name

    def __call__(self, g: dgl.DGLGraph, episode, *, num_classes: int, seed: int = 0) -> torch.Tensor:
        """The predicted class of each query node of ``episode``: ``(Q,)``."""
        h, _ = candidate_graph(g, f"graph {episode.graph_id}")
        with torch.no_grad():
            scores = self.candidate.class_scores(h, list(episode.support), nodes=episode.query)
        return scores.argmax(1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


fit_predict_centroid = CandidateBaseline(NearestCentroid(0))
fit_predict_centroid_sgc = CandidateBaseline(NearestCentroid(SGC_HOPS))
fit_predict_ridge = CandidateBaseline(RidgeClassifier(0))
fit_predict_ridge_sgc = CandidateBaseline(RidgeClassifier(SGC_HOPS))
