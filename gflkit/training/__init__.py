"""Training: Algorithm 1 (meta-training with validation selection and resume), transfer fitting,
a private step engine behind one switch, and distributed launch and DDP.

``loop`` runs the steps, saves resume checkpoints and keeps the best validated
model; ``meta`` builds a run from settings and drives the loop; ``_engine``
computes one meta-batch's loss; ``validation`` decides how a run is validated;
``distributed`` and ``parallel`` start the processes.
"""
from __future__ import annotations

from .meta import CHECKPOINT_EVERY, TrainResult, fit_transfer, meta_train

__all__ = ["TrainResult", "meta_train", "fit_transfer", "CHECKPOINT_EVERY"]
