"""The GFL authors' release layout: the shared sample and a hand-written messy release."""
from __future__ import annotations

from pathlib import Path

import pytest

from gflkit.data.sources.gfl_release import read_gfl_release
from gflkit.errors import GFLError


def test_shared_sample(shared_data):
    c, report = read_gfl_release(shared_data / "gfl_release_sample")
    assert not report
    assert c.splits == ["train", "test"] and c.classes == ["1", "2"] and c.feat_size == 128
    assert [e["walk_steps"] for e in c.graph_extra] == [5, 5]
    assert [g.num_nodes() for g in c.graphs] == [6, 7]
    assert [g.num_edges() // 2 for g in c.graphs] == [5, 5]
    assert c.graphs[0].ndata["orig_id"].tolist() == [8402, 12595, 14042, 14411, 15261, 17695]
    assert c.meta["node_overlap"] == {"val": None, "test": 0.0, "val_test": None}


def _release(root: Path) -> Path:
    (root / "graph").mkdir(parents=True)
    (root / "feature.txt").write_text("1 0.5 1.0\n2 1.5 2.0\n3 2.5\n4 x 1\n5 1 1\n1 9 9\n")
    (root / "graph" / "graph_0.txt").write_text("1 2\n2 1\n2 2\n2 3\n3 4\nfoo bar\n\n4 5 6\n")
    (root / "graph" / "graph_0_label.txt").write_text("1 a\n2 b\n3 a\n3 b\n9\n")
    (root / "graph" / "graph_1.txt").write_text("5 1\n1 5\n")
    (root / "graph" / "graph_1_label.txt").write_text("5 c\n1 a\n")
    (root / "graph" / "test_graph_0.txt").write_text("1 5\n")
    (root / "graph" / "test_graph_0_label.txt").write_text("1 a\n5 b\n")
    return root


def test_messy_release_is_counted(tmp_path):
    c, report = read_gfl_release(_release(tmp_path / "rel"))
    assert c.classes == ["a", "b", "c"] and c.splits == ["train", "train", "test"]
    assert report.counts == {
        "ragged feature row": 1, "malformed feature row": 1, "duplicate feature row (first kept)": 1,
        "self-loop (dropped)": 1, "duplicate edge (collapsed)": 2, "malformed edge line": 2,
        "conflicting label (first kept)": 1, "malformed label line": 1,
        "node without feature row (zeros)": 2, "node without label": 1,
    }
    assert report.examples["malformed edge line"] == ["graph_0.txt:6", "graph_0.txt:8"]
    g0 = c.graphs[0]
    assert g0.ndata["orig_id"].tolist() == [1, 2, 3, 4]
    assert g0.num_edges() // 2 == 3 and c.graph_extra[0]["walk_steps"] == 7  # non-blank edge lines
    assert g0.ndata["label"].tolist() == [0, 1, 0, -1]
    assert g0.ndata["feat"].tolist() == [[0.5, 1.0], [1.5, 2.0], [0.0, 0.0], [0.0, 0.0]]
    assert c.meta["node_overlap"]["test"] == 1.0


def test_validation_hold_out_is_seeded(tmp_path):
    root = _release(tmp_path / "rel")
    a, _ = read_gfl_release(root, n_val=1, seed=4)
    b, _ = read_gfl_release(root, n_val=1, seed=4)
    assert a.splits == ["train", "val", "test"]
    assert a.graph_extra == b.graph_extra
    with pytest.raises(GFLError, match="`n_val=3`"):
        read_gfl_release(root, n_val=3)


def test_missing_files_are_one_line(tmp_path):
    with pytest.raises(GFLError) as err:
        read_gfl_release(tmp_path / "absent")
    assert "absent" in str(err.value) and "huaxiuyao/GFL" in str(err.value) and "\n" not in str(err.value)
    root = _release(tmp_path / "rel")
    (root / "graph" / "graph_1_label.txt").unlink()
    with pytest.raises(GFLError, match="graph_1_label.txt"):
        read_gfl_release(root)
    (root / "feature.txt").unlink()
    with pytest.raises(GFLError, match="feature.txt"):
        read_gfl_release(root)
