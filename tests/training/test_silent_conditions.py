"""Conditions that change what a number means are warned about and recorded: a run without val graphs
(and the carve-out of val graphs from the train graphs), graphs that start at the same node, test graphs
that share their nodes, and what the feature transform was fitted on."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from cli_helpers import csv_table, invoke, invoke_until_first_checkpoint, one_line_error

import gflkit
from gflkit.data import GraphCollection
from gflkit.data.collection import build_graph
from gflkit.data.sampling import (JACCARD_WARN, pairwise_jaccard, record_overlap, sample_family, sample_networks,
                                  split_jaccard)
from gflkit.data.sources.base import SourceGraph
from gflkit.data.sources.table_io import fit_svd
from gflkit.data.sources.tables import TableColumns, read_table_collection
from gflkit.errors import SettingError
from gflkit.runs.folder import partial_path

FAST = ["--steps", "6", "--eval-every", "2", "--k-shot", "3", "--n-query", "3", "--meta-batch", "2"]


@pytest.fixture(scope="module")
def noval(tmp_path_factory) -> Path:
    """A data root holding ``noval``: 6 train graphs, no val graph, 2 test graphs (60-90 nodes)."""
    path = tmp_path_factory.mktemp("noval")
    made = invoke("preprocess", "synthetic", "--small", "--name", "noval", "--graphs", "6,0,2", "--nodes", "60,90",
                  "--data-root", path)
    assert made.exit_code == 0, made.output
    return path


def _config(run: Path) -> dict:
    return json.loads((run / "config.json").read_text())


# -- no val graphs -------------------------------------------------------------------


def test_training_without_val_graphs_warns_once_and_records_it(noval, tmp_path):
    run = tmp_path / "run"
    result = invoke("train", "noval", *FAST, "--data-root", noval, "--run-dir", run, "--no-eval")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if "no val graphs" in line]
    assert len(lines) == 1 and lines[0].startswith("WARNING"), result.stderr
    assert "model selection and early stopping are off" in lines[0] and "--val-from-train" in lines[0]
    assert "--val-graphs" in lines[0]
    validation = _config(run)["validation"]
    assert validation["from"] == "none" and validation["model_selection"] is False
    assert "no val graphs" in validation["warning"]
    history = pd.read_csv(run / "metrics.csv")
    assert len(history) == 6 and history["val_accuracy"].isna().all()  # every step taken, the last kept


def test_a_collection_with_val_graphs_gives_no_such_warning(root, tmp_path, caplog):
    with caplog.at_level("WARNING"):
        result, _ = gflkit.train(GraphCollection.load(root / "processed" / "tiny"), steps=2, eval_every=2, k_shot=3,
                                 n_query=3, progress=False, eval_split=None, return_result=True,
                                 run_dir=False)
    assert "no val graphs" not in caplog.text
    assert result.meta["validation"] == {"from": "collection", "graphs": 2, "model_selection": True}


# -- the carve-out: val graphs from the train graphs -----------------------------------------


def _carved(collection, seed: int, **kw):
    return gflkit.train(collection, steps=30, eval_every=2, meta_batch=2, patience=100, k_shot=3, n_query=3,
                        val_from_train=2, seed=seed, progress=False, eval_split=None, return_result=True,
                        **{"run_dir": False, **kw})[0]


@pytest.mark.slow
def test_val_from_train_is_seeded_and_selects_the_model(noval, caplog):
    collection = GraphCollection.load(noval / "processed" / "noval")
    with caplog.at_level("WARNING"):
        first, again, other = _carved(collection, 0), _carved(collection, 0), _carved(collection, 1)
    assert "no val graphs" not in caplog.text
    carved = first.meta["validation"]
    assert carved["from"] == "train" and carved["graphs"] == 2 and carved["model_selection"] is True
    assert set(carved["graph_ids"]) <= set(collection.graph_ids("train"))
    assert again.meta["validation"] == carved and other.meta["validation"]["graph_ids"] != carved["graph_ids"]
    assert first.meta["train_config"]["val_from_train"] == 2
    assert collection.splits.count("val") == 0  # the collection itself is left as it is
    val = first.history.set_index("step")["val_accuracy"].dropna()
    assert len(val) == 15 and first.best_step == int(val.idxmax()) and first.best_val == pytest.approx(val.max())
    assert first.best_step != 30  # the best step is not the last: model selection took place


def test_val_from_train_on_the_command_line_is_recorded_and_refused_where_it_cannot_apply(noval, root, tmp_path):
    run = tmp_path / "run"
    result = invoke("train", "noval", *FAST, "--val-from-train", "2", "--data-root", noval, "--run-dir", run,
                    "--no-eval")
    assert result.exit_code == 0, result.output
    assert "no val graphs" not in result.stderr
    config = _config(run)
    assert config["train_config"]["val_from_train"] == 2 and config["validation"]["from"] == "train"
    assert len(config["validation"]["graph_ids"]) == 2
    assert pd.read_csv(run / "metrics.csv")["val_accuracy"].notna().sum() == 3
    line = one_line_error(invoke("train", "tiny", *FAST, "--val-from-train", "1", "--data-root", root, "--run-dir",
                                 tmp_path / "other"), "--val-from-train 1", "'tiny' has 2 val graph(s)")
    assert "val_from_train" not in line and not (tmp_path / "other").exists()
    one_line_error(invoke("train", "noval", *FAST, "--val-from-train", "6", "--data-root", noval, "--run-dir",
                          tmp_path / "third"), "--val-from-train 6", "at least one must stay")
    with pytest.raises(SettingError, match=r"^val_from_train=6: collection 'noval' has 6 train graph"):
        gflkit.train(GraphCollection.load(noval / "processed" / "noval"), val_from_train=6, k_shot=3, n_query=3,
                     progress=False, run_dir=False)


def test_resume_moves_the_same_graphs_and_ends_as_an_uninterrupted_run(noval, tmp_path, monkeypatch):
    args = ["train", "noval", *FAST, "--steps", "8", "--val-from-train", "2", "--seed", "3", "--data-root", noval,
            "--no-eval", "--checkpoint-every", "4"]
    whole = invoke(*args, "--run-dir", tmp_path / "whole")
    assert whole.exit_code == 0, whole.output
    run = tmp_path / "run"
    stopped = invoke_until_first_checkpoint(monkeypatch, *args, "--run-dir", run)
    assert stopped.exit_code == 130 and (partial_path(run) / "last.pt").is_file()
    resumed = invoke("train", "--resume", run, "--data-root", noval, "--no-eval")
    assert resumed.exit_code == 0, resumed.output
    assert _config(run)["validation"] == _config(tmp_path / "whole")["validation"]
    a, b = (torch.load(p / "best.pt", weights_only=True) for p in (run, tmp_path / "whole"))
    assert a["step"] == b["step"] and all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])
    pd.testing.assert_frame_equal(pd.read_csv(run / "metrics.csv").drop(columns="seconds"),
                                  pd.read_csv(tmp_path / "whole" / "metrics.csv").drop(columns="seconds"))


# -- the sampler: start nodes ---------------------------------------------------------


def _star_and_ring(n: int = 120, name: str = "toy") -> SourceGraph:
    """A ring of ``n`` nodes (degree 2) plus chords that give node 0 alone degree >= 10."""
    ring = np.arange(n)
    src = np.concatenate([ring, np.zeros(12, np.int64)])
    dst = np.concatenate([(ring + 1) % n, np.arange(10, 130, 10) % n])
    g = build_graph(src, dst, n, torch.randn(n, 3), torch.arange(n) % 2)
    return SourceGraph(g, ["x", "y"], name, "test")


def test_a_start_pool_smaller_than_the_graphs_is_named_in_one_warning(caplog):
    with caplog.at_level("WARNING", logger="gflkit.data.sampling"):
        c = sample_family(_star_and_ring(name="tinypool"), n_graphs=(4, 0, 2), walk_length=(5, 10), min_degree=10,
                          seed=0)
    starts = [e["start_node"] for e in c.graph_extra]
    assert starts == [0] * 6
    lines = [r.getMessage() for r in caplog.records if "start a walk" in r.getMessage()]
    assert len(lines) == 1 and lines[0].startswith("tinypool: only 1 node(s) have degree >= min_degree=10")
    assert "6 train/test graphs" in lines[0] and "1 distinct node(s)" in lines[0]
    assert c.meta["start_nodes"] == {"train": {"pool": 1, "graphs": 4, "distinct": 1},
                                     "test": {"pool": 1, "graphs": 2, "distinct": 1}}


def test_every_walk_draws_its_own_start_node_in_every_network(caplog):
    """Each graph's start is drawn from its own seed ``[network seed, split, index]``, never once per network."""
    nets = {name: _star_and_ring(name=name) for name in ("a", "b")}
    with caplog.at_level("WARNING", logger="gflkit.data.sampling"):
        c = sample_networks(nets, {"train": ["a"], "val": [], "test": ["b"]}, n_graphs=(8, 0, 6),
                            walk_length=(5, 10), min_degree=2, seed=0)
    for net, split in (("a", "train"), ("b", "test")):
        starts = [e["start_node"] for s, e in zip(c.splits, c.graph_extra) if s == split]
        assert len(set(starts)) >= len(starts) - 1  # 120 candidates: at most a chance repeat
        assert c.meta["networks"][net]["start_nodes"][split]["pool"] == 120
    assert "start a walk" not in caplog.text
    with caplog.at_level("WARNING", logger="gflkit.data.sampling"):
        sample_networks(nets, {"train": ["a"], "val": [], "test": ["b"]}, n_graphs=(8, 0, 6), walk_length=(5, 10),
                        min_degree=10, seed=0)
    named = sorted(r.getMessage().split(":")[0] for r in caplog.records if "start a walk" in r.getMessage())
    assert named == ["a", "b"]


# -- graphs of a split that share nodes ---------------------------------------------------------


def test_pairwise_jaccard():
    assert pairwise_jaccard([np.array([1, 2, 3]), np.array([2, 3, 4]), np.array([9])]) == pytest.approx(
        (0.5 + 0 + 0) / 3, abs=1e-6)
    assert pairwise_jaccard([np.array([1, 1, 2]), np.array([2, 1])]) == 1.0
    assert pairwise_jaccard([np.array([5])]) is None and pairwise_jaccard([]) is None
    assert pairwise_jaccard([np.array([], np.int64)] * 2) == 0.0
    rng = np.random.default_rng(0)
    many = [rng.choice(500, 50, replace=False) for _ in range(150)]
    exact = pairwise_jaccard(many, max_graphs=150)
    sampled = pairwise_jaccard(many, max_graphs=40, seed=1)
    assert sampled == pairwise_jaccard(many, max_graphs=40, seed=1) != pairwise_jaccard(many, max_graphs=40, seed=2)
    assert abs(sampled - exact) < 0.01  # disjoint-ish random sets: about 50 / 950


def test_overlapping_test_graphs_warn_and_are_recorded(caplog, tmp_path):
    source = _star_and_ring()
    with caplog.at_level("WARNING", logger="gflkit.data.sampling"):
        c = sample_family(source, n_graphs=(2, 2, 4), walk_length=(300, 400), min_degree=2, seed=0)
    jaccard = c.meta["pairwise_jaccard"]
    assert jaccard["test"] > 2 * JACCARD_WARN and jaccard["warn_above"] == JACCARD_WARN
    lines = [r.getMessage() for r in caplog.records if "Jaccard" in r.getMessage()]
    assert len(lines) == 2  # val and test
    want = f"toy: the 4 test graphs share nodes (mean pairwise Jaccard {jaccard['test']:.2f} > 0.1)"
    assert lines[1].startswith(want)
    assert "interval over graphs is optimistic" in lines[1]
    c.save(tmp_path / "toy")
    row = csv_table(invoke("stats", tmp_path / "toy")).iloc[0]
    assert row.jaccard_test == pytest.approx(jaccard["test"], abs=1e-4)
    assert row.jaccard_val == pytest.approx(jaccard["val"], abs=1e-4)
    caplog.clear()
    with caplog.at_level("WARNING", logger="gflkit.data.sampling"):
        apart = sample_family(source, method="metis", n_graphs=(2, 2, 4), parts=8, seed=0)
    assert apart.meta["pairwise_jaccard"]["test"] == 0.0 and "Jaccard" not in caplog.text


def test_stats_takes_the_jaccard_from_the_manifest_without_node_ids(tmp_path):
    source = _star_and_ring()
    c = sample_family(source, n_graphs=(2, 0, 3), walk_length=(300, 400), min_degree=2, seed=0)
    want = split_jaccard(c)
    for g in c.graphs:
        del g.ndata["orig_id"]
    c.save(tmp_path / "noid")
    row = csv_table(invoke("stats", tmp_path / "noid")).iloc[0]
    assert row.jaccard_test == pytest.approx(want["test"], abs=1e-4) and pd.isna(row.jaccard_val)
    record_overlap(c)  # measured again without ids: nothing to say
    assert c.meta["pairwise_jaccard"]["test"] is None


# -- the feature transform: fitted on the train graphs only ------------------------------------------


GRAPHS = {"a": "train", "b": "train", "v": "val", "t": "test"}
N, RAW = 30, 12


@pytest.fixture()
def tables(tmp_path) -> tuple[Path, Path, np.ndarray]:
    """Four graphs with a split column; each has its own feature profile (4 raised columns), the test graph
    ``t`` one no other graph has."""
    rng = np.random.default_rng(0)
    x = rng.random((len(GRAPHS) * N, RAW)) * 0.2
    for k in range(len(GRAPHS)):
        x[k * N:(k + 1) * N, 3 * k:3 * k + 3] += 3.0
    nodes = ["graph,id,label,split," + ",".join(f"f{j}" for j in range(RAW))]
    edges = ["graph,src,dst"]
    for k, (name, split) in enumerate(GRAPHS.items()):
        for i in range(N):
            nodes.append(f"{name},{i},{'xy'[i % 2]},{split}," + ",".join(f"{v:.6f}" for v in x[k * N + i]))
            edges += [f"{name},{i},{(i + 1) % N}", f"{name},{i},{(i + 4) % N}"]
    (tmp_path / "nodes.csv").write_text("\n".join(nodes) + "\n")
    (tmp_path / "edges.csv").write_text("\n".join(edges) + "\n")
    return tmp_path / "edges.csv", tmp_path / "nodes.csv", x


def _captured(x: np.ndarray, components: np.ndarray) -> float:
    """Share of the rows' squared norm that the projection onto ``components`` keeps."""
    q, _ = np.linalg.qr(components)
    return float(np.linalg.norm(x @ q) ** 2 / np.linalg.norm(x) ** 2)


def test_split_col_fits_the_transform_on_the_train_graphs_only(tables, tmp_path):
    edges, nodes, x = tables
    c, _ = read_table_collection(edges, nodes, columns=TableColumns(graph="graph", split="split", features="f"),
                                 feat_size=2, seed=0, k_shot=1)
    assert c.splits == ["train", "train", "val", "test"]
    described = c.meta["feature_transform"]
    assert described["fitted_on"] == "train" and described["fitted_graphs"] == ["a", "b"]
    train_rows, test_rows = x[:2 * N], x[3 * N:]
    assert np.allclose(c.transform.components, fit_svd(train_rows, 2, seed=0).components, atol=1e-5)
    # the target's own profile is unknown to the transform: it keeps little of the test graph's features,
    # where a fit on every graph (as before) kept more of them
    everything = fit_svd(x, 2, seed=0).components
    assert _captured(test_rows, c.transform.components) < 0.1 < _captured(train_rows, c.transform.components)
    assert _captured(test_rows, c.transform.components) < _captured(test_rows, everything)
    test_feat = c.graphs[3].ndata["feat"].numpy()
    assert np.allclose(test_feat, c.transform.apply(test_rows), atol=1e-4)
    assert np.abs(test_feat).mean() < 0.5 * np.abs(c.graphs[0].ndata["feat"].numpy()).mean()


def test_split_col_on_the_command_line_records_fitted_on(tables, tmp_path):
    edges, nodes, _ = tables
    made = invoke("preprocess", "tables", "--edges", edges, "--nodes", nodes, "--graph-col", "graph", "--split-col",
                  "split", "--feature-cols", "f", "--feat-size", "2", "--k-shot", "1", "--out-dir", tmp_path / "c")
    assert made.exit_code == 0, made.output
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert manifest["meta"]["feature_transform"]["fitted_on"] == "train"
    assert manifest["meta"]["feature_transform"]["fitted_graphs"] == ["a", "b"]
    assert manifest["meta"]["pairwise_jaccard"]["test"] is None  # one test graph: no pair
    again = invoke("preprocess", "tables", "--edges", edges, "--nodes", nodes, "--graph-col", "graph", "--split-col",
                   "split", "--feature-cols", "f", "--k-shot", "1", "--features-from", tmp_path / "c", "--out-dir",
                   tmp_path / "d")
    assert again.exit_code == 0, again.output
    reused = json.loads((tmp_path / "d" / "manifest.json").read_text())["meta"]
    assert reused["feature_transform"]["fitted_on"] == "train" and reused["features_from"] == str(tmp_path / "c")


def test_one_large_graph_records_that_its_transform_saw_every_node(tmp_path):
    from gflkit.data.sources.tables import read_table_graph

    rng = np.random.default_rng(0)
    (tmp_path / "n.csv").write_text("id,label," + ",".join(f"f{j}" for j in range(6)) + "\n" + "".join(
        f"{i},{i % 2}," + ",".join(f"{v:.4f}" for v in rng.random(6)) + "\n" for i in range(20)))
    (tmp_path / "e.csv").write_text("src,dst\n" + "".join(f"{i},{(i + 1) % 20}\n" for i in range(20)))
    source = read_table_graph(tmp_path / "e.csv", tmp_path / "n.csv", columns=TableColumns(features="f"),
                              feat_size=2)
    assert source.meta["feature_transform"]["fitted_on"] == "all"
    assert "fitted_graphs" not in source.meta["feature_transform"]


def test_a_named_val_network_is_not_fitted_on_either(tables):
    from gflkit.data.sources.cross_network import read_cross_network

    edges, nodes, x = tables
    c, _ = read_cross_network(edges, nodes, columns=TableColumns(graph="graph", features="f"), train=["a", "b"],
                              val=["v"], test=["t"], feat_size=2, seed=0, k_shot=1)
    assert c.meta["feature_transform"]["fitted_graphs"] == ["a", "b"]
    assert np.allclose(c.transform.components, fit_svd(x[:2 * N], 2, seed=0).components, atol=1e-5)


def test_replace_keeps_the_carved_collection_apart(noval):
    """The carve-out works on a copy: the graphs are shared, the splits are not."""
    from gflkit.training.validation import validation_plan

    c = GraphCollection.load(noval / "processed" / "noval")
    carved, facts = validation_plan(c, 2, seed=0, k_shot=3)
    assert carved.graphs is c.graphs and carved.splits != c.splits and c.splits.count("val") == 0
    assert [i for i, s in enumerate(carved.splits) if s == "val"] == facts["graph_ids"]
    assert replace(c).splits == c.splits
