"""Which graphs select the model while it trains, recorded with the run.

Training keeps the weights that score best on the val graphs and stops early
when they stop improving (:func:`gflkit.training.loop.fit_loop`). A collection without
val graphs gets neither: every step is taken and the last weights are kept,
whatever they score. :func:`validation_plan` says which case a run is in, as
the ``validation`` entry of its ``config.json``:

* ``{"from": "collection", "graphs": n, ...}``: the collection's ``n`` val
  graphs that give episodes;
* ``{"from": "train", "graphs": n, "graph_ids": [...], ...}``: ``n`` train
  graphs moved to validation (``TrainConfig.val_from_train``), drawn with
  ``default_rng([seed, 19])`` from the train graphs that give episodes, a
  function of the collection and the settings alone, so a resumed run (which
  reads its settings back) moves the same ones;
* ``{"from": "none", "graphs": 0, "model_selection": false, "warning": ...}``:
  no val graph gives episodes, so no model selection and no early stopping;
  the warning is also logged when training starts.
"""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import numpy as np

from ..data import GraphCollection
from ..episodes import usable_graph_ids
from ..errors import SettingError

__all__ = []

log = logging.getLogger(__name__)

#: The warning of a run whose collection has no usable val graphs (``{why}``: which collection, and why).
NO_VAL_WARNING = (
    "{why}: model selection and early stopping are off, every step is taken and the last weights are kept; give the "
    "collection val graphs (when preprocessing: `n_graphs=TRAIN,VAL,TEST`, `val_graphs` or a split column) or move "
    "some train graphs to validation (`val_from_train=N`)"
)


def validation_plan(collection: GraphCollection, val_from_train: int = 0, seed: int = 0, k_shot: int = 10, *,
                    warn: bool = True) -> tuple[GraphCollection, dict[str, Any]]:
    """The collection to train on and the facts of its validation (see the module docstring).

    Only graphs that give episodes of ``k_shot`` shots count
    (:func:`~gflkit.episodes.usable_graph_ids`): val graphs that do not are
    skipped by the training loop, and train graphs that do not are never
    moved to validation.

    Args:
        collection: the collection a run trains on.
        val_from_train: train graphs to move to validation (0: none).
        seed: the run's seed, which draws them.
        k_shot: the run's support nodes per class.
        warn: log :data:`NO_VAL_WARNING` when nothing selects the model.

    Returns:
        ``collection`` itself, or a copy whose drawn train graphs are val
        graphs (same graphs, same ids); and the facts for ``config.json``.

    Raises:
        SettingError: ``val_from_train`` is given for a collection that has
            usable val graphs, or would leave no usable train graph.
    """
    n_val = collection.splits.count("val")
    usable_val = usable_graph_ids(collection, "val", k_shot)
    if val_from_train:
        if usable_val:
            raise SettingError("val_from_train", val_from_train,
                               f"collection {collection.name!r} has {len(usable_val)} val graph(s), which select the "
                               f"model already; leave it at 0")
        train = usable_graph_ids(collection, "train", k_shot)
        if val_from_train >= len(train):
            raise SettingError("val_from_train", val_from_train,
                               f"collection {collection.name!r} has {len(train)} train graph(s) that give episodes of "
                               f"k_shot={k_shot} and at least one must stay for training; move fewer")
        rng = np.random.default_rng([seed, 19])
        chosen = sorted(int(i) for i in rng.choice(np.asarray(train), size=int(val_from_train), replace=False))
        splits = list(collection.splits)
        for i in chosen:
            splits[i] = "val"
        facts = {"from": "train", "graphs": len(chosen), "graph_ids": chosen, "model_selection": True}
        return replace(collection, splits=splits), facts
    if usable_val:
        return collection, {"from": "collection", "graphs": len(usable_val), "model_selection": True}
    why = (f"collection {collection.name!r} has no val graphs" if not n_val else
           f"none of the {n_val} val graph(s) of collection {collection.name!r} gives episodes of k_shot={k_shot} "
           f"(a class with fewer than k_shot + 1 labelled nodes)")
    warning = NO_VAL_WARNING.format(why=why)
    if warn:
        log.warning("%s", warning)
    return collection, {"from": "none", "graphs": 0, "model_selection": False, "warning": warning}
