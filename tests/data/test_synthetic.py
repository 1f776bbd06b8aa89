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
    assert set(extra) == {"homophily", "mean_degree", "type"}
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
