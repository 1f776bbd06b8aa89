"""Baselines of the paper's Table 2 (appendix B).

Two kinds, by what they learn from:

* per-graph baselines fit each test graph's support set alone:
  ``fit_predict(g, episode, *, num_classes, seed) -> (Q,) predictions``
  (Label Propagation, Planetoid, DeepWalk, node2vec, Non-transfer GCN);
* transfer baselines (:class:`TransferBaseline`) learn from the meta-training
  graphs first, then predict each test graph (possibly adapting on its support set;
  Transfer-Head does not: it is zero-shot).
  Protonet is a GFL configuration (:data:`gflkit.config.PRESETS`), not a baseline here.
"""
from .agf import AllGraphFinetune, GCNClassifier
from .base import TransferBaseline
from .deepwalk import fit_predict_deepwalk
from .gcn import fit_predict_gcn
from .knn import KNearestNeighbours
from .lp import fit_predict_lp
from .maml import MAML
from .matchingnet import MatchingNetwork
from .node2vec import fit_predict_node2vec
from .planetoid import fit_predict_planetoid
from .transfer_head import TransferHead

#: Per-graph baselines by model name.
PER_GRAPH = {
    "lp": fit_predict_lp,
    "planetoid": fit_predict_planetoid,
    "deepwalk": fit_predict_deepwalk,
    "node2vec": fit_predict_node2vec,
    "gcn": fit_predict_gcn,
}

#: Transfer baselines by model name.
TRANSFER: dict[str, type[TransferBaseline]] = {
    cls.name: cls for cls in (AllGraphFinetune, KNearestNeighbours, MatchingNetwork, MAML, TransferHead)
}

__all__ = [
    "PER_GRAPH", "TRANSFER", "TransferBaseline", "GCNClassifier", "AllGraphFinetune", "KNearestNeighbours",
    "MatchingNetwork", "MAML", "TransferHead", "fit_predict_deepwalk", "fit_predict_gcn",
    "fit_predict_lp", "fit_predict_node2vec", "fit_predict_planetoid",
]
