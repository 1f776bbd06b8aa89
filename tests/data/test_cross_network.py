"""Cross-network collections: train graphs from source networks, test graphs from a target network."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from gflkit.data import GraphCollection
from gflkit.data.sampling import sample_networks, share_counts
from gflkit.data.sources.cross_network import network_roles, read_cross_network
from gflkit.data.sources.table_io import fit_svd
from gflkit.data.sources.tables import TableColumns
from gflkit.data.stats import collection_stats
from gflkit.data.transform import feature_fingerprint
from gflkit.errors import GFLError
from gflkit_cli.main import cli

NETWORKS = ("a", "b", "c")
N_NODES = 40  # per network
N_RAW = 12  # raw features per node, reduced to FEAT_SIZE
FEAT_SIZE = 4
WALK = {"method": "walk", "n_graphs": (4, 2, 3), "walk_length": (20, 40), "min_degree": 2}


def _raw_features() -> np.ndarray:
    """``(3 * N_NODES, N_RAW)``: every network has its own feature profile, so a fit on some differs from all."""
    rng = np.random.default_rng(0)
    x = rng.random((len(NETWORKS) * N_NODES, N_RAW))
    for k in range(len(NETWORKS)):
        x[k * N_NODES:(k + 1) * N_NODES, 4 * k:4 * k + 4] += 3.0
    return x


@pytest.fixture()
def networks(tmp_path) -> tuple[Path, Path, Path]:
    """Three networks whose node ids restart at 0: rings with chords, labels x/y, a split column."""
    x = _raw_features()
    split = {"a": "train", "b": "train", "c": "test"}
    nodes = ["graph,id,label,split," + ",".join(f"f{j}" for j in range(N_RAW))]
    edges = ["graph,src,dst"]
    for k, net in enumerate(NETWORKS):
        for i in range(N_NODES):
            feats = ",".join(f"{v:.6f}" for v in x[k * N_NODES + i])
            nodes.append(f"{net},{i},{'xy'[i % 2]},{split[net]},{feats}")
            edges += [f"{net},{i},{(i + 1) % N_NODES}", f"{net},{i},{(i + 5) % N_NODES}"]
    (tmp_path / "nodes.csv").write_text("\n".join(nodes) + "\n")
    (tmp_path / "edges.csv").write_text("\n".join(edges) + "\n")
    return tmp_path / "edges.csv", tmp_path / "nodes.csv", tmp_path


COLUMNS = TableColumns(graph="graph", features="f")


def _by_split(c: GraphCollection) -> dict[str, set[str]]:
    return {s: {e["network"] for sp, e in zip(c.splits, c.graph_extra) if sp == s} for s in ("train", "val", "test")}


def test_source_and_target_share_one_transform_fitted_on_the_sources(networks):
    edges, nodes, _ = networks
    c, _ = read_cross_network(edges, nodes, columns=COLUMNS, train=["a", "b"], test=["c"], sampler=WALK,
                              feat_size=FEAT_SIZE, seed=3, k_shot=1)
    assert c.splits.count("train") == 4 and c.splits.count("val") == 2 and c.splits.count("test") == 3
    assert _by_split(c) == {"train": {"a", "b"}, "val": {"a", "b"}, "test": {"c"}}
    x = _raw_features()
    want = fit_svd(x[:2 * N_NODES], FEAT_SIZE, seed=3)  # the two source networks only
    assert np.allclose(c.transform.components, want.components, atol=1e-5)
    assert not np.allclose(np.abs(fit_svd(x, FEAT_SIZE, seed=3).components), np.abs(want.components), atol=1e-2)
    assert c.meta["feature_transform"]["fitted_on"] == "train"
    assert c.meta["feature_transform"]["fitted_graphs"] == ["a", "b"]
    for g in c.graphs:  # every graph, source or target, went through that one transform
        rows = g.ndata["orig_id"].numpy()  # positions among the tables' nodes, sorted by (network, id)
        assert np.allclose(g.ndata["feat"].numpy(), want.apply(x[rows]), atol=1e-4)
    test_rows = np.concatenate([g.ndata["orig_id"].numpy() for _, g in c.items("test")])
    assert test_rows.min() >= 2 * N_NODES and c.meta["node_overlap"]["test"] == 0.0


def test_the_target_built_later_with_features_from_has_the_same_fingerprint(networks, tmp_path):
    edges, nodes, folder = networks
    base = ["preprocess", "tables", folder, "--graph-col", "graph", "--feature-cols", "f", "--feat-size",
            str(FEAT_SIZE), "--k-shot", "1", "--walk-length", "20,40", "--min-degree", "2"]
    runner = CliRunner()
    first = runner.invoke(cli, [str(a) for a in base + ["--test-graphs", "c", "--graphs", "4,2,3", "--out-dir",
                                                        tmp_path / "x"]])
    assert first.exit_code == 0, first.output
    again = runner.invoke(cli, [str(a) for a in base + ["--train-graphs", "a", "--test-graphs", "c", "--keep-whole",
                                                        "--features-from", tmp_path / "x",
                                                        "--out-dir", tmp_path / "y"]])
    assert again.exit_code == 0, again.output
    x, y = GraphCollection.load(tmp_path / "x"), GraphCollection.load(tmp_path / "y")
    assert feature_fingerprint(x) == feature_fingerprint(y) and feature_fingerprint(x)["transform"] != "none"
    assert _by_split(x) == {"train": {"a", "b"}, "val": {"a", "b"}, "test": {"c"}}  # leave one network out
    whole_c = y.graphs[y.graph_ids("test")[0]]
    sampled = [g for _, g in x.items("test")]
    for g in sampled:  # the same node has the same features in both collections
        assert torch.equal(g.ndata["feat"], whole_c.ndata["feat"][g.ndata["orig_id"] - 2 * N_NODES])
    assert collection_stats(x)["networks"] == "train=a+b;val=a+b;test=c"


def test_roles_from_the_split_column(networks, tmp_path):
    edges, nodes, folder = networks
    base = ["preprocess", "tables", folder, "--graph-col", "graph", "--split-col", "split", "--feature-cols", "f",
            "--k-shot", "1"]
    result = CliRunner().invoke(cli, [str(a) for a in base + ["--sample", "--method", "metis", "--graphs", "4,2,2",
                                                              "--out-dir", tmp_path / "m"]])
    assert result.exit_code == 0, result.output
    c = GraphCollection.load(tmp_path / "m")
    assert _by_split(c) == {"train": {"a", "b"}, "val": {"a", "b"}, "test": {"c"}}
    assert c.sampler["method"] == "metis" and c.meta["node_overlap"] == {"val": 0.0, "test": 0.0, "val_test": 0.0}
    whole = CliRunner().invoke(cli, [str(a) for a in base + ["--out-dir", tmp_path / "w"]])  # as before: kept whole
    assert whole.exit_code == 0, whole.output
    w = GraphCollection.load(tmp_path / "w")
    assert w.splits == ["train", "train", "test"] and [g.num_nodes() for g in w.graphs] == [N_NODES] * 3


def test_seeded_and_independent_of_the_other_networks_roles(networks):
    edges, nodes, _ = networks
    one, _ = read_cross_network(edges, nodes, columns=COLUMNS, train=["a", "b"], test=["c"], sampler=WALK, k_shot=1)
    two, _ = read_cross_network(edges, nodes, columns=COLUMNS, train=["a", "b"], test=["c"], sampler=WALK, k_shot=1)
    assert all(torch.equal(g.ndata["orig_id"], h.ndata["orig_id"]) for g, h in zip(one.graphs, two.graphs))
    alone, _ = read_cross_network(edges, nodes, columns=COLUMNS, train=["a"], test=["c"], sampler=WALK, k_shot=1)
    target = [g.ndata["orig_id"] for _, g in one.items("test")]
    assert all(torch.equal(g.ndata["orig_id"], t) for (_, g), t in zip(alone.items("test"), target))


def test_keep_whole_with_named_networks(networks):
    edges, nodes, _ = networks
    c, _ = read_cross_network(edges, nodes, columns=COLUMNS, train=["a"], val=["b"], test=["c"], k_shot=1)
    assert c.splits == ["train", "val", "test"] and [e["network"] for e in c.graph_extra] == list(NETWORKS)
    assert c.graphs[2].ndata["orig_id"].tolist() == list(range(2 * N_NODES, 3 * N_NODES))
    with pytest.raises(GFLError, match="`sample=True`"):
        read_cross_network(edges, nodes, columns=COLUMNS, train=["a", "b"], val=["b"], test=["c"], k_shot=1)


@pytest.mark.parametrize("args, option, words", [
    (["--train-graphs", "a,zz", "--test-graphs", "c"], "--train-graphs", "'zz'"),
    (["--test-graphs", "q"], "--test-graphs", "'q'"),
    (["--train-graphs", "a,c", "--test-graphs", "c"], "--train-graphs and --test-graphs", "'c'"),
    (["--val-graphs", "c", "--test-graphs", "c"], "--val-graphs and --test-graphs", "'c'"),
    (["--test-graphs", ","], "--test-graphs is empty", "network"),
    (["--train-graphs", "", "--test-graphs", "c"], "--train-graphs is empty", "network"),
    (["--train-graphs", "a,b,c"], "--test-graphs", "no network left"),
    (["--test-graphs", "c", "--split-col", "split"], "--split-col", "not both"),
    (["--test-graphs", "c", "--keep-whole", "--graphs", "4,1,1"], "--graphs", "--keep-whole"),
])
def test_role_errors_are_one_line_naming_the_option(networks, tmp_path, args, option, words):
    edges, nodes, folder = networks
    cmd = ["preprocess", "tables", folder, "--graph-col", "graph", "--feature-cols", "f", "--k-shot", "1",
           "--out-dir", tmp_path / "out", *args]
    result = CliRunner().invoke(cli, [str(a) for a in cmd])
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1, result.stderr
    assert option in lines[0] and words in lines[0]
    assert not (tmp_path / "out").exists()


def test_role_options_need_a_graph_column(networks, tmp_path):
    edges, nodes, folder = networks
    result = CliRunner().invoke(cli, ["preprocess", "tables", str(folder), "--feature-cols", "f", "--test-graphs",
                                      "c", "--out-dir", str(tmp_path / "out")])
    assert result.exit_code == 1 and "--test-graphs needs --graph-col" in result.stderr


def test_network_roles():
    names = ["a", "b", "c", "d"]
    assert network_roles(names, test=["c"]) == {"train": ["a", "b", "d"], "val": ["a", "b", "d"], "test": ["c"]}
    assert network_roles(names, train=["b", "a"], val=["d"]) == {"train": ["a", "b"], "val": ["d"], "test": ["c"]}
    assert network_roles(names, train=["a"], test=["b"], carve_val=False)["val"] == []
    with pytest.raises(GFLError, match="`test_graphs`"):
        network_roles(names)


def test_sample_networks_shares_counts_and_refuses_a_seen_target(small_family):
    from gflkit.data.sources.base import SourceGraph

    nets = {f"n{i}": SourceGraph(g, list(small_family.classes), f"n{i}", "synthetic")
            for i, g in enumerate(small_family.graphs[:3])}
    c = sample_networks(nets, {"train": ["n0", "n1"], "val": [], "test": ["n2"]}, n_graphs=(3, 0, 2),
                        walk_length=(30, 60), min_degree=2, seed=1)
    assert [e["network"] for e in c.graph_extra] == ["n0", "n0", "n1", "n2", "n2"]
    assert c.meta["node_overlap"]["test"] == 0.0
    assert share_counts(7, 3) == [3, 2, 2] and share_counts(1, 2) == [1, 0]
    with pytest.raises(GFLError, match="target"):
        sample_networks(nets, {"train": ["n0"], "val": ["n2"], "test": ["n2"]}, n_graphs=(1, 1, 1), min_degree=2,
                        walk_length=(30, 60))
    with pytest.raises(GFLError, match="no val network"):
        sample_networks(nets, {"train": ["n0"], "test": ["n2"]}, n_graphs=(1, 1, 1), min_degree=2,
                        walk_length=(30, 60))


def test_num_classes_counts_the_source_networks_only(tmp_path):
    labels = {"a": "yyyyyx", "b": "yyyyxx", "c": "xxxxxx"}  # x is the most frequent overall, y on the sources
    (tmp_path / "n.csv").write_text("graph,id,label,f\n" + "".join(
        f"{net},{i},{lab},{i}\n" for net, labs in labels.items() for i, lab in enumerate(labs)))
    (tmp_path / "e.csv").write_text("graph,src,dst\n" + "".join(f"{net},{i},{(i + 1) % 6}\n" for net in labels
                                                                  for i in range(6)))
    c, _ = read_cross_network(tmp_path / "e.csv", tmp_path / "n.csv", columns=COLUMNS, test=["c"], num_classes=1,
                              k_shot=1)
    assert c.classes == ["y"] and c.splits == ["train", "train", "test"]
    assert (c.graphs[2].ndata["label"] == -1).all() and c.graphs[0].ndata["label"].tolist() == [0] * 5 + [-1]
