"""Hostile input to the readers of ``predict``/``embed`` (and the raw readers they share with ``preprocess``).

Sizes are checked before anything is allocated (declared shapes against the
graph and the memory), every message names the file that is wrong, NaN/inf
features are repaired the one way, invalid JSON is refused with its position,
and edgeless graphs are never built without a word. The last part fuzzes the
readers: any bytes in, a clean graph or one GFLError line naming the file out.
"""
from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from cli_helpers import csv_table, invoke, one_line_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gflkit
from gflkit.config import EpisodeConfig, TrainConfig
from gflkit.data.sources.tables import TableColumns, read_table_collection, read_table_graph
from gflkit.errors import GFLError
from gflkit.prediction.inputs import read_labels

OUT_RANGE = "node id out of range 0..2**63-1"


# --------------------------------------------------------------------------- fixtures and helpers
@pytest.fixture(scope="module")
def run(root, tmp_path_factory):
    """A GFL run trained for 3 steps on ``tiny`` (32 features)."""
    folder = tmp_path_factory.mktemp("run") / "gfl"
    gflkit.train("tiny", episode_cfg=EpisodeConfig(k_shot=5), train_cfg=TrainConfig(steps=3, eval_every=3, seed=0),
                 model="gfl", run_dir=folder, root=root, eval_split=None, progress=False)
    return folder


@pytest.fixture(scope="module")
def region(root, tmp_path_factory):
    """Test graph 6 of ``tiny`` as tables: edges.csv, nodes.csv (truth), labels.csv, feat.npy."""
    folder = tmp_path_factory.mktemp("region")
    assert invoke("export-graph", "tiny:6", folder, "--labels-per-class", "5", "--data-root", root).exit_code == 0
    np.save(folder / "feat.npy", gflkit.load_collection("tiny", root).graphs[6].ndata["feat"].numpy())
    return folder


def _npz_bytes(save) -> bytes:
    buf = io.BytesIO()
    save(buf)
    return buf.getvalue()


def _huge_sparse(path: Path, rows: int = 10**9, cols: int = 32) -> Path:
    """A scipy-sparse .npz (COO, no stored value) that claims ``rows x cols``: about a kilobyte."""
    np.savez(path, format=np.array("coo"), shape=np.array([rows, cols]), row=np.zeros(0, np.int32),
             col=np.zeros(0, np.int32), data=np.zeros(0, np.float32))
    return path


def _npy_header(shape: tuple[int, ...], dtype: str = "<f4") -> bytes:
    """The header of a .npy file declaring ``shape``, without any data."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _predict(run, edges, labels, *extra, out: Path | None = None):
    args = ["predict", run, "--edges", edges, "--labels", labels, *extra]
    return invoke(*args, *(["-o", out] if out else []))


def _nothing_written(folder: Path) -> None:
    assert [p.name for p in folder.iterdir() if p.name.startswith(("out", ".out"))] == []


@pytest.fixture
def small_memory(monkeypatch):
    """Pretend only ``n`` bytes are available (``small_memory(n)``)."""
    import gflkit.io

    def set_available(n: int) -> None:
        monkeypatch.setattr(gflkit.io, "available_memory", lambda: n)

    return set_available


# --------------------------------------------------------------------------- sizes checked before work
def test_sparse_npz_claiming_a_billion_rows_is_refused_at_once(run, region, tmp_path):
    big = _huge_sparse(tmp_path / "feat.npz")
    assert big.stat().st_size < 2000
    start = time.perf_counter()
    with pytest.raises(GFLError, match="feat.npz: 1000000000 feature rows for the 256 edges"):
        read_table_graph(region / "edges.csv", features=big, columns=TableColumns(label=None), fit=False)
    assert time.perf_counter() - start < 1.0
    assert _predict(run, region / "edges.csv", region / "labels.csv", "--features", region / "feat.npy").exit_code == 0
    start = time.perf_counter()  # the command's first run loaded its code: now as a user runs it twice
    line = one_line_error(_predict(run, region / "edges.csv", region / "labels.csv", "--features", big,
                                   out=tmp_path / "out.csv"), str(big), "1000000000 feature rows")
    assert time.perf_counter() - start < 1.0  # the model's loading included
    assert not line.startswith(f"Error: {region / 'edges.csv'}")
    _nothing_written(tmp_path)


def test_sparse_npz_claiming_a_billion_rows_with_a_node_table(region, tmp_path):
    """With a node table the declared rows are checked against its rows, or (rows = node ids) only the
    stored values are visited: never one slot per declared row."""
    big = _huge_sparse(tmp_path / "feat.npz")
    ids = tmp_path / "ids.csv"
    pd.read_csv(region / "nodes.csv")[["id"]].to_csv(ids, index=False)
    start = time.perf_counter()
    with pytest.raises(GFLError, match=r"feat.npz: 1000000000 feature rows but ids.csv has 119 data rows"):
        read_table_graph(region / "edges.csv", ids, features=big, columns=TableColumns(label=None), fit=False)
    src = read_table_graph(region / "edges.csv", ids, features=big, fit=False,
                           columns=TableColumns(label=None, feature_key="node"))
    assert time.perf_counter() - start < 1.0
    assert src.g.ndata["feat"].shape == (119, 32) and not src.g.ndata["feat"].any()


def test_npy_header_claiming_more_than_the_file_holds(run, region, tmp_path):
    feat = tmp_path / "feat.npy"
    feat.write_bytes(_npy_header((10**9, 32)))
    start = time.perf_counter()
    with pytest.raises(GFLError, match=r"feat.npy: its header declares a 1000000000 x 32 float32 array"):
        read_table_graph(region / "edges.csv", features=feat, columns=TableColumns(label=None), fit=False)
    assert time.perf_counter() - start < 1.0
    one_line_error(_predict(run, region / "edges.csv", region / "labels.csv", "--features", feat,
                            out=tmp_path / "out.csv"), str(feat), "only 0 bytes of data follow")
    _nothing_written(tmp_path)


def test_npz_member_claiming_more_than_it_holds(region, tmp_path):
    """A sparse file whose 'data' array declares 10^9 values in a few bytes: refused from the zip headers."""
    path = tmp_path / "feat.npz"
    with zipfile.ZipFile(path, "w") as z:
        for name, array in {"format": np.array("coo"), "shape": np.array([119, 32]), "row": np.zeros(0, np.int32),
                            "col": np.zeros(0, np.int32)}.items():
            buf = io.BytesIO()
            np.save(buf, array)
            z.writestr(f"{name}.npy", buf.getvalue())
        z.writestr("data.npy", _npy_header((10**9,)))
    with pytest.raises(GFLError, match=r"feat.npz \(array 'data'\): its header declares a 1000000000 float32"):
        read_table_graph(region / "edges.csv", features=path, columns=TableColumns(label=None), fit=False)


def test_compressed_sparse_npz_checked_against_memory_before_loading(region, tmp_path, small_memory):
    """A real matrix that compresses well (a zip bomb, or just too big): refused from its declared sizes."""
    path = tmp_path / "feat.npz"
    nnz = 2_000_000
    matrix = sp.csr_matrix((np.ones(nnz, np.float32), np.zeros(nnz, np.int32),
                            np.r_[0, np.full(119, nnz)].astype(np.int64)), shape=(119, 32))
    sp.save_npz(path, matrix, compressed=True)
    assert path.stat().st_size < 100_000
    small_memory(20 * 2**20)
    start = time.perf_counter()
    with pytest.raises(GFLError, match=r"feat.npz: needs about .* of memory but 20.0 MiB are available"):
        read_table_graph(region / "edges.csv", features=path, columns=TableColumns(label=None), fit=False)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("kind", ["npy", "json", "csv", "parquet", "graph-node"])
def test_every_reader_checks_memory_first(kind, region, tmp_path, small_memory):
    """Each reader of predict/embed computes what it will allocate and refuses, naming its file."""
    n = 119
    columns, nodes, features = TableColumns(label=None), None, None
    if kind == "npy":
        features = tmp_path / "feat.npy"
        np.save(features, np.zeros((n, 4000), np.float32))
    elif kind == "json":
        features = tmp_path / "feat.json"
        features.write_text(json.dumps({str(i): list(range(200)) for i in range(n)}))
    elif kind == "graph-node":
        features = tmp_path / "feat.npz"
        np.savez(features, g0=np.zeros((n, 4000), np.float32))
        nodes = tmp_path / "nodes.csv"
        pd.DataFrame({"id": range(n), "g": "g0"}).to_csv(nodes, index=False)
        columns = TableColumns(label=None, graph="g", feature_key="graph-node")
    else:
        pytest.importorskip("pyarrow")
        nodes = tmp_path / f"nodes.{kind}"
        frame = pd.DataFrame({"id": range(n), **{f"f{j}": np.zeros(n) for j in range(100)}})
        frame.to_parquet(nodes) if kind == "parquet" else frame.to_csv(nodes, index=False)
        columns = TableColumns(label=None, features="f")
    small_memory(300_000)
    culprit = features or nodes
    edges = region / "edges.csv" if kind != "graph-node" else _graph_edges(tmp_path)
    with pytest.raises(GFLError, match=rf"^{re.escape(str(culprit))}: needs about .* of memory but 293.0 KiB are "
                                       rf"available"):
        if kind == "graph-node":
            read_table_collection(edges, nodes, features=features, columns=columns, fit=False)
        else:
            read_table_graph(edges, nodes, features=features, columns=columns, fit=False)


def _graph_edges(tmp: Path) -> Path:
    path = tmp / "edges_g.csv"
    path.write_text("src,dst,g\n" + "".join(f"{i},{i + 1},g0\n" for i in range(118)))
    return path


def test_edge_table_checked_against_memory(region, small_memory):
    small_memory(1000)
    with pytest.raises(GFLError, match=rf"^{re.escape(str(region / 'edges.csv'))}: needs about"):
        read_table_graph(region / "edges.csv", features=region / "feat.npy", columns=TableColumns(label=None))


def test_wide_sparse_features_checked_before_they_are_made_dense(region, tmp_path):
    """10 stored values in 119 x 10^9: refused when they would be made dense, naming the file; nothing on
    the way allocates one slot per column."""
    path = tmp_path / "feat.npz"
    sp.save_npz(path, sp.coo_matrix((np.ones(10), (np.arange(10), np.arange(10) * 10**8)), shape=(119, 10**9)))
    start = time.perf_counter()
    with pytest.raises(GFLError, match=r"feat.npz: needs about .* of memory"):
        read_table_graph(region / "edges.csv", features=path, columns=TableColumns(label=None), fit=False)
    with pytest.raises(GFLError, match=r"feat.npz: needs about .* of memory"):  # the reduction is checked too
        read_table_graph(region / "edges.csv", features=path, columns=TableColumns(label=None), feat_size=8)
    assert time.perf_counter() - start < 2.0


def test_json_feature_ids_are_bounded_and_named(run, region, tmp_path):
    """A feature index of 10^12 is counted against the JSON file; the error names it, never edges.csv."""
    bad = tmp_path / "feat.json"
    bad.write_text(json.dumps({"0": [10**12]}))
    result = _predict(run, region / "edges.csv", region / "labels.csv", "--features", bad, out=tmp_path / "out.csv")
    line = one_line_error(result, "feat.json has 0")
    assert "edges.csv" not in line and "IndexError" not in line
    assert "feature id out of range 0..2**26-1 (first at feat.json: key '0')" in result.stderr
    _nothing_written(tmp_path)

    feat = np.load(region / "feat.npy")
    bag = {str(i): np.flatnonzero(feat[i] > np.median(feat[i])).tolist() for i in range(len(feat))}
    bag["3"] = [1, 10**12]
    bag["4"] = [1, "x"]
    bag["1" + "0" * 20] = [1]
    bag["31"] = sorted(set(bag["31"]) | {31})  # the width stays 32 (feature ids 0..31)
    good = tmp_path / "bag.json"
    good.write_text(json.dumps(bag))
    result = _predict(run, region / "edges.csv", region / "labels.csv", "--features", good)
    assert len(csv_table(result)) == len(feat)
    for text in ("feature id out of range 0..2**26-1 (first at bag.json: key '3')",
                 "malformed feature entry (first at bag.json: key '4')",
                 f"{OUT_RANGE} (first at bag.json: key '1{'0' * 20}')"):
        assert text in result.stderr, result.stderr


# --------------------------------------------------------------------------- messages name the right file
def test_empty_labels_table_names_the_labels_file(run, region, tmp_path):
    for text in ("node,label\n", "node,label\n1,\n2,-1\n"):
        labels = tmp_path / "labels.csv"
        labels.write_text(text)
        line = one_line_error(_predict(run, region / "edges.csv", labels, "--features", region / "feat.npy",
                                       out=tmp_path / "out.csv"), f"{labels}: no labelled node")
        assert "feat.npy" not in line
    _nothing_written(tmp_path)


def test_a_missing_class_names_the_labels_file(run, region, tmp_path):
    labels = tmp_path / "labels.csv"
    labels.write_text("node,label\n1,a\n2,b\n")
    one_line_error(_predict(run, region / "edges.csv", labels, "--features", region / "feat.npy", "--classes",
                            "a,b,c"), f"{labels}: class 'c' has no labelled node")


def test_node_ids_beyond_int64_are_out_of_range_everywhere(run, region, tmp_path):
    labels = tmp_path / "labels.csv"
    labels.write_text(f"node,label\n{10**20},a\n1,b\n")
    one_line_error(_predict(run, region / "edges.csv", labels, "--features", region / "feat.npy"),
                   f"{labels}:2: {OUT_RANGE} ('{10**20}')")
    labels.write_text("node,label\n-4,a\n1,b\n")
    one_line_error(_predict(run, region / "edges.csv", labels, "--features", region / "feat.npy"),
                   f"{labels}:2: {OUT_RANGE}")
    labels.write_text("node,label\nseven,a\n1,b\n")
    one_line_error(_predict(run, region / "edges.csv", labels, "--features", region / "feat.npy"),
                   f"{labels}:2: node id that is not an integer ('seven')")

    edges = tmp_path / "edges.csv"
    edges.write_text((region / "edges.csv").read_text() + f"{10**20},1\n1,{2**64}\n-3,1\nx,1\n")
    result = _predict(run, edges, region / "labels.csv", "--features", region / "feat.npy")
    assert len(csv_table(result)) == 119
    n = len((region / "edges.csv").read_text().splitlines())
    # src column first, then dst
    assert f"3 x {OUT_RANGE} (first at edges.csv:{n + 1}, edges.csv:{n + 3}, edges.csv:{n + 2})" in result.stderr
    assert f"1 x non-numeric node id (first at edges.csv:{n + 4})" in result.stderr


def test_non_finite_features_are_repaired_the_one_way(run, region, tmp_path):
    """predict does what preprocess does: NaN/inf set to 0, counted, one warning; never refused."""
    feat = np.load(region / "feat.npy")
    feat[[3, 9], 2] = np.nan, np.inf
    np.save(tmp_path / "nan.npy", feat)
    result = _predict(run, region / "edges.csv", region / "labels.csv", "--features", tmp_path / "nan.npy")
    assert len(csv_table(result)) == len(feat)
    lines = [line for line in result.stderr.splitlines() if "NaN" in line or "non-finite" in line]
    assert lines == ["WARNING gflkit.prediction.inputs: 2 x non-finite feature value (set to 0) "
                     "(first at nan.npy: row 3)"]

    nodes = pd.DataFrame(np.load(region / "feat.npy"), columns=[f"f{j}" for j in range(32)]).astype(object)
    nodes.insert(0, "id", range(len(nodes)))
    nodes.loc[5, "f0"] = "oops"
    nodes.to_csv(tmp_path / "nodes.csv", index=False)
    result = _predict(run, region / "edges.csv", region / "labels.csv", "--nodes", tmp_path / "nodes.csv",
                      "--feature-cols", "f")
    assert len(csv_table(result)) == len(feat)
    assert "1 x non-numeric feature value (set to 0) (first at nodes.csv:7)" in result.stderr

    sparse = tmp_path / "nan.npz"
    sp.save_npz(sparse, sp.csr_matrix(feat))
    result = _predict(run, region / "edges.csv", region / "labels.csv", "--features", sparse)
    assert len(csv_table(result)) == len(feat)
    assert "2 x non-finite feature value (set to 0) (first at nan.npz: row 3)" in result.stderr


def test_a_graph_with_nan_features_given_in_python_is_repaired_too(run, root, caplog):
    g = gflkit.load_collection("tiny", root).graphs[6]
    g.ndata["feat"][4, 0] = float("nan")
    model = gflkit.load(run)
    table = model.predict(g, {"a": [0, 1], "b": [2, 3]}, what="my graph")
    assert len(table) == g.num_nodes() and np.isfinite(table.filter(like="score_").to_numpy()).all()
    assert "my graph: 1 node(s) have NaN or infinite features (set to 0; first at node position 4)" in caplog.text


def test_a_bad_feature_file_is_named_not_the_edge_table(region, tmp_path):
    """Whatever fails while the feature file is read names the feature file."""
    buf = io.BytesIO()
    np.save(buf, np.ones((119, 32), np.float32))
    files = {"cut.npy": buf.getvalue()[:-7], "list.json": b"[1, 2]",
             "cut.npz": _npz_bytes(lambda f: sp.save_npz(f, sp.csr_matrix(np.ones((119, 32), np.float32))))[:-40]}
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(GFLError) as err:
            read_table_graph(region / "edges.csv", features=path, columns=TableColumns(label=None), fit=False)
        assert str(err.value).startswith(str(path)), err.value


# --------------------------------------------------------------------------- JSON: valid, or refused with a position
def _graphsage(folder: Path, graph: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "toy-G.json").write_bytes(graph)
    (folder / "toy-id_map.json").write_text(json.dumps({str(i): i for i in range(40)}))
    (folder / "toy-class_map.json").write_text(json.dumps({str(i): i % 2 for i in range(40)}))
    np.save(folder / "toy-feats.npy", np.ones((40, 3), np.float32))
    return folder


def _node_link(n: int = 40) -> bytes:
    return json.dumps({"directed": False, "graph": {}, "nodes": [{"id": i, "test": False} for i in range(n)],
                       "links": [{"source": i, "target": (i * 7 + 1) % n} for i in range(n)],
                       "multigraph": False}, indent=1).encode()


def test_graphsage_json_cut_in_half_is_refused_with_its_position(tmp_path):
    full = _node_link()
    folder = _graphsage(tmp_path / "sage", full[: len(full) // 2])
    with pytest.raises(json.JSONDecodeError) as where:  # the position json itself gives
        json.loads(full[: len(full) // 2])
    result = invoke("preprocess", "reddit", folder, "--out-dir", tmp_path / "out")
    one_line_error(result, f"{folder / 'toy-G.json'}, line {where.value.lineno} column {where.value.colno}: "
                           f"not valid JSON")
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["sage"]  # no hidden temporary either


@pytest.mark.parametrize("text, needle", [
    (b'{"nodes": [{"id": 0}], "links": []} trailing', "line 1 column 37: not valid JSON (extra data after"),
    (b'{"nodes": [{"id": 0}], "nodes": [{"id": 1}]}', "column 24: not valid JSON (the key 'nodes' appears twice"),
    (b'{"nodes": [{"id": 0}, {"name": 1}], "links": []}', "node 1 of the node list has no \"id\""),
    (b'{"nodes": [{"id": 0}, {"id": 1}], "links": [{"source": 0, "target": 1},]}',
     "line 1 column 72: not valid JSON (Expecting value"),
    (b'{"nodes": {"id": 0}}', "not valid JSON ('nodes' must be an array)"),
    (b'\xef\xbb\xbf{"nodes": [{"id": 0}, {"id": 1}], "links": [{"source": 0, "target": 1.5}]}',
     "the graph has no edges (none of its 1 links gave an edge)"),
    (b'{"nodes": [{"id": 0}, {"id": 1}], "links": [{"source": 0, "target": 1}]}\xff', "byte 72: not valid UTF-8"),
])
def test_graphsage_json_refusals_name_the_position(text, needle, tmp_path):
    from gflkit.data.sources.reddit import read_graphsage

    folder = _graphsage(tmp_path / "sage", text)
    with pytest.raises(GFLError) as err:
        read_graphsage(folder, "toy", num_classes=None)
    message = str(err.value)
    assert message.startswith(str(folder / "toy-G.json")) and needle in message and "\n" not in message, message


def test_graphsage_json_read_in_small_chunks_equals_whole(tmp_path):
    """The streamed reader gives what json.load gives, whatever the chunk size (values across chunk edges)."""
    from gflkit.data.sources.json_io import stream_object

    data = {"graph": {"name": "a}, {b"}, "nodes": [{"id": f"n{i}", "x": {"y": "}, {"}} for i in range(30)],
            "links": [{"source": i, "target": 12345678901 + i} for i in range(30)], "multigraph": False}
    path = tmp_path / "G.json"
    path.write_text(json.dumps(data))
    for chunk in (1, 2, 5, 17, 64, 1 << 20):
        got: dict[str, list] = {"nodes": [], "links": []}
        rest = stream_object(path, {k: got[k].extend for k in got}, chunk=chunk)
        assert got == {"nodes": data["nodes"], "links": data["links"]}
        assert rest == {"graph": data["graph"], "multigraph": False}


def test_every_raw_json_reader_refuses_invalid_json_with_a_position(tmp_path):
    from gflkit.data.sources.reddit import read_graphsage

    folder = _graphsage(tmp_path / "sage", _node_link())
    (folder / "toy-id_map.json").write_text('{"0": 0,\n "1": 1,\n "2": ')
    with pytest.raises(GFLError, match=r"toy-id_map.json, line 3 column 7: not valid JSON \(Expecting value\)"):
        read_graphsage(folder, "toy", num_classes=None)
    bag = tmp_path / "feat.json"
    bag.write_text('{"0": [1, 2],\n "1": [3')
    with pytest.raises(GFLError, match=rf"^{bag}, line 2 column 9: not valid JSON"):
        read_table_graph(_graph_edges(tmp_path), features=bag, columns=TableColumns(label=None), fit=False)


# --------------------------------------------------------------------------- graphs without edges
def test_edge_table_without_rows_warns_in_predict_and_embed(run, region, tmp_path):
    edges = tmp_path / "edges.csv"
    edges.write_text("src,dst\n")
    warning = f"{edges}: the graph has no edges (it holds no data rows)"
    result = _predict(run, edges, region / "labels.csv", "--features", region / "feat.npy")
    assert len(csv_table(result)) == 119 and warning in result.stderr
    result = invoke("embed", run, "--edges", edges, "--features", region / "feat.npy")
    assert len(csv_table(result)) == 119 and warning in result.stderr
    edges.write_text("src,dst\n1,1\nx,2\n")  # rows, but no edge left
    result = _predict(run, edges, region / "labels.csv", "--features", region / "feat.npy")
    assert f"{edges}: the graph has no edges (none of its 2 data rows gave an edge)" in result.stderr


def test_edge_table_without_rows_in_preprocess(tmp_path):
    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "edges.csv").write_text("src,dst\n")
    (folder / "nodes.csv").write_text("id,label,g,f\n" + "".join(f"{i},{'xy'[i % 2]},g{i % 2},1\n" for i in range(12)))
    one_line_error(invoke("preprocess", "tables", folder, "--feature-cols", "f", "--min-degree", "0", "--out-dir",
                          tmp_path / "out"), f"{folder / 'edges.csv'}", "the graph has no edges")
    assert not (tmp_path / "out").exists()
    (folder / "edges.csv").write_text("src,dst,g\n")
    result = invoke("preprocess", "tables", folder, "--feature-cols", "f", "--graph-col", "g", "--graphs", "1,0,1",
                    "--out-dir", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert f"{folder / 'edges.csv'}: the graph has no edges (it holds no data rows)" in result.stderr


# --------------------------------------------------------------------------- fuzzing the readers of predict
FUZZ = settings(max_examples=int(os.environ.get("GFLKIT_FUZZ_EXAMPLES", "40")), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
N_NODES = 12
EDGES = "src,dst\n" + "".join(f"{i},{(i + 1) % N_NODES}\n" for i in range(N_NODES))


def _valid_feature_bytes(kind: str) -> bytes:
    rng = np.random.default_rng(0)
    feat = rng.random((N_NODES, 4)).astype(np.float32)
    if kind == "npy":
        buf = io.BytesIO()
        np.save(buf, feat)
        return buf.getvalue()
    if kind == "npz-sparse":
        return _npz_bytes(lambda f: sp.save_npz(f, sp.csr_matrix(feat * (feat > 0.5))))
    if kind == "npz-coo":
        return _npz_bytes(lambda f: sp.save_npz(f, sp.coo_matrix(feat * (feat > 0.5)), compressed=False))
    return json.dumps({str(i): [i % 4, (i * 3) % 4] for i in range(N_NODES)}).encode()


def _mutated(valid: bytes) -> st.SearchStrategy[bytes]:
    """``valid`` with a few bytes flipped, cut, or inserted: deep into the parsers."""
    def mutate(args) -> bytes:
        data = bytearray(valid)
        for op, at, byte in args:
            at %= max(len(data), 1)
            if op == 0 and data:
                data[at] = byte
            elif op == 1:
                data = data[:at]
            else:
                data[at:at] = bytes([byte])
        return bytes(data)

    return st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1,
                    max_size=4).map(mutate)


def _file_bytes(kind: str) -> st.SearchStrategy[bytes]:
    valid = _valid_feature_bytes(kind)
    return st.one_of(st.binary(max_size=400), _mutated(valid), st.just(valid))


def _check_message(err: GFLError, path: Path) -> None:
    message = str(err)
    assert message and "\n" not in message, message
    assert message.startswith(str(path)), message  # the file that is wrong, first


def _fuzz_features(suffix: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        edges, feat = Path(tmp) / "edges.csv", Path(tmp) / f"feat{suffix}"
        edges.write_text(EDGES)
        feat.write_bytes(data)
        start = time.perf_counter()
        try:
            src = read_table_graph(edges, features=feat, columns=TableColumns(label=None), fit=False)
        except GFLError as err:
            _check_message(err, feat)
        else:
            x = src.g.ndata["feat"].numpy()
            assert x.dtype == np.float32 and np.isfinite(x).all() and src.g.num_nodes() >= N_NODES
        assert time.perf_counter() - start < 10


@FUZZ
@given(data=_file_bytes("npy"))
def test_fuzz_npy_features(data):
    _fuzz_features(".npy", data)


@FUZZ
@given(data=st.one_of(_file_bytes("npz-sparse"), _file_bytes("npz-coo")))
def test_fuzz_npz_sparse_features(data):
    _fuzz_features(".npz", data)


@FUZZ
@given(data=st.one_of(_file_bytes("json"), st.text(alphabet='{}[]":, 0123456789-.e', max_size=200).map(str.encode)))
def test_fuzz_json_features(data):
    _fuzz_features(".json", data)


@FUZZ
@given(data=st.one_of(st.binary(max_size=400), _mutated(_npz_bytes(lambda f: np.savez(
    f, g0=np.ones((4, 3), np.float32), g1=np.zeros((4, 3), np.float32))))))
def test_fuzz_npz_dense_features(data):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "nodes.csv").write_text("id,g\n" + "".join(f"{i % 4},g{i // 4}\n" for i in range(8)))
        (folder / "edges.csv").write_text("src,dst,g\n" + "".join(f"{i},{(i + 1) % 4},g{k}\n" for k in range(2)
                                                                  for i in range(4)))
        feat = folder / "feat.npz"
        feat.write_bytes(data)
        try:
            collection, _ = read_table_collection(folder / "edges.csv", folder / "nodes.csv", features=feat,
                                                  columns=TableColumns(label=None, graph="g",
                                                                       feature_key="graph-node"),
                                                  classes=["a"], fit=False, n_graphs=(1, 0, 1))
        except GFLError as err:
            _check_message(err, feat)
        else:
            assert all(np.isfinite(g.ndata["feat"].numpy()).all() for g in collection.graphs)


CSV_CHARS = "0123456789,-.e xnodelab\n\"\ufeff"


@FUZZ
@given(head=st.sampled_from(["node,label\n", "id,label\n", ""]),
       body=st.one_of(st.binary(max_size=300), st.text(alphabet=CSV_CHARS, max_size=300).map(str.encode)))
def test_fuzz_labels_csv(head, body):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "labels.csv"
        path.write_bytes(head.encode() + body)
        try:
            support = read_labels(path, np.arange(N_NODES, dtype=np.int64))
        except GFLError as err:
            _check_message(err, path)
        else:
            ids = [i for v in support.values() for i in v]
            assert support and len(ids) == len(set(ids)) and all(0 <= i < N_NODES for i in ids)


@FUZZ
@given(data=st.one_of(st.binary(max_size=300), st.text(alphabet=CSV_CHARS, max_size=300).map(str.encode)))
def test_fuzz_edges_csv(data):
    with tempfile.TemporaryDirectory() as tmp:
        edges, feat = Path(tmp) / "edges.csv", Path(tmp) / "feat.npy"
        edges.write_bytes(b"src,dst\n" + data)
        np.save(feat, np.ones((N_NODES, 3), np.float32))
        try:
            src = read_table_graph(edges, features=feat, columns=TableColumns(label=None), fit=False)
        except GFLError as err:
            _check_message(err, edges)
        else:
            assert src.g.num_nodes() == N_NODES


def _parquet_bytes() -> bytes:
    buf = io.BytesIO()
    pd.DataFrame({"id": range(N_NODES), "f0": np.arange(N_NODES) / 3.0, "f1": 1.0}).to_parquet(buf)
    return buf.getvalue()


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="reading Parquet needs pyarrow")
@FUZZ
@given(data=st.data())
def test_fuzz_parquet_nodes(data):
    raw = data.draw(st.one_of(st.binary(max_size=300), _mutated(_parquet_bytes())))
    with tempfile.TemporaryDirectory() as tmp:
        edges, nodes = Path(tmp) / "edges.csv", Path(tmp) / "nodes.parquet"
        edges.write_text(EDGES)
        nodes.write_bytes(raw)
        try:
            src = read_table_graph(edges, nodes, columns=TableColumns(label=None, features="f"), fit=False)
        except GFLError as err:
            _check_message(err, nodes)
        else:
            assert np.isfinite(src.g.ndata["feat"].numpy()).all()
