"""GraphSAGE-layout and DGL-layout Reddit readers."""
from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import gflkit  # noqa: F401  (before dgl)
from gflkit.data.sources.reddit import read_dgl_reddit, read_graphsage, read_reddit
from gflkit.errors import GFLError


def _edges(g) -> list[tuple[int, int]]:
    u, v = g.edges()
    return sorted((int(a), int(b)) for a, b in zip(u, v) if a < b)


def test_graphsage_cora_from_shared_data(shared_data):
    folder = shared_data / "graphsage_cora"
    src = read_graphsage(folder, "cora", num_classes=None)
    g = src.g
    assert g.num_nodes() == 2708 and g.num_edges() == 2 * 5278 and g.ndata["feat"].shape == (2708, 1433)
    assert len(src.classes) == 7 and not src.report
    nodes = json.loads((folder / "cora-G.json").read_text())["nodes"]
    id_map = json.loads((folder / "cora-id_map.json").read_text())
    feats = np.load(folder / "cora-feats.npy")
    k = 100
    assert np.array_equal(g.ndata["feat"][k].numpy(), feats[id_map[str(nodes[k]["id"])]])
    top5 = read_reddit(folder)  # prefix found from cora-G.json; the 5 most frequent classes
    assert len(top5.classes) == 5 and int((top5.g.ndata["label"] == -1).sum()) == 180 + 217  # two rarest stay, -1


def test_links_are_positions_not_ids(tmp_path):
    nodes = [{"id": 30}, {"id": 10}, {"id": 20}, {"id": 0}]
    links = [{"source": 0, "target": 1, "train_removed": False}, {"source": 1, "target": 2}, {"source": 3, "target": 9}]
    (tmp_path / "toy-G.json").write_text(json.dumps({"directed": False, "graph": {"name": "toy"}, "nodes": nodes,
                                                     "links": links, "multigraph": False}))
    (tmp_path / "toy-id_map.json").write_text(json.dumps({"0": 0, "10": 1, "20": 2, "30": 3}))
    (tmp_path / "toy-class_map.json").write_text(json.dumps({"30": 1, "10": 0, "20": 1}))  # id 0 has no class
    np.save(tmp_path / "toy-feats.npy", np.arange(8, dtype=np.float32).reshape(4, 2))
    src = read_graphsage(tmp_path, num_classes=None)
    g = src.g
    assert _edges(g) == [(0, 1), (1, 2)]  # ids 30-10 and 10-20, by position
    assert g.ndata["feat"].tolist() == [[6, 7], [2, 3], [4, 5], [0, 1]]  # row id_map[id] of each node
    assert g.ndata["label"].tolist() == [1, 0, 1, -1]
    report = src.report.as_dict()
    assert report["link to a position outside the node list"]["count"] == 1
    assert report["node without a single class id"] == {"count": 1, "first": ["0"]}


def test_dgl_npz_layout(tmp_path):
    feature = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.savez(tmp_path / "reddit_data.npz", feature=feature, label=np.array([2, 0, 0, 1]),
             node_types=np.array([1, 1, 2, 3]))
    adj = sp.coo_matrix((np.ones(4), ([0, 1, 1, 2], [1, 0, 2, 2])), shape=(4, 4))
    sp.save_npz(tmp_path / "reddit_graph.npz", adj)
    src = read_reddit(tmp_path, num_classes=None)
    assert src.meta["layout"] == "dgl" and _edges(src.g) == [(0, 1), (1, 2)]  # self-loop dropped
    assert torch.equal(src.g.ndata["feat"], torch.from_numpy(feature))
    two = read_dgl_reddit(tmp_path, classes=["0", "2"])
    assert two.classes == ["0", "2"] and two.g.ndata["label"].tolist() == [1, 0, 0, -1]


def test_missing_reddit_files_say_where_to_download(tmp_path):
    with pytest.raises(GFLError) as err:
        read_reddit(tmp_path / "raw" / "reddit")
    assert "\n" not in str(err.value) and "reddit-G.json" in str(err.value) and "data.dgl.ai" in str(err.value)
