"""Baselines of the paper's Table 2 (appendix B).

Two kinds, by what they learn from:

* per-graph baselines fit each test graph's support set alone:
  ``fit_predict(g, episode, *, num_classes, seed) -> (Q,) predictions``
  (Label Propagation, Planetoid, DeepWalk, node2vec, Non-transfer GCN);
* transfer baselines (:class:`TransferBaseline`) learn from the meta-training
  graphs first, then predict each test graph (possibly adapting on its support set;
  Transfer-Head does not: it is zero-shot).
  Protonet is a GFL configuration (:data:`gflkit.config.PRESETS`), not a baseline here.

Both are registered in :mod:`gflkit.names` (:data:`~gflkit.names.PER_GRAPH_BASELINES`,
:data:`~gflkit.names.TRANSFER_BASELINES`): a new baseline is its module plus one line there.
Those that can predict on a new graph answer ``class_scores(g, support, z=None)``.
"""
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ...names import PER_GRAPH_BASELINES, TRANSFER_BASELINES
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


class _Registry(Mapping):
    """Read-only view of a registry of :mod:`gflkit.names` (name -> ``"module:attribute"``): each
    name resolves to what implements it, imported when first looked up."""

    def __init__(self, table: dict[str, str]) -> None:
        self._table = table

    def __getitem__(self, name: str) -> Any:
        module, _, attribute = self._table[name].partition(":")
        return getattr(importlib.import_module(module, __name__), attribute)

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._table!r})"


#: Per-graph baselines by model name (:data:`gflkit.names.PER_GRAPH_BASELINES`).
PER_GRAPH: Mapping[str, Callable[..., Any]] = _Registry(PER_GRAPH_BASELINES)

#: Transfer baselines by model name (:data:`gflkit.names.TRANSFER_BASELINES`).
TRANSFER: Mapping[str, type[TransferBaseline]] = _Registry(TRANSFER_BASELINES)

__all__ = [
    "PER_GRAPH", "TRANSFER", "TransferBaseline", "GCNClassifier", "AllGraphFinetune", "KNearestNeighbours",
    "MatchingNetwork", "MAML", "TransferHead", "fit_predict_deepwalk", "fit_predict_gcn",
    "fit_predict_lp", "fit_predict_node2vec", "fit_predict_planetoid",
]
