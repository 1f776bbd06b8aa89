"""Intervals, paired comparisons and per-episode metrics against scipy / scikit-learn."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from gflkit.config import EpisodeConfig
from gflkit.episodes import EpisodeSampler
from gflkit.evaluation.scoring import episode_scores, majority_records, paired, per_graph, summarise
from gflkit.evaluation.tables import mean_ci, paired_difference


@pytest.mark.parametrize("n", [2, 3, 6, 20])
def test_t_interval_matches_scipy(n):
    values = np.random.default_rng(n).normal(70, 5, size=n)
    mean, half, std = mean_ci(values)
    lo, hi = stats.t.interval(0.95, n - 1, loc=values.mean(), scale=stats.sem(values))
    assert mean == pytest.approx(values.mean())
    assert (mean - half, mean + half) == pytest.approx((lo, hi), rel=1e-12)
    assert std == pytest.approx(values.std(ddof=1))


def test_paper_interval_and_single_value():
    values = np.array([60.0, 70.0, 80.0, 75.0])
    _, half, std = mean_ci(values, "paper")
    assert std == pytest.approx(values.std(ddof=0))
    assert half == pytest.approx(1.96 * values.std(ddof=0) / 2)
    # the t interval is wider than the paper's on few graphs (ddof and the t quantile)
    assert mean_ci(values)[1] > 1.3 * half
    assert math.isnan(mean_ci([70.0])[1]) and mean_ci([70.0], "paper")[1] == 0.0
    with pytest.raises(ValueError, match="unknown interval"):
        mean_ci(values, "z")


def test_paired_difference_matches_scipy():
    rng = np.random.default_rng(1)
    b = rng.uniform(50, 80, size=12)
    a = b + rng.normal(2, 3, size=12)
    out = paired_difference(a, b)
    test = stats.ttest_rel(a, b)
    lo, hi = stats.t.interval(0.95, 11, loc=(a - b).mean(), scale=stats.sem(a - b))
    assert out["delta"] == pytest.approx((a - b).mean())
    assert (out["delta_lo"], out["delta_hi"]) == pytest.approx((lo, hi), rel=1e-12)
    assert out["p_value"] == pytest.approx(test.pvalue, rel=1e-9)
    assert out["n_pairs"] == 12


def test_paired_difference_degenerate_cases():
    assert paired_difference([1, 2, 3], [1, 2, 3]) == {"delta": 0, "delta_lo": 0, "delta_hi": 0, "p_value": 1.0,
                                                       "n_pairs": 3}
    assert paired_difference([2, 3], [1, 2])["p_value"] == 0.0
    assert math.isnan(paired_difference([2], [1])["p_value"])


@pytest.mark.filterwarnings("ignore:y_pred contains classes")
def test_episode_scores_match_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    for _ in range(20):
        label = rng.integers(0, 4, size=30)
        pred = np.where(rng.random(30) < 0.6, label, rng.integers(0, 5, size=30))
        got = episode_scores(torch.from_numpy(pred), torch.from_numpy(label), 5)
        assert got["correct"] == int((pred == label).sum()) and got["n"] == 30
        assert got["accuracy"] == pytest.approx(metrics.accuracy_score(label, pred))
        assert got["balanced_accuracy"] == pytest.approx(metrics.balanced_accuracy_score(label, pred))
        assert got["macro_f1"] == pytest.approx(metrics.f1_score(label, pred, average="macro"))


def _records(acc: dict[tuple[int, int], float], seed: int | None = None) -> pd.DataFrame:
    rows = [{"graph_id": g, "episode": e, "accuracy": a, "balanced_accuracy": a, "macro_f1": a}
            for (g, e), a in acc.items()]
    df = pd.DataFrame(rows)
    return df if seed is None else df.assign(seed=seed)


def test_summarise_over_graphs_then_episodes():
    # graph 0: episodes 0.5, 0.7 -> 0.6; graph 1: 0.8, 1.0 -> 0.9; graph 2: 0.6, 0.6 -> 0.6
    recs = _records({(0, 0): 0.5, (0, 1): 0.7, (1, 0): 0.8, (1, 1): 1.0, (2, 0): 0.6, (2, 1): 0.6})
    row = summarise(recs)
    graph_means = np.array([60.0, 90.0, 60.0])
    assert row["ci_over"] == "graphs" and (row["n_graphs"], row["n_seeds"]) == (3, 1)
    assert row["accuracy"] == pytest.approx(70.0) and math.isnan(row["seed_std"])
    assert row["ci95"] == pytest.approx(stats.t.ppf(0.975, 2) * graph_means.std(ddof=1) / math.sqrt(3))
    assert per_graph(recs) == pytest.approx({0: 0.6, 1: 0.9, 2: 0.6})


def test_summarise_one_graph_is_over_episodes():
    recs = _records({(4, e): a for e, a in enumerate([0.5, 0.6, 0.7, 0.8])})
    row = summarise(recs)
    values = np.array([50.0, 60.0, 70.0, 80.0])
    assert row["ci_over"] == "episodes" and row["n_graphs"] == 1
    assert row["ci95"] == pytest.approx(stats.t.ppf(0.975, 3) * values.std(ddof=1) / 2) and row["ci95"] > 0
    assert summarise(recs, "paper")["ci95"] == pytest.approx(1.96 * values.std() / 2)


def test_summarise_with_seeds_is_over_seeds_and_graphs():
    recs = pd.concat([_records({(g, e): 0.5 + 0.1 * g + 0.05 * s for g in range(4) for e in range(2)}, s)
                      for s in range(3)])
    row = summarise(recs)
    assert (row["n_seeds"], row["n_graphs"], row["ci_over"]) == (3, 4, "seeds x graphs")
    assert row["accuracy"] == pytest.approx(100 * (0.5 + 0.15 + 0.05))
    assert row["seed_std"] == pytest.approx(5.0)
    # seeds shift every graph alike (no interaction): the seed part is the per-seed means' variance over 3,
    # the graph part the per-graph means' variance over 4, each with its own t quantile
    seed_part = stats.t.ppf(0.975, 2) ** 2 * 5.0 ** 2 / 3
    graph_part = stats.t.ppf(0.975, 3) ** 2 * np.var([55, 65, 75, 85], ddof=1) / 4
    assert row["ci95"] == pytest.approx(math.sqrt(seed_part + graph_part))
    paper = summarise(recs, "paper")  # the paper's formula: over graphs, seeds averaged
    assert paper["ci_over"] == "graphs" and paper["ci95"] == pytest.approx(1.96 * np.std([55, 65, 75, 85]) / 2)


def test_paired_toy_case_with_known_answer():
    """Model A beats the reference by 10, 20 points on graph 0's episodes and 30, 40 on graph 1's (one seed)."""
    ref = _records({(0, 0): 0.5, (0, 1): 0.5, (1, 0): 0.4, (1, 1): 0.3})
    model = _records({(0, 0): 0.6, (0, 1): 0.7, (1, 0): 0.7, (1, 1): 0.7})
    out = paired(model, ref)
    diffs = np.array([15.0, 35.0])  # the units: each graph's mean over its episodes
    half = stats.t.ppf(0.975, 1) * diffs.std(ddof=1) / math.sqrt(2)
    assert out["delta"] == pytest.approx(25.0) and out["n_pairs"] == 2 and out["prob_improvement"] == 1.0
    assert (out["delta_lo"], out["delta_hi"]) == pytest.approx((25 - half, 25 + half))
    assert out["p_value"] == pytest.approx(stats.ttest_1samp(diffs, 0).pvalue)
    # the pairing uses the episode ids, not the row order
    shuffled = paired(model.iloc[::-1], ref)
    assert shuffled["delta"] == pytest.approx(25.0) and shuffled["p_value"] == pytest.approx(out["p_value"])
    same = paired(ref, ref)
    assert same["delta"] == 0 and same["p_value"] == 1.0 and same["prob_improvement"] == 0.5


def test_seeds_and_graphs_are_the_units_of_a_pair():
    """Seed 0 gains 10 on both graphs, seed 1 gains 30 on graph 0 and 10 on graph 1: four (seed, graph) units."""
    ref = pd.concat([_records({(0, 0): 0.5, (1, 0): 0.5}, s) for s in (0, 1)])
    model = pd.concat([_records({(0, 0): 0.6, (1, 0): 0.6}, 0), _records({(0, 0): 0.8, (1, 0): 0.6}, 1)])
    out = paired(model, ref)
    assert out["n_pairs"] == 4 and out["delta"] == pytest.approx(15.0)
    assert summarise(model)["accuracy"] == pytest.approx(65.0)  # (70 + 60) / 2


def test_majority_records(small_family):
    sampler = EpisodeSampler(small_family, "test", EpisodeConfig(k_shot=5), seed=0)
    recs = majority_records(sampler, episodes=2)
    assert len(recs) == 2 * len(sampler.graph_ids)
    for row in recs.itertuples():
        label = sampler.episode(row.graph_id, row.episode).query_label
        assert row.accuracy == pytest.approx(float(torch.bincount(label).max()) / len(label))
        assert row.balanced_accuracy == pytest.approx(1 / sampler.num_classes)


def _set_threads(n: int) -> int:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    return before


def test_graphs_scored_side_by_side_equal_one_thread(small_family):
    from gflkit.config import GFLConfig
    from gflkit.evaluation.scoring import graph_records
    from gflkit.models import GFL

    torch.manual_seed(0)
    model = GFL(small_family.feat_size, GFLConfig())
    sampler = EpisodeSampler(small_family, "test", EpisodeConfig(k_shot=5), seed=0)
    before = _set_threads(1)
    try:
        alone = graph_records(model, sampler, episodes=3)  # one thread: no workers
        torch.set_num_threads(2)
        side_by_side = graph_records(model, sampler, episodes=3)  # two workers of one thread each
        assert torch.get_num_threads() == 2  # the caller's setting is back
    finally:
        torch.set_num_threads(before)
    pd.testing.assert_frame_equal(alone, side_by_side)
    assert len(alone) == 3 * len(sampler.graph_ids)


def test_map_graphs_order_threads_and_errors():
    import threading
    import time

    from gflkit.threads import map_graphs

    before = _set_threads(2)
    try:
        seen = []

        def fn(x):
            seen.append((torch.get_num_threads(), torch.is_grad_enabled(), threading.current_thread().name))
            time.sleep(0.02)  # long enough for both threads to take items
            return x * x

        assert map_graphs(fn, list(range(9))) == [x * x for x in range(9)]
        assert {s[0] for s in seen} == {1}  # each worker computes on one torch thread
        assert all(s[1] for s in seen)  # grad mode is the caller's
        assert len({s[2] for s in seen}) == 2  # the caller and one pool thread
        with torch.no_grad():
            map_graphs(fn, [1, 2, 3])
        assert not any(s[1] for s in seen[-3:])
        assert torch.get_num_threads() == 2

        def fails(x):
            if x == 5:
                raise ValueError("graph 5 is broken")
            return x

        with pytest.raises(ValueError, match="graph 5 is broken"):
            map_graphs(fails, list(range(20)))
        assert torch.get_num_threads() == 2
        assert map_graphs(fn, [3]) == [9] and seen[-1][0] == 2  # one item: computed by the caller as is
    finally:
        torch.set_num_threads(before)


def test_one_thread_restores_the_threads():
    from gflkit.threads import one_thread

    before = _set_threads(2)
    try:
        with one_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        with pytest.raises(RuntimeError), one_thread():
            raise RuntimeError("inside")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
