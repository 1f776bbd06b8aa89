"""The collection format: round trip, manifest checks, validation, atomic save, lookup."""
from __future__ import annotations

import json

import dgl
import networkx as nx
import pytest
import torch

import gflkit
from gflkit.data import GraphCollection, build_graph, load_collection
from gflkit.errors import DataFormatError, GFLError


def _graph(edges, n, feat_size=3, label=None) -> dgl.DGLGraph:
    src, dst = zip(*edges)
    feat = torch.arange(n * feat_size, dtype=torch.float32).view(n, feat_size) / 10
    if label is None:
        label = torch.tensor([i % 2 for i in range(n)])
    return build_graph(src, dst, n, feat, label)


@pytest.fixture
def collection() -> GraphCollection:
    """Three tiny graphs over classes a/b, one per split."""
    graphs = [
        _graph([(0, 1), (1, 2), (2, 3)], 4, label=torch.tensor([0, 1, -1, 0])),
        _graph([(0, 1), (0, 2), (0, 3), (3, 4)], 5),
        _graph([(0, 1), (1, 2), (2, 0)], 3),
    ]
    return GraphCollection(
        graphs, ["train", "val", "test"], ["a", "b"], name="tiny", source="inline",
        sampler={"method": "by-hand"}, seed=7, graph_extra=[{"walk_steps": 3}, {"walk_steps": 4}, {"walk_steps": 3}],
    )


def _one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


def test_round_trip(collection, tmp_path):
    path = collection.save(tmp_path / "tiny")
    assert sorted(p.name for p in path.iterdir()) == ["graphs.bin", "manifest.json"]
    loaded = GraphCollection.load(path)
    assert loaded.splits == collection.splits and loaded.classes == ["a", "b"]
    assert (loaded.name, loaded.source, loaded.sampler, loaded.seed) == ("tiny", "inline", {"method": "by-hand"}, 7)
    assert loaded.graph_extra == collection.graph_extra
    for a, b in zip(loaded.graphs, collection.graphs):
        assert a.num_nodes() == b.num_nodes()
        assert all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges()))
        assert torch.equal(a.ndata["feat"], b.ndata["feat"])
        assert torch.equal(a.ndata["label"], b.ndata["label"])


def test_manifest_fields(collection, tmp_path):
    path = collection.save(tmp_path / "tiny")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["feat_size"] == 3
    assert manifest["num_classes"] == 2 and manifest["classes"] == ["a", "b"]
    assert manifest["source"] == "inline" and manifest["sampler"] == {"method": "by-hand"}
    assert manifest["seed"] == 7 and manifest["gflkit_version"] == gflkit.__version__
    assert manifest["splits"] == {"train": 1, "val": 1, "test": 1}
    first = manifest["graphs"][0]
    assert first == {
        "graph_id": 0, "split": "train", "num_nodes": 4, "num_edges": 6, "class_counts": [2, 1],
        "unlabelled": 1, "walk_steps": 3,
    }
    assert [g["graph_id"] for g in manifest["graphs"]] == [0, 1, 2]
    assert [g["num_edges"] for g in manifest["graphs"]] == [6, 8, 6]
    assert manifest["graphs"][1]["class_counts"] == [3, 2]


def _edit_manifest(path, change) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    change(manifest)
    (path / "manifest.json").write_text(json.dumps(manifest))


def test_load_missing_manifest(collection, tmp_path):
    path = collection.save(tmp_path / "tiny")
    (path / "manifest.json").unlink()
    with pytest.raises(DataFormatError) as err:
        GraphCollection.load(path)
    assert "manifest.json" in _one_line(err)


def test_load_corrupt_json(collection, tmp_path):
    path = collection.save(tmp_path / "tiny")
    (path / "manifest.json").write_text('{"format": "gflkit.collection", ')
    with pytest.raises(DataFormatError) as err:
        GraphCollection.load(path)
    message = _one_line(err)
    assert "manifest.json" in message and "not valid JSON" in message


def test_load_graph_count_mismatch(collection, tmp_path):
    path = collection.save(tmp_path / "tiny")
    _edit_manifest(path, lambda m: m["graphs"].pop())
    with pytest.raises(DataFormatError) as err:
        GraphCollection.load(path)
    message = _one_line(err)
    assert "manifest.json" in message and "2 graphs" in message and "holds 3" in message


def test_load_node_count_mismatch(collection, tmp_path):
    path = collection.save(tmp_path / "tiny")
    _edit_manifest(path, lambda m: m["graphs"][1].update(num_nodes=99))
    with pytest.raises(DataFormatError) as err:
        GraphCollection.load(path)
    message = _one_line(err)
    assert "manifest.json" in message and "graph 1" in message and "num_nodes" in message and "99" in message


def test_load_feat_size_mismatch(collection, tmp_path):
    path = collection.save(tmp_path / "tiny")
    _edit_manifest(path, lambda m: m.update(feat_size=128))
    with pytest.raises(DataFormatError) as err:
        GraphCollection.load(path)
    message = _one_line(err)
    assert "manifest.json" in message and "feat_size 128" in message and "3 features" in message


def test_load_feat_size_differs_between_graphs(collection, tmp_path):
    path = collection.save(tmp_path / "tiny")
    graphs, _ = dgl.load_graphs(str(path / "graphs.bin"))
    graphs[2].ndata["feat"] = torch.zeros(3, 5)
    dgl.save_graphs(str(path / "graphs.bin"), graphs)
    _edit_manifest(path, lambda m: m.pop("graphs_sha256"))  # reach the check behind the checksum
    with pytest.raises(DataFormatError) as err:
        GraphCollection.load(path)
    message = _one_line(err)
    assert "graph 2" in message and "5 features" in message


@pytest.mark.parametrize(
    "key, value, match",
    [
        ("feat", torch.zeros(4, 3, dtype=torch.float64), "float32"),
        ("feat", torch.zeros(4), "2-D float32"),
        ("label", torch.zeros(4, dtype=torch.int32), "int64"),
        ("label", torch.tensor([0, 1, 2, 0]), r"labels must lie in -1..1 \(found 0..2\)"),
        ("label", torch.tensor([0, -2, 1, 0]), r"labels must lie in -1..1"),
    ],
)
def test_validate_rejects_bad_node_data(key, value, match):
    g = _graph([(0, 1), (1, 2), (2, 3)], 4)
    g.ndata[key] = value
    with pytest.raises(DataFormatError, match=match) as err:
        GraphCollection([g], ["train"], ["a", "b"], name="bad")
    assert "collection 'bad', graph 0" in _one_line(err)


def test_validate_rejects_bad_split_names():
    g = _graph([(0, 1)], 2)
    with pytest.raises(DataFormatError, match=r"graph 1: split 'valid' is not one of train, val, test"):
        GraphCollection([g, g], ["train", "valid"], ["a", "b"])
    with pytest.raises(DataFormatError, match="2 graphs but 1 splits"):
        GraphCollection([g, g], ["train"], ["a", "b"])
    with pytest.raises(DataFormatError, match="class list is empty"):
        GraphCollection([g], ["train"], [])


def test_build_graph_is_simple_and_symmetric():
    edges = [(0, 1), (1, 0), (0, 1), (2, 2), (2, 3), (3, 4), (4, 3), (4, 4), (5, 0)]
    n = 7  # node 6 is isolated
    g = build_graph([s for s, _ in edges], [d for _, d in edges], n, torch.zeros(n, 2),
                    torch.zeros(n, dtype=torch.long))
    ref = nx.Graph()
    ref.add_nodes_from(range(n))
    ref.add_edges_from(edges)
    ref.remove_edges_from(nx.selfloop_edges(ref))
    src, dst = (t.tolist() for t in g.edges())
    have = list(zip(src, dst))
    assert len(have) == len(set(have)) == 2 * ref.number_of_edges()  # no duplicates, both directions
    assert set(have) == {(u, v) for u, v in ref.edges()} | {(v, u) for u, v in ref.edges()}
    assert g.num_nodes() == n and g.ndata["feat"].dtype == torch.float32 and g.ndata["label"].dtype == torch.int64
    # deterministic: the same edges in another order give the same graph
    g2 = build_graph([d for _, d in reversed(edges)], [s for s, _ in reversed(edges)], n, torch.zeros(n, 2),
                     torch.zeros(n, dtype=torch.long))
    assert all(torch.equal(a, b) for a, b in zip(g.edges(), g2.edges()))


def test_failing_save_leaves_nothing_behind(collection, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(dgl, "save_graphs", broken)
    with pytest.raises(GFLError, match="disk full") as err:
        collection.save(tmp_path / "tiny")
    assert str(err.value).startswith(f"cannot write {tmp_path / 'tiny'}:")  # the target, not a temporary
    assert list(tmp_path.iterdir()) == []


def test_failing_save_keeps_the_previous_collection(collection, tmp_path, monkeypatch):
    path = collection.save(tmp_path / "tiny")
    before = (path / "manifest.json").read_text()
    monkeypatch.setattr(dgl, "save_graphs", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(GFLError):
        collection.save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny"]
    assert (path / "manifest.json").read_text() == before


def test_load_collection_by_path_and_by_name(collection, tmp_path):
    root = tmp_path / "root"
    path = collection.save(root / "processed" / "tiny")
    assert load_collection(path).splits == collection.splits
    assert load_collection(str(path)).name == "tiny"
    assert load_collection("tiny", root=root).classes == ["a", "b"]
    assert load_collection(collection) is collection


def test_load_collection_unknown_name(tmp_path):
    with pytest.raises(GFLError) as err:
        load_collection("nope", root=tmp_path)
    message = _one_line(err)
    assert "'nope'" in message and str(tmp_path / "processed" / "nope") in message
    assert "gflkit preprocess" in message


def test_manifest_records_the_checksums_of_graphs_bin_and_of_the_stored_content(collection, tmp_path):
    import hashlib

    path = collection.save(tmp_path / "tiny")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["graphs_sha256"] == hashlib.sha256((path / "graphs.bin").read_bytes()).hexdigest()
    assert manifest["stored_sha256"] == collection.stored_sha256() == GraphCollection.load(path).stored_sha256()
    again = json.loads((collection.save(tmp_path / "again") / "manifest.json").read_text())
    assert again["stored_sha256"] == manifest["stored_sha256"]  # graphs.bin's bytes may differ (DGL's header)


def test_stored_checksum_covers_every_node_and_edge_tensor(collection):
    import copy

    other = copy.deepcopy(collection)
    assert other.stored_sha256() == collection.stored_sha256()
    other.graphs[0].ndata["orig_id"] = torch.arange(other.graphs[0].num_nodes())
    with_ids = other.stored_sha256()
    assert with_ids != collection.stored_sha256() and other.content_sha256() == collection.content_sha256()
    other.graphs[0].ndata["orig_id"][0] += 1  # changed in place
    assert other.stored_sha256() != with_ids
    other.graphs[1].edata["weight"] = torch.ones(other.graphs[1].num_edges())
    assert other.stored_sha256() != with_ids


def test_changed_content_is_named_behind_the_file_checksum(collection, tmp_path):
    path = collection.save(tmp_path / "tiny")
    graphs, _ = dgl.load_graphs(str(path / "graphs.bin"))
    graphs[1].ndata["feat"][0, 0] += 1
    dgl.save_graphs(str(path / "graphs.bin"), graphs)
    _edit_manifest(path, lambda m: m.pop("graphs_sha256"))
    with pytest.raises(DataFormatError, match="SHA-256") as err:
        GraphCollection.load(path)
    assert str(path / "graphs.bin") in _one_line(err)


def test_load_refuses_a_flipped_byte(collection, tmp_path):
    path = collection.save(tmp_path / "tiny")
    data = bytearray((path / "graphs.bin").read_bytes())
    data[len(data) // 2] ^= 0x01
    (path / "graphs.bin").write_bytes(bytes(data))
    with pytest.raises(DataFormatError, match="SHA-256") as err:
        GraphCollection.load(path)
    assert str(path / "graphs.bin") in _one_line(err)


def test_collection_without_checksum_still_loads(collection, tmp_path):
    path = collection.save(tmp_path / "tiny")
    _edit_manifest(path, lambda m: (m.pop("graphs_sha256"), m.pop("stored_sha256")))
    loaded = GraphCollection.load(path)
    assert loaded.splits == collection.splits and loaded.classes == collection.classes
    assert all(torch.equal(a.ndata["feat"], b.ndata["feat"]) for a, b in zip(loaded.graphs, collection.graphs))


def test_truncated_graphs_bin_without_checksum_is_one_line(collection, tmp_path):
    path = collection.save(tmp_path / "tiny")
    _edit_manifest(path, lambda m: m.pop("graphs_sha256"))
    (path / "graphs.bin").write_bytes((path / "graphs.bin").read_bytes()[:100])
    with pytest.raises(DataFormatError) as err:
        GraphCollection.load(path)
    assert str(path / "graphs.bin") in _one_line(err)


@pytest.mark.parametrize("manifest", ["[]", '{"format": "gflkit.collection", "format_version": 1, "graphs": 3}',
                                      '{"format": "gflkit.collection", "format_version": 1, "graphs": [1]}',
                                      '"text"', "null"])
def test_load_manifest_of_the_wrong_shape(collection, tmp_path, manifest):
    path = collection.save(tmp_path / "tiny")
    (path / "manifest.json").write_text(manifest)
    with pytest.raises(DataFormatError) as err:
        GraphCollection.load(path)
    assert str(path / "manifest.json") in _one_line(err)


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_saved_files_respect_the_umask(collection, tmp_path, umask):
    import os

    old = os.umask(umask)
    try:
        path = collection.save(tmp_path / "tiny")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o777 & ~umask
    for name in ("graphs.bin", "manifest.json"):
        assert (path / name).stat().st_mode & 0o777 == 0o666 & ~umask


def test_save_removes_temporaries_of_dead_writers_only(collection, tmp_path):
    import os
    import subprocess

    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f".tiny.{dead.pid}.abc123.tmp"
    stale.mkdir()
    (stale / "graphs.bin").write_bytes(b"half")
    live = tmp_path / f".tiny.{os.getppid()}.xyz789.tmp"
    live.mkdir()
    collection.save(tmp_path / "tiny")
    assert not stale.exists() and live.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["tiny", live.name])
