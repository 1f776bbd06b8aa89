"""Per-dimension statistics of a collection's train features, as a run records them (``feature_stats``).

:mod:`gflkit.prediction.diagnostics` compares a new graph's features against
them to warn when they have shifted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
import torch

__all__ = ["FeatureStats"]


@dataclass(frozen=True, eq=False)
class FeatureStats:
    """Per-dimension mean and standard deviation of a collection's train features (as the model takes them).

    Attributes:
        mean, std: ``(d,)`` float64.
        zero_rows: share of nodes whose features are all zero.
        nodes: nodes they were computed over.
    """

    mean: np.ndarray
    std: np.ndarray
    zero_rows: float
    nodes: int

    def to_dict(self) -> dict[str, Any]:
        """Plain values (6 significant digits), as a run's metadata records them (``feature_stats``)."""
        def short(a: np.ndarray) -> list[float]:
            return [float(f"{x:.6g}") for x in np.asarray(a, dtype=np.float64)]

        return {"nodes": int(self.nodes), "zero_rows": float(f"{self.zero_rows:.6g}"), "mean": short(self.mean),
                "std": short(self.std)}

    @classmethod
    def from_dict(cls, data: Any) -> "FeatureStats | None":
        """The statistics a run recorded, or ``None`` when they are missing or malformed."""
        if not isinstance(data, Mapping):
            return None
        try:
            mean = np.asarray(data["mean"], dtype=np.float64)
            std = np.asarray(data["std"], dtype=np.float64)
            zero, nodes = float(data["zero_rows"]), int(data["nodes"])
        except (KeyError, TypeError, ValueError):
            return None
        if mean.ndim != 1 or mean.shape != std.shape or not (np.isfinite(mean).all() and np.isfinite(std).all()):
            return None
        return cls(mean, std, zero, nodes)


def feature_statistics(features: Iterable[torch.Tensor | np.ndarray]) -> FeatureStats | None:
    """Pooled per-dimension mean and standard deviation of several feature matrices (one pass each).

    Each ``(n_i, d)`` matrix is reduced on its own in float64 and the parts are
    combined exactly (Chan et al.'s pairwise update), so no matrix is
    concatenated. ``None`` when there is no node.
    """
    n, mean, m2, zero = 0, None, None, 0
    for x in features:
        x = x.detach().cpu().numpy() if torch.is_tensor(x) else np.asarray(x)
        if x.ndim != 2 or x.shape[0] == 0:
            continue
        k = x.shape[0]
        mu = x.mean(0, dtype=np.float64)
        sq = ((x - mu) ** 2).sum(0, dtype=np.float64)
        zero += int((~np.any(x != 0, axis=1)).sum())
        if mean is None:
            n, mean, m2 = k, mu, sq
            continue
        delta = mu - mean
        total = n + k
        mean = mean + delta * (k / total)
        m2 = m2 + sq + delta ** 2 * (n * k / total)
        n = total
    if mean is None:
        return None
    return FeatureStats(mean, np.sqrt(m2 / n), zero / n, n)


def collection_feature_stats(collection, split: str = "train") -> FeatureStats | None:
    """:func:`feature_statistics` of the ``split`` graphs of a collection (all graphs when it has none)."""
    graphs = [g for g, s in zip(collection.graphs, collection.splits) if s == split] or list(collection.graphs)
    return feature_statistics(g.ndata["feat"] for g in graphs if "feat" in g.ndata)


def training_feature_stats(collection) -> dict[str, Any] | None:
    """What a run records as ``feature_stats``: :func:`collection_feature_stats` as plain values."""
    stats = collection_feature_stats(collection)
    return stats.to_dict() if stats is not None else None
