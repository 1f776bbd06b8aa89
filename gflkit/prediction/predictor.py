"""Few-shot prediction and node embeddings on a user's new graph.

A trained run classifies the nodes of a graph it has never seen, from a few
labelled nodes per class. Because GFL (and Protonet, K-NN, Matching Network)
classify by comparing embeddings with the labelled nodes, the classes need not
be the training classes: any classes with at least one labelled node each
work. MAML and All-Graph-Finetune adapt their classifier head on the labelled
nodes, so they take at most as many classes as the run was trained on.

Memory is linear in nodes + edges: the encoder is a sparse GCN, support
similarities are computed among support nodes only (by message passing from
them), and query scores are computed in chunks (:mod:`gflkit.prediction.class_scores`).

:func:`load` returns a :class:`Predictor`; :func:`predict` and :func:`embed`
are what ``gflkit predict`` and ``gflkit embed`` run. A graph is always taken
as simple and undirected: every edge in both directions, self-loops and
duplicates dropped (:func:`gflkit.data.collection.undirected_edges`), whether it
comes from an edge table or is a DGLGraph passed to :meth:`Predictor.predict`,
so both give the same predictions.

:func:`predict` also tells what its labels are worth (:mod:`gflkit.prediction.diagnostics`):
an accuracy estimate from the given labels (each held out in turn and
predicted from the others), and warnings when the graph's features are unlike
the training collection's or when the predictions collapse onto few classes.
"""
from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Hashable, Iterator, Mapping, Sequence

import dgl
import numpy as np
import pandas as pd
import torch
from torch import nn

from ..graphs import prepare_graph
from ..data.collection import undirected_edges
from ..data.transform import FeatureTransform, check_fingerprint, feature_fingerprint, load_transform
from .diagnostics import (ESTIMATE_FOLDS, ESTIMATE_REPEATS, MIN_SHIFT_NODES, Estimate, FeatureStats,
                          PredictionReport, collapse_warnings, collection_feature_stats, estimate_accuracy,
                          feature_shift)
from ..errors import GFLError
from ..devices import resolve_device
from ..models import place
from ..refine import RefineConfig, refine_nodes
from ..runs.checkpoints import load_checkpoint, training_collection
from .class_scores import class_scores, embeddings, shared_embeddings

__all__ = ["Predictor", "load", "predict", "embed"]

log = logging.getLogger(__name__)


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
    """

    module: nn.Module
    meta: dict[str, Any]
    transform: FeatureTransform | None = None
    fingerprint: dict[str, Any] | None = None
    device: torch.device = torch.device("cpu")
    stats: FeatureStats | None = None
    collection: str | None = None
    stats_source: str = "the run"

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
        if "feat" not in g.ndata:
            raise GFLError(f"{what}: the graph has no node features (ndata['feat'])")
        src, dst = g.edges()
        h = dgl.graph(undirected_edges(src.cpu(), dst.cpu(), g.num_nodes()), num_nodes=g.num_nodes())
        h.ndata["feat"] = self.model_features(g.ndata["feat"], what)
        h = prepare_graph(h)
        return h if self.device.type == "cpu" else h.to(self.device)

    def embed(self, g: dgl.DGLGraph, what: str = "the graph") -> torch.Tensor:
        """Node embeddings of ``g``: ``(N, d)``."""
        return embeddings(self.module, self.prepare(g, what)).cpu()

    def _scorer(self, prepared: dgl.DGLGraph, refine: RefineConfig):
        """support ids per class -> ``(N, C)`` class probabilities on ``prepared``, with ``refine`` applied.

        The embeddings are computed once for every support set (for the models that compare them).
        """
        self.module.eval()
        z = shared_embeddings(self.module, prepared)

        def score(ids: Sequence[torch.Tensor]) -> torch.Tensor:
            scores = class_scores(self.module, prepared, ids, z)
            if not refine.active:
                return torch.softmax(scores, dim=1).cpu()
            nodes = torch.cat(list(ids))
            target = torch.cat([torch.full((len(t),), c, dtype=torch.int64) for c, t in enumerate(ids)])
            return normalised(refine_nodes(prepared, scores, nodes, target, refine)).cpu()

        return score

    def predict(self, g: dgl.DGLGraph, support: Mapping[Hashable, Sequence[int]], *,
                node_ids: Sequence[int] | None = None, what: str = "the graph",
                labels_what: str | None = None, refine: RefineConfig | None = None, report: bool = False,
                estimate: bool = True, seed: int = 0):
        """Classify every node of ``g`` from a few labelled ones.

        ``g`` is taken as simple and undirected: an edge given in one direction
        counts in both, self-loops and duplicate edges are dropped
        (:func:`~gflkit.data.collection.undirected_edges`), as for the edge
        table ``gflkit predict`` reads, so both give the same predictions.

        Args:
            g: a DGLGraph with ``ndata["feat"]`` (raw or already transformed).
            support: class label -> node ids of ``g`` (positions) labelled with it.
            node_ids: the ids to report per node (default: positions ``0..N-1``).
            what: the graph's name in messages.
            labels_what: where ``support`` comes from (a labels file), named in messages about it
                (default ``what``).
            refine: propagate the scores over ``g`` with the support labels clamped
                (:mod:`gflkit.refine`, as ``gflkit evaluate --refine``); default none.
            report: also return a :class:`~gflkit.prediction.diagnostics.PredictionReport`: the accuracy
                estimate (:meth:`estimate`, with ``estimate``), the feature shift against the
                training collection and the collapse checks (:mod:`gflkit.prediction.diagnostics`); its
                lines are logged (the estimate as INFO, each check beyond its threshold as a
                WARNING).
            estimate: with ``report``, estimate the accuracy from the labels (``False``: faster).
            seed: seed of the estimate's folds.

        Returns:
            One row per node: ``node``, ``label`` (the most probable class),
            ``score_<class>`` (softmax over the model's class scores; with ``refine``, the
            refined scores clipped at 0 and normalised to sum to 1) and
            ``is_support`` (labelled nodes keep their given label). With ``report``:
            ``(table, report)``.
        """
        refine = refine or RefineConfig()
        names, ids = check_support(support, g.num_nodes(), self.k_shot, labels_what or what)
        prepared = self.prepare(g, what)
        score = self._scorer(prepared, refine)
        table = prediction_frame(score(ids), names, ids, node_ids)
        if not report:
            return table
        return table, self._report(prepared, names, ids, table, score, refine, estimate, seed, what,
                                   labels_what or what)

    def estimate(self, g: dgl.DGLGraph, support: Mapping[Hashable, Sequence[int]], *,
                 refine: RefineConfig | None = None, seed: int = 0, folds: int = ESTIMATE_FOLDS,
                 repeats: int = ESTIMATE_REPEATS, what: str = "the graph",
                 labels_what: str | None = None) -> Estimate:
        """Estimate the accuracy of :meth:`predict` on ``g`` from the labels in ``support``.

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
        refine = refine or RefineConfig()
        names, ids = check_support(support, g.num_nodes(), self.k_shot, labels_what or what)
        score = self._scorer(self.prepare(g, what), refine)
        return estimate_accuracy(lambda rest: score(rest).argmax(1), names, ids, folds=folds, repeats=repeats,
                                 seed=seed, refine=refine.method)

    def _report(self, prepared: dgl.DGLGraph, names: list[str], ids: list[torch.Tensor], table: pd.DataFrame,
                score, refine: RefineConfig, estimate: bool, seed: int, what: str,
                labels_what: str) -> PredictionReport:
        """The estimate and the checks of a prediction; their lines are logged."""
        counts = {name: len(t) for name, t in zip(names, ids)}
        unlabelled = table.loc[~table["is_support"].to_numpy(), "label"].astype(str)
        predicted = {name: int(k) for name, k in unlabelled.value_counts().reindex(names, fill_value=0).items()}
        report = PredictionReport(what, labels_what, self.name, int(prepared.num_nodes()), int(len(unlabelled)),
                                  counts, predicted, {"method": refine.method, "alpha": refine.alpha,
                                                      "steps": refine.steps})
        warnings: list[str] = []
        if estimate:
            report.estimate = estimate_accuracy(lambda rest: score(rest).argmax(1), names, ids, seed=seed,
                                                refine=refine.method)
            if report.estimate.accuracy is None:
                warnings.append(f"{labels_what}: {report.estimate.lines()[0]}")
            else:
                for line in report.estimate.lines():
                    log.info("%s", line)
        stats, source = self.training_stats()
        if stats is None:
            report.shift_note = source
        elif prepared.num_nodes() < MIN_SHIFT_NODES:
            report.shift_note = f"the graph has fewer than {MIN_SHIFT_NODES} nodes"
        else:
            report.shift = feature_shift(prepared.ndata["feat"], stats, source)
            warnings += report.shift.warnings(what)
        if report.shift_note:
            log.info("%s: features not compared with the training collection's: %s", what, report.shift_note)
        warnings += collapse_warnings(predicted, counts, what)
        for line in warnings:
            log.warning("%s", line)
        report.warnings = warnings
        return report


def normalised(scores: torch.Tensor) -> torch.Tensor:
    """Refined scores as probabilities: clipped at 0 and divided by their row sums, argmax kept
    (a row with no positive score becomes the one-hot of its largest score)."""
    p = scores.float().clamp_min(0)
    total = p.sum(1, keepdim=True)
    empty = total.squeeze(1) <= 0
    if empty.any():
        p[empty] = torch.nn.functional.one_hot(scores[empty].argmax(1), scores.shape[1]).float()
        total = p.sum(1, keepdim=True)
    return p / total


def zero_non_finite(feat: torch.Tensor, what: str) -> torch.Tensor:
    """``feat`` with NaN/inf values set to 0, and one warning naming ``what`` when there were any."""
    bad = ~torch.isfinite(feat)
    if not bad.any():
        return feat
    rows = bad.any(1)
    log.warning("%s: %d node(s) have NaN or infinite features (set to 0; first at node position %d)", what,
                int(rows.sum()), int(torch.nonzero(rows)[0]))
    return torch.where(bad, torch.zeros((), dtype=feat.dtype), feat)


def check_finite(feat: torch.Tensor, what: str) -> None:
    """One-line error when a transformed feature value is NaN or infinite (raw values too large for it)."""
    bad = ~torch.isfinite(feat).all(1)
    if bad.any():
        first = int(torch.nonzero(bad)[0])
        raise GFLError(f"{what}: the feature transform gives NaN or infinite values for {int(bad.sum())} node(s) "
                       f"(first at node position {first}): their raw features are too large; scale them down")


def check_support(support: Mapping[Hashable, Sequence[int]], num_nodes: int, k_shot: int,
                  what: str) -> tuple[list[str], list[torch.Tensor]]:
    """Class names (sorted) and id tensors of a ``{label: ids}`` mapping, checked."""
    if not support:
        raise GFLError(f"{what}: no labelled nodes; give at least one labelled node per class")
    from ..data.sources.table_io import sorted_classes

    names = sorted_classes([str(k) for k in support])
    by_name = {str(k): v for k, v in support.items()}
    ids, seen = [], {}
    for name in names:
        t = torch.as_tensor(np.asarray(list(by_name[name]), dtype=np.int64))
        if t.numel() == 0:
            raise GFLError(f"{what}: class {name!r} has no labelled node; give at least one or drop the class")
        out = t[(t < 0) | (t >= num_nodes)]
        if out.numel():
            raise GFLError(f"{what}: labelled node {int(out[0])} (class {name!r}) is not in the graph "
                           f"({num_nodes} nodes)")
        for i in t.tolist():
            if i in seen:
                raise GFLError(f"{what}: node {i} is labelled twice ({seen[i]!r} and {name!r}); keep one label")
            seen[i] = name
        ids.append(t)
    few = [f"{n!r} ({len(t)})" for n, t in zip(names, ids) if len(t) < k_shot]
    if few:
        log.warning("%s: class(es) %s have fewer labelled nodes than the run's k_shot = %d; predictions may be "
                    "less accurate", what, ", ".join(few), k_shot)
    return names, ids


def prediction_frame(probs: torch.Tensor, names: list[str], support: Sequence[torch.Tensor],
                     node_ids: Sequence[int] | None = None) -> pd.DataFrame:
    """The output table: ``node, label, score_<class>..., is_support``."""
    n = probs.shape[0]
    label = probs.argmax(1).numpy().copy()
    is_support = np.zeros(n, dtype=bool)
    for c, ids in enumerate(support):
        label[ids.numpy()] = c
        is_support[ids.numpy()] = True
    frame = {"node": np.arange(n) if node_ids is None else np.asarray(node_ids),
             "label": np.asarray(names, dtype=object)[label]}
    for c, name in enumerate(names):
        frame[f"score_{name}"] = probs[:, c].numpy()
    frame["is_support"] = is_support
    return pd.DataFrame(frame)


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
    return Predictor(module, meta, transform, fingerprint, device, stats, str(folder) if same_features else None)


# -- graphs and labels from files ----------------------------------------------------------------------------------
def graph_from_collection(spec: str, root=None) -> tuple[dgl.DGLGraph, dict[str, Any], str]:
    """``COLLECTION:GRAPH_ID`` -> the graph, the collection's fingerprint and a name for messages."""
    from ..data import load_collection

    name, sep, gid = str(spec).rpartition(":")
    if not sep or not name or not gid.strip().isdigit():
        raise GFLError(f"`graph={spec!r}`: expected COLLECTION:GRAPH_ID, e.g. facebook:25")
    collection = load_collection(name, root)
    gid = int(gid)
    if not 0 <= gid < len(collection):
        raise GFLError(f"`graph={spec}`: collection {collection.name!r} has graphs 0..{len(collection) - 1}")
    return collection.graphs[gid], feature_fingerprint(collection), f"{collection.name}:{gid}"


def read_labels(path: str | os.PathLike, node_ids: np.ndarray, *, node_col: str = "node", label_col: str = "label",
                unlabelled: Sequence[str] = ("-1",)) -> dict[str, list[int]]:
    """A ``node,label`` table -> ``{label: positions}`` (positions of the ids in ``node_ids``).

    Rows whose label is empty, NaN or an ``unlabelled`` marker are ignored.
    Unknown and repeated ids are one-line errors.
    """
    from ..data.sources.base import BadInputReport
    from ..data.sources.table_io import existing_file, read_table
    from ..data.sources.tables import unlabelled_mask
    from ..data.validate import ID_OUT_OF_RANGE, parse_ids

    path = existing_file(path, "labels table", "give a CSV/TSV/Parquet file with columns node,label (`labels`)")
    report = BadInputReport()
    df, lines = read_table(path, report)
    if report:
        raise GFLError(f"{path}: {report.summary()[0]}")
    col = node_col if node_col in df.columns else ("id" if "id" in df.columns else None)
    if col is None or label_col not in df.columns:
        raise GFLError(f"{path}: needs columns {node_col},{label_col} (has {', '.join(map(str, df.columns))})")
    raw = df[label_col].str.strip().to_numpy()
    keep = ~unlabelled_mask(raw, unlabelled)
    if not keep.any():
        raise GFLError(f"{path}: no labelled node ({len(df)} row(s), none with a label); give at least one "
                       f"labelled node per class")
    ids, ok, far = parse_ids(df[col])
    if (~ok & keep).any():
        j = int(np.flatnonzero(~ok & keep)[0])
        problem = ID_OUT_OF_RANGE if far[j] else "node id that is not an integer"
        raise GFLError(f"{path}:{int(lines[j])}: {problem} ({df[col].iloc[j]!r})")
    ids, raw, lines = ids[keep], raw[keep], lines[keep]
    uniq, first, counts = np.unique(ids, return_index=True, return_counts=True)
    if (counts > 1).any():
        dup = uniq[counts > 1][0]
        at = lines[ids == dup]
        raise GFLError(f"{path}: node {dup} is listed {int(counts[counts > 1][0])} times (lines "
                       f"{', '.join(map(str, at[:3]))}); keep one row per node")
    pos, missing = _lookup(node_ids, ids)
    if np.any(missing):
        j = int(np.flatnonzero(missing)[0])
        raise GFLError(f"{path}:{int(lines[j])}: node {ids[j]} is not in the graph ({int(np.sum(missing))} "
                       f"labelled id(s) are not); check the ids against the edge/node tables")
    support: dict[str, list[int]] = {}
    for p, label in zip(pos.tolist(), raw.tolist()):
        support.setdefault(str(label), []).append(p)
    return support


def support_from_labels(labels: Mapping[Hashable, Sequence[int]], classes: Sequence[str] | None, what: str):
    """``labels`` restricted to / completed with ``classes`` (a listed class without nodes is an error)."""
    if not classes:
        return dict(labels)
    out = {str(c): list(labels.get(str(c), [])) for c in classes}
    extra = sorted(set(map(str, labels)) - set(out))
    if extra:
        raise GFLError(f"{what}: labels {', '.join(map(repr, extra[:5]))} are not among `classes`")
    return out


def read_graph(predictor: Predictor, *, edges=None, nodes=None, features=None, graph: str | None = None,
               columns=None, root=None, force: bool = False) -> tuple[dgl.DGLGraph, np.ndarray, str]:
    """The graph to predict on, from tables or ``COLLECTION:GRAPH_ID``.

    Tables are read by the same reader as ``preprocess tables``; their raw
    features go through the run's saved transform. A collection graph's
    features were transformed when it was built, so its collection's feature
    fingerprint must equal the run's (unless ``force``).

    Returns:
        The graph, each node's id as the user knows it and a name for messages.
    """
    from ..data.sources.tables import TableColumns, read_table_graph

    if graph is not None:
        if edges is not None or nodes is not None or features is not None:
            raise GFLError("give either `graph=COLLECTION:GRAPH_ID` or tables (`edges`, ...), not both")
        g, fingerprint, what = graph_from_collection(graph, root)
        check_fingerprint(predictor.fingerprint, fingerprint, f"collection graph {what}", force)
        ids = g.ndata["orig_id"].numpy() if "orig_id" in g.ndata else np.arange(g.num_nodes(), dtype=np.int64)
        return g, ids, what
    if edges is None:
        raise GFLError("give the graph: `edges=FILE` (with `nodes`, `features`), or `graph=COLLECTION:ID`")
    columns = columns or TableColumns(label=None)
    source = read_table_graph(edges, nodes, features=features, columns=columns, transform=predictor.transform,
                              fit=False, optional_transform=True)
    for line in source.report.summary():  # repaired (NaN set to 0) or skipped, as when a collection is built
        log.warning("%s", line)
    dup = source.report.counts.get("duplicate node id")
    if dup:
        raise GFLError(f"{nodes}: {dup} duplicate node id(s) (first at {source.report.examples['duplicate node id'][0]}"
                       f"); keep one row per node")
    what = str(features or nodes or edges)
    if source.g.num_nodes() == 0:
        raise GFLError(f"{what}: the graph has no nodes")
    return source.g, source.g.ndata["orig_id"].numpy(), what


def predict(run: str | os.PathLike | Predictor, *, labels: str | os.PathLike | Mapping[Hashable, Sequence[int]],
            edges=None, nodes=None, features=None, graph: str | None = None, columns=None,
            classes: Sequence[str] | None = None, label_col: str = "label", root=None,
            force: bool = False, device: str | torch.device | None = None, refine: RefineConfig | None = None,
            estimate: bool = True, seed: int = 0, return_report: bool = False):
    """``gflkit predict`` as a function: classify every node of a new graph, and say what that is worth.

    Besides the table it estimates its own accuracy from the given labels
    (each class's labels held out fold by fold and predicted from the others:
    :meth:`Predictor.estimate`), compares the graph's features with the
    training collection's and checks the predictions for collapse
    (:mod:`gflkit.prediction.diagnostics`, which documents the thresholds). The estimate
    is logged as two INFO lines (one WARNING line when fewer than 2 labels in a
    class make it impossible), each check beyond its threshold as one WARNING
    line.

    Args:
        run: a run folder, its ``best.pt``, or a loaded :class:`Predictor`.
        labels: a ``node,label`` table, or ``{label: node ids}`` (ids as in the tables).
        edges, nodes, features, columns: the graph's tables (as ``preprocess tables`` reads them).
        graph: instead of tables, ``COLLECTION:GRAPH_ID`` (node ids: the graph's ``orig_id``
            when it has one, as :func:`export_tables` writes them, else positions).
        classes: the classes to predict (default: those of the labels).
        label_col: the label column of the labels table (its node column is ``node`` or ``id``).
        root: data root for collection names.
        force: predict even when the collection graph's feature fingerprint differs from the run's.
        device: where a GFL model computes (``cpu``, ``cuda``, ``cuda:N``); ignored for a loaded Predictor.
        refine: refine the scores over the graph (:class:`~gflkit.refine.RefineConfig`, as evaluate's).
        estimate: estimate the accuracy from the labels (``False`` skips it, which is faster).
        seed: seed of the estimate's folds.
        return_report: return ``(table, report)``, the report a
            :class:`~gflkit.prediction.diagnostics.PredictionReport` (``report.to_dict()`` is what
            ``--report`` writes); its ``warnings`` hold every warning the call logged.

    Returns:
        One row per node: ``node, label, score_<class>..., is_support``; with ``return_report``,
        ``(table, report)``.
    """
    with captured_warnings() as seen:
        predictor = run if isinstance(run, Predictor) else load(run, root, device)
        g, ids, what = read_graph(predictor, edges=edges, nodes=nodes, features=features, graph=graph,
                                  columns=columns, root=root, force=force)
        if isinstance(labels, Mapping):
            support, source = {str(k): _positions(ids, v, what) for k, v in labels.items()}, what
        else:
            unlabelled = columns.unlabelled if columns is not None else ("-1",)
            support, source = read_labels(labels, ids, label_col=label_col, unlabelled=unlabelled), str(labels)
        support = support_from_labels(support, classes, source)
        table, report = predictor.predict(g, support, node_ids=ids, what=what, labels_what=source, refine=refine,
                                          report=True, estimate=estimate, seed=seed)
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


def _lookup(node_ids: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of ``wanted`` in ``node_ids`` (any order) and where they are missing."""
    if len(node_ids) == 0:
        return np.zeros(len(wanted), np.int64), np.ones(len(wanted), bool)
    order = np.argsort(node_ids, kind="stable")
    at = np.minimum(np.searchsorted(node_ids, wanted, sorter=order), len(node_ids) - 1)
    pos = order[at]
    return pos, node_ids[pos] != wanted


def _positions(ids: np.ndarray, wanted: Sequence[int], what: str) -> list[int]:
    wanted = np.asarray(list(wanted), dtype=np.int64)
    pos, missing = _lookup(ids, wanted)
    if missing.any():
        raise GFLError(f"{what}: labelled node {int(wanted[missing][0])} is not in the graph")
    return pos.tolist()


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


def export_tables(graph: str, folder: str | os.PathLike, labels_per_class: int = 10, seed: int = 0,
                  root=None) -> list[Path]:
    """A collection graph as ``edges.csv``, ``nodes.csv`` (truth) and ``labels.csv`` (a few per class).

    Ids are ``ndata["orig_id"]`` when the graph has it (the table's ids for a
    ``--graph-col`` collection; for a sampled graph, positions in the source
    graph, which are the source's ids when those run ``0..n-1``), else positions.
    ``labels.csv`` holds ``labels_per_class`` nodes of each class: the support set of evaluation episode 0 with ``seed``
    (:func:`gflkit.episodes.sample_episode`), so predicting from it scores the
    nodes ``gflkit evaluate --seed SEED`` scores.
    """
    from ..config import EpisodeConfig
    from ..data import load_collection
    from ..episodes import sample_episode
    from ..io import atomic_write_text

    name, _, gid = str(graph).rpartition(":")
    g, _, what = graph_from_collection(graph, root)
    classes = load_collection(name, root).classes
    ids = g.ndata["orig_id"].numpy() if "orig_id" in g.ndata else np.arange(g.num_nodes())
    src, dst = g.edges()
    keep = (src < dst).numpy()  # each undirected edge once
    edges = pd.DataFrame({"src": ids[src.numpy()[keep]], "dst": ids[dst.numpy()[keep]]})
    label = g.ndata["label"].numpy()
    names = np.asarray(list(classes) + [""], dtype=object)[np.where(label >= 0, label, len(classes))]
    nodes = pd.DataFrame({"id": ids, "label": names})
    episode = sample_episode(label, len(classes), EpisodeConfig(k_shot=labels_per_class), seed=seed,
                             graph_id=int(gid), episode=0)
    chosen = episode.support.reshape(-1).numpy()
    labels = pd.DataFrame({"node": ids[chosen], "label": names[chosen]})
    folder = Path(folder)
    out = []
    for file, df in (("edges.csv", edges), ("nodes.csv", nodes), ("labels.csv", labels)):
        out.append(atomic_write_text(folder / file, df.to_csv(index=False)))
    log.info("%s: %d nodes, %d edges, %d labelled for prediction", what, len(nodes), len(edges), len(labels))
    return out
