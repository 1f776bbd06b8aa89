"""Intervals and paired comparisons over (seed, graph) units.

A result row scores one training run per seed on every test graph, each graph
on the same support draws (episodes). The unit of inference is one training run
scored on one test graph: the mean over that graph's episodes. Seeds and graphs
are two crossed levels (every seed's run is scored on every graph), and the
values of a row, or the paired differences of two rows on the same episodes,
form an ``S x G`` table ``y[s, g]``:

    y[s, g] = mu + a[s] + b[g] + r[s, g]

with ``a`` the training randomness (a seed's effect, shared by the graphs),
``b`` the test graph, and ``r`` their interaction plus the mean of the episode
noise. The row estimates ``mu`` with the mean of the table, whose variance is
``var(a) / S + var(b) / G + var(r) / (S G)``.

The interval (``ci="t"``) is the mean plus or minus

    half = sqrt(t(S-1)^2 * V_seeds + t(G-1)^2 * V_graphs)

where ``t(k)`` is the 97.5% Student t quantile with ``k`` degrees of freedom,
``V_seeds`` the variance of the per-seed means (each over every graph) divided
by ``S``, and ``V_graphs`` the variance of the per-graph means (each over every
seed) divided by ``G``, less the seed x graph interaction in it (the residual
mean square of the two-way table over ``S G``; at least 0). ``V_seeds +
V_graphs`` is the unbiased (ANOVA) estimate of the mean's variance; each part
gets the t quantile of its own degrees of freedom, so with few seeds the seed
part is not estimated as if it had the graphs' degrees of freedom. In
simulations (``scripts/coverage.py``, ``tests/evaluation/test_inference.py``, docs/method.md
"Statistics") it covers the true difference in 95-97% of comparisons with 3
seeds and 6-20 graphs (up to 99% when seed and graph parts are alike), where a
percentile bootstrap over seeds and graphs covers as little as 74% and one t
quantile on Satterthwaite's degrees of freedom 91-99.8%.

With one seed the seed level has one value: the interval is the t interval over
graphs (``ci_over="graphs"``) and covers graphs and episodes, not training
randomness (:class:`~gflkit.errors.OneSeedWarning`). With one graph it is the t
interval over seeds (``"seeds"``); with one seed and one graph, over the
episodes (``"episodes"``). ``ci="paper"`` is the paper's ``1.96 * std(ddof=0) /
sqrt(n)`` over test graphs (seeds and episodes averaged per graph), for
comparison with published tables.

The p-value of a paired difference is the level at which the interval just
reaches 0 (two-sided): ``p < 0.05`` exactly when the 95% interval excludes 0
(``paper``: the z-test of the same graph means).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import OneGraphWarning, OneSeedWarning
from .tables import CI_METHODS

__all__ = []

#: Confidence level of every interval.
LEVEL = 0.95
#: Paired differences closer to 0 than this (percentage points) are ties.
TIE = 1e-9
#: Smallest p-value reported by the two-level interval's inversion.
P_FLOOR = 1e-300


@dataclass(frozen=True)
class Estimate:
    """A mean over units, its interval and what the units are.

    ``over`` is ``seeds x graphs``, ``graphs``, ``seeds`` or ``episodes``;
    ``n_units`` the number of units the interval is over; ``std`` the standard
    deviation of the per-graph means (of the episodes with ``over="episodes"``)
    and ``seed_std`` that of the per-seed means (NaN with one seed).
    """

    mean: float
    half: float
    p_value: float
    over: str
    n_seeds: int
    n_graphs: int
    n_units: int
    std: float
    seed_std: float

    @property
    def lo(self) -> float:
        return self.mean - self.half

    @property
    def hi(self) -> float:
        return self.mean + self.half


def _check(ci: str) -> None:
    if ci not in CI_METHODS:
        raise ValueError(f"unknown interval {ci!r}: choose one of {', '.join(CI_METHODS)}")


def unit_table(records: pd.DataFrame, column: str = "accuracy") -> pd.DataFrame:
    """The mean of ``column`` over episodes per (seed, graph): seeds as rows, graphs as columns.

    Records without a ``seed`` column are one seed (``0``). A graph missing for
    some seed, or without a value, is left out.
    """
    seeds = records["seed"] if "seed" in records else pd.Series(0, index=records.index)
    frame = pd.DataFrame({"seed": seeds.to_numpy(), "graph_id": records["graph_id"].to_numpy(),
                          "value": records[column].to_numpy(dtype=np.float64)})
    table = frame.groupby(["seed", "graph_id"])["value"].mean().unstack("graph_id")
    return table.dropna(axis=1, how="any")


def _quantile(df, alpha):
    """Upper ``alpha / 2`` quantile of Student t with ``df`` degrees of freedom (accurate for tiny alpha)."""
    from scipy.special import stdtrit  # what scipy.stats.t.ppf calls; 0.4 s less to import

    return -stdtrit(df, np.asarray(alpha, dtype=np.float64) / 2)


def _parts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, ``V_seeds`` and ``V_graphs`` of tables ``values[..., S, G]`` (see the module's docstring)."""
    n_seeds, n_graphs = values.shape[-2:]
    mean = values.mean(axis=(-2, -1))
    seed_means, graph_means = values.mean(axis=-1), values.mean(axis=-2)
    v_seeds = seed_means.var(axis=-1, ddof=1) / n_seeds if n_seeds > 1 else np.zeros_like(mean)
    v_graphs = graph_means.var(axis=-1, ddof=1) / n_graphs if n_graphs > 1 else np.zeros_like(mean)
    if n_seeds > 1 and n_graphs > 1:  # take the seed x graph interaction out of the graph part
        resid = values - seed_means[..., :, None] - graph_means[..., None, :] + mean[..., None, None]
        v_resid = (resid ** 2).sum(axis=(-2, -1)) / ((n_seeds - 1) * (n_graphs - 1)) / (n_seeds * n_graphs)
        v_graphs = np.maximum(v_graphs - v_resid, 0.0)
    return mean, v_seeds, v_graphs


def _half(v_seeds, v_graphs, n_seeds: int, n_graphs: int, alpha=1 - LEVEL):
    """``sqrt(t(S-1)^2 V_seeds + t(G-1)^2 V_graphs)`` at level ``1 - alpha`` (a part with one value is left out)."""
    with np.errstate(invalid="ignore"):  # an infinite quantile (tiny alpha) of a zero part counts as 0
        seeds = _quantile(n_seeds - 1, alpha) * np.sqrt(v_seeds) if n_seeds > 1 else 0.0
        graphs = _quantile(n_graphs - 1, alpha) * np.sqrt(v_graphs) if n_graphs > 1 else 0.0
    return np.hypot(np.nan_to_num(seeds, nan=0.0), np.nan_to_num(graphs, nan=0.0))


def two_level_half(values: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Mean and interval half-width of tables ``values[..., S, G]`` (seeds x graphs), vectorised.

    ``sqrt(t(S-1)^2 V_seeds + t(G-1)^2 V_graphs)``; one seed gives the t
    interval over graphs, one graph that over seeds; NaN with one of each.
    """
    values = np.asarray(values, dtype=np.float64)
    n_seeds, n_graphs = values.shape[-2:]
    mean, v_seeds, v_graphs = _parts(values)
    if n_seeds * n_graphs < 2:
        return mean, np.full_like(mean, math.nan)
    return mean, _half(v_seeds, v_graphs, n_seeds, n_graphs, 1 - level)


def _two_level_p(mean: float, v_seeds: float, v_graphs: float, n_seeds: int, n_graphs: int) -> float:
    """The level ``alpha`` at which the two-level interval's half-width is ``|mean|`` (bisection on log alpha)."""
    if v_seeds + v_graphs <= 0:
        return 1.0 if mean == 0 else 0.0
    if mean == 0:
        return 1.0
    if n_seeds == 1 or n_graphs == 1:  # one level: the t-test
        from scipy.special import stdtr

        return float(2 * stdtr(max(n_seeds, n_graphs) - 1, -abs(mean) / math.sqrt(v_seeds + v_graphs)))
    lo, hi = math.log(P_FLOOR), 0.0  # half(alpha) falls from huge to 0 as alpha goes from P_FLOOR to 1
    if _half(v_seeds, v_graphs, n_seeds, n_graphs, P_FLOOR) <= abs(mean):
        return P_FLOOR
    for _ in range(80):
        mid = (lo + hi) / 2
        if _half(v_seeds, v_graphs, n_seeds, n_graphs, math.exp(mid)) > abs(mean):
            lo = mid
        else:
            hi = mid
    return float(math.exp((lo + hi) / 2))


def _one_level(values: np.ndarray, ci: str) -> tuple[float, float, float, float]:
    """Mean, half-width, p-value (of mean 0) and std of iid ``values``: t or the paper's z interval."""
    from scipy.special import ndtr, stdtr

    n = values.size
    mean = float(values.mean()) if n else math.nan
    if ci == "paper":
        std = float(values.std()) if n else math.nan
        se = std / math.sqrt(n) if n else math.nan
        half = 1.96 * se
        p = (1.0 if mean == 0 else 0.0) if se == 0 else float(2 * ndtr(-abs(mean) / se))
        return mean, half, (math.nan if n < 2 else p), std
    if n < 2:
        return mean, math.nan, math.nan, math.nan
    std = float(values.std(ddof=1))
    se = std / math.sqrt(n)
    if se == 0:
        p = 1.0 if mean == 0 else 0.0
    else:
        p = float(2 * stdtr(n - 1, -abs(mean) / se))
    return mean, float(_quantile(n - 1, 1 - LEVEL)) * se, p, std


def estimate(table: pd.DataFrame, ci: str = "t", episodes: np.ndarray | None = None) -> Estimate:
    """Mean, 95% interval and p-value (of a zero mean) of a unit table (:func:`unit_table`).

    Args:
        table: per (seed, graph) values, seeds as rows and graphs as columns.
        ci: ``t`` (the two-level interval of the module's docstring) or
            ``paper`` (``1.96 * std(ddof=0) / sqrt(n)`` over the graphs'
            means, a z-test's p-value).
        episodes: the per-episode values (seed-averaged) of the only graph, for
            an interval over episodes when the table has one graph and, with
            ``t``, one seed.
    """
    _check(ci)
    values = table.to_numpy(dtype=np.float64)
    n_seeds, n_graphs = values.shape
    if n_seeds == 0 or n_graphs == 0:
        return Estimate(math.nan, math.nan, math.nan, "graphs", n_seeds, n_graphs, 0, math.nan, math.nan)
    seed_means = values.mean(axis=1)
    seed_std = float(seed_means.std(ddof=1)) if n_seeds > 1 else math.nan
    graph_means = values.mean(axis=0)
    episode_level = n_graphs == 1 and (ci == "paper" or n_seeds == 1) and episodes is not None
    if episode_level:
        mean, half, p, std = _one_level(np.asarray(episodes, dtype=np.float64), ci)
        return Estimate(float(values.mean()), half, p, "episodes", n_seeds, n_graphs, int(np.size(episodes)),
                        std, seed_std)
    if ci == "paper":
        mean, half, p, std = _one_level(graph_means, ci)
        return Estimate(mean, half, p, "graphs", n_seeds, n_graphs, n_graphs, std, seed_std)
    mean, v_seeds, v_graphs = (float(x) for x in _parts(values))
    std = float(graph_means.std(ddof=1)) if n_graphs > 1 else math.nan
    over = "seeds x graphs" if n_seeds > 1 and n_graphs > 1 else ("graphs" if n_graphs > 1 else "seeds")
    if n_seeds * n_graphs < 2:
        return Estimate(mean, math.nan, math.nan, over, n_seeds, n_graphs, 1, std, seed_std)
    half = float(_half(v_seeds, v_graphs, n_seeds, n_graphs))
    p = _two_level_p(mean, v_seeds, v_graphs, n_seeds, n_graphs)
    return Estimate(mean, half, p, over, n_seeds, n_graphs, n_seeds * n_graphs, std, seed_std)


def _episode_values(records: pd.DataFrame, column: str, graph) -> np.ndarray:
    """The only graph's per-episode values, averaged over seeds."""
    one = records[records["graph_id"] == graph]
    return one.groupby("episode")[column].mean().to_numpy(dtype=np.float64)


def record_estimate(records: pd.DataFrame, column: str = "accuracy", ci: str = "t", scale: float = 1.0) -> Estimate:
    """:func:`estimate` of ``scale * column`` of a records frame (per (seed, graph, episode) rows)."""
    records = records.assign(**{column: scale * records[column].astype(np.float64)})
    table = unit_table(records, column)
    episodes = _episode_values(records, column, table.columns[0]) if table.shape[1] == 1 else None
    return estimate(table, ci, episodes)


def _differences(records: pd.DataFrame, reference: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per (seed, graph, episode) ``records - reference`` in percent, matched on those keys."""
    keys = ["graph_id", "episode"] + (["seed"] if "seed" in records and "seed" in reference else [])
    both = records[keys + [column]].merge(reference[keys + [column]], on=keys, suffixes=("", "_ref"))
    return both.assign(diff=100 * (both[column].astype(np.float64) - both[f"{column}_ref"].astype(np.float64)))


def prob_improvement(differences: np.ndarray) -> float:
    """Share of units with a positive difference, ties (within :data:`TIE`) counting half."""
    d = np.asarray(differences, dtype=np.float64).ravel()
    d = d[~np.isnan(d)]
    if d.size == 0:
        return math.nan
    tie = np.abs(d) <= TIE
    return float(((d > 0) & ~tie).mean() + 0.5 * tie.mean())


def paired_estimate(records: pd.DataFrame, reference: pd.DataFrame, column: str = "accuracy",
                    ci: str = "t") -> tuple[Estimate, float]:
    """The mean difference ``records - reference`` (percent) over the same units, and the probability of improvement.

    Rows are matched on ``(seed, graph_id, episode)``; the differences are
    averaged over each (seed, graph)'s episodes, and the interval and p-value
    are those of :func:`estimate` over the resulting units. The probability of
    improvement is the share of (seed, graph) units where ``records`` is above
    ``reference`` (ties half), or of episodes when the interval is over episodes.
    """
    diffs = _differences(records, reference, column)
    if "seed" not in diffs:
        diffs = diffs.assign(seed=0)
    table = unit_table(diffs, "diff")
    episodes = _episode_values(diffs, "diff", table.columns[0]) if table.shape[1] == 1 else None
    est = estimate(table, ci, episodes)
    units = episodes if est.over == "episodes" else table.to_numpy()
    return est, prob_improvement(units)


#: Ways of adjusting the p-values of a family of comparisons: Holm's step-down (controls the family-wise
#: error rate), Benjamini-Hochberg (controls the false discovery rate), or none.
ADJUSTMENTS = ("holm", "bh", "none")


def adjust_p(p_values, method: str = "holm") -> np.ndarray:
    """p-values adjusted over the family of comparisons they come from; NaN entries stay NaN and are not counted.

    ``holm``: Holm's step-down adjustment, ``min(1, max_{j<=i} (m - j + 1) p_(j))``
    for the ``i``-th smallest of ``m`` p-values; a comparison whose adjusted
    p-value is below 0.05 is shown at a family-wise error rate of 5%.
    ``bh``: Benjamini and Hochberg's step-up adjustment,
    ``min(1, min_{j>=i} m p_(j) / j)``, for a false discovery rate of 5%.
    ``none``: the p-values as they are.
    """
    if method not in ADJUSTMENTS:
        raise ValueError(f"unknown adjustment {method!r}: choose one of {', '.join(ADJUSTMENTS)}")
    p = np.asarray(p_values, dtype=np.float64).ravel()
    out = p.copy()
    keep = np.flatnonzero(~np.isnan(p))
    m = keep.size
    if method == "none" or m == 0:
        return out
    order = keep[np.argsort(p[keep], kind="stable")]
    ranked = p[order]
    if method == "holm":
        adjusted = np.maximum.accumulate((m - np.arange(m)) * ranked)
    else:
        adjusted = np.minimum.accumulate((m * ranked / np.arange(1, m + 1))[::-1])[::-1]
    out[order] = np.minimum(adjusted, 1.0)
    return out


def warn_one_seed(n_seeds: int, context: str = "experiment", stacklevel: int = 3) -> None:
    """Warn (:class:`~gflkit.errors.OneSeedWarning`) when a row's intervals come from one training seed.

    ``context``: ``experiment`` (a table that takes seeds) or ``run`` (one
    trained run scored).
    """
    if n_seeds == 1:
        warnings.warn(OneSeedWarning(context), stacklevel=stacklevel)


def warn_one_graph(n_graphs: int, dataset: str = "", stacklevel: int = 3) -> None:
    """Warn (:class:`~gflkit.errors.OneGraphWarning`) when a table's rows are scored on one test graph."""
    if n_graphs == 1:
        warnings.warn(OneGraphWarning(dataset), stacklevel=stacklevel)
