"""Meta-testing: what each model scores on each (graph, episode), and the row it makes.

As in the paper's tables, each test graph gets K labelled support nodes per
class and every other labelled node is a query. The scoring functions return
*records*, one row per (graph, episode) with ``graph_id, episode, correct, n,
accuracy, balanced_accuracy, macro_f1`` (fractions), so that results can be
summarised and compared pairwise on the same episodes. Records of several
training seeds carry a ``seed`` column.

* :func:`summarise`: the metrics of a row, with a 95% interval over (seed,
  graph) units, each the mean over that graph's episodes (:mod:`gflkit.evaluation.statistics`);
* :func:`paired`: one model against a reference on the same (seed, graph,
  episode) triples, with the interval over the same units.
"""
from __future__ import annotations

import contextlib
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from ..graphs import GraphCache
from ..threads import map_graphs
from ..devices import module_device
from ..episodes import Episode, EpisodeSampler
from ..models.base import FewShotModel
from ..models.gfl import GFL
from ..progress import progress_bar
from ..refine import RefineConfig, refine_scores
from ..sizes import require_fit
from ..config import EpisodeConfig
from .statistics import paired_estimate, record_estimate, unit_table
from .tables import aggregator_name

__all__ = ["graph_accuracies"]

#: Columns of a records frame (metrics are fractions).
RECORD_COLUMNS = ["graph_id", "episode", "correct", "n", "accuracy", "balanced_accuracy", "macro_f1"]
_METRICS = ["accuracy", "balanced_accuracy", "macro_f1"]
_NO_REFINE = RefineConfig()


def episode_scores(pred: torch.Tensor, label: torch.Tensor, num_classes: int) -> dict[str, float]:
    """Accuracy, balanced accuracy and macro-F1 of one episode's predictions.

    Balanced accuracy is the mean recall over the classes among the labels;
    macro-F1 the mean F1 over the classes among the labels or predictions
    (as scikit-learn's ``balanced_accuracy_score`` and ``f1_score(average="macro")``).

    Shapes:
        pred, label ``(Q,)`` classes in ``0..num_classes-1``.
    """
    pred, label = np.asarray(pred, dtype=np.int64), np.asarray(label, dtype=np.int64)
    hit = pred == label
    true = np.bincount(label, minlength=num_classes)
    predicted = np.bincount(pred, minlength=num_classes)
    tp = np.bincount(label[hit], minlength=num_classes)
    present = true > 0
    either = present | (predicted > 0)
    f1 = 2 * tp[either] / (true[either] + predicted[either])
    return {
        "correct": int(hit.sum()), "n": int(hit.size), "accuracy": float(hit.mean()) if hit.size else math.nan,
        "balanced_accuracy": float((tp[present] / true[present]).mean()) if present.any() else math.nan,
        "macro_f1": float(f1.mean()) if either.any() else math.nan,
    }


#: Memory of one (graph, episode) record while the records are gathered (a dict of Python numbers, then a row).
RECORD_BYTES = 2048


def check_episodes(sampler: EpisodeSampler, episodes: int) -> None:
    """Refuse, before any episode is scored, ``episodes`` whose records would not fit in memory."""
    graphs = max(len(sampler.graph_ids), 1)
    require_fit("episodes", episodes, lambda e: e * graphs * RECORD_BYTES,
                f"recording {graphs} graph(s) x episodes")


def _records(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=RECORD_COLUMNS).sort_values(["graph_id", "episode"], ignore_index=True)


@torch.no_grad()
def graph_records(
    model: FewShotModel,
    sampler: EpisodeSampler,
    episodes: int = 1,
    cache: GraphCache | None = None,
    refine: RefineConfig = _NO_REFINE,
) -> pd.DataFrame:
    """Records of a trained model (GFL or a transfer baseline) on every (graph, episode) of ``sampler``.

    Each episode's queries are scored by ``model.class_scores``; a model that shares its embeddings
    (``shares_embeddings``) embeds each graph once for all its episodes. With a refinement, the model
    scores every node of the graph and :func:`~gflkit.refine.refine_scores` propagates the scores
    before the queries are read off.
    """
    check_episodes(sampler, episodes)
    cache = cache or GraphCache(sampler.collection, module_device(model))
    was_training = model.training
    model.eval()

    def score(gid: int) -> list[dict]:
        g = cache[gid]
        z = model.shared_embeddings(g) if model.shares_embeddings else None
        rows = []
        for e in range(episodes):
            ep = sampler.episode(gid, e)
            with torch.enable_grad() if model.adapts else contextlib.nullcontext():  # adapting on the support set
                scores = model.class_scores(g, list(ep.support), z, nodes=None if refine.active else ep.query)
            if refine.active:
                scores = refine_scores(g, scores, ep.support, refine)[ep.query]
            rows.append({"graph_id": gid, "episode": e,
                         **episode_scores(scores.argmax(1).cpu(), ep.query_label, sampler.num_classes)})
        return rows

    # On the CPU the graphs are scored side by side, one thread each (map_graphs); a model that
    # adapts on each support set trains, and so scores on the calling thread, unless it says its
    # adaptation is safe side by side.
    side_by_side = not model.adapts or model.adapts_in_threads
    workers = None if module_device(model).type == "cpu" and side_by_side else 1
    rows = [row for rows in map_graphs(score, list(sampler.graph_ids), workers) for row in rows]
    model.train(was_training)
    return _records(rows)


def baseline_records(fit_predict: Callable[..., torch.Tensor], sampler: EpisodeSampler, episodes: int = 1,
                     seed: int = 0, **kwargs) -> pd.DataFrame:
    """Records of a per-graph baseline ``fit_predict(g, episode, seed=...) -> predictions``."""
    check_episodes(sampler, episodes)
    rows = []
    name = getattr(fit_predict, "name", None) or getattr(fit_predict, "__module__", "baseline").rsplit(".", 1)[-1]
    for gid in progress_bar(sampler.graph_ids, desc=f"fitting {name} per graph", unit="graph", leave=False):
        g = sampler.collection.graphs[gid]
        for e in range(episodes):
            ep: Episode = sampler.episode(gid, e)
            pred = fit_predict(g, ep, num_classes=sampler.num_classes, seed=seed, **kwargs)
            rows.append({"graph_id": gid, "episode": e, **episode_scores(pred, ep.query_label, sampler.num_classes)})
    return _records(rows)


def majority_records(sampler: EpisodeSampler, episodes: int = 1) -> pd.DataFrame:
    """Records of the constant predictor of each episode's most frequent query class.

    Its accuracy is the majority rate, a reference every model should beat
    (ties go to the smallest class index).
    """
    check_episodes(sampler, episodes)
    rows = []
    for gid in sampler.graph_ids:
        for e in range(episodes):
            label = sampler.episode(gid, e).query_label
            pred = torch.full_like(label, int(torch.bincount(label, minlength=sampler.num_classes).argmax()))
            rows.append({"graph_id": gid, "episode": e, **episode_scores(pred, label, sampler.num_classes)})
    return _records(rows)


def _seed_mean(records: pd.DataFrame) -> pd.DataFrame:
    """Metrics per (graph, episode), averaged over seeds when there is a ``seed`` column."""
    return records.groupby(["graph_id", "episode"], as_index=False)[_METRICS].mean()


def per_graph(records: pd.DataFrame, metric: str = "accuracy") -> dict[int, float]:
    """Each graph's ``metric`` averaged over its episodes (and seeds)."""
    means = _seed_mean(records).groupby("graph_id")[metric].mean()
    return {int(gid): float(v) for gid, v in means.items()}


def graph_accuracies(model: FewShotModel, sampler: EpisodeSampler, episodes: int = 1,
                     cache: GraphCache | None = None) -> dict[int, float]:
    """Query accuracy of ``model`` (GFL or a transfer baseline) on each graph of ``sampler``, averaged
    over episodes."""
    return per_graph(graph_records(model, sampler, episodes, cache))


def baseline_accuracies(fit_predict: Callable[..., torch.Tensor], sampler: EpisodeSampler, episodes: int = 1,
                        seed: int = 0, **kwargs) -> dict[int, float]:
    """Accuracy of a per-graph baseline on each graph, averaged over episodes."""
    return per_graph(baseline_records(fit_predict, sampler, episodes, seed, **kwargs))


def _unit_mean(records: pd.DataFrame, metric: str) -> float:
    """The mean of ``metric`` (percent) over (seed, graph) units, each the mean over its episodes."""
    if not records[metric].notna().any():
        return math.nan
    return 100 * float(unit_table(records, metric).to_numpy().mean())


def summarise(records: pd.DataFrame | Mapping[int, float] | Sequence[float], ci: str = "t") -> dict:
    """The metrics of a result row, in percent.

    Args:
        records: a records frame (with a ``seed`` column for several seeds), or
            one accuracy (fraction) per graph.
        ci: ``t`` (over (seed, graph) units) or ``paper`` (the paper's
            ``1.96 * std / sqrt(n)`` over graphs); see :mod:`gflkit.evaluation.statistics`.

    Returns:
        ``n_seeds``, ``n_graphs``; ``accuracy``, its ``ci95`` half-width and
        what it is over (``ci_over``: ``seeds x graphs``, ``graphs``, ``seeds``
        or ``episodes``); ``std`` over graphs (over episodes with one seed and
        graph) and ``seed_std`` over seeds of the per-seed accuracies (NaN with
        one seed); mean ``balanced_accuracy`` and ``macro_f1``.
    """
    if not isinstance(records, pd.DataFrame):
        values = list(records.values()) if isinstance(records, Mapping) else list(records)
        records = pd.DataFrame({"graph_id": range(len(values)), "episode": 0, "accuracy": values,
                                "balanced_accuracy": math.nan, "macro_f1": math.nan})
    est = record_estimate(records, "accuracy", ci, scale=100)
    other = {m: _unit_mean(records, m) for m in ("balanced_accuracy", "macro_f1")}
    return {
        "n_seeds": est.n_seeds, "n_graphs": est.n_graphs, "accuracy": est.mean, "ci95": est.half,
        "ci_over": est.over, "std": est.std, "seed_std": est.seed_std, **other,
    }


def paired(records: pd.DataFrame, reference: pd.DataFrame, ci: str = "t") -> dict[str, float]:
    """Accuracy of ``records`` minus that of ``reference`` on the same episodes, in percent.

    Rows are matched on ``(seed, graph_id, episode)`` (``seed`` when both have
    it); each (seed, graph)'s differences are averaged over its episodes, and
    the mean difference, its 95% interval and p-value are taken over those
    units, as the rows' own intervals (:func:`gflkit.evaluation.statistics.paired_estimate`).

    Returns:
        ``delta``, ``delta_lo``, ``delta_hi``, ``prob_improvement`` (share of
        units where ``records`` is ahead, ties half), ``p_value`` and
        ``n_pairs`` (the number of units).
    """
    est, prob = paired_estimate(records, reference, "accuracy", ci)
    return {"delta": est.mean, "delta_lo": est.lo, "delta_hi": est.hi, "prob_improvement": prob,
            "p_value": est.p_value, "n_pairs": est.n_units}


def result_row(model: str, aggregator: str, collection: Any, split: str,
               records: pd.DataFrame | dict[int, float], episode_cfg: Any, episodes: int, seed: Any,
               *, refine: str = "none", ci: str = "t", seed_std: bool = False) -> dict:
    """One result table row (accuracy and CI in percent; :func:`summarise`) of ``model`` on a collection's
    ``split`` (``episode_cfg``: an :class:`~gflkit.config.EpisodeConfig`).

    ``seed_std``: keep the standard deviation of the per-seed accuracies (for
    tables that take several seeds).
    """
    summary = summarise(records, ci)
    if not seed_std:
        summary.pop("seed_std")
    return {
        "model": model, "aggregator": aggregator, "dataset": collection.name, "split": split,
        "k_shot": episode_cfg.k_shot, "episodes": episodes, "refine": refine, **summary, "seed": seed,
    }


def score_records(module: FewShotModel, collection: Any, split: str = "test", episode_cfg: Any = None,
                  episodes: int = 1, seed: int = 0, refine: RefineConfig = _NO_REFINE) -> pd.DataFrame:
    """Per-(graph, episode) records of a trained GFL model or transfer baseline on ``split`` of a collection
    (``episode_cfg``: an :class:`~gflkit.config.EpisodeConfig`, by default the default one)."""
    sampler = EpisodeSampler(collection, split, episode_cfg or EpisodeConfig(), seed).require_graphs()
    return graph_records(module, sampler, episodes, refine=refine)


def score_row(module: FewShotModel, name: str, collection: Any, split: str, episode_cfg: Any, episodes: int,
              seed: int, refine: RefineConfig = _NO_REFINE, ci: str = "t") -> dict:
    """The result row of a trained model (:func:`score_records`, then :func:`result_row`)."""
    records = score_records(module, collection, split, episode_cfg, episodes, seed, refine)
    cfg = module.cfg if isinstance(module, GFL) else None  # a GFL built from a config shows its aggregator
    return result_row(name, aggregator_name(cfg), collection, split, records, episode_cfg, episodes, seed,
                      refine=refine.method, ci=ci)
