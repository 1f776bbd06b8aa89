"""Class scores of every node of a new graph, for each model that can predict on one.

Each such model answers ``class_scores(g, support, z=None)`` itself (:class:`~gflkit.models.gfl.GFL`
with any preset, Protonet included, and the transfer baselines K-NN, Matching Network, MAML, GPN,
All-Graph-Finetune and TLP); this module dispatches to it, and names the models that can when one cannot
(:func:`predicting_models`, read from the registry). GFL, K-NN, Matching Network and GPN
compare node embeddings with the labelled (support) nodes, and TLP fits a linear probe
on them, so they score any classes, each with any number of support nodes. MAML and All-Graph-Finetune
adapt their classifier head on the support nodes (``head_classes``), so they take at most as many
classes as they were trained with. Scores of all nodes are computed in chunks of
:data:`CHUNK` nodes; nothing is ``n x n``.
"""
from __future__ import annotations

from typing import Sequence

import dgl
import torch

from ..errors import GFLError
from ..models.base import FewShotModel
from ..models.gfl import GFL
from ..models.baselines import TRANSFER
from ..models.support_sets import CHUNK, cannot_predict, check_head_classes  # noqa: F401 - CHUNK stays importable
from ..names import GFL_MODELS

__all__ = []


def gfl_prototypes(model: GFL, g: dgl.DGLGraph, z: torch.Tensor, support: Sequence[torch.Tensor]) -> torch.Tensor:
    """One prototype per class from support sets of any sizes (:meth:`GFL.class_prototypes`)."""
    return model.class_prototypes(g, z, support)


def predicting_models(any_classes: bool = False) -> list[str]:
    """The models whose runs predict on a new graph: GFL's presets and the transfer baselines whose
    ``class_scores`` read the support set (``uses_support``, read from the registry); ``any_classes``:
    only those not bound to a classifier head."""
    return [*GFL_MODELS, *(name for name, cls in TRANSFER.items() if cls.uses_support
                           and not (any_classes and cls.head_classes))]


def class_scores(model: FewShotModel, g: dgl.DGLGraph, support: Sequence[torch.Tensor],
                 z: torch.Tensor | None = None) -> torch.Tensor:
    """Scores of every node of ``g`` for each class, before the softmax: ``model.class_scores``.

    Args:
        model: a GFL model (any preset) or a transfer baseline that can predict on a new graph.
        g: a prepared graph (:func:`~gflkit.graphs.prepare_graph`).
        support: per class, the ids of its labelled nodes in ``g`` (any number >= 1).
        z: the model's node embeddings of ``g`` (:func:`shared_embeddings`) when already computed: models
            that compare embeddings (GFL, K-NN, Matching Network, GPN) then skip the encoder, so
            scoring ``g`` from several support sets embeds it once. MAML and All-Graph-Finetune
            adapt their encoder to the support set and ignore it.

    Shapes:
        returns ``(N, C)``.
    """
    if not model.uses_support:
        raise cannot_predict(model, predicting_models())
    check_head_classes(model, support, predicting_models(any_classes=True))
    return model.class_scores(g, support, z)


def embeddings(model: FewShotModel, g: dgl.DGLGraph) -> torch.Tensor:
    """Node embeddings ``Z`` of the model's encoder on a prepared graph: ``(N, d)``."""
    with torch.no_grad():
        if model.embeds:
            return model.embed(g)
    raise GFLError(f"{model.name} has no node encoder to embed with")


def shared_embeddings(model: FewShotModel, g: dgl.DGLGraph) -> torch.Tensor | None:
    """The embeddings :func:`class_scores` can take as ``z`` for every support set of ``g``
    (``model.shared_embeddings``), or ``None``.

    ``None`` for models that adapt their encoder to each support set (MAML,
    All-Graph-Finetune) and for models that cannot predict (:func:`class_scores` says so).
    """
    return model.shared_embeddings(g) if model.shares_embeddings else None
