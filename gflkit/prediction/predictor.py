"""Few-shot prediction and node embeddings on a user's new graph.

A trained run classifies the nodes of a graph it has never seen, from a few
labelled nodes per class. Because GFL (and Protonet, K-NN, Matching Network)
classify by comparing embeddings with the labelled nodes, the classes need not
be the training classes: any classes with at least one labelled node each
work. MAML and All-Graph-Finetune adapt their classifier head on the labelled
nodes, so they take at most as many classes as the run was trained on.

The run's model is one candidate among several (:mod:`gflkit.prediction.candidates`):
methods fitted on the graph's own labels (label propagation, Correct-and-Smooth,
nearest centroid and ridge regression on the raw and propagated features, or on
features computed from the edges when the graph has none). With ``method="auto"``
each is cross-validated on the given labels and one is chosen by a rule that
resists selection noise (:mod:`gflkit.prediction.selection`); a graph whose
features do not fit the run's model is answered by the others, with one warning.

Memory is linear in nodes + edges: the encoder is a sparse GCN, support
similarities are computed among support nodes only (by message passing from
them), and query scores are computed in chunks (:mod:`gflkit.prediction.class_scores`).

:func:`load` returns a :class:`Predictor`; :func:`gflkit.prediction.functions.predict`
and :func:`~gflkit.prediction.functions.embed` are what ``gflkit predict`` and
``gflkit embed`` run. A graph is always taken as simple and undirected: every
edge in both directions, self-loops and duplicates dropped
(:func:`gflkit.data.collection.undirected_edges`), whether it comes from an edge
table or is a DGLGraph passed to :meth:`Predictor.predict`, so both give the same
predictions.

Prediction also tells what its labels are worth (:mod:`gflkit.prediction.diagnostics`):
an accuracy estimate from the given labels (each held out in turn and
predicted from the others), and warnings when the graph's features are unlike
the training collection's or when the predictions collapse onto few classes.
Those warnings are logged and raised as Python warnings (:class:`PredictionWarning`),
and one :class:`PredictionNote` says which candidate predicted and its estimate,
so a notebook shows them.
"""
from __future__ import annotations

import logging
import os
import warnings as pywarnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Hashable, Mapping, Sequence

import dgl
import numpy as np
import pandas as pd
import torch
from torch import nn

from ..data.collection import undirected_edges
from ..data.structure import SPECTRAL_DIMS, STRUCTURE_KEY, structural_features
from ..data.transform import FeatureTransform, feature_fingerprint, load_transform
from ..devices import resolve_device
from ..errors import GFLError
from ..graphs import prepare_graph
from ..models import place
from ..refine import RefineConfig
from ..runs.checkpoints import load_checkpoint, training_collection
from .candidates import SGC_HOPS, CorrectAndSmooth, LabelPropagation, NearestCentroid, RidgeClassifier, RunModel
from .checks import check_finite, check_support, prediction_frame, zero_non_finite
from .class_scores import embeddings
from .diagnostics import (ESTIMATE_FOLDS, ESTIMATE_REPEATS, MIN_SHIFT_NODES, Estimate, FeatureStats,
                          PredictionReport, collapse_warnings, collection_feature_stats, feature_shift)
from .selection import ORDER, Contender, select

__all__ = ["Predictor", "load", "PredictionTable", "PredictionWarning", "PredictionNote"]

log = logging.getLogger(__name__)

#: What ``method`` may be: ``auto`` or a candidate's name.
METHODS = ("auto", *ORDER)


class PredictionWarning(UserWarning):
    """A warning about a prediction: features unlike the training data, collapse, no estimate, no run model."""


class PredictionNote(UserWarning):
    """The one line saying which candidate predicted a graph, and its estimated accuracy."""


class PredictionTable(pd.DataFrame):
    """The predictions (a DataFrame: ``node, label, score_<class>..., is_support``) with what they are worth.

    Attributes:
        report: the :class:`~gflkit.prediction.diagnostics.PredictionReport`.
        method: the candidate that predicted; ``estimate``: its estimate; ``candidates``: every candidate's
            estimate (a DataFrame); ``warnings``: the warning lines.

    A table derived from it (a slice, a merge) is a plain DataFrame.
    """

    _metadata = ["report"]

    @property
    def _constructor(self):
        return pd.DataFrame

    @property
    def method(self) -> str:
        return self.report.method

    @property
    def estimate(self) -> Estimate | None:
        return self.report.estimate

    @property
    def candidates(self) -> pd.DataFrame | None:
        return self.report.candidates

    @property
    def warnings(self) -> list[str]:
        return list(self.report.warnings)


# -- the loaded run ------------------------------------------------------------------------------------------------
# -- the loaded run ------------------------------------------------------------------------------------------------
@dataclass
class Predictor:
    """A trained run, ready to predict on new graphs.

    Attributes:
        module: the model (:class:`~gflkit.models.gfl.GFL` or a transfer baseline), in eval mode.
        meta: the checkpoint's settings (model name, episode config, classes, dataset...).
        transform: the feature transform of the run's collection (``None``: features kept as read).
        fingerprint: the run's feature fingerprint (``None`` when unknown).
        device: where the model computes (the module is on it); results come back on the CPU.
        stats: per-dimension statistics of the training collection's train features, as the run
            recorded them (``None`` for runs trained before they were recorded).
        collection: the folder of the run's collection when it was found with the run's feature
            fingerprint (the statistics of older runs are computed from it when needed).
        structure: how the run's collection computed its structural features
            (:func:`~gflkit.data.structure.give_structural_features`), ``None`` when it has read ones:
            :meth:`prepare` then computes them for a graph without features.
    """

    module: nn.Module
    meta: dict[str, Any]
    transform: FeatureTransform | None = None
    fingerprint: dict[str, Any] | None = None
    device: torch.device = torch.device("cpu")
    stats: FeatureStats | None = None
    collection: str | None = None
    stats_source: str = "the run"
    structure: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return str(self.meta.get("model", "gfl"))

    @property
    def in_feats(self) -> int:
        return int(self.module.in_feats)

    @property
    def k_shot(self) -> int:
        return int((self.meta.get("episode_config") or {}).get("k_shot", 10))

    def model_features(self, feat, what: str = "the graph") -> torch.Tensor:
        """Features as the model takes them: raw features go through the run's transform.

        NaN/inf values are set to 0 with one warning (as every reader of raw files does).

        Raises:
            GFLError: the size fits neither the model nor the transform, or the transform gives NaN/inf.
        """
        width = int(feat.shape[1])
        feat = zero_non_finite(torch.as_tensor(np.asarray(feat), dtype=torch.float32), what)
        if self.transform is not None and width == self.transform.in_feats and width != self.in_feats:
            feat = self.transform.apply(feat.numpy(), what)
        elif width != self.in_feats:
            raw = f" (or {self.transform.in_feats} raw ones)" if self.transform is not None else ""
            hint = ""
            if self.transform is None and (self.fingerprint or {}).get("transform", "none") != "none":
                hint = (f" (the run's collection {self.meta.get('dataset')!r}, whose feature transform turns raw "
                        f"features into these, was not found: pass `data_root`)")
            raise GFLError(f"the run expects {self.in_feats} features per node{raw}; {what} has {width}{hint}")
        feat = torch.as_tensor(np.asarray(feat), dtype=torch.float32)
        check_finite(feat, what)
        return feat

    def training_stats(self) -> tuple[FeatureStats | None, str]:
        """The training collection's feature statistics and where they come from, or ``None`` and why not.

        A run records them when it is trained; for an older run they are
        computed from its collection (once) when that was found.
        """
        if self.stats is None and self.collection is not None:
            from ..data import load_collection

            stats = collection_feature_stats(load_collection(self.collection))
            if stats is not None and len(stats.mean) == self.in_feats:
                self.stats, self.stats_source = stats, f"collection {self.collection}"
        if self.stats is not None:
            return self.stats, self.stats_source
        return None, ("the run records no feature statistics (it was trained before they were recorded) and its "
                      "collection was not found")

    def prepare(self, g: dgl.DGLGraph, what: str = "the graph") -> dgl.DGLGraph:
        """The model-ready copy of ``g``: features transformed and checked; edges made undirected
        (:func:`~gflkit.data.collection.undirected_edges`, as for an edge table), self-loops added."""
        if g.num_nodes() == 0:
            raise GFLError(f"{what}: the graph has no nodes")
        featureless = "feat" not in g.ndata or g.ndata["feat"].shape[1] == 0
        if featureless and self.structure is not None:  # the run was trained on structural features: compute them
            h = simple_graph(g)
            src, dst = h.edges()
            h.ndata["feat"] = self.model_features(structural_features(src, dst, h.num_nodes(), self.structure["dims"],
                                                                      seed=self.structure["seed"]), what)
            h = prepare_graph(h)
            return h if self.device.type == "cpu" else h.to(self.device)
        if featureless:
            raise GFLError(f"{what}: the graph has no node features (ndata['feat']); the run's model needs "
                           f"{self.in_feats} per node (predict answers with the candidates that need no run)")
        h = simple_graph(g)
        h.ndata["feat"] = self.model_features(g.ndata["feat"], what)
        h = prepare_graph(h)
        return h if self.device.type == "cpu" else h.to(self.device)

    def embed(self, g: dgl.DGLGraph, what: str = "the graph") -> torch.Tensor:
        """Node embeddings of ``g``: ``(N, d)``."""
        return embeddings(self.module, self.prepare(g, what)).cpu()

    def predict(self, g: dgl.DGLGraph, support: Mapping[Hashable, Sequence[int]], *, method: str = "auto",
                node_ids: Sequence[int] | None = None, what: str = "the graph", labels_what: str | None = None,
                refine: RefineConfig | None = None, report: bool = False, estimate: bool = True, seed: int = 0):
        """Classify every node of ``g`` from a few labelled ones (:func:`predict_nodes` with this run)."""
        return predict_nodes(self, g, support, method=method, node_ids=node_ids, what=what, labels_what=labels_what,
                             refine=refine, report=report, estimate=estimate, seed=seed)

    def estimate(self, g: dgl.DGLGraph, support: Mapping[Hashable, Sequence[int]], *,
                 refine: RefineConfig | None = None, seed: int = 0, folds: int = ESTIMATE_FOLDS,
                 repeats: int = ESTIMATE_REPEATS, what: str = "the graph",
                 labels_what: str | None = None) -> Estimate:
        """Estimate the accuracy of the run's model (refined by ``refine``) on ``g`` from the labels in ``support``.

        The labels of each class are split into at most ``folds`` folds; each
        fold is held out in turn and predicted from the other labels with the
        same model, feature transform and ``refine`` (leave-one-out per class
        when a class has at most ``folds`` labels), ``repeats`` times with new
        folds drawn from ``seed`` (see :mod:`gflkit.prediction.diagnostics`). Needs 2
        labelled nodes per class; otherwise the estimate's ``accuracy`` is
        ``None`` and its ``reason`` says why.

        Returns:
            An :class:`~gflkit.prediction.diagnostics.Estimate`: ``accuracy``, its 95% Wilson
            ``interval``, ``per_class_recall``, ``labels_per_class`` and how it was computed.
        """
        from .diagnostics import estimate_accuracy

        refine = refine or RefineConfig()
        names, ids = check_support(support, g.num_nodes(), self.k_shot, labels_what or what)
        model = Contender(RunModel(self.module, refine), self.prepare(g, what), what)
        return estimate_accuracy(lambda rest: model.probabilities(rest).argmax(1), names, ids, folds=folds,
                                 repeats=repeats, seed=seed, refine=refine.method)


def simple_graph(g: dgl.DGLGraph) -> dgl.DGLGraph:
    """``g`` as a simple undirected graph on the CPU, without node data."""
    src, dst = g.edges()
    return dgl.graph(undirected_edges(src.cpu(), dst.cpu(), g.num_nodes()), num_nodes=g.num_nodes())


def candidate_graph(g: dgl.DGLGraph, what: str = "the graph", seed: int = 0) -> tuple[dgl.DGLGraph, str]:
    """The prepared graph the fitted candidates read, and which features it holds: the graph's own
    features as given, or, when it has none (no ``ndata["feat"]`` or width 0), features computed from its
    edges (:func:`~gflkit.data.structure.structural_features`)."""
    if g.num_nodes() == 0:
        raise GFLError(f"{what}: the graph has no nodes")
    h = simple_graph(g)
    feat = g.ndata.get("feat")
    if feat is None or feat.ndim != 2 or feat.shape[1] == 0:
        src, dst = h.edges()
        h.ndata["feat"] = structural_features(src, dst, h.num_nodes(), seed=seed)
        described = (f"structural (the graph has no node features): degree profile and {SPECTRAL_DIMS} spectral "
                     f"coordinates computed from the edges")
    else:
        h.ndata["feat"] = zero_non_finite(torch.as_tensor(feat, dtype=torch.float32).cpu(), what)
        described = f"the graph's own {feat.shape[1]} features"
    return prepare_graph(h), described


def fitted_candidates() -> list:
    """The candidates fitted on the graph's labels alone, in :data:`~gflkit.prediction.selection.ORDER`."""
    return [LabelPropagation(), NearestCentroid(0), NearestCentroid(SGC_HOPS), RidgeClassifier(0),
            RidgeClassifier(SGC_HOPS), CorrectAndSmooth()]


def contenders(predictor: Predictor | None, g: dgl.DGLGraph, what: str, refine: RefineConfig, seed: int = 0
               ) -> tuple[list[Contender], dict[str, str], str]:
    """Every candidate ready on ``g``, the run's left out (with why) when its model cannot read the graph."""
    h, described = candidate_graph(g, what, seed)
    out = [Contender(c, h, what) for c in fitted_candidates()]
    skipped: dict[str, str] = {}
    if predictor is None:
        return out, {"model": "no run given"}, described
    try:
        prepared = predictor.prepare(g, what)
    except GFLError as e:
        return out, {"model": str(e)}, described
    plain = RunModel(predictor.module, RefineConfig())
    for method in ("lp", "cs"):
        settings = RefineConfig(method, refine.alpha, refine.steps) if refine.active else RefineConfig(method)
        out.append(Contender(RunModel(predictor.module, settings, share=plain), prepared, what))
    out.insert(len(out) - 2, Contender(plain, prepared, what))
    return out, skipped, described


def predict_nodes(predictor: Predictor | None, g: dgl.DGLGraph, support: Mapping[Hashable, Sequence[int]], *,
                  method: str = "auto", node_ids: Sequence[int] | None = None, what: str = "the graph",
                  labels_what: str | None = None, refine: RefineConfig | None = None, report: bool = False,
                  estimate: bool = True, seed: int = 0):
    """Classify every node of ``g`` from a few labelled ones, by the candidate the labels support best.

    ``g`` is taken as simple and undirected: an edge given in one direction
    counts in both, self-loops and duplicate edges are dropped
    (:func:`~gflkit.data.collection.undirected_edges`), as for the edge
    table ``gflkit predict`` reads, so both give the same predictions.

    Args:
        predictor: the run (``None``: only the candidates fitted on ``g``'s labels).
        g: a DGLGraph, with ``ndata["feat"]`` (raw or already transformed) or without features.
        support: class label -> node ids of ``g`` (positions) labelled with it.
        method: ``auto`` (every candidate cross-validated on the labels, one chosen by
            :func:`gflkit.prediction.selection.choose`) or a candidate's name (:data:`METHODS`).
        node_ids: the ids to report per node (default: positions ``0..N-1``).
        what: the graph's name in messages.
        labels_what: where ``support`` comes from (a labels file), named in messages about it
            (default ``what``).
        refine: the run's model refined over ``g`` (:mod:`gflkit.refine`, as ``gflkit evaluate --refine``);
            an active one with ``method="auto"`` means ``method="model+<refine>"``.
        report: also return the :class:`~gflkit.prediction.diagnostics.PredictionReport` (it is the
            table's ``report`` either way).
        estimate: estimate the accuracy from the labels (``False``: faster; ``auto`` then takes the
            default candidate without comparing).
        seed: seed of the estimate's folds.

    Returns:
        A :class:`PredictionTable`, one row per node: ``node``, ``label`` (the most probable class),
        ``score_<class>`` (the chosen candidate's class probabilities) and ``is_support`` (labelled nodes
        keep their given label). With ``report``: ``(table, report)``.
    """
    refine = refine or RefineConfig()
    if method not in METHODS:
        raise GFLError(f"`method={method!r}`: choose one of {', '.join(METHODS)}")
    if refine.active and method == "auto":
        method = f"model+{refine.method}"
    labels_what = labels_what or what
    feat = g.ndata.get("feat") if "feat" in g.ndata else None
    if feat is not None and not torch.isfinite(feat).all():  # repaired once, for every candidate
        feat, g = zero_non_finite(feat.float(), what), simple_graph(g)
        g.ndata["feat"] = feat
    k_shot = predictor.k_shot if predictor is not None else 1
    names, ids = check_support(support, g.num_nodes(), k_shot, labels_what)
    found, skipped, described = contenders(predictor, g, what, refine, seed)
    available = {c.name for c in found}
    if method not in ("auto", *available):
        raise GFLError(f"`method={method}`: the run's model cannot predict on {what}: {skipped.get('model')}")
    chosen, selection = select(found, names, ids, method=method, estimate=estimate, seed=seed, skipped=skipped,
                               features=described)
    table = PredictionTable(prediction_frame(chosen.probabilities(ids), names, ids, node_ids))
    model_graph = next((c.graph for c in found if c.name == "model"), None)
    table.report = _report(predictor, chosen, selection, model_graph, names, ids, table, estimate, what,
                           labels_what)
    _raise_warnings(table.report)
    return (table, table.report) if report else table


def _report(predictor: Predictor | None, chosen: Contender, selection, model_graph: dgl.DGLGraph | None,
            names: list[str], ids: list[torch.Tensor], table: pd.DataFrame, estimate: bool, what: str,
            labels_what: str) -> PredictionReport:
    """The estimate and the checks of a prediction; their lines are logged."""
    counts = {name: len(t) for name, t in zip(names, ids)}
    unlabelled = table.loc[~table["is_support"].to_numpy(), "label"].astype(str)
    predicted = {name: int(k) for name, k in unlabelled.value_counts().reindex(names, fill_value=0).items()}
    used = getattr(chosen.candidate, "refine", RefineConfig())
    report = PredictionReport(what, labels_what, predictor.name if predictor is not None else "none",
                              int(chosen.graph.num_nodes()), int(len(unlabelled)), counts, predicted,
                              {"method": used.method, "alpha": used.alpha, "steps": used.steps},
                              method=chosen.name, selection=selection, features=selection.features)
    warnings: list[str] = []
    if "model" in selection.skipped and predictor is not None:
        warnings.append(f"{what}: the run's model is not a candidate: {selection.skipped['model']}")
    report.estimate = selection.estimates.get(chosen.name) if estimate else None
    if report.estimate is not None and report.estimate.accuracy is not None:
        for line in (*selection.lines(), *report.estimate.lines()):
            log.info("%s", line)
    else:
        log.info("predicted with %s: %s; features: %s", chosen.name, selection.reason, selection.features)
        if report.estimate is not None:
            warnings.append(f"{labels_what}: {report.estimate.lines()[0]}")
    stats, source = predictor.training_stats() if predictor is not None else (None, "no run given")
    if stats is None:
        report.shift_note = source
    elif chosen.graph.num_nodes() < MIN_SHIFT_NODES:
        report.shift_note = f"the graph has fewer than {MIN_SHIFT_NODES} nodes"
    elif model_graph is None:
        report.shift_note = "the run's model cannot read the graph's features"
    else:
        report.shift = feature_shift(model_graph.ndata["feat"], stats, source)
        shifted = report.shift.warnings(what)
        if chosen.name.startswith("model"):
            warnings += shifted
        else:
            for line in shifted:
                log.info("%s (not the chosen candidate's)", line)
    if report.shift_note:
        log.info("%s: features not compared with the training collection's: %s", what, report.shift_note)
    warnings += collapse_warnings(predicted, counts, what)
    for line in warnings:
        log.warning("%s", line)
    report.warnings = warnings
    return report


def _raise_warnings(report: PredictionReport) -> None:
    """The report's warnings as :class:`PredictionWarning`, and the choice with its estimate as one
    :class:`PredictionNote` (Python warnings: a notebook shows them; the command line logs them instead)."""
    for line in report.warnings:
        pywarnings.warn(line, PredictionWarning, stacklevel=3)
    est = report.estimate
    worth = (f"estimated balanced accuracy {100 * est.balanced_accuracy:.1f}% (accuracy {100 * est.accuracy:.1f}%, "
             f"95% interval {100 * est.interval[0]:.1f}-{100 * est.interval[1]:.1f}%)"
             if est is not None and est.accuracy is not None else "no accuracy estimate")
    pywarnings.warn(f"{report.graph}: predicted with {report.method} ({report.selection.reason}); {worth}; "
                    f"features: {report.features}", PredictionNote, stacklevel=3)


def load(run: str | os.PathLike, root: str | os.PathLike | None = None,
         device: str | torch.device | None = None) -> Predictor:
    """The model of a run folder (or ``best.pt``), with its collection's feature transform.

    The transform is looked up in the collection the run was trained on (by
    name under ``root``, else the recorded path). When it cannot be found,
    prediction works on features of the model's size only. A GFL model is put
    on ``device`` (``cpu`` by default, ``cuda`` or ``cuda:N``). The training
    feature statistics come from the run (``feature_stats``, recorded by
    training); an older run's are computed from its collection when needed.
    """
    device = resolve_device(device)
    module, meta = load_checkpoint(run)
    place(module, device, str(meta.get("model")))
    folder = training_collection(meta, root)
    transform = fingerprint = None
    if folder is not None:
        from ..data.transform import collection_folder

        path = collection_folder(folder, root)
        transform = load_transform(path)
        fingerprint = feature_fingerprint(path)
    recorded = meta.get("feature_fingerprint")
    same_features = folder is not None and (not recorded or recorded == fingerprint)
    fingerprint = recorded or fingerprint
    if transform is not None and fingerprint and fingerprint.get("transform") != transform.id:
        log.warning("the run's collection %s now holds another feature transform than the run was trained with; "
                    "raw features cannot be used", folder)
        transform = None
    stats = FeatureStats.from_dict(meta.get("feature_stats"))
    if stats is not None and len(stats.mean) != int(module.in_feats or len(stats.mean)):
        stats = None
    structure = None
    if folder is not None and same_features:
        import json

        manifest = json.loads((Path(folder) / "manifest.json").read_text())
        structure = (manifest.get("meta") or {}).get(STRUCTURE_KEY)
    return Predictor(module, meta, transform, fingerprint, device, stats, str(folder) if same_features else None,
                     structure=structure)

