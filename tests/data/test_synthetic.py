"""The built-in synthetic family: determinism, sizes, labels, splits, CLI."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from gflkit.data import SMALL_SPEC, GraphCollection, SyntheticSpec, make_synthetic_family
from gflkit_cli.main import cli

TINY = SyntheticSpec(n_train=3, n_val=1, n_test=2, num_classes=3, feat_size=8, min_nodes=60, max_nodes=90)


def _same_graph(a, b) -> bool:
    return (
        a.num_nodes() == b.num_nodes()
        and all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges()))
        and torch.equal(a.ndata["feat"], b.ndata["feat"])
        and torch.equal(a.ndata["label"], b.ndata["label"])
    )


def test_same_seed_same_family():
    a, b = make_synthetic_family(TINY, seed=3), make_synthetic_family(TINY, seed=3)
    assert all(_same_graph(x, y) for x, y in zip(a.graphs, b.graphs))
    assert a.graph_extra == b.graph_extra
    c = make_synthetic_family(TINY, seed=4)
    assert not _same_graph(a.graphs[0], c.graphs[0])


def test_graph_does_not_depend_on_how_many_are_drawn():
    three = make_synthetic_family(replace(TINY, n_train=3, n_val=0, n_test=0), seed=1)
    five = make_synthetic_family(replace(TINY, n_train=5, n_val=0, n_test=0), seed=1)
    assert len(three) == 3 and len(five) == 5
    assert all(_same_graph(x, y) for x, y in zip(three.graphs, five.graphs[:3]))


def test_small_family_shape(small_family):
    spec = SMALL_SPEC
    assert small_family.splits == ["train"] * 16 + ["val"] * 4 + ["test"] * 8
    assert small_family.classes == [f"class_{k}" for k in range(spec.num_classes)]
    assert small_family.feat_size == spec.feat_size == 32
    assert small_family.source == "synthetic" and small_family.seed == 0
    labels = []
    for g in small_family.graphs:
        assert spec.min_nodes <= g.num_nodes() <= spec.max_nodes
        assert g.ndata["feat"].dtype == torch.float32 and g.ndata["feat"].shape == (g.num_nodes(), 32)
        assert g.ndata["label"].dtype == torch.int64
        assert int((g.in_degrees() == 0).sum()) == 0  # no isolated nodes
        src, dst = g.edges()
        assert not bool((src == dst).any())
        label = g.ndata["label"]
        assert int(label.min()) >= -1 and int(label.max()) < spec.num_classes
        labels.append(label)
    share = float((torch.cat(labels) == -1).float().mean())
    assert share == pytest.approx(spec.unlabelled_rate, abs=0.015)
    # every class appears in every graph
    assert all(set(label[label >= 0].tolist()) == set(range(spec.num_classes)) for label in labels)


def test_manifest_records_the_spec(small_family):
    assert small_family.sampler["name"] == "dc-sbm"
    assert small_family.sampler["outlier_rate"] == SMALL_SPEC.outlier_rate
    extra = small_family.graph_extra[0]
    assert set(extra) == {"homophily", "mean_degree", "type", "edge_homophily"}
    assert SMALL_SPEC.min_homophily <= extra["homophily"] <= SMALL_SPEC.max_homophily


def test_mean_degree_in_range(small_family):
    degrees = np.array([g.num_edges() / g.num_nodes() for g in small_family.graphs])
    # duplicates are dropped, so the realised mean degree can fall a little below the drawn one
    assert (degrees <= SMALL_SPEC.max_degree + 1e-9).all() and (degrees > 0.7 * SMALL_SPEC.min_degree).all()


def test_cli_preprocess_small_writes_a_loadable_collection(tmp_path):
    result = CliRunner().invoke(cli, ["preprocess", "synthetic", "--small", "--data-root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # progress and "wrote ..." go to stderr
    assert "wrote" in result.stderr
    assert not (tmp_path / "processed" / "synthetic").exists()  # the default family is never overwritten
    loaded = GraphCollection.load(tmp_path / "processed" / "synthetic-small")
    assert loaded.name == "synthetic-small" and len(loaded) == 28 and loaded.feat_size == 32
    fresh = make_synthetic_family(SMALL_SPEC, seed=0)
    assert _same_graph(loaded.graphs[5], fresh.graphs[5])


def test_cli_preprocess_small_refuses_the_default_name(tmp_path):
    result = CliRunner().invoke(cli, ["preprocess", "synthetic", "--small", "--name", "synthetic",
                                      "--data-root", str(tmp_path)])
    assert result.exit_code == 2 and "--name" in result.stderr
    assert not (tmp_path / "processed").exists()


def test_graphs_drawn_on_threads_equal_graphs_drawn_one_by_one():
    import torch

    from gflkit.data import SyntheticSpec, make_synthetic_family

    spec = SyntheticSpec(n_train=5, n_val=1, n_test=2, min_nodes=80, max_nodes=160)
    threads = torch.get_num_threads()
    try:
        families = []
        for n in (1, 3):
            torch.set_num_threads(n)
            families.append(make_synthetic_family(spec, seed=4))
    finally:
        torch.set_num_threads(threads)
    one, many = families
    assert one.graph_extra == many.graph_extra and one.splits == many.splits
    for a, b in zip(one.graphs, many.graphs):
        assert torch.equal(a.ndata["feat"], b.ndata["feat"]) and torch.equal(a.ndata["label"], b.ndata["label"])
        assert all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges()))


# One property at a time: each knob moves what it names.

KNOB = SyntheticSpec(n_train=4, n_val=1, n_test=3, num_classes=3, feat_size=16, min_nodes=300, max_nodes=400)


def _edge_homophily(g) -> float:
    src, dst = g.edges()
    label = g.ndata["label"]
    both = (label[src] >= 0) & (label[dst] >= 0)
    return float((label[src][both] == label[dst][both]).float().mean())


@pytest.mark.parametrize("h", [0.2, 0.5, 0.8])
def test_fixed_homophily_is_the_measured_edge_homophily_without_outliers(h):
    family = make_synthetic_family(replace(KNOB, min_homophily=h, max_homophily=h, outlier_rate=0.0), seed=2)
    measured = [_edge_homophily(g) for g in family.graphs]
    assert np.mean(measured) == pytest.approx(h, abs=0.03)
    assert all(e["homophily"] == h for e in family.graph_extra)
    # the manifest records the measured value of each graph
    assert [e["edge_homophily"] for e in family.graph_extra] == pytest.approx(measured, abs=1e-4)


def test_outliers_lower_the_measured_homophily_below_the_knob():
    family = make_synthetic_family(replace(KNOB, min_homophily=0.8, max_homophily=0.8), seed=2)
    measured = np.mean([e["edge_homophily"] for e in family.graph_extra])
    assert 0.55 < measured < 0.8


def _nearest_centroid_accuracy(family) -> float:
    train = [g for g, s in zip(family.graphs, family.splits) if s == "train"]
    test = [g for g, s in zip(family.graphs, family.splits) if s == "test"]
    feat = torch.cat([g.ndata["feat"] for g in train])
    label = torch.cat([g.ndata["label"] for g in train])
    centroids = torch.stack([feat[label == k].mean(0) for k in range(family.num_classes)])
    right = total = 0
    for g in test:
        known = g.ndata["label"] >= 0
        guess = torch.cdist(g.ndata["feat"][known], centroids).argmin(1)
        right += int((guess == g.ndata["label"][known]).sum())
        total += int(known.sum())
    return right / total


def test_snr_moves_nearest_centroid_accuracy():
    accuracy = [_nearest_centroid_accuracy(make_synthetic_family(replace(KNOB, center_scale=snr), seed=1))
                for snr in (0.05, 0.3, 1.0)]
    assert accuracy[0] < accuracy[1] < accuracy[2]
    assert accuracy[0] < 0.5 and accuracy[2] > 0.7  # 3 classes: chance is 1/3


def test_test_shift_moves_the_test_graphs_only():
    plain = make_synthetic_family(KNOB, seed=5)
    shifted = make_synthetic_family(replace(KNOB, test_shift=1.0), seed=5)
    for a, b, split in zip(plain.graphs, shifted.graphs, plain.splits):
        assert all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges()))
        assert torch.equal(a.ndata["label"], b.ndata["label"])
        if split == "test":
            moved = b.ndata["feat"].mean(0) - a.ndata["feat"].mean(0)
            assert float(moved.norm()) > 0.5 * (KNOB.feat_size ** 0.5)  # about 1 per feature
        else:
            assert torch.equal(a.ndata["feat"], b.ndata["feat"])
    # one shift for the whole family: every test graph moves the same way
    moves = [b.ndata["feat"].mean(0) - a.ndata["feat"].mean(0)
             for a, b, s in zip(plain.graphs, shifted.graphs, plain.splits) if s == "test"]
    assert all(torch.allclose(m, moves[0], atol=1e-4) for m in moves)


def test_size_degree_and_classes_as_requested():
    spec = replace(KNOB, min_nodes=250, max_nodes=250, min_degree=6.0, max_degree=6.0, num_classes=5)
    family = make_synthetic_family(spec, seed=0)
    assert all(g.num_nodes() == 250 for g in family.graphs)
    degree = np.mean([g.num_edges() / g.num_nodes() for g in family.graphs])
    assert 5.4 < degree <= 6.0  # duplicate edges are dropped
    assert family.num_classes == 5
    assert all(set(g.ndata["label"][g.ndata["label"] >= 0].tolist()) == set(range(5)) for g in family.graphs)


def test_knobs_are_seeded():
    spec = replace(KNOB, min_homophily=0.3, max_homophily=0.3, center_scale=0.5, test_shift=0.4)
    a, b = make_synthetic_family(spec, seed=7), make_synthetic_family(spec, seed=7)
    assert all(_same_graph(x, y) for x, y in zip(a.graphs, b.graphs)) and a.graph_extra == b.graph_extra
    assert not _same_graph(a.graphs[-1], make_synthetic_family(spec, seed=8).graphs[-1])


def test_cli_knobs_reach_the_manifest(tmp_path):
    args = ["preprocess", "synthetic", "--name", "knobs", "--graphs", "3,1,2", "--nodes", "120", "--degree", "4",
            "--homophily", "0.3", "--snr", "0.5", "--test-shift", "0.2", "--classes", "3", "--feat-size", "8",
            "--seed", "3", "--data-root", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    loaded = GraphCollection.load(tmp_path / "processed" / "knobs")
    sampler = loaded.sampler
    assert (sampler["min_nodes"], sampler["max_nodes"]) == (120, 120)
    assert (sampler["min_degree"], sampler["max_degree"]) == (4.0, 4.0)
    assert (sampler["min_homophily"], sampler["max_homophily"]) == (0.3, 0.3)
    assert sampler["center_scale"] == 0.5 * sampler["noise"] and sampler["test_shift"] == 0.2
    assert loaded.num_classes == 3 and all(g.num_nodes() == 120 for g in loaded.graphs)
    spec = replace(SyntheticSpec(), n_train=3, n_val=1, n_test=2, min_nodes=120, max_nodes=120, min_degree=4.0,
                   max_degree=4.0, min_homophily=0.3, max_homophily=0.3, center_scale=0.5, test_shift=0.2,
                   num_classes=3, feat_size=8)
    assert _same_graph(loaded.graphs[-1], make_synthetic_family(spec, seed=3).graphs[-1])


@pytest.mark.parametrize("option, value", [
    ("--homophily", "1.5"), ("--homophily", "0.8,0.2"), ("--homophily", "nan"), ("--homophily", "a"),
    ("--snr", "-1"), ("--snr", "inf"), ("--test-shift", "-0.1"), ("--nodes", "0"), ("--nodes", "500,100"),
    ("--nodes", "1,2,3"), ("--degree", "1"), ("--degree", "8,4"), ("--classes", "1"),
])
def test_cli_refuses_bad_knob_values(tmp_path, option, value):
    result = CliRunner().invoke(cli, ["preprocess", "synthetic", "--name", "bad", option, value,
                                      "--data-root", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert option in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "processed").exists()
