"""A user's own edge/node tables: one graph + sampler, many graphs, features, bad input."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from gflkit.data.sampling import sample_family
from gflkit.data.sources.table_io import reduce_features
from gflkit.data.sources.tables import TableColumns, read_table_collection, read_table_graph
from gflkit.errors import GFLError

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "samples" / "tables"
FEATS = TableColumns(features="f")


def _write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


@pytest.fixture()
def tiny(tmp_path):
    """A 6-cycle plus a chord; labels x/y, two feature columns."""
    nodes = _write(tmp_path / "nodes.csv", "id,label,f_a,f_b\n" + "".join(
        f"{i},{'xy'[i % 2]},{i},{-i}\n" for i in range(6)))
    edges = _write(tmp_path / "edges.csv", "src,dst\n" + "".join(f"{i},{(i + 1) % 6}\n" for i in range(6)) + "0,3\n")
    return edges, nodes


def test_one_graph(tiny):
    s = read_table_graph(*tiny, columns=FEATS)
    assert s.classes == ["x", "y"] and not s.report
    assert s.g.num_nodes() == 6 and s.g.num_edges() == 14
    assert s.g.ndata["label"].tolist() == [0, 1, 0, 1, 0, 1]
    assert s.g.ndata["feat"][3].tolist() == [3.0, -3.0]
    c = sample_family(s, n_graphs=(2, 1, 1), walk_length=(3, 6), min_degree=2, seed=0)
    assert len(c) == 4 and all(3 <= e["walk_steps"] < 6 for e in c.graph_extra)


def test_bad_rows_are_counted_with_lines(tmp_path):
    nodes = _write(tmp_path / "n.csv",
                   b"id,label,f0\n0,a,1\n1,b,2\n2,b\nx,a,1\n3,zz,1\n4,a,oops\n5,\xff\xfe,1\n1,a,9\n")
    edges = _write(tmp_path / "e.csv", "src,dst\n0,1\n1,2\n2,99\n1,1\nq,0\n3,4,5\n")
    s = read_table_graph(edges, nodes, columns=FEATS, classes=["a", "b"])
    counts = dict(s.report.counts)
    assert counts == {"ragged row": 2, "non-numeric node id": 2, "label outside class set": 1,
                      "non-numeric feature value (set to 0)": 1, "bad encoding": 1, "duplicate node id": 1,
                      "edge to unknown node": 2, "self-loop (dropped)": 1}
    assert s.report.examples["ragged row"] == ["n.csv:4", "e.csv:7"]
    assert s.report.examples["duplicate node id"] == ["n.csv:9"]
    assert s.report.examples["edge to unknown node"] == ["e.csv:3", "e.csv:4"]  # node 2's row was ragged
    # nodes 0,1,2(ragged->dropped) -> kept ids 0,1,3,4 ; 3's label is outside the class set
    assert s.g.ndata["orig_id"].tolist() == [0, 1, 3, 4]
    assert s.g.ndata["label"].tolist() == [0, 1, -1, 0]
    assert s.g.ndata["feat"][:, 0].tolist() == [1.0, 2.0, 1.0, 0.0]
    assert any("first at" in line for line in s.report.summary())


def test_missing_file_is_one_line(tmp_path, tiny):
    with pytest.raises(GFLError) as err:
        read_table_graph(tmp_path / "nope.csv", tiny[1], columns=FEATS)
    assert "nope.csv" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(GFLError, match="`id_col`"):
        read_table_graph(*tiny, columns=TableColumns(id="node", features="f"))


def test_many_graphs_kept_as_given():
    cols = TableColumns(graph="graph", features="f")
    c, report = read_table_collection(SAMPLE / "edges.csv", SAMPLE / "nodes.csv", columns=cols, n_graphs=(3, 1, 2),
                                      seed=1)
    assert set(report.counts) <= {"self-loop (dropped)"} and c.splits == ["train"] * 3 + ["val"] + ["test"] * 2
    assert c.classes == ["cat", "dog", "fox"] and c.feat_size == 4
    names = [e["graph_name"] for e in c.graph_extra]
    assert sorted(names) == [f"g{i}" for i in range(6)]
    for g, name in zip(c.graphs, names):
        ids = g.ndata["orig_id"]
        assert g.num_nodes() == 30 and torch.equal(ids // 30, torch.full((30,), int(name[1:])))
    again, _ = read_table_collection(SAMPLE / "edges.csv", SAMPLE / "nodes.csv", columns=cols, n_graphs=(3, 1, 2),
                                     seed=1)
    assert [e["graph_name"] for e in again.graph_extra] == names


def test_split_column(tmp_path):
    nodes = _write(tmp_path / "n.csv", "graph,id,label,f0,split\n"
                   "A,0,p,1,train\nA,1,q,1,train\nB,0,p,1,test\nB,1,q,2,test\nC,0,p,0,nope\n")
    edges = _write(tmp_path / "e.csv", "graph,src,dst\nA,0,1\nB,0,1\nB,1,0\nD,0,1\n")
    c, report = read_table_collection(edges, nodes, columns=TableColumns(graph="graph", split="split", features="f"))
    assert c.splits == ["train", "test"] and [g.num_edges() for g in c.graphs] == [2, 2]
    assert report.counts == {"graph with unknown split (skipped)": 1, "edge to unknown node": 1}


@pytest.mark.parametrize("kind", ["npy", "npz", "json"])
def test_feature_files(tiny, tmp_path, kind):
    dense = np.arange(12, dtype=np.float32).reshape(6, 2) % 3
    path = tmp_path / f"feat.{kind}"
    if kind == "npy":
        np.save(path, dense[:5])  # node 5 has no row
    elif kind == "npz":
        sp.save_npz(path, sp.csr_matrix(dense[:5]))
    else:
        path.write_text(json.dumps({str(i): np.flatnonzero(dense[i]).tolist() for i in range(5)} | {"bad": [1]}))
    s = read_table_graph(*tiny, features=path, columns=TableColumns(feature_key="node"))
    want = (dense > 0).astype(np.float32) if kind == "json" else dense
    want[5] = 0
    assert np.allclose(s.g.ndata["feat"].numpy(), want)
    assert s.report.counts["node without feature row"] == 1
    assert s.report.counts.get("malformed feature entry", 0) == (kind == "json")


def test_reduce_features_is_deterministic_and_close_to_svd():
    x = sp.random(300, 80, density=0.1, random_state=0, format="csr", dtype=np.float32)
    a, b = reduce_features(x, 5, seed=3), reduce_features(x, 5, seed=3)
    assert a.shape == (300, 5) and np.array_equal(a, b)
    sv = np.linalg.svd(x.toarray(), compute_uv=False)[:5]
    assert np.allclose(np.linalg.norm(a, axis=0), sv, rtol=0.05)


def test_parquet(tiny, tmp_path):
    pytest.importorskip("pyarrow")
    import pandas as pd

    edges, nodes = (tmp_path / "e.parquet", tmp_path / "n.parquet")
    pd.read_csv(tiny[0]).to_parquet(edges)
    pd.read_csv(tiny[1]).to_parquet(nodes)
    s = read_table_graph(edges, nodes, columns=FEATS)
    assert s.g.num_edges() == 14 and s.classes == ["x", "y"]


@pytest.mark.slow
def test_facebook_pages(shared_data):
    d = shared_data / "facebook_pages"
    s = read_table_graph(d / "edges" / "facebook_edges.csv", d / "target" / "facebook_target.csv",
                         features=d / "features" / "facebook.json", feat_size=16,
                         columns=TableColumns(src="id_1", dst="id_2", label="page_type"))
    assert s.g.num_nodes() == 22470 and s.g.num_edges() == 2 * (171002 - 179)
    assert s.classes == ["company", "government", "politician", "tvshow"]
    assert s.report.counts == {"self-loop (dropped)": 179}
    c = sample_family(s, n_graphs=(3, 1, 1), walk_length=(300, 600), min_degree=20, disjoint=True, seed=0)
    assert c.feat_size == 16 and c.meta["node_overlap"]["test"] == 0.0


@pytest.fixture()
def per_graph(tmp_path):
    """Three graphs whose node ids restart at 0, one feature row per node-table row, -1 = unlabelled."""
    rows, feats = [], []
    for gi, name in enumerate(["A", "B", "C"]):
        for i in range(4):
            label = "-1" if i == 3 else "xy"[i % 2]
            rows.append(f"{name},{i},{label}\n")
            feats.append([10.0 * gi + i, -gi])
    nodes = _write(tmp_path / "nodes.csv", "graph,id,label\n" + "".join(rows))
    edges = _write(tmp_path / "edges.csv", "graph,src,dst\n" + "".join(
        f"{g},{i},{(i + 1) % 4}\n" for g in "ABC" for i in range(4)))
    np.save(tmp_path / "feat.npy", np.asarray(feats, dtype=np.float32))
    return edges, nodes, tmp_path / "feat.npy"


def test_per_graph_ids_get_their_own_feature_rows(per_graph):
    edges, nodes, feat = per_graph
    c, report = read_table_collection(edges, nodes, features=feat, columns=TableColumns(graph="graph"),
                                      n_graphs=(1, 1, 1))
    assert c.classes == ["x", "y"] and not report  # -1 is no class
    for g, extra in zip(c.graphs, c.graph_extra):
        gi = "ABC".index(extra["graph_name"])
        assert g.ndata["feat"][:, 0].tolist() == [10.0 * gi + i for i in range(4)]
        assert g.ndata["feat"][:, 1].tolist() == [-gi] * 4
        assert g.ndata["label"].tolist() == [0, 1, 0, -1]


def test_id_keyed_features_with_per_graph_ids_are_refused(per_graph):
    edges, nodes, feat = per_graph
    with pytest.raises(GFLError) as err:
        read_table_collection(edges, nodes, features=feat, columns=TableColumns(graph="graph", feature_key="node"))
    message = str(err.value)
    assert "ambiguous" in message and "`feature_key=row`" in message and "\n" not in message


def test_features_keyed_by_graph_and_node(per_graph, tmp_path):
    edges, nodes, _ = per_graph
    path = tmp_path / "by_graph.npz"
    np.savez(path, A=np.full((4, 3), 1.0), B=np.full((4, 3), 2.0), C=np.arange(12.0).reshape(4, 3))
    c, _ = read_table_collection(edges, nodes, features=path,
                                 columns=TableColumns(graph="graph", feature_key="graph-node"), n_graphs=(1, 1, 1))
    by_name = {e["graph_name"]: g for g, e in zip(c.graphs, c.graph_extra)}
    assert (by_name["B"].ndata["feat"] == 2.0).all()
    assert by_name["C"].ndata["feat"][2].tolist() == [6.0, 7.0, 8.0]
    np.savez(path, A=np.ones((4, 3)))
    with pytest.raises(GFLError, match="no array for graph"):
        read_table_collection(edges, nodes, features=path,
                              columns=TableColumns(graph="graph", feature_key="graph-node"))


def test_row_aligned_features_stay_aligned_past_a_skipped_row(tmp_path):
    nodes = _write(tmp_path / "n.csv", "id,label\n5,a\n7,b,extra\n9,b\n2,a\n")
    edges = _write(tmp_path / "e.csv", "src,dst\n5,9\n9,2\n")
    np.save(tmp_path / "f.npy", np.arange(4, dtype=np.float32)[:, None] * [1.0, 1.0])
    s = read_table_graph(edges, nodes, features=tmp_path / "f.npy")
    assert s.report.counts == {"ragged row": 1}
    # ids sorted: 2 (row 3), 5 (row 0), 9 (row 2); row 1 was skipped, its features unused
    assert s.g.ndata["orig_id"].tolist() == [2, 5, 9]
    assert s.g.ndata["feat"][:, 0].tolist() == [3.0, 0.0, 2.0]
    np.save(tmp_path / "short.npy", np.zeros((3, 2), np.float32))
    with pytest.raises(GFLError, match="`feature_key=node`"):
        read_table_graph(edges, nodes, features=tmp_path / "short.npy")


def test_unlabelled_markers(tmp_path):
    nodes = _write(tmp_path / "n.csv", "id,label,f\n0,a,1\n1,-1,1\n2,,1\n3,NaN,1\n4,unknown,1\n5,-1.0,1\n6,b,1\n")
    edges = _write(tmp_path / "e.csv", "src,dst\n0,1\n")
    s = read_table_graph(edges, nodes, columns=TableColumns(features="f"))
    assert s.classes == ["a", "b", "unknown"] and s.g.ndata["label"].tolist() == [0, -1, -1, -1, 2, -1, 1]
    s = read_table_graph(edges, nodes, columns=TableColumns(features="f", unlabelled=("unknown",)))
    assert s.classes == ["-1", "-1.0", "a", "b"]
    assert s.g.ndata["label"].tolist() == [2, 0, -1, -1, -1, 1, 3]


def test_a_class_too_small_everywhere_is_named_once(per_graph, caplog):
    edges, nodes, feat = per_graph
    with caplog.at_level("WARNING"):
        read_table_collection(edges, nodes, features=feat, columns=TableColumns(graph="graph"), k_shot=1)
    lines = [r.getMessage() for r in caplog.records if "labelled nodes in every graph" in r.getMessage()]
    assert len(lines) == 1 and "'y' (at most 1)" in lines[0] and "'x'" not in lines[0]


def test_features_from_a_saved_transform(tiny, tmp_path):
    from gflkit.data.sources.table_io import fit_svd

    x = sp.random(6, 30, density=0.3, random_state=0, format="csr", dtype=np.float32)
    sp.save_npz(tmp_path / "x.npz", x)
    first = read_table_graph(*tiny, features=tmp_path / "x.npz", feat_size=3)
    assert first.transform is not None and first.meta["feature_transform"]["id"] == first.transform.id
    again = read_table_graph(*tiny, features=tmp_path / "x.npz", transform=first.transform, seed=9)
    assert torch.equal(again.g.ndata["feat"], first.g.ndata["feat"])
    other = fit_svd(x, 3, seed=9)
    assert np.allclose(np.abs(other.components), np.abs(first.transform.components), atol=1e-3)
    with pytest.raises(GFLError, match="fitted on 30"):
        read_table_graph(*tiny, columns=FEATS, transform=first.transform)


def test_cli_reads_per_graph_tables(per_graph, tmp_path):
    from click.testing import CliRunner

    from gflkit.data import GraphCollection
    from gflkit_cli.main import cli

    edges, nodes, feat = per_graph
    base = ["preprocess", "tables", "--edges", edges, "--nodes", nodes, "--features", feat, "--graph-col", "graph",
            "--graphs", "1,1,1", "--k-shot", "1"]
    result = CliRunner().invoke(cli, [str(a) for a in base + ["--out-dir", tmp_path / "c"]])
    assert result.exit_code == 0, result.output
    assert "'y' (at most 1)" in result.stderr
    c = GraphCollection.load(tmp_path / "c")
    assert c.classes == ["x", "y"] and len({float(g.ndata["feat"][0, 0]) for g in c.graphs}) == 3
    refused = CliRunner().invoke(cli, [str(a) for a in base + ["--feature-key", "node", "--out-dir", tmp_path / "d"]])
    assert refused.exit_code == 1 and "--feature-key row" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not (tmp_path / "d").exists()
