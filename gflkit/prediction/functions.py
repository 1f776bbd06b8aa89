"""``gflkit predict`` and ``gflkit embed`` as functions: files (or a collection graph) in, a table out."""
from __future__ import annotations

import logging
import os
import warnings as pywarnings
from contextlib import contextmanager
from typing import Hashable, Iterator, Mapping, Sequence

import numpy as np
import torch

from ..refine import RefineConfig
from .inputs import _positions, read_graph, read_labels, support_from_labels
from .predictor import PredictionWarning, Predictor, load, predict_nodes

__all__ = ["predict", "embed"]

log = logging.getLogger(__name__)


def predict(run: str | os.PathLike | Predictor | None, *,
            labels: str | os.PathLike | Mapping[Hashable, Sequence[int]], edges=None, nodes=None, features=None,
            graph: str | None = None, columns=None, classes: Sequence[str] | None = None, label_col: str = "label",
            root=None, force: bool = False, device: str | torch.device | None = None,
            refine: RefineConfig | None = None, method: str = "auto", estimate: bool = True, seed: int = 0,
            return_report: bool = False):
    """``gflkit predict`` as a function: classify every node of a new graph, and say what that is worth.

    The candidates (the run's model, plain and refined, and the methods fitted
    on the graph's own labels: :mod:`gflkit.prediction.candidates`) are each
    cross-validated on the given labels, and ``method="auto"`` predicts with the
    one the rule of :mod:`gflkit.prediction.selection` picks. The chosen
    candidate's estimate, every candidate's, the feature comparison with the
    training collection and the collapse checks (:mod:`gflkit.prediction.diagnostics`,
    which documents the thresholds) are on the returned table (``table.report``,
    ``table.estimate``, ``table.method``, ``table.candidates``, ``table.warnings``);
    they are logged (INFO, each check beyond its threshold as one WARNING line)
    and raised as Python warnings
    (:class:`~gflkit.prediction.predictor.PredictionWarning`, ``PredictionNote``).

    Args:
        run: a run folder, its ``best.pt``, a loaded :class:`Predictor`, or ``None``: only the candidates
            fitted on the graph's labels.
        labels: a ``node,label`` table, or ``{label: node ids}`` (ids as in the tables).
        edges, nodes, features, columns: the graph's tables (as ``preprocess tables`` reads them); without
            features the candidates read features computed from the edges (:mod:`gflkit.data.structure`).
        graph: instead of tables, ``COLLECTION:GRAPH_ID`` (node ids: the graph's ``orig_id``
            when it has one, as :func:`~gflkit.prediction.inputs.export_tables` writes them, else positions).
        classes: the classes to predict (default: those of the labels).
        label_col: the label column of the labels table (its node column is ``node`` or ``id``).
        root: data root for collection names.
        force: predict even when the collection graph's feature fingerprint differs from the run's.
        device: where a GFL model computes (``cpu``, ``cuda``, ``cuda:N``); ignored for a loaded Predictor.
        refine: refine the run's scores over the graph (:class:`~gflkit.refine.RefineConfig`, as evaluate's);
            an active one means ``method="model+<refine>"`` unless ``method`` names another.
        method: ``auto`` or a candidate (:data:`~gflkit.prediction.predictor.METHODS`).
        estimate: estimate the accuracy from the labels (``False`` skips it, which is faster).
        seed: seed of the estimate's folds.
        return_report: return ``(table, report)``, the report a
            :class:`~gflkit.prediction.diagnostics.PredictionReport` (``report.to_dict()`` is what
            ``--report`` writes); its ``warnings`` hold every warning the call logged.

    Returns:
        A :class:`~gflkit.prediction.predictor.PredictionTable`, one row per node:
        ``node, label, score_<class>..., is_support``; with ``return_report``, ``(table, report)``.
    """
    with captured_warnings() as seen:
        predictor = run if isinstance(run, Predictor) or run is None else load(run, root, device)
        g, ids, what = read_graph(predictor, edges=edges, nodes=nodes, features=features, graph=graph,
                                  columns=columns, root=root, force=force)
        if isinstance(labels, Mapping):
            support, source = {str(k): _positions(ids, v, what) for k, v in labels.items()}, what
        else:
            unlabelled = columns.unlabelled if columns is not None else ("-1",)
            support, source = read_labels(labels, ids, label_col=label_col, unlabelled=unlabelled), str(labels)
        support = support_from_labels(support, classes, source)
        table, report = predict_nodes(predictor, g, support, method=method, node_ids=ids, what=what,
                                      labels_what=source, refine=refine, report=True, estimate=estimate, seed=seed)
    earlier = [line for line in seen if line not in report.warnings]
    for line in earlier:
        pywarnings.warn(line, PredictionWarning, stacklevel=2)
    report.warnings = seen + [line for line in report.warnings if line not in seen]
    return (table, report) if return_report else table


@contextmanager
def captured_warnings() -> Iterator[list[str]]:
    """The WARNING (and worse) lines the ``gflkit`` loggers emit inside the ``with`` block, in order."""
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Collect(logging.WARNING)
    logging.getLogger("gflkit").addHandler(handler)
    try:
        yield lines
    finally:
        logging.getLogger("gflkit").removeHandler(handler)


def embed(run: str | os.PathLike | Predictor, *, edges=None, nodes=None, features=None, graph: str | None = None,
          columns=None, root=None, force: bool = False,
          device: str | torch.device | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``gflkit embed`` as a function: the run encoder's node embeddings of a graph (on ``device``).

    Returns:
        The node ids ``(N,)`` (sorted) and the embeddings ``(N, d)`` float32, row ``i`` for ``ids[i]``.
    """
    predictor = run if isinstance(run, Predictor) else load(run, root, device)
    g, ids, what = read_graph(predictor, edges=edges, nodes=nodes, features=features, graph=graph,
                              columns=columns, root=root, force=force)
    return ids, predictor.embed(g, what).numpy()
