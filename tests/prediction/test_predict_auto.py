"""predict's choice among candidates: graphs without features, forced methods, Python warnings and attributes,
formula escaping in the CSV, and the two graphs of the tutorial where the default must come close to the best."""
from __future__ import annotations

import warnings

import networkx as nx
import numpy as np
import pandas as pd
import pytest
import torch
from cli_helpers import csv_table, invoke, one_line_error
from test_predict import EPISODES, FAST, region  # noqa: F401  (the exported test graph of tiny, as tables)
from test_predict_estimate import run  # noqa: F401  (a GFL run trained for 3 steps on tiny)

import gflkit
import dgl  # noqa: E402  (after gflkit)
from gflkit.errors import GFLError
from gflkit.prediction.candidates import LabelPropagation
from gflkit.prediction.checks import escape_formulas
from gflkit.prediction.predictor import (PredictionNote, PredictionTable, PredictionWarning, candidate_graph,
                                         contenders, predict_nodes)
from gflkit.refine import RefineConfig

STRUCTURAL = "structural (the graph has no node features)"


def karate() -> tuple[dgl.DGLGraph, np.ndarray]:
    k = nx.karate_club_graph()
    e = np.array(k.edges())
    g = dgl.graph((torch.from_numpy(e[:, 0]), torch.from_numpy(e[:, 1])), num_nodes=34)
    return g, np.array([int(k.nodes[i]["club"] == "Officer") for i in range(34)])


def _labels(label: np.ndarray, k: int, seed: int) -> dict[str, list[int]]:
    rng = np.random.default_rng([seed, k])
    return {f"c{c}": rng.choice(np.flatnonzero(label == c), k, replace=False).tolist() for c in np.unique(label)
            if c >= 0}


def _accuracy(labels: np.ndarray, predicted: np.ndarray, support) -> float:
    other = np.ones(len(labels), bool)
    other[[i for ids in support.values() for i in ids]] = False
    other &= labels >= 0
    return float((predicted[other] == np.array([f"c{c}" for c in labels])[other]).mean())


def _best_candidate(predictor, g, support, label) -> tuple[float, dict[str, float]]:
    """Every candidate's true accuracy on the unlabelled nodes (fitted on all labels), and the best."""
    found, _, _ = contenders(predictor, g, "g", RefineConfig())
    names = sorted(support)
    ids = [torch.tensor(support[n]) for n in names]
    truth = {c.name: _accuracy(label, np.asarray(names)[c.probabilities(ids).argmax(1).numpy()], support)
             for c in found}
    return max(truth.values()), truth


# -- graphs without features ---------------------------------------------------------------------------------------
def test_python_graph_without_features_uses_structural_ones(recwarn):
    g, label = karate()
    table = predict_nodes(None, g, _labels(label, 3, 0))
    assert isinstance(table, PredictionTable) and len(table) == 34
    assert table.report.features.startswith(STRUCTURAL) and table.method in table.candidates["candidate"].tolist()
    assert table.estimate is not None and table.estimate.accuracy is not None
    assert table.candidates["chosen"].sum() == 1 and not table.candidates["candidate"].str.startswith("model").any()
    notes = [w for w in recwarn if issubclass(w.category, PredictionNote)]
    assert len(notes) == 1 and f"predicted with {table.method}" in str(notes[0].message)
    assert type(table[table["is_support"]]) is pd.DataFrame  # a slice is a plain DataFrame


def test_predictor_on_a_graph_without_features_answers_and_warns(run, root):  # noqa: F811
    predictor = gflkit.load(run, root)
    g, label = karate()
    with pytest.warns(PredictionWarning, match="the run's model is not a candidate: .*has no node features"):
        table = predictor.predict(g, _labels(label, 5, 0))
    assert len(table) == 34 and not table.method.startswith("model")
    assert any("not a candidate" in line for line in table.warnings)
    with pytest.raises(GFLError, match="the run's model cannot predict"):
        predictor.predict(g, _labels(label, 5, 0), method="model")


def test_cli_without_features_and_without_a_run(run, region, tmp_path):  # noqa: F811
    result = invoke("predict", run, "--edges", region / "edges.csv", "--labels", region / "labels.csv")
    table = csv_table(result)
    assert len(table) == len(pd.read_csv(region / "nodes.csv"))
    assert STRUCTURAL in result.stderr and "predicted with" in result.stderr
    warned = [line for line in result.stderr.splitlines() if line.startswith("WARNING")]
    assert len(warned) == 1 and "the run's model is not a candidate" in warned[0], result.stderr
    alone = invoke("predict", "--edges", region / "edges.csv", "--labels", region / "labels.csv")
    assert csv_table(alone).equals(table)
    assert not [line for line in alone.stderr.splitlines() if line.startswith("WARNING")], alone.stderr
    one_line_error(invoke("predict", "--edges", region / "edges.csv", "--labels", region / "labels.csv",
                          "--method", "model"), "no run given")
    quick = invoke("predict", "--edges", region / "edges.csv", "--labels", region / "labels.csv", "--no-estimate")
    said = [line for line in quick.stderr.splitlines() if "predicted with ridge-sgc" in line]
    assert len(said) == 1 and STRUCTURAL in said[0] and "estimated" not in quick.stderr, quick.stderr


# -- forced methods and the report -----------------------------------------------------------------------------------
def test_forced_method_is_that_candidate(region, tmp_path):  # noqa: F811
    result = invoke("predict", "--edges", region / "edges.csv", "--features", region / "feat.npy", "--labels",
                    region / "labels.csv", "--method", "lp", "--report", tmp_path / "r.json")
    table = csv_table(result)
    labels = pd.read_csv(region / "labels.csv")
    names = sorted(labels["label"].astype(str).unique())
    ids = [torch.tensor(labels.loc[labels["label"].astype(str) == n, "node"].tolist()) for n in names]
    g = dgl.graph(tuple(torch.from_numpy(pd.read_csv(region / "edges.csv")[c].to_numpy()) for c in ("src", "dst")),
                  num_nodes=len(table))
    h, _ = candidate_graph(g)
    want = LabelPropagation().class_scores(h, ids).argmax(1).numpy()
    q = ~table["is_support"].to_numpy()
    assert (table["label"].astype(str).to_numpy()[q] == np.asarray(names)[want][q]).all()
    import json

    report = json.loads((tmp_path / "r.json").read_text())
    assert report["method"] == "lp" and report["selection"]["chosen"] == "lp"
    assert [c["candidate"] for c in report["selection"]["candidates"]] == ["lp"]
    assert "balanced accuracy" in report["selection"]["rule"]["score"]
    bad = invoke("predict", "--edges", region / "edges.csv", "--labels", region / "labels.csv", "--method", "xx")
    assert bad.exit_code == 2


def test_auto_lists_every_candidate_on_stderr_and_in_the_report(run, region, tmp_path):  # noqa: F811
    import json

    result = invoke("predict", run, "--edges", region / "edges.csv", "--features", region / "feat.npy", "--labels",
                    region / "labels.csv", "--report", tmp_path / "r.json")
    assert result.exit_code == 0
    report = json.loads((tmp_path / "r.json").read_text())
    names = [c["candidate"] for c in report["selection"]["candidates"]]
    assert set(names) == {"lp", "centroid", "centroid-sgc", "ridge", "ridge-sgc", "cs", "model", "model+lp",
                          "model+cs"}
    for name in names:
        assert f" {name}: balanced accuracy" in result.stderr
    assert f"predicted with {report['method']}:" in result.stderr
    assert report["estimate"]["accuracy"] == next(c["estimate"]["accuracy"] for c in report["selection"]["candidates"]
                                                  if c["candidate"] == report["method"])


# -- formula escaping ------------------------------------------------------------------------------------------------
def test_csv_escape_formulas_is_opt_in(region, tmp_path):  # noqa: F811
    labels = pd.read_csv(region / "labels.csv")
    names = {n: m for n, m in zip(sorted(labels["label"].astype(str).unique()), ["=SUM(A1)", "+1", "@x", "safe"])}
    labels["label"] = labels["label"].astype(str).map(names)
    labels.to_csv(tmp_path / "labels.csv", index=False)
    args = ["predict", "--edges", region / "edges.csv", "--features", region / "feat.npy", "--labels",
            tmp_path / "labels.csv", "--method", "centroid"]
    plain = csv_table(invoke(*args))
    assert "=SUM(A1)" in plain["label"].tolist() and "score_=SUM(A1)" in plain.columns  # as given, by default
    escaped = csv_table(invoke(*args, "--csv-escape-formulas"))
    assert set(escaped["label"]) <= {"'=SUM(A1)", "'+1", "'@x", "safe"} and "'score_=SUM(A1)" not in escaped.columns
    assert "score_=SUM(A1)" in escaped.columns  # a column name starting with score_ is safe
    assert (escaped.filter(like="score_").to_numpy() == plain.filter(like="score_").to_numpy()).all()
    frame = escape_formulas(pd.DataFrame({"a": ["-2", "\tx", "ok", 3], "=b": [1, 2, 3, 4]}))
    assert frame["a"].tolist() == ["'-2", "'\tx", "ok", 3] and list(frame.columns) == ["a", "'=b"]


# -- the tutorial's two graphs: the default within 5 points of the best candidate ------------------------------------
def _tutorial_karate_labels(label: np.ndarray) -> dict[str, list[int]]:
    """The tutorial's labels: 3 members of each club, ``DataFrame.groupby("label").sample(3, random_state=0)``."""
    clubs = pd.DataFrame({"id": np.arange(len(label)), "label": [f"c{c}" for c in label]})
    chosen = clubs.groupby("label").sample(3, random_state=0)
    return {name: group["id"].tolist() for name, group in chosen.groupby("label")}


def test_karate_club_without_features_three_labels_per_class():
    g, label = karate()
    support = _tutorial_karate_labels(label)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PredictionNote)
        table = predict_nodes(None, g, support)
    best, truth = _best_candidate(None, g, support, label)
    got = _accuracy(label, table["label"].astype(str).to_numpy(), support)
    assert got >= best - 0.05, (table.method, got, truth)


def test_shifted_sbm_five_labels_per_class(run, root, tmp_path):  # noqa: F811
    """The tutorial's shifted graph: test graph 20 of ``preprocess synthetic --small --snr 1 --homophily 0.8
    --test-shift 3``, its export-graph labels (5 per class)."""
    result = invoke("preprocess", "synthetic", "--small", "--snr", "1", "--homophily", "0.8", "--test-shift", "3",
                    "--name", "shifted", "--data-root", root)
    assert result.exit_code == 0, result.output
    assert invoke("export-graph", "shifted:20", tmp_path, "--labels-per-class", "5", "--data-root",
                  root).exit_code == 0
    g = gflkit.load_collection("shifted", root).graphs[20]
    label = g.ndata["label"].numpy()
    labels = pd.read_csv(tmp_path / "labels.csv")
    support = {str(name): group["node"].tolist() for name, group in labels.groupby("label")}
    support = {f"c{name.rsplit('_', 1)[1]}": ids for name, ids in support.items()}  # class_k -> ck, as in _accuracy
    predictor = gflkit.load(run, root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        table = predictor.predict(g, support)
    best, truth = _best_candidate(predictor, g, support, label)
    got = _accuracy(label, table["label"].astype(str).to_numpy(), support)
    assert got >= best - 0.05, (table.method, got, truth)


# -- a collection with structural features, and a run trained on it ----------------------------------------------------
def test_preprocess_structural_features_and_a_run_that_predicts_without_features(tmp_path):
    rng = np.random.default_rng(0)
    n = 900
    label = rng.integers(0, 3, n)
    iu = np.triu_indices(n, 1)
    keep = rng.random(len(iu[0])) < np.where(label[iu[0]] == label[iu[1]], 0.015, 0.001)
    pd.DataFrame({"src": iu[0][keep], "dst": iu[1][keep]}).to_csv(tmp_path / "edges.csv", index=False)
    pd.DataFrame({"id": np.arange(n), "label": label}).to_csv(tmp_path / "nodes.csv", index=False)
    root = tmp_path / "root"
    args = ["preprocess", "tables", tmp_path, "--graphs", "3,1,2", "--walk-length", "100,200", "--min-degree", "1",
            "--name", "structure", "--data-root", root]
    result = invoke(*args, "--structural-features")
    assert result.exit_code == 0, result.output
    collection = gflkit.load_collection("structure", root)
    assert collection.feat_size == 5 and collection.meta["structural_features"] == {"dims": 0, "seed": 0}
    from gflkit.data.structure import structural_features

    g = collection.graphs[0]
    assert torch.allclose(g.ndata["feat"], structural_features(*g.edges(), g.num_nodes(), 0))
    assert invoke(*args, "--structural-features", "--features", tmp_path / "x.npy").exit_code == 2
    gflkit.train("structure", episode_cfg=EPISODES, train_cfg=FAST, run_dir=tmp_path / "run", root=root,
                 eval_split=None, progress=False)
    support = _labels(label, 5, 0)
    pd.DataFrame([(i, c) for c, ids in support.items() for i in ids], columns=["node", "label"]).to_csv(
        tmp_path / "labels.csv", index=False)
    result = invoke("predict", tmp_path / "run", "--edges", tmp_path / "edges.csv", "--labels",
                    tmp_path / "labels.csv", "--data-root", root, "--report", tmp_path / "r.json")
    assert len(csv_table(result)) == n
    assert not [line for line in result.stderr.splitlines() if line.startswith("WARNING")], result.stderr
    import json

    names = [c["candidate"] for c in json.loads((tmp_path / "r.json").read_text())["selection"]["candidates"]]
    assert "model" in names  # the run computes its structural features for the graph
