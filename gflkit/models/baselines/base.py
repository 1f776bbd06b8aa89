"""The base of baselines that learn from the meta-training graphs."""
from __future__ import annotations

from typing import Any

from ..base import FewShotModel

__all__ = ["TransferBaseline"]


class TransferBaseline(FewShotModel):
    """A model trained on the ``train`` graphs, then applied to each test graph.

    A :class:`~gflkit.models.base.FewShotModel` that is not ``episodic``: subclasses set
    :attr:`name` and their capabilities, build their network in ``__init__(in_feats,
    num_classes, **options)`` (options are plain values kept in checkpoints; one the
    class does not take is a ``ValueError``), and implement :meth:`step_loss` and
    :meth:`class_scores`; :func:`gflkit.training.meta.fit_transfer` runs the shared
    training loop on :meth:`step_loss`.
    """

    name: str = "baseline"
    #: Whether :func:`gflkit.training.meta.fit_baseline` trains this model on the train graphs; a model
    #: whose options say otherwise is used as initialised (seeded by the run).
    trains: bool = True

    def __init__(self, in_feats: int, num_classes: int, **options: Any) -> None:
        unknown = sorted(set(options) - type(self).option_names())
        if unknown:
            raise ValueError(f"{self.name} takes no option {', '.join(unknown)}: choose from "
                             f"{', '.join(sorted(type(self).option_names()))}")
        super().__init__()
        self.in_feats, self.num_classes, self.options = in_feats, num_classes, dict(options)

    def for_validation(self) -> "TransferBaseline":
        """The model the training loop's validation rounds score: this one (a baseline whose scoring
        trains something per graph may return a cheaper view of itself sharing these weights)."""
        return self
