"""Class scores of every node of a new graph, for each model that can predict on one.

GFL (any preset, Protonet included), K-NN and Matching Network compare node
embeddings with the labelled (support) nodes, so they score any classes, each
with any number of support nodes. MAML and All-Graph-Finetune adapt their
classifier head on the support nodes, so they take at most as many classes as
they were trained with. Scores of all nodes are computed in chunks of
:data:`CHUNK` nodes; nothing is ``n x n``.
"""
from __future__ import annotations

import copy
from typing import Sequence

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ..errors import GFLError
from ..models.baselines import AllGraphFinetune, KNearestNeighbours, MAML, MatchingNetwork
from ..models.gfl import GFL

__all__ = ["CHUNK", "class_scores", "embeddings", "gfl_prototypes", "shared_embeddings"]

#: Query nodes scored at a time.
CHUNK = 1 << 18


def _flat(support: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Support ids of all classes in one vector, and their classes."""
    ids = torch.cat(list(support))
    target = torch.cat([torch.full((len(s),), c, dtype=torch.int64) for c, s in enumerate(support)])
    return ids, target


def _chunked(n: int, score) -> torch.Tensor:
    return torch.cat([score(slice(lo, min(lo + CHUNK, n))) for lo in range(0, n, CHUNK)])


@torch.no_grad()
def gfl_prototypes(model: GFL, g: dgl.DGLGraph, z: torch.Tensor, support: Sequence[torch.Tensor]) -> torch.Tensor:
    """One prototype per class from support sets of any sizes.

    Classes are independent in the PGNN (each has its own relation graph) and
    share the gate, which is computed once; classes with equally many support
    nodes are scored in one call.

    Shapes:
        z: ``(N, d)``; support: ``C`` tensors of ``(K_c,)`` ids; returns ``(C, d)``.
    """
    if model.pgnn is None:
        return torch.stack([z[s].mean(0) for s in support])
    gate = model.graph_gate(g, z)  # (1, |phi|) or None
    protos: list[torch.Tensor | None] = [None] * len(support)
    for k in sorted({len(s) for s in support}):
        classes = [c for c, s in enumerate(support) if len(s) == k]
        ids = torch.stack([support[c] for c in classes]).unsqueeze(0).to(z.device)  # (1, C_k, K)
        out = model.prototype(g, z, ids, gate)[0]  # (C_k, d)
        for j, c in enumerate(classes):
            protos[c] = out[j]
    return torch.stack(protos)


@torch.no_grad()
def _gfl_scores(model: GFL, g, support, z=None) -> torch.Tensor:
    z = model.embed(g) if z is None else z
    protos = gfl_prototypes(model, g, z, support)
    return _chunked(g.num_nodes(), lambda s: model.distance(z[s], protos))


@torch.no_grad()
def _knn_scores(model: KNearestNeighbours, g, support, z=None) -> torch.Tensor:
    """Vote shares among the ``k`` nearest supports (log, so a softmax returns them)."""
    from ..models.baselines.knn import knn_predict

    z = model.embed(g) if z is None else z
    ids, target = _flat(support)
    k, metric, c = min(model.options["k"], len(ids)), model.options["metric"], len(support)

    def score(s):
        if metric == "cosine":
            dist = -F.normalize(z[s], dim=1) @ F.normalize(z[ids], dim=1).T
        else:
            dist = torch.cdist(z[s], z[ids])
        order = torch.sort(dist, dim=1, stable=True).indices[:, :k]
        votes = F.one_hot(target[order], c).sum(1).float() / k  # (Q, C)
        winner = knn_predict(z[s], z[ids], target, c, k, metric)
        votes[torch.arange(len(winner)), winner] += 1e-6  # the model's own tie-break decides the label
        return votes.clamp_min(1e-12).log()

    return _chunked(g.num_nodes(), score)


@torch.no_grad()
def _matching_scores(model: MatchingNetwork, g, support, z=None) -> torch.Tensor:
    """``log P(y | q)``: the attention mass on each class's supports."""
    z = model.embed(g) if z is None else z
    ids, target = _flat(support)
    sup = F.normalize(z[ids], dim=1)
    onehot = F.one_hot(target, len(support)).bool()  # (S, C)
    scale = model.options["scale"]

    def score(s):
        att = scale * F.normalize(z[s], dim=1) @ sup.T  # (Q, S)
        per_class = att.unsqueeze(2).masked_fill(~onehot, float("-inf")).logsumexp(1)  # (Q, C)
        out = per_class - att.logsumexp(1, keepdim=True)
        if model.options["predict"] == "nearest":  # the paper's rule: the nearest support's class wins
            out[torch.arange(len(out)), target[att.argmax(1)]] += 1e3
        return out

    return _chunked(g.num_nodes(), score)


def _head_classes(model, support, name: str) -> None:
    if len(support) > model.num_classes:
        raise GFLError(f"the {name} run was trained with a {model.num_classes}-class head; it cannot predict "
                       f"{len(support)} classes (GFL, protonet, knn and matchingnet can)")


def _maml_scores(model: MAML, g, support) -> torch.Tensor:
    """Adapt ``theta`` on the support set (``test_steps`` SGD steps), then the head's logits."""
    from torch.func import functional_call

    _head_classes(model, support, "maml")
    ids, target = _flat(support)
    params = dict(model.named_parameters())
    for _ in range(model.options["test_steps"]):
        loss = F.cross_entropy(functional_call(model, params, (g,))[ids], target)
        grads = torch.autograd.grad(loss, list(params.values()))
        params = {n: (p - model.options["inner_lr"] * d).detach().requires_grad_()
                  for (n, p), d in zip(params.items(), grads)}
    with torch.no_grad():
        return functional_call(model, params, (g,))[:, : len(support)]


def _agf_scores(model: AllGraphFinetune, g, support) -> torch.Tensor:
    """Fine-tune a copy on the support set (``finetune_steps`` Adam steps), then its logits."""
    _head_classes(model, support, "agf")
    ids, target = _flat(support)
    tuned = copy.deepcopy(model)
    tuned.train()
    opt = torch.optim.Adam(tuned.parameters(), lr=model.options["finetune_lr"])
    for _ in range(model.options["finetune_steps"]):
        loss = F.cross_entropy(tuned(g)[ids][:, : len(support)], target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    tuned.eval()
    with torch.no_grad():
        return tuned(g)[:, : len(support)]


def class_scores(model: nn.Module, g: dgl.DGLGraph, support: Sequence[torch.Tensor],
                 z: torch.Tensor | None = None) -> torch.Tensor:
    """Scores of every node of ``g`` for each class, before the softmax.

    Args:
        model: a GFL model (any preset) or a transfer baseline that can predict on a new graph.
        g: a prepared graph (:func:`~gflkit.graphs.prepare_graph`).
        support: per class, the ids of its labelled nodes in ``g`` (any number >= 1).
        z: the model's node embeddings of ``g`` (:func:`embeddings`) when already computed: models
            that compare embeddings (GFL, K-NN, Matching Network) then skip the encoder, so
            scoring ``g`` from several support sets embeds it once. MAML and All-Graph-Finetune
            adapt their encoder to the support set and ignore it.

    Shapes:
        returns ``(N, C)``.
    """
    if isinstance(model, GFL):
        return _gfl_scores(model, g, support, z)
    for kind, fn in ((KNearestNeighbours, _knn_scores), (MatchingNetwork, _matching_scores)):
        if isinstance(model, kind):
            return fn(model, g, support, z)
    for kind, fn in ((MAML, _maml_scores), (AllGraphFinetune, _agf_scores)):
        if isinstance(model, kind):
            return fn(model, g, support)
    raise GFLError(f"{getattr(model, 'name', type(model).__name__)} cannot predict on a new graph: only GFL, "
                   f"protonet, knn, matchingnet, maml and agf runs can")


def embeddings(model: nn.Module, g: dgl.DGLGraph) -> torch.Tensor:
    """Node embeddings ``Z`` of the model's encoder on a prepared graph: ``(N, d)``."""
    with torch.no_grad():
        if hasattr(model, "embed"):
            return model.embed(g)
        if hasattr(model, "encoder"):
            return model.encoder(g)
    raise GFLError(f"{getattr(model, 'name', type(model).__name__)} has no node encoder to embed with")


def shared_embeddings(model: nn.Module, g: dgl.DGLGraph) -> torch.Tensor | None:
    """The embeddings :func:`class_scores` can take as ``z`` for every support set of ``g``, or ``None``.

    ``None`` for models that adapt their encoder to each support set (MAML,
    All-Graph-Finetune) and for models that cannot predict (:func:`class_scores` says so).
    """
    if isinstance(model, (GFL, KNearestNeighbours, MatchingNetwork)):
        return embeddings(model, g)
    return None
