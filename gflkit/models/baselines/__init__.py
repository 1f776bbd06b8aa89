"""Baselines of the paper's Table 2 (appendix B).

Two kinds, by what they learn from:

* per-graph baselines fit each test graph's support set alone:
  ``fit_predict(g, episode, *, num_classes, seed) -> (Q,) predictions``;
* transfer baselines (:class:`TransferBaseline`) learn from the meta-training
  graphs first, then predict each test graph (possibly adapting on its support set).
"""
from .base import TransferBaseline
from .gcn import fit_predict_gcn

#: Per-graph baselines by model name.
PER_GRAPH = {"gcn": fit_predict_gcn}

#: Transfer baselines by model name.
TRANSFER: dict[str, type[TransferBaseline]] = {}

__all__ = ["fit_predict_gcn", "PER_GRAPH", "TRANSFER", "TransferBaseline"]
