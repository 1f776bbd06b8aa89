"""Prediction and embeddings on a new graph: CLI, Python, baselines, feature transforms, checks."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from cli_helpers import csv_table, invoke, one_line_error

import gflkit
from gflkit.graphs import prepare_graph
from gflkit.config import EpisodeConfig, TrainConfig
from gflkit.data.transform import FeatureTransform, feature_fingerprint
from gflkit.errors import GFLError
from gflkit.prediction.class_scores import gfl_prototypes

FAST = TrainConfig(steps=3, eval_every=3, seed=0)
EPISODES = EpisodeConfig(k_shot=5)


@pytest.fixture(scope="module")
def runs(root, tmp_path_factory):
    """Run folders of GFL and of every transfer baseline, trained for 3 steps on ``tiny``."""
    folder = tmp_path_factory.mktemp("runs")
    out = {}
    for model in ("gfl", "protonet", "knn", "matchingnet", "maml", "agf"):
        out[model] = folder / model
        gflkit.train("tiny", episode_cfg=EPISODES, train_cfg=FAST, model=model, out=out[model], root=root,
                     eval_split=None, progress=False)
    return out


@pytest.fixture(scope="module")
def region(root, tmp_path_factory):
    """Test graph 6 of ``tiny`` as user tables: edges.csv, nodes.csv (truth), labels.csv, feat.npy."""
    folder = tmp_path_factory.mktemp("region")
    result = invoke("export-graph", "tiny:6", folder, "--labels-per-class", "5", "--data-root", root)
    assert result.exit_code == 0, result.output
    g = gflkit.load_collection("tiny", root).graphs[6]
    np.save(folder / "feat.npy", g.ndata["feat"].numpy())
    return folder


def _predict(run, region, *extra):
    return invoke("predict", run, "--edges", region / "edges.csv", "--features", region / "feat.npy",
                  "--labels", region / "labels.csv", *extra)


def test_minimal_input_one_row_per_node(runs, region):
    table = csv_table(_predict(runs["gfl"], region))
    labels = pd.read_csv(region / "labels.csv")
    truth = pd.read_csv(region / "nodes.csv")
    classes = sorted(labels["label"].unique())
    assert list(table.columns) == ["node", "label"] + [f"score_{c}" for c in classes] + ["is_support"]
    assert table["node"].tolist() == list(range(len(truth)))
    scores = table[[f"score_{c}" for c in classes]].to_numpy()
    assert np.allclose(scores.sum(1), 1.0, atol=1e-3) and (scores >= 0).all()
    support = table[table["is_support"]]
    assert sorted(support["node"]) == sorted(labels["node"])
    given = dict(zip(labels["node"], labels["label"]))
    assert all(given[n] == lab for n, lab in zip(support["node"], support["label"]))
    query = table[~table["is_support"]]
    best = np.asarray(classes)[scores[~table["is_support"].to_numpy()].argmax(1)]
    assert (query["label"].to_numpy() == best).all()


def test_tables_and_collection_graph_give_the_same_rows(runs, region, root):
    from_tables = csv_table(_predict(runs["gfl"], region))
    from_graph = csv_table(invoke("predict", runs["gfl"], "--graph", "tiny:6", "--labels", region / "labels.csv",
                             "--data-root", root))
    pd.testing.assert_frame_equal(from_tables, from_graph)


def test_python_api_mirrors_the_cli(runs, region, root):
    cli_table = csv_table(_predict(runs["gfl"], region))
    table = gflkit.predict(runs["gfl"], edges=region / "edges.csv", features=region / "feat.npy",
                           labels=region / "labels.csv")
    assert table["label"].tolist() == cli_table["label"].tolist()
    model = gflkit.load(runs["gfl"])
    g = gflkit.load_collection("tiny", root).graphs[6]
    labels = pd.read_csv(region / "labels.csv")
    support = {lab: grp["node"].tolist() for lab, grp in labels.groupby("label")}
    direct = model.predict(g, support)
    assert isinstance(direct, pd.DataFrame) and direct["label"].tolist() == cli_table["label"].tolist()
    assert np.allclose(direct.filter(like="score_").to_numpy(), cli_table.filter(like="score_").to_numpy(),
                       atol=1e-4)


def test_prototypes_of_equal_and_unequal_support_sets(runs, root):
    """Equal support sizes: the training path's prototypes; unequal: each class as if alone."""
    model = gflkit.load(runs["gfl"]).module
    g = prepare_graph(gflkit.load_collection("tiny", root).graphs[6])
    z = model.embed(g)
    support = torch.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]])
    with torch.no_grad():
        want, _ = model.prototypes(g, z, support.unsqueeze(0))
    got = gfl_prototypes(model, g, z, list(support))
    assert torch.allclose(got, want[0], atol=1e-6)
    ragged = [torch.tensor([0, 1, 2]), torch.tensor([3, 4]), torch.tensor([6, 7, 8, 9, 10])]
    got = gfl_prototypes(model, g, z, ragged)
    for c, ids in enumerate(ragged):
        alone = gfl_prototypes(model, g, z, [ids])
        assert torch.allclose(got[c], alone[0], atol=1e-6)


def test_any_label_set_and_a_warning_below_k(runs, region, tmp_path, caplog):
    labels = tmp_path / "labels.csv"
    labels.write_text("node,label\n0,spam\n1,ham\n2,ham\n3,-1\n4,\n")
    result = invoke("predict", runs["gfl"], "--edges", region / "edges.csv", "--features", region / "feat.npy",
                    "--labels", labels)
    table = csv_table(result)
    assert list(table.columns) == ["node", "label", "score_ham", "score_spam", "is_support"]
    assert set(table["label"]) <= {"ham", "spam"} and table["is_support"].sum() == 3
    assert "fewer labelled nodes than the run's k_shot = 5" in result.stderr


@pytest.mark.parametrize("model", ["protonet", "knn", "matchingnet", "maml", "agf"])
def test_transfer_baselines_predict_too(runs, region, model):
    table = csv_table(_predict(runs[model], region))
    truth = pd.read_csv(region / "nodes.csv")
    assert len(table) == len(truth)
    scores = table.filter(like="score_").to_numpy()
    assert np.allclose(scores.sum(1), 1.0, atol=1e-3)


def test_head_models_refuse_more_classes_than_trained(runs, region, tmp_path):
    labels = tmp_path / "labels.csv"
    labels.write_text("node,label\n" + "".join(f"{i},c{i}\n" for i in range(5)))
    one_line_error(invoke("predict", runs["maml"], "--edges", region / "edges.csv", "--features",
                           region / "feat.npy", "--labels", labels), "4-class head", "5 classes")


def test_a_model_that_cannot_predict_says_so(region):
    from gflkit.models.baselines import TRANSFER
    from gflkit.prediction.class_scores import class_scores

    with pytest.raises(GFLError, match="cannot predict on a new graph"):
        class_scores(TRANSFER["transfer-head"](2, 2), None, [torch.tensor([0])])  # zero-shot: no support read


def test_embed_writes_npy_csv_and_parquet(runs, region, tmp_path):
    args = ["--edges", region / "edges.csv", "--features", region / "feat.npy"]
    n = len(pd.read_csv(region / "nodes.csv"))
    assert invoke("embed", runs["gfl"], *args, "-o", tmp_path / "z.npy").exit_code == 0
    z = np.load(tmp_path / "z.npy")
    assert z.shape == (n, 32) and np.isfinite(z).all()
    table = csv_table(invoke("embed", runs["gfl"], *args))
    assert list(table.columns[:2]) == ["node", "z_0"] and np.allclose(table.filter(like="z_").to_numpy(), z,
                                                                      atol=1e-5)
    pytest.importorskip("pyarrow")
    assert invoke("embed", runs["gfl"], *args, "-o", tmp_path / "z.parquet").exit_code == 0
    assert pd.read_parquet(tmp_path / "z.parquet").shape == (n, 33)
    ids, emb = gflkit.embed(runs["gfl"], edges=region / "edges.csv", features=region / "feat.npy")
    assert np.array_equal(ids, np.arange(n)) and np.allclose(emb, z)


def test_parquet_and_json_output(runs, region, tmp_path):
    pytest.importorskip("pyarrow")
    out = tmp_path / "pred.parquet"
    assert _predict(runs["gfl"], region, "--format", "parquet", "-o", out).exit_code == 0
    assert len(pd.read_parquet(out)) == len(pd.read_csv(region / "nodes.csv"))
    records = json.loads(_predict(runs["gfl"], region, "--format", "json").stdout)
    assert {"node", "label", "is_support"} <= set(records[0])


def test_bad_input_is_one_line(runs, region, tmp_path):
    run = runs["gfl"]
    n = len(pd.read_csv(region / "nodes.csv"))
    np.save(tmp_path / "f100.npy", np.zeros((n, 100), np.float32))
    result = invoke("predict", run, "--edges", region / "edges.csv", "--features", tmp_path / "f100.npy",
                    "--labels", region / "labels.csv")  # answered by the candidates that need no run
    assert len(csv_table(result)) == n
    said = [line for line in result.stderr.splitlines() if line.startswith("WARNING")]
    assert len(said) == 1 and "the run expects 32 features per node;" in said[0] and "has 100" in said[0], said
    one_line_error(invoke("predict", run, "--edges", region / "edges.csv", "--features", tmp_path / "f100.npy",
                          "--labels", region / "labels.csv", "--method", "model"), "the run expects 32 features")

    feat = np.load(region / "feat.npy")
    feat[7, 3] = np.inf
    np.save(tmp_path / "inf.npy", feat)
    repaired = invoke("predict", run, "--edges", region / "edges.csv", "--features", tmp_path / "inf.npy",
                      "--labels", region / "labels.csv")  # as preprocess does: set to 0, counted, one warning
    assert len(csv_table(repaired)) == n
    warnings = [line for line in repaired.stderr.splitlines() if "non-finite feature value (set to 0)" in line]
    assert len(warnings) == 1 and "inf.npy: row 7" in warnings[0], repaired.stderr

    cases = {"dup.csv": ("node,label\n1,a\n1,b\n", "listed 2 times"),
             "unknown.csv": ("node,label\n1,a\n99999,b\n", "node 99999 is not in the graph"),
             "text.csv": ("node,label\nx,a\n", "not an integer")}
    for name, (text, needle) in cases.items():
        (tmp_path / name).write_text(text)
        one_line_error(_predict_labels(run, region, tmp_path / name), needle)
    (tmp_path / "two.csv").write_text("node,label\n1,a\n2,b\n")
    one_line_error(_predict_labels(run, region, tmp_path / "two.csv", "--classes", "a,b,c"),
                    "class 'c' has no labelled node")

    nodes = tmp_path / "nodes.csv"
    nodes.write_text("id,f0\n" + "".join(f"{i},1\n" for i in range(n)) + "3,2\n")
    np.save(tmp_path / "rows.npy", np.zeros((n + 1, 32), np.float32))
    one_line_error(invoke("predict", run, "--edges", region / "edges.csv", "--nodes", nodes, "--features",
                           tmp_path / "rows.npy", "--labels", tmp_path / "two.csv"), "duplicate node id")

    (tmp_path / "empty_edges.csv").write_text("src,dst\n")
    np.save(tmp_path / "empty.npy", np.zeros((0, 32), np.float32))
    one_line_error(invoke("predict", run, "--edges", tmp_path / "empty_edges.csv", "--features",
                           tmp_path / "empty.npy", "--labels", tmp_path / "two.csv"), "no nodes")


def _predict_labels(run, region, labels, *extra):
    return invoke("predict", run, "--edges", region / "edges.csv", "--features", region / "feat.npy",
                  "--labels", labels, *extra)


# -- feature transforms and fingerprints ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    """One graph of 400 nodes as tables with a JSON bag of 60 features tied to 3 classes."""
    folder = tmp_path_factory.mktemp("bag")
    rng = np.random.default_rng(0)
    n = 400
    label = rng.integers(0, 3, n)
    src = rng.integers(0, n, 2400)
    dst = np.where(rng.random(2400) < 0.7, rng.permutation(n)[src % n], rng.integers(0, n, 2400))
    pd.DataFrame({"src": src, "dst": dst}).to_csv(folder / "edges.csv", index=False)
    pd.DataFrame({"id": np.arange(n), "label": np.asarray(["a", "b", "c"])[label]}).to_csv(folder / "nodes.csv",
                                                                                        index=False)
    bag = {str(i): sorted(set((rng.integers(0, 20, 5) + 20 * label[i]).tolist() + rng.integers(0, 60, 2).tolist()))
           for i in range(n)}
    (folder / "feat.json").write_text(json.dumps(bag))
    return folder


def _preprocess_bag(bag, root, name, *extra):
    return invoke("preprocess", "tables", "--edges", bag / "edges.csv", "--nodes", bag / "nodes.csv",
                  "--features", bag / "feat.json", "--feat-size", "8", "--graphs", "3,1,2", "--walk-length",
                  "60,120", "--min-degree", "1", "--name", name, "--data-root", root, *extra)


def test_transform_saved_reused_and_applied_to_raw_features(bag, tmp_path):
    root = tmp_path / "root"
    assert _preprocess_bag(bag, root, "bag").exit_code == 0
    folder = root / "processed" / "bag"
    manifest = json.loads((folder / "manifest.json").read_text())
    transform = FeatureTransform.load(folder / "transform.npz")
    assert transform.in_feats == 60 and transform.out_feats == 8
    assert manifest["feature_fingerprint"] == {"transform": transform.id, "feat_size": 8}
    assert feature_fingerprint(folder) == manifest["feature_fingerprint"]

    # the same transform, applied by a second preprocess call with another seed
    again = _preprocess_bag(bag, root, "bag2", "--seed", "3", "--features-from", "bag")
    assert again.exit_code == 0, again.output
    assert feature_fingerprint(root / "processed" / "bag2") == manifest["feature_fingerprint"]
    other = _preprocess_bag(bag, root, "bag3", "--seed", "3")
    assert other.exit_code == 0 and feature_fingerprint(root / "processed" / "bag3")["transform"] != transform.id

    run = tmp_path / "run"
    gflkit.train("bag", episode_cfg=EpisodeConfig(k_shot=3), train_cfg=FAST, out=run, root=root, eval_split=None,
                 progress=False)
    assert torch.load(run / "best.pt", weights_only=True)["feature_fingerprint"]["transform"] == transform.id

    # raw JSON features of an exported test graph go through the run's transform
    region = tmp_path / "region"
    assert invoke("export-graph", "bag:5", region, "--labels-per-class", "3", "--data-root", root).exit_code == 0
    raw = csv_table(invoke("predict", run, "--edges", region / "edges.csv", "--nodes", region / "nodes.csv",
                      "--features", bag / "feat.json", "--labels", region / "labels.csv", "--data-root", root))
    stored = csv_table(invoke("predict", run, "--graph", "bag:5", "--labels", region / "labels.csv",
                         "--data-root", root))
    truth = pd.read_csv(region / "nodes.csv")
    assert raw["node"].tolist() == truth["id"].tolist()
    assert (raw["label"] == stored["label"]).all()
    assert np.allclose(raw.filter(like="score_").to_numpy(), stored.filter(like="score_").to_numpy(), atol=2e-4)

    # another reduction: evaluation and prediction refuse it unless forced
    one_line_error(invoke("evaluate", run, "bag3", "--data-root", root, "--k-shot", "3"), "feature transform",
                    "--force")
    assert invoke("evaluate", run, "bag3", "--data-root", root, "--k-shot", "3", "--force").exit_code == 0
    assert invoke("evaluate", run, "bag2", "--data-root", root, "--k-shot", "3").exit_code == 0
    one_line_error(invoke("predict", run, "--graph", "bag3:5", "--labels", region / "labels.csv",
                           "--data-root", root), "--force")


def test_transform_file_loads_without_pickle(tmp_path):
    t = FeatureTransform("svd", np.arange(6, dtype=np.float32).reshape(3, 2), params={"seed": 1})
    t.save(tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz", allow_pickle=False) as z:
        assert set(z.files) == {"kind", "components", "params"}
    back = FeatureTransform.load(tmp_path / "t.npz")
    assert back.id == t.id and back.params == {"seed": 1}
    assert np.allclose(back.apply(np.eye(3, dtype=np.float32)), t.components)
    with pytest.raises(GFLError, match="fitted on 3"):
        back.apply(np.zeros((2, 4), np.float32))


def test_tfidf_transform_matches_the_fitted_embedding():
    import scipy.sparse as sp

    from gflkit.data.sources.text_features import embed_counts, fit_text_transform

    counts = sp.random(200, 300, density=0.05, random_state=1, format="csr", dtype=np.float32) * 5
    counts.data = np.ceil(counts.data)
    emb, transform = fit_text_transform(counts, 16, seed=2)
    assert np.array_equal(emb, transform.apply(counts))  # fitted rows = the transform of the same rows
    ref = embed_counts(counts, 16, seed=2)
    assert np.abs(emb - ref).max() < 0.1 * np.abs(ref).max()  # a random bag has a flat spectrum
    new = transform.apply(counts[:5])
    assert np.allclose(new, emb[:5], atol=1e-6)
    again = FeatureTransform(transform.kind, transform.components, transform.idf)
    assert again.id == transform.id


def test_node_table_with_feature_columns_and_own_ids(runs, region, tmp_path):
    """Ids 1000+i in a shuffled node table with feature columns: same predictions, reported by the user's ids."""
    feat = np.load(region / "feat.npy")
    n = len(feat)
    order = np.random.default_rng(0).permutation(n)
    nodes = pd.DataFrame(feat[order], columns=[f"f{j}" for j in range(feat.shape[1])])
    nodes.insert(0, "id", 1000 + order)
    nodes.to_csv(tmp_path / "nodes.csv", index=False)
    edges = pd.read_csv(region / "edges.csv") + 1000
    edges.to_csv(tmp_path / "edges.csv", index=False)
    labels = pd.read_csv(region / "labels.csv")
    labels["node"] += 1000
    labels.to_csv(tmp_path / "labels.csv", index=False)
    table = csv_table(invoke("predict", runs["gfl"], "--edges", tmp_path / "edges.csv",
                             "--nodes", tmp_path / "nodes.csv", "--feature-cols", "f",
                             "--labels", tmp_path / "labels.csv"))
    want = csv_table(_predict(runs["gfl"], region))
    assert table["node"].tolist() == [1000 + i for i in range(n)]
    assert table["label"].tolist() == want["label"].tolist()
    assert np.allclose(table.filter(like="score_").to_numpy(), want.filter(like="score_").to_numpy(), atol=2e-4)
