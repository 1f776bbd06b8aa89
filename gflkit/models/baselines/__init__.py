"""Baselines of the paper's Table 2 that fit each test graph on its own."""
from .gcn import fit_predict_gcn

#: Per-graph baselines: ``fit_predict(g, episode, num_classes=..., seed=...) -> (Q,) predictions``.
PER_GRAPH = {"gcn": fit_predict_gcn}

__all__ = ["fit_predict_gcn", "PER_GRAPH"]
