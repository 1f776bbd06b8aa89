"""The contract every trainable model of gflkit keeps: :class:`FewShotModel`."""
from __future__ import annotations

import inspect
from typing import Sequence

import dgl
import torch
from torch import nn

from ..episodes import Episode
from ..graphs import EpisodeBatch

__all__: list[str] = []  # exported by gflkit.models


class FewShotModel(nn.Module):
    """A model that learns from the train graphs and scores the nodes of a graph from a support set.

    Every registered trainable model (GFL's presets and the transfer baselines of
    :data:`gflkit.names.TRANSFER_BASELINES`) subclasses it; the training loop,
    evaluation and prediction call the methods below and read the capabilities
    below, and never ask a model whether it has an attribute.

    **Capabilities** are class attributes, in the spirit of scikit-learn's
    estimator tags (a subclass may turn one into a property when it depends on
    how the instance was built, as GFL's ``takes_feature_parts`` on its encoder):

    * ``episodic``: trained by the episode engine (:mod:`gflkit.training._engine`):
      ``forward(batch)`` on an :class:`~gflkit.graphs.EpisodeBatch` (graph, support
      and query ids, feature blocks, whether the graphs are symmetric) is the
      training pass (a torch module's ``__call__``), ``loss(output, labels)`` its
      loss; otherwise the loop calls :meth:`step_loss`.
    * ``embeds``: :meth:`embed` gives node embeddings.
    * ``shares_embeddings``: :meth:`class_scores` takes ``z``, computed once per
      graph by :meth:`shared_embeddings` for all its support sets.
    * ``adapts``: :meth:`class_scores` trains on the support set (it needs
      gradients, and runs on the calling thread unless ``adapts_in_threads``).
    * ``adapts_in_threads``: an adapting model whose :meth:`class_scores` neither
      rebinds its parameters nor draws random numbers, so graphs may be scored
      side by side.
    * ``uses_support``: :meth:`class_scores` reads the support set; a model
      that does not (zero-shot) scores the classes it was trained with, and so
      cannot predict on a new graph.
    * ``head_classes``: :meth:`class_scores` adapts a classifier head, so it
      scores at most :attr:`num_classes` classes; other models score any.
    * ``takes_feature_parts``: the training pass reads a batch's features
      graph by graph, so the engine batches graphs without copying them.
    * ``needs_prepare``: :meth:`prepare` computes ahead, from a batch alone, what
      the training pass reads besides the parameters.
    * ``steps_in_parts``: :meth:`step_loss` is the mean of the graphs' own losses,
      reads the parameters without rebinding them (no ``functional_call``) and draws
      nothing from the global random generators, so the training loop may compute a
      meta-batch in parts side by side (:func:`gflkit.training._engine.graph_mean_loss`;
      dropout, which draws, turns the parts off by itself).

    **Methods**: :meth:`class_scores` is the one scoring method (evaluation
    takes the queries' rows, prediction every node's); the others have defaults
    that say what the model lacks.

    **Options**: a model is built as ``cls(in_feats, num_classes, **options)``
    (GFL: ``GFL(in_feats, cfg)``); an option the class does not take is refused
    (:meth:`option_names`).
    """

    #: The model's registered name.
    name: str = "model"
    #: Node feature size it was built for (``None``: not known, as for a GFL composed by hand).
    in_feats: int | None = None
    episodic: bool = False
    embeds: bool = False
    shares_embeddings: bool = False
    adapts: bool = False
    adapts_in_threads: bool = False
    uses_support: bool = True
    head_classes: bool = False
    takes_feature_parts: bool = False
    needs_prepare: bool = False
    steps_in_parts: bool = False

    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z: torch.Tensor | None = None, *,
                     nodes: torch.Tensor | None = None) -> torch.Tensor:
        """Scores before the softmax of ``nodes`` of ``g`` (default: every node) for each class.

        Args:
            g: a prepared graph (:func:`~gflkit.graphs.prepare_graph`).
            support: per class, the ids of its labelled nodes in ``g`` (any number >= 1; the
                rows of an episode's ``(C, K)`` support do).
            z: :meth:`shared_embeddings` of ``g`` when already computed (``shares_embeddings``).
            nodes: the node ids to score, ``(Q,)``.

        Shapes:
            returns ``(N, C)``, or ``(Q, C)`` with ``nodes``.
        """
        raise NotImplementedError(f"{self.name} does not score nodes")

    def embed(self, g: dgl.DGLGraph) -> torch.Tensor:
        """Node embeddings of a prepared graph (``embeds``). Shapes: ``(N, d)``."""
        raise NotImplementedError(f"{self.name} has no node encoder to embed with")

    def shared_embeddings(self, g: dgl.DGLGraph) -> torch.Tensor | None:
        """The ``z`` :meth:`class_scores` takes for every support set of ``g``; ``None`` for a model
        that does not share them (``shares_embeddings`` false)."""
        return None

    def prepare(self, batch: EpisodeBatch) -> None:
        """Compute ahead what the training pass over ``batch`` reads besides the parameters
        (``needs_prepare``); the training pass then finds it (its numbers are the same)."""

    def step_loss(self, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                  labels: Sequence[torch.Tensor]) -> torch.Tensor:
        """The training loss of one step on a meta-batch (models that are not ``episodic``).

        Args:
            graphs: the batch's prepared graphs (:func:`~gflkit.graphs.prepare_graph`).
            episodes: one episode per graph, drawn for this step.
            labels: every node's label per graph (``-1`` unlabelled), ``(N_b,)``.
        """
        raise NotImplementedError(f"{self.name} is trained by the episode engine (episodic)")

    @classmethod
    def option_names(cls) -> set[str]:
        """The keyword options the constructors of the class and its bases take."""
        names: set[str] = set()
        for klass in cls.__mro__:
            if "__init__" in vars(klass) and issubclass(klass, FewShotModel):
                for p in inspect.signature(klass.__init__).parameters.values():
                    if (p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
                            and p.name not in ("self", "in_feats", "num_classes")):
                        names.add(p.name)
        return names
