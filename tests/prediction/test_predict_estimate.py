"""What predict's labels are worth: the accuracy estimate, the feature-shift and collapse warnings, --report,
--refine, and a one-direction DGLGraph predicted as the CLI predicts its edge table."""
from __future__ import annotations

import json
from dataclasses import replace

import dgl
import numpy as np
import pandas as pd
import pytest
import torch
from cli_helpers import csv_table, invoke
from test_predict import EPISODES, FAST, region  # noqa: F401  (the exported test graph of tiny, as tables)

import gflkit
from gflkit.prediction.diagnostics import (COLLAPSE_SHARE, MEAN_SHIFT_LIMIT, FeatureStats, collapse_warnings,
                                collection_feature_stats, estimate_accuracy, feature_shift, wilson_interval)
from gflkit.refine import RefineConfig

SHIFT = "are unlike the training collection's"
COLLAPSE = "the predictions collapse"


@pytest.fixture(scope="module")
def run(root, tmp_path_factory):
    """A GFL run trained for 3 steps on ``tiny``, as tests/test_predict.py trains its runs."""
    folder = tmp_path_factory.mktemp("runs") / "gfl"
    gflkit.train("tiny", episode_cfg=EPISODES, train_cfg=FAST, model="gfl", out=folder, root=root, eval_split=None,
                 progress=False)
    return folder


@pytest.fixture(scope="module")
def predictor(run, root):
    return gflkit.load(run, root)


def _sbm(seed: int, n: int = 240, classes: int = 4, dim: int = 32, signal: float = 0.5, p_in: float = 0.06,
         p_out: float = 0.01):
    """A stochastic block model with balanced classes and class-dependent features; edges in one direction."""
    rng = np.random.default_rng(seed)
    label = rng.permutation(np.repeat(np.arange(classes), n // classes))
    feat = signal * rng.standard_normal((classes, dim))[label] + rng.standard_normal((n, dim))
    iu = np.triu_indices(n, 1)
    keep = rng.random(len(iu[0])) < np.where(label[iu[0]] == label[iu[1]], p_in, p_out)
    g = dgl.graph((torch.from_numpy(iu[0][keep]), torch.from_numpy(iu[1][keep])), num_nodes=n)
    g.ndata["feat"] = torch.from_numpy(feat.astype(np.float32))
    return g, label, rng


def _labels(label: np.ndarray, k: int, rng) -> dict[str, list[int]]:
    return {f"c{c}": rng.choice(np.flatnonzero(label == c), k, replace=False).tolist() for c in np.unique(label)}


def _true_accuracy(table: pd.DataFrame, label: np.ndarray) -> float:
    q = ~table["is_support"].to_numpy()
    return float((table["label"].to_numpy()[q] == np.asarray([f"c{c}" for c in label])[q]).mean())


def _write(folder, g: dgl.DGLGraph, support: dict[str, list[int]], feat: np.ndarray | None = None):
    """``g`` as user tables: edges.csv (as stored), feat.npy, labels.csv."""
    src, dst = g.edges()
    pd.DataFrame({"src": src.numpy(), "dst": dst.numpy()}).to_csv(folder / "edges.csv", index=False)
    np.save(folder / "feat.npy", g.ndata["feat"].numpy() if feat is None else feat)
    rows = [(node, name) for name, nodes in support.items() for node in nodes]
    pd.DataFrame(rows, columns=["node", "label"]).to_csv(folder / "labels.csv", index=False)
    return folder


def _predict(run, folder, *extra):
    return invoke("predict", run, "--edges", folder / "edges.csv", "--features", folder / "feat.npy", "--labels",
                  folder / "labels.csv", *extra)


def _lines(stderr: str, needle: str) -> list[str]:
    return [line for line in stderr.splitlines() if needle in line]


# -- the estimate ---------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("refine", ["none", "lp"])
def test_estimate_tracks_the_true_accuracy(predictor, refine):
    """On 32 SBM graphs with known labels (240 nodes, 4 balanced classes, 5 labels each, features from weak to
    strong: true accuracies from about 0.3 to 0.9), the estimate from the labels is close to the accuracy on the
    other nodes: off by less than 0.12 on average, biased by less than 0.05, and its 95% interval holds the true
    accuracy on at least 85% of the graphs (measured: 0.066, +0.008, 94% without refinement; 0.101, -0.024, 91%
    with lp, whose accuracy depends more on which nodes are labelled)."""
    cfg = RefineConfig(refine)
    diffs, inside = [], []
    for seed in range(32):
        g, label, rng = _sbm(seed, signal=(0.2, 0.35, 0.5, 0.8)[seed % 4])
        support = _labels(label, 5, rng)
        truth = _true_accuracy(predictor.predict(g, support, method="model", refine=cfg), label)
        est = predictor.estimate(g, support, refine=cfg)
        assert est.folds == 5 and est.repeats == 3 and est.held_out == 20 and est.refine == refine
        assert est.interval[0] <= est.accuracy <= est.interval[1]
        diffs.append(est.accuracy - truth)
        inside.append(est.interval[0] <= truth <= est.interval[1])
    diffs = np.asarray(diffs)
    assert np.abs(diffs).mean() < 0.12 and abs(diffs.mean()) < 0.05, diffs
    assert np.mean(inside) >= 0.85, (diffs, inside)


def test_estimate_is_seeded_and_stratified():
    """A perfect predictor scores 1, one that always says class 0 scores its recall per class, and the same seed
    gives the same estimate; every class keeps labels in every fold."""
    support = [torch.arange(0, 7), torch.arange(7, 10), torch.arange(10, 12)]
    truth = torch.cat([torch.full((len(s),), c) for c, s in enumerate(support)])
    seen = []

    def perfect(rest):
        assert all(len(r) >= 1 for r in rest)
        seen.append(sum(len(r) for r in rest))
        return truth

    est = estimate_accuracy(perfect, ["a", "b", "c"], support, seed=3)
    assert est.accuracy == 1.0 and est.per_class_recall == {"a": 1.0, "b": 1.0, "c": 1.0}
    assert est.folds == 5 and len(seen) == 5 * 3 and est.labels_per_class == {"a": 7, "b": 3, "c": 2}
    assert est.interval == pytest.approx(wilson_interval(12, 12))
    constant = estimate_accuracy(lambda rest: torch.zeros(12, dtype=torch.int64), ["a", "b", "c"], support)
    assert constant.per_class_recall == {"a": 1.0, "b": 0.0, "c": 0.0} and constant.accuracy == pytest.approx(7 / 12)
    again = estimate_accuracy(lambda rest: torch.randint(0, 3, (12,), generator=torch.Generator().manual_seed(
        sum(len(r) * (i + 1) for i, r in enumerate(rest)))), ["a", "b", "c"], support, seed=5)
    twice = estimate_accuracy(lambda rest: torch.randint(0, 3, (12,), generator=torch.Generator().manual_seed(
        sum(len(r) * (i + 1) for i, r in enumerate(rest)))), ["a", "b", "c"], support, seed=5)
    assert again == twice


def test_fewer_than_two_labels_in_a_class_says_so(run, region, tmp_path):  # noqa: F811
    labels = pd.read_csv(region / "labels.csv")
    one = labels.groupby("label").head(2)
    one = one[~((one["label"] == one["label"].iloc[0]) & one.duplicated("label"))]  # the first class keeps one
    one.to_csv(tmp_path / "labels.csv", index=False)
    report = tmp_path / "report.json"
    result = invoke("predict", run, "--edges", region / "edges.csv", "--features", region / "feat.npy", "--labels",
                    tmp_path / "labels.csv", "--report", report)
    assert len(csv_table(result)) == len(pd.read_csv(region / "nodes.csv"))
    lines = _lines(result.stderr, "no accuracy estimate")
    first = repr(str(one["label"].iloc[0]))
    assert len(lines) == 1 and f"{first} (1)" in lines[0] and "at least 2 per class" in lines[0], result.stderr
    assert str(tmp_path / "labels.csv") in lines[0] and "estimated accuracy" not in result.stderr
    data = json.loads(report.read_text())
    assert "k_shot" in data["warnings"][0]  # every warning the call gave, the readers' too
    assert all(w in result.stderr for w in data["warnings"]) and "no accuracy estimate" in data["warnings"][1]
    estimate = data["estimate"]
    assert estimate["accuracy"] is None and estimate["interval"] is None and "at least 2 per class" in estimate[
        "reason"]
    assert estimate["labels_per_class"][str(one["label"].iloc[0])] == 1


# -- the report --------------------------------------------------------------------------------------------------
def test_report_json_and_stderr(run, region, tmp_path):  # noqa: F811
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    result = _predict(run, region, "--report", report)
    table = csv_table(result)
    estimate_lines = [line for line in result.stderr.splitlines() if "estimated " in line]
    assert len(estimate_lines) == 2, result.stderr
    assert "estimated accuracy" in estimate_lines[0] and "95% interval" in estimate_lines[0]
    assert "estimated recall per class" in estimate_lines[1]
    data = json.loads(report.read_text())
    assert sorted(p.name for p in report.parent.iterdir()) == ["report.json"]  # written whole, nothing beside it
    labels = pd.read_csv(region / "labels.csv")
    counts = labels["label"].astype(str).value_counts().to_dict()
    assert data["labels_per_class"] == counts and data["classes"] == sorted(counts)
    assert data["nodes"] == len(table) and data["unlabelled"] == int((~table["is_support"]).sum())
    assert data["predicted_per_class"] == {c: int(((table["label"].astype(str) == c) & ~table["is_support"]).sum())
                                           for c in sorted(counts)}
    est = data["estimate"]
    assert 0 <= est["interval"][0] <= est["accuracy"] <= est["interval"][1] <= 1 and est["level"] == 0.95
    assert est["held_out"] == len(labels) and est["folds"] == 5 and est["repeats"] == 3 and est["seed"] == 0
    assert "Wilson" in est["method"] and "5-fold" in est["method"]
    assert set(est["per_class_recall"]) == set(counts) and est["labels_per_class"] == counts
    assert f"{100 * est['accuracy']:.1f}%" in estimate_lines[0]
    shift = data["feature_shift"]
    assert shift["checked"] and shift["source"] == "the run" and shift["dims"] == 32
    assert shift["thresholds"]["mean_shift"] == MEAN_SHIFT_LIMIT
    assert data["refine"]["method"] == "none" and data["run"] == str(run)
    warned = [line.split(" gflkit.prediction.predictor: ", 1)[1] for line in result.stderr.splitlines()
              if line.startswith("WARNING")]
    assert data["warnings"] == warned  # every warning the prediction gave, in order


def test_no_estimate_skips_it(run, region, tmp_path):  # noqa: F811
    report = tmp_path / "report.json"
    result = _predict(run, region, "--no-estimate", "--report", report, "--method", "model")
    assert result.exit_code == 0 and "estimated" not in result.stderr
    assert json.loads(report.read_text())["estimate"] == {"accuracy": None, "interval": None,
                                                         "reason": "not computed (--no-estimate)"}
    assert csv_table(result).equals(csv_table(_predict(run, region, "--method", "model")))


def test_estimate_seed(run, region, tmp_path):  # noqa: F811
    reports = [tmp_path / f"{i}.json" for i in range(3)]
    for path, seed in zip(reports, ("7", "7", "8")):
        assert _predict(run, region, "--seed", seed, "--report", path).exit_code == 0
    first, again, other = (json.loads(p.read_text())["estimate"] for p in reports)
    assert first == again and first["seed"] == 7 and other["seed"] == 8
    assert _predict(run, region, "--seed", "-1").exit_code == 2


# -- feature shift -----------------------------------------------------------------------------------------------
def test_no_shift_warning_on_a_graph_of_the_run_collection(run, region):  # noqa: F811
    """A test graph exported from the run's own collection is in distribution."""
    result = _predict(run, region)
    assert result.exit_code == 0 and not _lines(result.stderr, SHIFT), result.stderr


@pytest.mark.parametrize("change", ["scaled", "shifted", "zeros"])
def test_shift_warning_on_shifted_features(run, region, tmp_path, change):  # noqa: F811
    feat = np.load(region / "feat.npy")
    if change == "scaled":
        feat, needle = feat * 4, "typical factor"
    elif change == "shifted":
        feat, needle = feat + 2 * feat.std(0), "training standard deviations from the training means"
    else:
        feat[: len(feat) // 3], needle = 0, "have all-zero features"
    np.save(tmp_path / "feat.npy", feat)
    report = tmp_path / "report.json"
    result = invoke("predict", run, "--edges", region / "edges.csv", "--features", tmp_path / "feat.npy",
                    "--labels", region / "labels.csv", "--report", report, "--method", "model")
    assert result.exit_code == 0
    lines = _lines(result.stderr, needle)
    assert len(lines) == 1 and str(tmp_path / "feat.npy") in lines[0] and "warned" in lines[0], result.stderr
    assert lines[0].split(" gflkit.prediction.predictor: ", 1)[1] in json.loads(report.read_text())["warnings"]


def test_shift_statistics_of_an_older_run(predictor, region, root):  # noqa: F811
    """A run without recorded statistics takes them from its collection; without that, the check is skipped
    with a note."""
    recorded = predictor.stats
    collection = gflkit.load_collection("tiny", root)
    fresh = collection_feature_stats(collection)
    assert np.allclose(recorded.mean, fresh.mean, rtol=1e-5, atol=1e-6)
    assert np.allclose(recorded.std, fresh.std, rtol=1e-5, atol=1e-6)
    older = replace(predictor, stats=None)  # as a run trained before the statistics were recorded
    _, report = gflkit.predict(older, edges=region / "edges.csv", features=region / "feat.npy",
                               labels=region / "labels.csv", estimate=False, return_report=True)
    assert report.shift is not None and report.shift.source.startswith("collection ")
    assert report.shift.mean_shift < MEAN_SHIFT_LIMIT
    lost = replace(predictor, stats=None, collection=None)
    _, report = gflkit.predict(lost, edges=region / "edges.csv", features=region / "feat.npy",
                               labels=region / "labels.csv", estimate=False, return_report=True)
    assert report.shift is None and "no feature statistics" in report.shift_note
    assert report.to_dict()["feature_shift"] == {"checked": False, "reason": report.shift_note}


def test_shift_statistics_of_a_graph_drawn_like_the_training_graphs(small_family):
    stats = collection_feature_stats(small_family)
    again = FeatureStats.from_dict(stats.to_dict())
    assert np.allclose(again.mean, stats.mean, rtol=1e-5) and again.nodes == stats.nodes
    pooled = np.concatenate([g.ndata["feat"].numpy() for g, s in zip(small_family.graphs, small_family.splits)
                             if s == "train"])
    assert np.allclose(stats.mean, pooled.mean(0), atol=1e-5) and np.allclose(stats.std, pooled.std(0), atol=1e-4)
    for g, split in zip(small_family.graphs, small_family.splits):
        if split != "train":
            feat = g.ndata["feat"]
            assert feature_shift(feat, stats).warnings("g") == []
            assert feature_shift(feat[:30], stats).warnings("g") == []  # a small sample is not a shift
            assert len(feature_shift(3 * feat, stats).warnings("g")) == 2  # wider, and the means move


# -- collapse ----------------------------------------------------------------------------------------------------
def test_collapse_warning(run, region, tmp_path):  # noqa: F811
    """Every unlabelled node has the same features and neighbourhood (a ring): they all get one label."""
    n_labelled, ring = 20, 60
    labelled = np.load(region / "feat.npy")[:n_labelled]
    feat = np.concatenate([labelled, np.repeat(labelled[:1], ring, axis=0)])
    src = np.arange(n_labelled, n_labelled + ring)
    dst = np.r_[src[1:], src[:1]]
    pd.DataFrame({"src": np.r_[src, np.arange(0, n_labelled, 2)],
                  "dst": np.r_[dst, np.arange(1, n_labelled, 2)]}).to_csv(tmp_path / "edges.csv", index=False)
    np.save(tmp_path / "feat.npy", feat)
    pd.DataFrame({"node": np.arange(n_labelled), "label": [f"c{i % 4}" for i in range(n_labelled)]}).to_csv(
        tmp_path / "labels.csv", index=False)
    result = _predict(run, tmp_path)
    table = csv_table(result)
    assert table.loc[~table["is_support"], "label"].nunique() == 1
    lines = _lines(result.stderr, COLLAPSE)
    assert len(lines) == 2, result.stderr
    assert "are never predicted for the 60 unlabelled nodes" in lines[0]
    assert "takes 100.0% of the 60 unlabelled nodes, 4.0x its 25.0% share of the given labels" in lines[1]


def test_collapse_rules():
    balanced = {"a": 5, "b": 5, "c": 5, "d": 5}
    assert collapse_warnings({"a": 30, "b": 30, "c": 20, "d": 20}, balanced, "g") == []
    assert len(collapse_warnings({"a": 0, "b": 40, "c": 30, "d": 30}, balanced, "g")) == 1
    assert collapse_warnings({"a": 0, "b": 6, "c": 6, "d": 6}, balanced, "g") == []  # too few nodes to tell
    over = collapse_warnings({"a": 55, "b": 15, "c": 15, "d": 15}, balanced, "g")
    assert len(over) == 1 and "'a' takes 55.0%" in over[0]
    assert COLLAPSE_SHARE == 0.5
    # the share is judged against the labels' own class mix
    assert collapse_warnings({"a": 60, "b": 40}, {"a": 6, "b": 4}, "g") == []
    assert collapse_warnings({"a": 60, "b": 20, "c": 20}, {"a": 1, "b": 5, "c": 5}, "g")


# -- refinement ---------------------------------------------------------------------------------------------------
def test_refine_lp_as_evaluate_refines(run, region, root, tmp_path):  # noqa: F811
    from gflkit.graphs import prepare_graph
    from gflkit.refine import refine_scores
    from gflkit.prediction.class_scores import class_scores

    report = tmp_path / "report.json"
    result = _predict(run, region, "--refine", "lp", "--refine-alpha", "0.7", "--refine-steps", "5",
                      "--report", report)
    table = csv_table(result)
    scores = table.filter(like="score_").to_numpy()
    assert np.allclose(scores.sum(1), 1.0, atol=1e-4) and (scores >= 0).all()
    data = json.loads(report.read_text())
    assert data["refine"] == {"method": "lp", "alpha": 0.7, "steps": 5} and data["estimate"]["refine"] == "lp"
    assert "refinement (lp)" in data["estimate"]["method"]
    # the scores evaluate's refinement gives for the same support (equal sizes per class)
    labels = pd.read_csv(region / "labels.csv")
    classes = sorted(labels["label"].astype(str).unique())
    support = torch.stack([torch.tensor(labels.loc[labels["label"].astype(str) == c, "node"].tolist())
                           for c in classes])
    model = gflkit.load(run, root).module
    g = prepare_graph(gflkit.load_collection("tiny", root).graphs[6])
    refined = refine_scores(g, class_scores(model, g, list(support)), support, RefineConfig("lp", 0.7, 5))
    q = ~table["is_support"].to_numpy()
    assert (np.asarray(classes)[refined.argmax(1).numpy()][q] == table["label"].astype(str).to_numpy()[q]).all()
    plain = csv_table(_predict(run, region))
    assert not np.allclose(plain.filter(like="score_").to_numpy(), scores)
    bad = _predict(run, region, "--refine", "xx")
    assert bad.exit_code == 2 and "--refine" in bad.stderr


# -- one direction per edge ---------------------------------------------------------------------------------------
def test_one_direction_graph_predicts_as_the_cli(predictor, run, tmp_path):
    """A DGLGraph with each edge in one direction (plus a duplicate and a self-loop) gives the CLI's answer for
    the same edge table, on every node."""
    g, label, rng = _sbm(3, signal=0.35)
    support = _labels(label, 5, rng)
    src, dst = g.edges()
    messy = dgl.graph((torch.cat([src, src[:3], torch.tensor([7])]), torch.cat([dst, dst[:3], torch.tensor([7])])),
                      num_nodes=g.num_nodes())
    messy.ndata["feat"] = g.ndata["feat"]
    _write(tmp_path, messy, support)
    cli = csv_table(_predict(run, tmp_path, "--no-estimate"))
    direct = predictor.predict(messy, support, estimate=False)
    assert (direct["label"].astype(str).to_numpy() == cli["label"].astype(str).to_numpy()).all()
    assert np.allclose(direct.filter(like="score_").to_numpy(), cli.filter(like="score_").to_numpy(), atol=1e-4)
    tables = gflkit.predict(predictor, edges=tmp_path / "edges.csv", features=tmp_path / "feat.npy",
                            labels=tmp_path / "labels.csv", estimate=False)  # the CLI's path, unrounded
    pd.testing.assert_frame_equal(direct.drop(columns="node"), tables.drop(columns="node"))
    both = dgl.to_bidirected(g)
    both.ndata["feat"] = g.ndata["feat"]
    assert predictor.predict(both, support, estimate=False)["label"].tolist() == direct["label"].tolist()
    from gflkit.data.collection import build_graph, undirected_edges

    u, v = undirected_edges(*messy.edges(), messy.num_nodes())
    built = build_graph(*messy.edges(), messy.num_nodes(), messy.ndata["feat"], torch.zeros(messy.num_nodes()))
    assert torch.equal(built.edges()[0], u) and torch.equal(built.edges()[1], v)
    assert torch.equal(torch.stack(undirected_edges(v[: len(v) // 2], u[: len(u) // 2], g.num_nodes())),
                       torch.stack([u, v]))


def test_python_report_matches_the_cli(run, region, tmp_path):  # noqa: F811
    report = tmp_path / "report.json"
    cli = csv_table(_predict(run, region, "--report", report))
    table, rep = gflkit.predict(run, edges=region / "edges.csv", features=region / "feat.npy",
                                labels=region / "labels.csv", return_report=True)
    assert table["label"].tolist() == cli["label"].tolist()
    want = json.loads(report.read_text())
    want.pop("run")
    assert json.loads(json.dumps(rep.to_dict())) == want


def test_run_records_its_training_feature_statistics(run, root):
    ckpt = torch.load(run / "best.pt", weights_only=True)
    config = json.loads((run / "config.json").read_text())
    assert ckpt["feature_stats"] == config["feature_stats"]
    stats = FeatureStats.from_dict(ckpt["feature_stats"])
    assert stats.mean.shape == (32,) and (stats.std > 0).all() and 0 <= stats.zero_rows <= 1
    collection = gflkit.load_collection("tiny", root)
    assert stats.nodes == sum(g.num_nodes() for g, s in zip(collection.graphs, collection.splits) if s == "train")
