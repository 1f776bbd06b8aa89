"""Property-based fuzzing of the text readers: any bytes in, a clean graph or one error line out.

For the AMiner dump, the authors' release text files, the tables CSVs and the
GraphSAGE JSON files, hypothesis generates byte strings (random bytes, and text
made of the characters those formats use). A reader must either return a graph
or collection whose features are finite and whose labels index its classes, or
raise :class:`~gflkit.errors.GFLError` with a one-line message naming a file or
folder. Any other exception is a bug. Example counts are bounded so CI stays fast.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gflkit  # noqa: F401  (before dgl)
from gflkit.data.collection import GraphCollection
from gflkit.data.sources.aminer import read_aminer
from gflkit.data.sources.gfl_release import read_gfl_release
from gflkit.data.sources.reddit import read_graphsage
from gflkit.data.sources.tables import TableColumns, read_table_collection, read_table_graph
from gflkit.errors import GFLError

#: 60 examples per reader in CI; set GFLKIT_FUZZ_EXAMPLES for a longer hunt.
FUZZ = settings(max_examples=int(os.environ.get("GFLKIT_FUZZ_EXAMPLES", "60")), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _text(alphabet: str, max_size: int = 300) -> st.SearchStrategy[bytes]:
    return st.text(alphabet=alphabet, max_size=max_size).map(lambda s: s.encode("utf-8"))


def _bytes(alphabet: str) -> st.SearchStrategy[bytes]:
    """Random bytes, or text from the format's own characters (more likely to get deep into a parser)."""
    return st.one_of(st.binary(max_size=300), _text(alphabet))


def _check_graph(g, classes) -> None:
    feat, label = g.ndata["feat"].numpy(), g.ndata["label"].numpy()
    assert feat.dtype == np.float32 and np.isfinite(feat).all()
    assert label.min(initial=-1) >= -1 and label.max(initial=-1) < len(classes)
    src, dst = (t.numpy() for t in g.edges())
    assert (src != dst).all() and src.max(initial=-1) < g.num_nodes()


def _check_collection(collection: GraphCollection) -> None:
    collection.validate()
    for g in collection.graphs:
        _check_graph(g, collection.classes)


def _check_error(err: GFLError, names: list[str]) -> None:
    message = str(err)
    assert message and "\n" not in message, message
    assert any(name in message for name in names), message


AMINER_CHARS = "#index*@tc%!0123456789 abcdefKDDSIGMODNeurIPS,;\n\t\u00e9"


@FUZZ
@given(dump=st.one_of(_bytes(AMINER_CHARS), st.lists(
    st.sampled_from(["#index 1", "#index 2", "#index x", "#* graph mining", "#@ ann, bob", "#@ ;", "#c KDD",
                     "#c SIGMOD", "#c NeurIPS", "#% 1", "#% 2", "#% zz", "#t 2001", "#t x", "#! text", "", "junk"]),
    max_size=40).map(lambda lines: "\n".join(lines).encode())), task=st.sampled_from(["collaboration", "citation"]))
def test_aminer_dump(dump, task):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dump.txt"
        path.write_bytes(dump)
        try:
            src = read_aminer(path, task=task, num_classes=1, feat_size=4, n_buckets=64)
        except GFLError as err:
            _check_error(err, [str(path)])
        else:
            _check_graph(src.g, src.classes)


RELEASE_CHARS = "0123456789 -.eEnaifx\n\t"


@FUZZ
@given(feature=_bytes(RELEASE_CHARS), graph=_bytes(RELEASE_CHARS), labels=_bytes(RELEASE_CHARS + "ab"))
def test_gfl_release_text(feature, graph, labels):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "release"
        (root / "graph").mkdir(parents=True)
        (root / "feature.txt").write_bytes(feature)
        for stem in ("graph_0", "test_graph_0"):
            (root / "graph" / f"{stem}.txt").write_bytes(graph)
            (root / "graph" / f"{stem}_label.txt").write_bytes(labels)
        try:
            collection, _ = read_gfl_release(root)
        except GFLError as err:
            _check_error(err, [str(root)])
        else:
            _check_collection(collection)


CSV_CHARS = "0123456789,-. xyabgidlrcsftn\"\n\ufeff"
NODE_HEADERS = ["id,label,f\n", "id,label,g,f\n", "\ufeffid,label,g,f\n", ""]
EDGE_HEADERS = ["src,dst\n", "src,dst,g\n", ""]


@FUZZ
@given(node_head=st.sampled_from(NODE_HEADERS), nodes=_bytes(CSV_CHARS), edge_head=st.sampled_from(EDGE_HEADERS),
       edges=_bytes(CSV_CHARS), graph_col=st.booleans())
def test_tables_csv(node_head, nodes, edge_head, edges, graph_col):
    with tempfile.TemporaryDirectory() as tmp:
        node_path, edge_path = Path(tmp) / "nodes.csv", Path(tmp) / "edges.csv"
        node_path.write_bytes(node_head.encode() + nodes)
        edge_path.write_bytes(edge_head.encode() + edges)
        try:
            if graph_col:
                collection, _ = read_table_collection(edge_path, node_path,
                                                      columns=TableColumns(graph="g", features="f"))
            else:
                src = read_table_graph(edge_path, node_path, columns=TableColumns(features="f"))
        except GFLError as err:
            _check_error(err, [str(node_path), str(edge_path), "--graph"])
        else:
            if graph_col:
                _check_collection(collection)
            else:
                _check_graph(src.g, src.classes)


JSON_CHARS = '{}[]":, 0123456789-.eidsourcetargnlkx'
_json_value = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-3, 10**13), st.floats(allow_nan=False),
                                     st.text(max_size=3)),
                           lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                   st.dictionaries(st.text("0123456789id", max_size=3), inner,
                                                                   max_size=4)), max_leaves=12)


def _json_bytes() -> st.SearchStrategy[bytes]:
    return st.one_of(_bytes(JSON_CHARS), _json_value.map(lambda v: json.dumps(v).encode()))


@FUZZ
@given(graph=st.one_of(_json_bytes(), st.lists(st.integers(-2, 5), max_size=10).map(
    lambda ids: json.dumps({"nodes": [{"id": i} for i in ids],
                            "links": [{"source": a, "target": b} for a, b in zip(ids, ids[1:])]}).encode())),
       id_map=_json_bytes(), class_map=_json_bytes())
def test_graphsage_json(graph, id_map, class_map):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "toy-G.json").write_bytes(graph)
        (folder / "toy-id_map.json").write_bytes(id_map)
        (folder / "toy-class_map.json").write_bytes(class_map)
        np.save(folder / "toy-feats.npy", np.ones((4, 2), dtype=np.float32))
        try:
            src = read_graphsage(folder, "toy", num_classes=None)
        except GFLError as err:
            _check_error(err, [str(folder)])
        else:
            _check_graph(src.g, src.classes)


@pytest.mark.parametrize("text", [b"", b"\xff\xfe", b"#index 1\n#* t\n#@ a, b\n#c KDD\n"])
def test_aminer_examples_stay_in_the_contract(text, tmp_path):
    path = tmp_path / "dump.txt"
    path.write_bytes(text)
    try:
        src = read_aminer(path, num_classes=1, feat_size=4, n_buckets=64)
    except GFLError as err:
        _check_error(err, [str(path)])
    else:
        _check_graph(src.g, src.classes)


@FUZZ
@given(n_train=st.integers(-1, 3), n_val=st.integers(-1, 2), n_test=st.integers(-1, 2),
       num_classes=st.integers(0, 6), feat_size=st.integers(0, 8), lo=st.integers(0, 12), hi=st.integers(0, 12),
       outlier=st.floats(-0.5, 1.5), seed=st.integers(0, 2**32 - 1))
def test_synthetic_specs(n_train, n_val, n_test, num_classes, feat_size, lo, hi, outlier, seed):
    """Any small spec: a valid family, or one GFLError line before anything is drawn."""
    from gflkit.data import SyntheticSpec, make_synthetic_family

    try:
        spec = SyntheticSpec(n_train=n_train, n_val=n_val, n_test=n_test, num_classes=num_classes,
                             feat_size=feat_size, min_nodes=lo, max_nodes=hi, outlier_rate=outlier)
    except GFLError as err:
        _check_error(err, ["synthetic family"])
        return
    _check_collection(make_synthetic_family(spec, seed=seed))
