"""Intervals over (seed, graph) units: coverage by simulation, the one-level cases, p-values, ties."""
from __future__ import annotations

import importlib.util
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from gflkit.errors import GFLWarning, OneSeedWarning
from gflkit.evaluation.statistics import (estimate, paired_estimate, prob_improvement, two_level_half, unit_table,
                                         warn_one_seed)

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "coverage.py"


@pytest.fixture(scope="module")
def coverage_script():
    """scripts/coverage.py: the simulated comparisons behind docs/method.md's coverage table."""
    spec = importlib.util.spec_from_file_location("gflkit_coverage_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


# -- coverage: 1,000 simulated comparisons with known seed, graph and episode variance ------------------------------

@pytest.mark.parametrize("n_seeds", [3, 5])
def test_two_level_interval_covers_the_true_difference_with_several_seeds(coverage_script, n_seeds):
    """Seed effects shared by the graphs, graph effects, seed x graph interaction and episode noise (20 graphs,
    5 episodes): the 95% interval covers the true difference in 93-97% of 1,000 comparisons; the former
    interval over (graph, episode) pairs with seeds averaged in them covers it far less often."""
    cov = coverage_script.coverage(1000, n_seeds, 20, 5, coverage_script.SCENARIOS["seed-dominant"], seed=0,
                                   bootstrap=False)
    assert 0.93 <= cov["two-level t"]["delta"] <= 0.97, cov
    assert cov["episodes (old)"]["delta"] < 0.60, cov  # training randomness is in no (graph, episode) pair
    # a row's own accuracy: the same interval, conservative when seed and graph parts are alike (see docs)
    assert 0.93 <= cov["two-level t"]["accuracy"] <= 0.99, cov
    assert cov["episodes (old)"]["accuracy"] < 0.70, cov


def test_one_seed_interval_covers_graphs_and_episodes(coverage_script):
    """With one seed (no seed variance in the simulation) the interval is the t interval over graphs: 93-97%;
    counting a graph's episodes as independent under-covers."""
    scenario = coverage_script.Scenario(seed_sd=0.0)
    cov = coverage_script.coverage(1000, 1, 20, 5, scenario, seed=1, bootstrap=False)
    assert 0.93 <= cov["two-level t"]["delta"] <= 0.97, cov
    assert 0.93 <= cov["two-level t"]["accuracy"] <= 0.97, cov
    assert cov["episodes (old)"]["delta"] < cov["two-level t"]["delta"] - 0.03, cov
    assert cov["episodes (old)"]["accuracy"] < 0.85, cov


def test_the_coverage_check_can_fail(coverage_script):
    """The same check rejects an interval that leaves the seed level out: seeds x graphs as independent units."""
    row, ref = coverage_script.simulate(1000, 3, 20, 5, coverage_script.SCENARIOS["seed-dominant"],
                                        np.random.default_rng(2))
    cells = (row - ref).mean(axis=-1).reshape(1000, 1, 60)  # 60 units, as if one seed on 60 graphs
    mean, half = two_level_half(cells)
    assert np.mean(np.abs(mean - coverage_script.TRUE_DELTA) <= half) < 0.80


# -- the interval against known cases ------------------------------------------------------------------------------

def _table(values) -> pd.DataFrame:
    return pd.DataFrame(np.asarray(values, dtype=float))


def test_one_seed_is_the_t_interval_over_graphs_and_one_graph_over_seeds():
    values = np.random.default_rng(0).normal(70, 5, size=8)
    lo, hi = stats.t.interval(0.95, 7, loc=values.mean(), scale=stats.sem(values))
    for table, over in ((_table([values]), "graphs"), (_table(values[:, None]), "seeds")):
        est = estimate(table)
        assert est.over == over and est.n_units == 8
        assert (est.lo, est.hi) == pytest.approx((lo, hi), rel=1e-12)
        assert est.p_value == pytest.approx(stats.ttest_1samp(values, 0).pvalue, rel=1e-9)


def test_two_level_half_width_by_hand():
    cells = np.array([[1.0, 2.0, 4.0, 3.0], [2.0, 4.0, 5.0, 5.0], [0.0, 1.0, 2.0, 3.0]])  # 3 seeds x 4 graphs
    s, g = cells.shape
    v_seeds = cells.mean(axis=1).var(ddof=1) / s
    resid = cells - cells.mean(axis=1, keepdims=True) - cells.mean(axis=0, keepdims=True) + cells.mean()
    ms_resid = (resid ** 2).sum() / ((s - 1) * (g - 1))
    v_graphs = max(cells.mean(axis=0).var(ddof=1) / g - ms_resid / (s * g), 0)
    half = math.sqrt(stats.t.ppf(0.975, s - 1) ** 2 * v_seeds + stats.t.ppf(0.975, g - 1) ** 2 * v_graphs)
    est = estimate(_table(cells))
    assert (est.mean, est.half, est.over, est.n_units) == (pytest.approx(cells.mean()), pytest.approx(half),
                                                           "seeds x graphs", 12)
    assert est.seed_std == pytest.approx(cells.mean(axis=1).std(ddof=1))
    assert est.std == pytest.approx(cells.mean(axis=0).std(ddof=1))
    # vectorised over leading axes: the same numbers
    mean, halves = two_level_half(np.stack([cells, cells + 1]))
    assert halves == pytest.approx([half, half]) and mean == pytest.approx([cells.mean(), cells.mean() + 1])


def test_the_p_value_is_where_the_interval_reaches_zero():
    rng = np.random.default_rng(3)
    for shift in np.linspace(-2, 2, 21):
        est = estimate(_table(rng.normal(shift, 1.5, size=(3, 6))))
        excludes_zero = est.lo > 0 or est.hi < 0
        assert (est.p_value < 0.05) == excludes_zero, est
        assert 0 < est.p_value <= 1
    # the interval at level 1 - p has its edge at 0
    cells = rng.normal(1.0, 1.0, size=(4, 5))
    est = estimate(_table(cells))
    mean, half = two_level_half(cells, level=1 - est.p_value)
    assert float(half) == pytest.approx(abs(est.mean), rel=1e-9) and float(mean) == pytest.approx(est.mean)


def test_degenerate_tables():
    assert estimate(_table(np.zeros((3, 4)))).p_value == 1.0
    flat = estimate(_table(np.full((3, 4), 2.0)))
    assert (flat.half, flat.p_value) == (0.0, 0.0)
    one = estimate(_table([[5.0]]))
    assert math.isnan(one.half) and math.isnan(one.p_value) and one.n_units == 1
    huge = estimate(_table(np.array([[1.0, 1.0 + 1e-7], [1.0, 1.0]]) * 1e6))  # p far below 1e-6, no overflow
    assert 0 < huge.p_value < 1e-6


def test_paper_interval_is_over_graphs_with_seeds_averaged():
    cells = np.array([[60.0, 70.0, 80.0, 75.0], [62.0, 70.0, 78.0, 75.0]])
    est = estimate(_table(cells), "paper")
    graph_means = cells.mean(axis=0)
    assert est.over == "graphs" and est.n_units == 4
    assert est.half == pytest.approx(1.96 * graph_means.std() / 2)
    with pytest.raises(ValueError, match="unknown interval"):
        estimate(_table(cells), "z")


# -- records: units, pairing and the probability of improvement ---------------------------------------------------

def _records(values: dict[tuple[int, int, int], float]) -> pd.DataFrame:
    """Records from ``{(seed, graph, episode): accuracy}``."""
    return pd.DataFrame([{"seed": s, "graph_id": g, "episode": e, "accuracy": a}
                         for (s, g, e), a in values.items()])


def test_units_are_seed_graph_means_of_the_episodes():
    recs = _records({(s, g, e): 0.1 * s + 0.01 * g + 0.001 * e for s in range(3) for g in (4, 7) for e in range(5)})
    table = unit_table(recs)
    assert table.shape == (3, 2) and list(table.columns) == [4, 7]
    assert table.loc[2, 7] == pytest.approx(0.2 + 0.07 + 0.002)


def test_prob_improvement_on_a_constructed_case():
    """Two seeds x three graphs: the row is ahead on three units, tied on one and behind on two: (3 + 0.5) / 6."""
    ref = _records({(s, g, e): 0.5 for s in (0, 1) for g in (0, 1, 2) for e in (0, 1)})
    ahead = {(0, 0): 0.1, (0, 1): 0.2, (1, 2): 0.05, (0, 2): 0.0, (1, 0): -0.1, (1, 1): -0.3}
    row = _records({(s, g, e): 0.5 + ahead[(s, g)] + (0.02 if e else -0.02) for s in (0, 1) for g in (0, 1, 2)
                    for e in (0, 1)})
    est, prob = paired_estimate(row, ref)
    assert prob == pytest.approx(3.5 / 6)
    assert est.n_units == 6 and est.over == "seeds x graphs"
    assert est.mean == pytest.approx(100 * np.mean(list(ahead.values())))
    assert prob_improvement([1.0, -1.0, 0.0, 2.0]) == pytest.approx(0.625)
    assert math.isnan(prob_improvement([]))


def test_paired_rows_match_on_seed_graph_and_episode():
    rng = np.random.default_rng(5)
    keys = [(s, g, e) for s in range(3) for g in range(4) for e in range(2)]
    ref = _records({k: rng.uniform(0.4, 0.6) for k in keys})
    row = ref.assign(accuracy=ref.accuracy + 0.01 * (1 + ref.seed))
    est, prob = paired_estimate(row.sample(frac=1, random_state=0), ref)  # the row order does not matter
    assert est.mean == pytest.approx(2.0) and prob == 1.0 and est.n_units == 12
    assert est.seed_std == pytest.approx(1.0)


# -- the one-seed warning -------------------------------------------------------------------------------------------

def test_one_seed_warning_names_the_parameter():
    with pytest.warns(OneSeedWarning, match=r"not training randomness.*seeds=\(0, 1, 2\)"):
        warn_one_seed(1)
    with pytest.warns(OneSeedWarning, match="compare"):
        warn_one_seed(1, "run")
    with warnings.catch_warnings():
        warnings.simplefilter("error", GFLWarning)
        warn_one_seed(3)  # several seeds: nothing
    assert issubclass(OneSeedWarning, UserWarning)
