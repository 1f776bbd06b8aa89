"""The family sampler: walk semantics, disjoint splits, overlap, determinism, METIS, ego-nets."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gflkit.data.collection import build_graph
from gflkit.data.sampling import FAMILY_DEFAULTS, node_overlap, random_walk, sample_family
from gflkit.data.sources.base import SourceGraph
from gflkit.errors import GFLError


@pytest.fixture(scope="module")
def source() -> SourceGraph:
    """600 nodes in 3 loose communities, every node with some edges."""
    rng = np.random.default_rng(0)
    n = 600
    src = rng.integers(0, n, 4000)
    dst = np.where(rng.random(4000) < 0.8, (src // 200) * 200 + rng.integers(0, 200, 4000), rng.integers(0, n, 4000))
    ring = np.arange(n)
    g = build_graph(np.concatenate([src, ring]), np.concatenate([dst, (ring + 1) % n]), n,
                    torch.from_numpy(rng.standard_normal((n, 5)).astype(np.float32)), torch.arange(n) // 200)
    return SourceGraph(g, ["a", "b", "c"], "toy", "test")


def _edge_set(g, orig=True):
    s, d = g.edges()
    if orig:
        s, d = g.ndata["orig_id"][s], g.ndata["orig_id"][d]
    return set(zip(s.tolist(), d.tolist()))


def test_random_walk_follows_edges():
    # path 0-1-2-3 as CSR; every step moves to a neighbour
    indptr = np.array([0, 1, 3, 5, 6])
    indices = np.array([1, 0, 2, 1, 3, 2])
    trace = random_walk(indptr, indices, 0, 50, np.random.default_rng(1))
    assert trace.shape == (51,)
    assert all(abs(a - b) == 1 for a, b in zip(trace[:-1], trace[1:]))
    # a dead end stops the walk
    assert random_walk(np.array([0, 0]), np.array([], dtype=np.int64), 0, 10, np.random.default_rng(0)).tolist() == [0]


def test_walk_graphs_are_walked_edges(source):
    c = sample_family(source, n_graphs=(4, 2, 2), walk_length=(50, 120), min_degree=5, seed=3)
    assert c.splits == ["train"] * 4 + ["val"] * 2 + ["test"] * 2
    assert c.classes == ["a", "b", "c"]
    full = _edge_set(source.g, orig=False)
    for g, extra in zip(c.graphs, c.graph_extra):
        assert 50 <= extra["walk_steps"] < 120
        assert g.num_nodes() <= extra["walk_steps"] + 1
        assert g.ndata["orig_id"].dtype == torch.int64
        assert _edge_set(g) <= full  # walked edges are edges of the source
        assert g.num_edges() // 2 <= extra["walk_steps"]  # at most one new edge per step
        assert torch.equal(g.ndata["label"], source.g.ndata["label"][g.ndata["orig_id"]])
        assert torch.equal(g.ndata["feat"], source.g.ndata["feat"][g.ndata["orig_id"]])
        assert source.g.in_degrees(extra["start_node"]) >= 5
    assert c.sampler["method"] == "walk" and c.sampler["seed"] == 3


def test_induced_keeps_all_edges_among_walked_nodes(source):
    walked = sample_family(source, n_graphs=(2, 1, 1), walk_length=(80, 100), min_degree=5, seed=1)
    induced = sample_family(source, n_graphs=(2, 1, 1), walk_length=(80, 100), min_degree=5, seed=1, induced=True)
    full = _edge_set(source.g, orig=False)
    for gw, gi in zip(walked.graphs, induced.graphs):
        assert torch.equal(gw.ndata["orig_id"], gi.ndata["orig_id"])
        nodes = set(gi.ndata["orig_id"].tolist())
        assert _edge_set(gi) == {(u, v) for u, v in full if u in nodes and v in nodes}
        assert _edge_set(gw) <= _edge_set(gi)


def test_same_seed_same_graphs(source):
    kw = dict(n_graphs=(3, 1, 1), walk_length=(40, 90), min_degree=5)
    a, b = sample_family(source, seed=7, **kw), sample_family(source, seed=7, **kw)
    other = sample_family(source, seed=8, **kw)
    for ga, gb in zip(a.graphs, b.graphs):
        assert torch.equal(ga.ndata["orig_id"], gb.ndata["orig_id"])
        assert all(torch.equal(x, y) for x, y in zip(ga.edges(), gb.edges()))
    assert a.graph_extra == b.graph_extra != other.graph_extra


def test_overlap_reported_and_disjoint(source):
    kw = dict(n_graphs=(4, 2, 2), walk_length=(100, 200), min_degree=5, seed=0)
    shared = sample_family(source, **kw)
    ids = {s: set(np.concatenate([g.ndata["orig_id"].numpy() for _, g in shared.items(s)]).tolist())
           for s in ("train", "val", "test")}
    want = len(ids["test"] & ids["train"]) / len(ids["test"])
    assert shared.meta["node_overlap"]["test"] == pytest.approx(want, abs=1e-6)
    assert shared.meta["node_overlap"] == node_overlap(shared)
    assert shared.meta["node_overlap"]["val"] > 0

    apart = sample_family(source, disjoint=True, **kw)
    train = set(np.concatenate([g.ndata["orig_id"].numpy() for _, g in apart.items("train")]).tolist())
    for split in ("val", "test"):
        for _, g in apart.items(split):
            assert not train & set(g.ndata["orig_id"].tolist())
        assert apart.meta["node_overlap"][split] == 0.0
    assert apart.sampler["disjoint"] is True


def test_node_overlap_from_lists():
    out = node_overlap({"train": [np.array([1, 2, 3])], "val": [np.array([3, 4])], "test": [np.array([5])]})
    assert out == {"val": 0.5, "test": 0.0, "val_test": 0.0}
    assert node_overlap({"train": [np.array([1])]})["val"] is None


def test_metis_parts_are_disjoint_induced_subgraphs(source):
    c = sample_family(source, method="metis", n_graphs=(4, 1, 1), parts=8, seed=0)
    assert len(c) == 6 and c.sampler["parts"] == 8
    seen = set()
    full = _edge_set(source.g, orig=False)
    for g in c.graphs:
        nodes = set(g.ndata["orig_id"].tolist())
        assert not nodes & seen
        seen |= nodes
        assert _edge_set(g) == {(u, v) for u, v in full if u in nodes and v in nodes}
    assert c.meta["node_overlap"]["test"] == 0.0
    with pytest.raises(GFLError, match="`parts="):
        sample_family(source, method="metis", n_graphs=(4, 1, 1), parts=3)


def test_ego_nets(source):
    c = sample_family(source, method="ego", n_graphs=(2, 1, 1), ego_hops=1, min_degree=5, seed=0)
    for g, extra in zip(c.graphs, c.graph_extra):
        centre = extra["ego_node"]
        want = {centre} | set(source.g.successors(centre).tolist())
        assert set(g.ndata["orig_id"].tolist()) == want


def test_errors(source):
    with pytest.raises(GFLError, match="`min_degree`"):
        sample_family(source, n_graphs=(1, 1, 1), walk_length=(5, 10), min_degree=10_000)
    with pytest.raises(GFLError, match="method"):
        sample_family(source, method="bfs")
    with pytest.raises(GFLError, match="LO < HI"):
        sample_family(source, walk_length=(10, 10))


def test_family_defaults_follow_table_1():
    assert FAMILY_DEFAULTS["collaboration"] == dict(n_graphs=(100, 10, 20), walk_length=(10000, 20000),
                                                    min_degree=50, num_classes=4)
    assert [FAMILY_DEFAULTS[f]["n_graphs"] for f in ("reddit", "citation", "pubmed")] == [
        (150, 15, 25), (30, 3, 10), (60, 5, 15)]


@pytest.mark.parametrize("method", ["walk", "ego"])
def test_edge_weights_follow_the_source(source, method):
    g = source.g
    u, v = g.edges()
    lo, hi = torch.minimum(u, v), torch.maximum(u, v)
    weighted = SourceGraph(g.clone(), source.classes, "toy", "test")
    weighted.g.edata["weight"] = (lo * 1000 + hi).float()  # symmetric and unique per pair
    family = sample_family(weighted, method=method, n_graphs=(2, 1, 1), walk_length=(200, 300), min_degree=3,
                           ego_hops=1, seed=0)
    for h in family.graphs:
        hu, hv = h.ndata["orig_id"][h.edges()[0]], h.ndata["orig_id"][h.edges()[1]]
        expected = (torch.minimum(hu, hv) * 1000 + torch.maximum(hu, hv)).float()
        assert torch.equal(h.edata["weight"], expected)
