"""Hostile input through the command line: malformed files, crafted pickles, bad options.

Every case runs one ``gflkit`` command and checks what a user (or an attacker)
would see: the exit status (2 for a usage error, 1 for bad data), no traceback,
exactly one ``Error:`` line that names the file or the option, nothing on stdout,
and nothing left in the output location (no collection, no hidden temporary).
"""
from __future__ import annotations

import io
import json
import pickle
from collections import defaultdict
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from gflkit_cli.main import cli

# --------------------------------------------------------------------------- raw folders


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


NODES = "id,label,f_a,f_b\n" + "".join(f"{i},{'xy'[i % 2]},{i % 3},{i % 5}\n" for i in range(12))
EDGES = "src,dst\n" + "".join(f"{i},{(i + 1) % 12}\n" for i in range(12))


def tables(tmp: Path, nodes: str | bytes = NODES, edges: str | bytes = EDGES) -> Path:
    folder = tmp / "tables"
    _write(folder / "nodes.csv", nodes)
    _write(folder / "edges.csv", edges)
    return folder


def graphsage(tmp: Path, **files: str | bytes) -> Path:
    folder = tmp / "sage"
    n = 6
    default = {
        "G.json": json.dumps({"nodes": [{"id": i} for i in range(n)],
                              "links": [{"source": i, "target": (i + 1) % n} for i in range(n)]}),
        "id_map.json": json.dumps({str(i): i for i in range(n)}),
        "class_map.json": json.dumps({str(i): i % 2 for i in range(n)}),
    }
    default.update(files)
    for name, data in default.items():
        if name != "feats.npy":
            _write(folder / f"toy-{name}", data)
    if "feats.npy" in files:
        _write(folder / "toy-feats.npy", files["feats.npy"])
    else:
        np.save(folder / "toy-feats.npy", np.ones((n, 3), dtype=np.float32))
    return folder


def _npy(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=True)
    return buf.getvalue()


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def planetoid(tmp: Path, **override) -> Path:
    """Tiny Planetoid files of "cora": 6 allx rows, 2 test rows at ids 6 and 7."""
    folder = tmp / "planetoid"
    folder.mkdir(parents=True, exist_ok=True)
    objects = {
        "x": sp.csr_matrix(np.eye(4, 3, dtype=np.float32)), "y": np.eye(4, 2)[[0, 1, 0, 1]],
        "allx": sp.csr_matrix(np.ones((6, 3), dtype=np.float32)), "ally": np.eye(2)[[0, 1, 0, 1, 0, 1]],
        "tx": sp.csr_matrix(np.ones((2, 3), dtype=np.float32)), "ty": np.eye(2)[[0, 1]],
        "graph": defaultdict(list, {i: [(i + 1) % 8] for i in range(8)}),
    }
    for key, obj in objects.items():
        data = override.get(key)
        _write(folder / f"ind.cora.{key}", data if isinstance(data, bytes) else pickle.dumps(obj, protocol=2))
    _write(folder / "ind.cora.test.index", override.get("test.index", "6\n7\n"))
    return folder


class _RunsCode:
    """Unpickling this calls os.system: what a crafted Planetoid file would do."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        import os

        return os.system, (self.command,)


def gfl_release(tmp: Path, feature: str | bytes = "1 0.5 0.5\n2 1.0 0.0\n3 0.0 1.0\n",
                graph: str | bytes = "1 2\n2 3\n") -> Path:
    folder = tmp / "release"
    _write(folder / "feature.txt", feature)
    for stem in ("graph_0", "test_graph_0"):
        _write(folder / "graph" / f"{stem}.txt", graph)
        _write(folder / "graph" / f"{stem}_label.txt", "1 a\n2 b\n3 a\n")
    return folder


def linqs(tmp: Path, node: str | bytes) -> Path:
    folder = tmp / "linqs"
    _write(folder / "Pubmed-Diabetes.NODE.paper.tab", node)
    _write(folder / "Pubmed-Diabetes.DIRECTED.cites.tab", "DIRECTED\tcites\nNO_FEATURES\n")
    return folder


@pytest.fixture(scope="module")
def collection_dir(tmp_path_factory) -> Path:
    from gflkit.data import SyntheticSpec, make_synthetic_family

    spec = SyntheticSpec(n_train=2, n_val=1, n_test=1, feat_size=4, min_nodes=30, max_nodes=40)
    return make_synthetic_family(spec, seed=0, name="tiny").save(tmp_path_factory.mktemp("coll") / "tiny")


def broken_collection(tmp: Path, source: Path, change: Callable[[Path], None]) -> Path:
    import shutil

    target = tmp / "broken"
    shutil.copytree(source, target)
    change(target)
    return target


def _manifest(path: Path, edit: Callable[[dict], object]) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    edit(manifest)
    (path / "manifest.json").write_text(json.dumps(manifest))


def _flip_byte(path: Path) -> None:
    data = bytearray((path / "graphs.bin").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (path / "graphs.bin").write_bytes(bytes(data))


# --------------------------------------------------------------------------- cases

# (id, build(tmp) -> args (the output location is tmp/"out"), exit code, text the Error line must contain)
OUT = "out"
Case = tuple[str, Callable[[Path], list], int, str]


def _synthetic(*args: str) -> Callable[[Path], list]:
    return lambda tmp: ["preprocess", "synthetic", "--small", "--out-dir", tmp / OUT, *args]


def _train(*args: str) -> Callable[[Path], list]:
    return lambda tmp: ["train", "--run-dir", tmp / OUT, "-o", tmp / "out.csv", *args]


OPTION_CASES: list[Case] = [
    ("graphs-negative", _synthetic("--graphs", "-1,2,3"), 2, "--graphs"),
    ("graphs-zero", _synthetic("--graphs", "0,0,0"), 2, "--graphs"),
    ("graphs-two", _synthetic("--graphs", "1,2"), 2, "--graphs"),
    ("graphs-letters", _synthetic("--graphs", "a,b,c"), 2, "--graphs"),
    ("graphs-empty", _synthetic("--graphs", ","), 2, "--graphs"),
    ("nodes-zero", _synthetic("--nodes", "0,5"), 2, "--nodes"),
    ("nodes-reversed", _synthetic("--nodes", "50,30"), 2, "--nodes"),
    ("nodes-word", _synthetic("--nodes", "many"), 2, "--nodes"),
    ("nodes-three", _synthetic("--nodes", "1,2,3"), 2, "--nodes"),
    ("classes-one", _synthetic("--classes", "1"), 2, "--classes"),
    ("feat-size-zero", _synthetic("--feat-size", "0"), 2, "--feat-size"),
    ("feat-size-huge", _synthetic("--feat-size", "1000000000"), 2, "--feat-size"),
    ("graphs-huge", _synthetic("--graphs", "100000000,0,0"), 2, "--graphs"),
    ("seed-negative", _synthetic("--seed", "-1"), 2, "--seed"),
    ("seed-23-digits", _synthetic("--seed", "12345678901234567890123"), 2, "--seed"),
    ("seed-word", _synthetic("--seed", "abc"), 2, "--seed"),
    ("outlier-nan", _synthetic("--outlier-rate", "nan"), 2, "--outlier-rate"),
    ("outlier-inf", _synthetic("--outlier-rate", "inf"), 2, "--outlier-rate"),
    ("outlier-two", _synthetic("--outlier-rate", "2"), 2, "--outlier-rate"),
    ("lr-inf", _train("--lr", "inf"), 2, "--lr"),
    ("lr-nan", _train("--lr", "nan"), 2, "--lr"),
    ("lr-negative", _train("--lr", "-0.1"), 2, "--lr"),
    ("gamma-nan", _train("--gamma", "nan"), 2, "--gamma"),
    ("gamma-inf", _train("--gamma", "inf"), 2, "--gamma"),
    ("grad-clip-nan", _train("--grad-clip", "nan"), 2, "--grad-clip"),
    ("grad-clip-inf", _train("--grad-clip", "inf"), 2, "--grad-clip"),
    ("weight-decay-nan", _train("--weight-decay", "nan"), 2, "--weight-decay"),
    ("mu-nan", _train("--mu", "nan"), 2, "--mu"),
    ("mu0-inf", _train("--mu0", "-inf"), 2, "--mu0"),
    ("dropout-nan", _train("--dropout", "nan"), 2, "--dropout"),
    ("cosine-scale-inf", _train("--cosine-scale", "inf"), 2, "--cosine-scale"),
    ("clusters-zero", _train("--clusters", "0,0"), 2, "--clusters"),
    ("clusters-letters", _train("--clusters", "a,b"), 2, "--clusters"),
    ("clusters-empty", _train("--clusters", ""), 2, "--clusters"),
    ("train-seed-negative", _train("--seed", "-1"), 2, "--seed"),
    ("k-shot-zero", _train("--k-shot", "0"), 2, "--k-shot"),
    ("sweep-values-empty", lambda tmp: ["sweep", "--param", "k-shot", "--values", "", "-o", tmp / "out.csv"], 2,
     "--values"),
    ("sweep-values-commas", lambda tmp: ["sweep", "--param", "mu", "--values", ",,", "-o", tmp / "out.csv"], 2,
     "--values"),
    ("ablate-seeds-negative", lambda tmp: ["ablate", "--all", "--seed", "0,-1", "-o", tmp / "out.csv"], 2,
     "--seed"),
    ("compare-seed-huge", lambda tmp: ["compare", "--seed", "1" + "0" * 30, "-o", tmp / "out.csv"], 2, "--seed"),
    ("pubmed-graphs-negative", lambda tmp: ["preprocess", "pubmed", planetoid(tmp), "--dataset", "cora", "--graphs",
                                            "-1,2,3", "--out-dir", tmp / OUT], 2, "--graphs"),
    ("reddit-walk-zero", lambda tmp: ["preprocess", "reddit", graphsage(tmp), "--walk-length", "0,5", "--out-dir",
                                      tmp / OUT], 2, "--walk-length"),
    ("aminer-feat-size-huge", lambda tmp: ["preprocess", "aminer", _write(tmp / "d.txt", "#index 1\n"), "--feat-size",
                                           "1000000000", "--out-dir", tmp / OUT], 2, "--feat-size"),
    ("tables-graphs-zero", lambda tmp: ["preprocess", "tables", tables(tmp), "--feature-cols", "f", "--graphs",
                                        "0,1,1", "--out-dir", tmp / OUT], 2, "--graphs"),
]


def _tables_with(tmp: Path, features: str, data: bytes, **kw) -> list:
    folder = tables(tmp, **kw)
    path = _write(folder / features, data)
    return ["preprocess", "tables", folder, "--features", path, "--graph-col", "g", "--out-dir", tmp / OUT]


def _tables_cols(tmp: Path, **kw) -> list:
    return ["preprocess", "tables", tables(tmp, **kw), "--feature-cols", "f", "--out-dir", tmp / OUT]


def _pubmed(tmp: Path, **override) -> list:
    return ["preprocess", "pubmed", planetoid(tmp, **override), "--dataset", "cora", "--out-dir", tmp / OUT]


def _reddit(tmp: Path, **files) -> list:
    return ["preprocess", "reddit", graphsage(tmp, **files), "--out-dir", tmp / OUT]


def _dgl_reddit(tmp: Path, data: bytes, graph: bytes | None = None) -> list:
    folder = tmp / "dgl"
    _write(folder / "reddit_data.npz", data)
    if graph is None:
        buf = io.BytesIO()
        sp.save_npz(buf, sp.coo_matrix(np.ones((3, 3))))
        graph = buf.getvalue()
    _write(folder / "reddit_graph.npz", graph)
    return ["preprocess", "reddit", folder, "--out-dir", tmp / OUT]


def _release(tmp: Path, **kw) -> list:
    return ["preprocess", "gfl-release", gfl_release(tmp, **kw), "--out-dir", tmp / OUT]


def _aminer(tmp: Path, dump: str | bytes, *extra) -> list:
    return ["preprocess", "aminer", _write(tmp / "dump" / "AMiner-Paper.txt", dump), "--out-dir", tmp / OUT, *extra]


GARBAGE = bytes(range(256)) * 8
NODES_G = "id,label,g,f_a\n" + "".join(f"{i},{'xy'[i % 2]},g{i % 2},1\n" for i in range(12))
EDGES_G = "src,dst,g\n" + "".join(f"{i},{(i + 2) % 12},g{i % 2}\n" for i in range(12))
NODES_NOFEAT = "id,label,g\n" + "".join(f"{i},{'xy'[i % 2]},g{i % 2}\n" for i in range(12))

FILE_CASES: list[Case] = [
    # tables: feature files of the wrong kind or shape
    ("npy-object", lambda t: _tables_with(t, "f.npy", _npy(np.array([{"a": 1}] * 12, dtype=object)),
                                          nodes=NODES_NOFEAT, edges=EDGES_G), 1, "f.npy"),
    ("npy-1d", lambda t: _tables_with(t, "f.npy", _npy(np.ones(12)), nodes=NODES_NOFEAT, edges=EDGES_G), 1,
     "f.npy"),
    ("npy-strings", lambda t: _tables_with(t, "f.npy", _npy(np.array([["a"]] * 12)), nodes=NODES_NOFEAT,
                                           edges=EDGES_G), 1, "f.npy"),
    ("npy-garbage", lambda t: _tables_with(t, "f.npy", GARBAGE, nodes=NODES_NOFEAT, edges=EDGES_G), 1, "f.npy"),
    ("npy-truncated", lambda t: _tables_with(t, "f.npy", _npy(np.ones((12, 3)))[:90], nodes=NODES_NOFEAT,
                                             edges=EDGES_G), 1, "f.npy"),
    ("npz-dense", lambda t: _tables_with(t, "f.npz", _npz(a=np.ones((12, 3))), nodes=NODES_NOFEAT,
                                         edges=EDGES_G), 1, "f.npz"),
    ("npz-object", lambda t: _tables_with(t, "f.npz", _npz(data=np.array([None] * 3, dtype=object)),
                                          nodes=NODES_NOFEAT, edges=EDGES_G), 1, "f.npz"),
    ("npz-garbage", lambda t: _tables_with(t, "f.npz", GARBAGE, nodes=NODES_NOFEAT, edges=EDGES_G), 1, "f.npz"),
    ("json-invalid", lambda t: _tables_with(t, "f.json", b'{"0": [1, 2]', nodes=NODES_NOFEAT, edges=EDGES_G), 1,
     "f.json"),
    ("json-list", lambda t: _tables_with(t, "f.json", b"[[1, 2], [3]]", nodes=NODES_NOFEAT, edges=EDGES_G), 1,
     "f.json"),
    ("json-binary", lambda t: _tables_with(t, "f.json", GARBAGE, nodes=NODES_NOFEAT, edges=EDGES_G), 1, "f.json"),
    ("json-deep", lambda t: _tables_with(t, "f.json", b"[" * 100000, nodes=NODES_NOFEAT, edges=EDGES_G), 1,
     "f.json"),
    ("feature-suffix", lambda t: _tables_with(t, "f.txt", b"1 2 3", nodes=NODES_NOFEAT, edges=EDGES_G), 1,
     "f.txt"),
    # tables: the tables themselves
    ("nodes-empty", lambda t: _tables_cols(t, nodes=""), 1, "nodes.csv"),
    ("nodes-binary", lambda t: _tables_cols(t, nodes=GARBAGE), 1, "nodes.csv"),
    ("nodes-no-id", lambda t: _tables_cols(t, nodes="name,label,f\na,x,1\n"), 1, "nodes.csv"),
    ("nodes-no-label", lambda t: _tables_cols(t, nodes="id,f\n1,1\n"), 1, "nodes.csv"),
    ("nodes-ids-1e20", lambda t: _tables_cols(t, nodes="id,label,f\n" + "".join(
        f"{10**20 + i},x,1\n" for i in range(5))), 1, "nodes.csv"),
    ("edges-empty", lambda t: _tables_cols(t, edges=""), 1, "edges.csv"),
    ("edges-no-dst", lambda t: _tables_cols(t, edges="src,to\n1,2\n"), 1, "edges.csv"),
    ("parquet-corrupt", lambda t: ["preprocess", "tables", tables(t), "--nodes",
                                   _write(t / "tables" / "nodes.parquet", b"PAR1" + GARBAGE + b"PAR1"),
                                   "--feature-cols", "f", "--out-dir", t / OUT], 1, "nodes.parquet"),
    ("parquet-text", lambda t: ["preprocess", "tables", tables(t), "--nodes",
                                _write(t / "tables" / "nodes.parquet", NODES), "--feature-cols", "f",
                                "--out-dir", t / OUT], 1, "nodes.parquet"),
    ("tables-missing", lambda t: ["preprocess", "tables", t / "nowhere", "--out-dir", t / OUT], 1, "nowhere"),
    # GraphSAGE layout
    ("sage-feats-object", lambda t: _reddit(t, **{"feats.npy": _npy(np.array([None] * 6, dtype=object))}), 1,
     "toy-feats.npy"),
    ("sage-feats-1d", lambda t: _reddit(t, **{"feats.npy": _npy(np.ones(6))}), 1, "toy-feats.npy"),
    ("sage-feats-garbage", lambda t: _reddit(t, **{"feats.npy": GARBAGE}), 1, "toy-feats.npy"),
    ("sage-id-map-invalid", lambda t: _reddit(t, **{"id_map.json": "{'0': 0}"}), 1, "toy-id_map.json"),
    ("sage-id-map-list", lambda t: _reddit(t, **{"id_map.json": "[0, 1, 2]"}), 1, "toy-id_map.json"),
    ("sage-class-map-list", lambda t: _reddit(t, **{"class_map.json": "[[0, 1]]"}), 1, "toy-class_map.json"),
    ("sage-class-map-binary", lambda t: _reddit(t, **{"class_map.json": GARBAGE}), 1, "toy-class_map.json"),
    ("sage-class-map-none", lambda t: _reddit(t, **{"class_map.json": '{"0": [1, 0]}'}), 1, "toy-class_map.json"),
    ("sage-graph-empty", lambda t: _reddit(t, **{"G.json": ""}), 1, "toy-G.json"),
    ("sage-graph-bad-node", lambda t: _reddit(t, **{"G.json": '{"nodes": [{"id": 1, }]}'}), 1, "toy-G.json"),
    ("sage-graph-huge-link", lambda t: _reddit(t, **{"G.json": '{"nodes": [{"id": 0}], "links": [{"source": '
                                                                '100000000000000000000, "target": 0}]}'}), 1,
     "toy-G.json"),
    # DGL layout
    ("dgl-data-garbage", lambda t: _dgl_reddit(t, GARBAGE), 1, "reddit_data.npz"),
    ("dgl-data-keys", lambda t: _dgl_reddit(t, _npz(x=np.ones(3))), 1, "reddit_data.npz"),
    ("dgl-data-object", lambda t: _dgl_reddit(t, _npz(feature=np.array([None] * 3, dtype=object),
                                                      label=np.zeros(3, int))), 1, "reddit_data.npz"),
    ("dgl-data-1d", lambda t: _dgl_reddit(t, _npz(feature=np.ones(3), label=np.zeros(3, int))), 1,
     "reddit_data.npz"),
    ("dgl-graph-garbage", lambda t: _dgl_reddit(t, _npz(feature=np.ones((3, 2)), label=np.zeros(3, int)), GARBAGE),
     1, "reddit_graph.npz"),
    # Planetoid
    ("pickle-runs-code", lambda t: _pubmed(t, allx=pickle.dumps(_RunsCode(f"touch {t / 'PWNED'}"), protocol=2)), 1,
     "ind.cora.allx"),
    ("pickle-eval", lambda t: _pubmed(t, graph=b"cbuiltins\neval\n(V__import__('os')\ntR."), 1, "ind.cora.graph"),
    ("pickle-garbage", lambda t: _pubmed(t, tx=GARBAGE), 1, "ind.cora.tx"),
    ("pickle-truncated", lambda t: _pubmed(t, ally=pickle.dumps(np.eye(2), protocol=2)[:40]), 1, "ind.cora.ally"),
    ("pickle-wrong-type", lambda t: _pubmed(t, allx=pickle.dumps({"a": 1}, protocol=2)), 1, "ind.cora.allx"),
    ("pickle-graph-list", lambda t: _pubmed(t, graph=pickle.dumps([1, 2], protocol=2)), 1, "ind.cora.graph"),
    ("pickle-graph-strings", lambda t: _pubmed(t, graph=pickle.dumps({0: ["a"]}, protocol=2)), 1, "ind.cora.graph"),
    ("test-index-negative", lambda t: _pubmed(t, **{"test.index": "-1\n7\n"}), 1, "ind.cora.test.index"),
    ("test-index-overwrites", lambda t: _pubmed(t, **{"test.index": "0\n7\n"}), 1, "ind.cora.test.index"),
    ("test-index-huge", lambda t: _pubmed(t, **{"test.index": "6\n99999999999\n"}), 1, "ind.cora.test.index"),
    ("test-index-twice", lambda t: _pubmed(t, **{"test.index": "7\n7\n"}), 1, "ind.cora.test.index"),
    ("linqs-empty", lambda t: ["preprocess", "pubmed", linqs(t, ""), "--out-dir", t / OUT], 1,
     "Pubmed-Diabetes.NODE.paper.tab"),
    ("linqs-binary", lambda t: ["preprocess", "pubmed", linqs(t, GARBAGE), "--out-dir", t / OUT], 1,
     "Pubmed-Diabetes.NODE.paper.tab"),
    # the authors' release
    ("release-feature-empty", lambda t: _release(t, feature=""), 1, "feature.txt"),
    ("release-feature-binary", lambda t: _release(t, feature=GARBAGE), 1, "feature.txt"),
    ("release-feature-ids-only", lambda t: _release(t, feature="1\n2\n3\n"), 1, "feature.txt"),
    ("release-no-graphs", lambda t: ["preprocess", "gfl-release", _write(t / "rel" / "feature.txt", "1 1\n").parent,
                                     "--out-dir", t / OUT], 1, "rel"),
    # AMiner
    ("aminer-empty", lambda t: _aminer(t, ""), 1, "AMiner-Paper.txt"),
    ("aminer-binary", lambda t: _aminer(t, GARBAGE), 1, "AMiner-Paper.txt"),
    ("aminer-venue-map-binary", lambda t: _aminer(t, "#index 1\n#* t\n#@ a, b\n#c KDD\n",
                                                  "--venue-map", _write(t / "v.csv", GARBAGE)), 1, "v.csv"),
    # collections read by `stats`
    ("manifest-list", "manifest-list", 1, "manifest.json"),
    ("manifest-invalid", "manifest-invalid", 1, "manifest.json"),
    ("manifest-graphs-number", "manifest-graphs-number", 1, "manifest.json"),
    ("manifest-missing", "manifest-missing", 1, "manifest.json"),
    ("graphs-flipped-byte", "graphs-flipped-byte", 1, "graphs.bin"),
    ("graphs-truncated", "graphs-truncated", 1, "graphs.bin"),
    ("graphs-garbage", "graphs-garbage", 1, "graphs.bin"),
    ("stats-output-under-a-file", "stats-output-under-a-file", 1, "out.csv"),
    ("preprocess-out-under-a-file", lambda t: ["preprocess", "synthetic", "--small", "--graphs", "1,0,1",
                                               "--nodes", "20,30", "--out-dir", _write(t / "afile", "x") / "coll"], 1,
     "afile/coll"),
]

COLLECTION_EDITS: dict[str, Callable[[Path], None]] = {
    "manifest-list": lambda p: (p / "manifest.json").write_text("[1, 2, 3]"),
    "manifest-invalid": lambda p: (p / "manifest.json").write_text('{"format": '),
    "manifest-graphs-number": lambda p: _manifest(p, lambda m: m.update(graphs=3)),
    "manifest-missing": lambda p: (p / "manifest.json").unlink(),
    "graphs-flipped-byte": _flip_byte,
    "graphs-truncated": lambda p: (_manifest(p, lambda m: m.pop("graphs_sha256")),
                                   (p / "graphs.bin").write_bytes((p / "graphs.bin").read_bytes()[:200])),
    "graphs-garbage": lambda p: (_manifest(p, lambda m: m.pop("graphs_sha256")),
                                 (p / "graphs.bin").write_bytes(GARBAGE)),
    "stats-output-under-a-file": lambda p: None,
}


def _args(build, tmp: Path, collection_dir: Path) -> list:
    if isinstance(build, str):
        path = broken_collection(tmp, collection_dir, COLLECTION_EDITS[build])
        if build == "stats-output-under-a-file":
            return ["stats", path, "-o", _write(tmp / "afile", "x") / "out.csv"]
        return ["stats", path, "-o", tmp / "out.csv"]
    return build(tmp)


def _leftovers(tmp: Path) -> list[str]:
    """Output files or hidden temporaries of the output locations used by the cases."""
    names = {OUT, "out.csv", "coll"}
    found = []
    for folder in (tmp, tmp / "afile" if (tmp / "afile").is_dir() else None):
        if folder is None:
            continue
        for entry in folder.iterdir():
            if entry.name in names or any(entry.name.startswith(f".{n}.") for n in names):
                found.append(entry.name)
    return found


@pytest.mark.parametrize("case_id, build, code, needle", OPTION_CASES + FILE_CASES,
                         ids=[c[0] for c in OPTION_CASES + FILE_CASES])
def test_hostile_input(case_id, build, code, needle, tmp_path, collection_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)  # runs/ and the default data root stay inside the case's folder
    args = [str(a) for a in _args(build, tmp_path, collection_dir)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == code, (result.exit_code, result.stderr, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception  # no exception escaped the CLI
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr
    assert needle in errors[0], errors[0]
    assert ".tmp" not in errors[0]  # the target is named, never a hidden temporary
    assert result.stdout == ""
    assert _leftovers(tmp_path) == []
    assert not (tmp_path / "PWNED").exists()


def test_at_least_eighty_cases():
    assert len(OPTION_CASES) + len(FILE_CASES) >= 80


# --------------------------------------------------------------------------- repaired, not refused


def _run_ok(args: list, tmp: Path) -> CliRunner:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert result.stdout == ""
    return result


def _load(path: Path):
    from gflkit.data import GraphCollection

    return GraphCollection.load(path)


def test_pickle_that_runs_code_never_runs(tmp_path):
    from gflkit.data.sources.planetoid import read_planetoid
    from gflkit.errors import DataFormatError

    marker = tmp_path / "PWNED"
    folder = planetoid(tmp_path, tx=pickle.dumps(_RunsCode(f"touch {marker}"), protocol=2))
    with pytest.raises(DataFormatError, match="refused to unpickle posix.system|refused to unpickle os.system"):
        read_planetoid(folder, "cora")
    assert not marker.exists()


def test_planetoid_pickles_still_read(shared_data):
    from gflkit.data.sources.planetoid import read_planetoid

    src = read_planetoid(shared_data / "planetoid", "cora")
    assert src.g.num_nodes() == 2708 and src.g.ndata["feat"].shape[1] == 1433


def test_nan_features_are_zeroed_and_counted_in_every_reader(tmp_path):
    from gflkit.data.sources.gfl_release import read_gfl_release
    from gflkit.data.sources.planetoid import read_linqs_pubmed, read_planetoid
    from gflkit.data.sources.reddit import read_dgl_reddit, read_graphsage

    bad = np.ones((6, 3), dtype=np.float32)
    bad[1, 2], bad[4, 0] = np.nan, np.inf
    sage = graphsage(tmp_path / "a", **{"feats.npy": _npy(bad)})
    collection, report = read_gfl_release(gfl_release(tmp_path / "b", feature="1 nan 1\n2 inf 0\n3 0 1\n"))
    dgl_folder = tmp_path / "c"
    _dgl_reddit(dgl_folder, _npz(feature=bad[:3], label=np.array([0, 1, 0])))
    tx = sp.csr_matrix(np.array([[np.nan, 1, 1], [1, 1, 1]], dtype=np.float32))
    node = ("NODE\tpaper\ncat=1,2,3:label\tnumeric:w1:0.0\tnumeric:w2:0.0\n"
            "10\tlabel=1\tw1=nan\tw2=1\n11\tlabel=2\tw1=inf\n12\tlabel=3\tw2=2\n")
    sources = [read_graphsage(sage, num_classes=None), read_dgl_reddit(dgl_folder / "dgl", num_classes=None),
               read_planetoid(planetoid(tmp_path / "d", tx=pickle.dumps(tx, protocol=2)), "cora"),
               read_linqs_pubmed(linqs(tmp_path / "e", node))]
    for src in sources:
        assert bool(np.isfinite(src.g.ndata["feat"].numpy()).all()), src.source
        assert "non-finite feature value (set to 0)" in src.report.counts, src.source
    assert all(bool(np.isfinite(g.ndata["feat"].numpy()).all()) for g in collection.graphs)
    assert report.counts["non-finite feature value (set to 0)"] == 2


def test_graphsage_class_id_of_a_trillion_does_not_hang(tmp_path):
    from gflkit.data.sources.reddit import read_graphsage

    classes = {str(i): [7, 10**12][i % 2] for i in range(6)}
    src = read_graphsage(graphsage(tmp_path, **{"class_map.json": json.dumps(classes)}), num_classes=None)
    assert src.classes == ["7", str(10**12)]
    assert src.g.ndata["label"].tolist() == [0, 1, 0, 1, 0, 1]


def test_csv_with_a_byte_order_mark(tmp_path):
    from gflkit.data.sources.tables import TableColumns, read_table_collection

    folder = tables(tmp_path, nodes=("\ufeff" + NODES_G).encode("utf-8"), edges=("\ufeff" + EDGES_G).encode())
    collection, report = read_table_collection(folder / "edges.csv", folder / "nodes.csv",
                                               columns=TableColumns(graph="g", features="f"), n_graphs=(1, 0, 1))
    assert len(collection) == 2 and not report


def test_node_ids_near_the_int64_limit_keep_their_graphs(tmp_path):
    from gflkit.data.sources.tables import TableColumns, read_table_collection

    big = 2**63 - 10
    nodes = "id,label,g,f\n" + "".join(f"{big + i},{'xy'[i % 2]},g{k},1\n" for k in range(3) for i in range(4))
    edges = "src,dst,g\n" + "".join(f"{big + i},{big + (i + 1) % 4},g{k}\n" for k in range(3) for i in range(4))
    folder = tables(tmp_path, nodes=nodes, edges=edges)
    collection, report = read_table_collection(folder / "edges.csv", folder / "nodes.csv",
                                               columns=TableColumns(graph="g", features="f"), n_graphs=(1, 1, 1))
    assert not report
    assert [g.num_nodes() for g in collection.graphs] == [4, 4, 4]
    assert [g.num_edges() for g in collection.graphs] == [8, 8, 8]
    assert collection.graphs[0].ndata["orig_id"].tolist() == [big + i for i in range(4)]


def test_ids_beyond_int64_are_counted_not_wrapped(tmp_path):
    from gflkit.data.sources.tables import TableColumns, read_table_graph

    nodes = NODES + f"{10**20},x,1,1\n{2**64 + 3},y,1,1\n"
    folder = tables(tmp_path, nodes=nodes)
    src = read_table_graph(folder / "edges.csv", folder / "nodes.csv", columns=TableColumns(features="f"))
    assert src.g.num_nodes() == 12 and src.report.counts["node id out of range 0..2**63-1"] == 2
    assert "non-numeric node id" not in src.report.counts  # the same words as every other reader
    assert src.g.ndata["orig_id"].tolist() == list(range(12))


def test_release_ids_beyond_int64_are_counted(tmp_path):
    from gflkit.data.sources.gfl_release import read_gfl_release

    folder = gfl_release(tmp_path, graph=f"1 2\n2 3\n{10**20} 1\n")
    collection, report = read_gfl_release(folder)
    assert report.counts["node id out of range 0..2**63-1"] == 2  # one line in each of the two graphs
    assert [g.num_nodes() for g in collection.graphs] == [3, 3]


def test_ctrl_c_while_starting_up_is_one_line(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-c", "import sys; print('go', flush=True); "
                             "sys.argv = ['gflkit', 'stats', 'none']; from gflkit_cli.main import cli; cli()"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        assert proc.stdout.readline().strip() == "go"
        time.sleep(0.5)  # inside the command's imports of torch and DGL (seconds)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    if proc.returncode == 0:
        pytest.skip("start-up finished before the signal arrived")
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip() == "interrupted"
    assert out == ""


def test_unexpected_error_is_one_line(tmp_path, monkeypatch):
    import gflkit.data

    def boom(*args, **kwargs):
        raise ZeroDivisionError("division by zero\nsecond line")

    monkeypatch.setattr(gflkit.data, "load_collection", boom)
    result = CliRunner().invoke(cli, ["stats", str(tmp_path)])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip() == ("Error: unexpected ZeroDivisionError: division by zero "
                                     "(rerun with -vv to see the traceback)")


def test_output_into_a_read_only_place_names_the_target(collection_dir, tmp_path):
    import os

    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = CliRunner().invoke(cli, ["stats", str(collection_dir), "-o", str(folder / "s.csv")])
    finally:
        folder.chmod(0o755)
    assert result.exit_code == 1 and f"cannot write {folder / 's.csv'}" in result.stderr
    assert list(folder.iterdir()) == []


def test_stats_output_is_clean_csv(collection_dir):
    result = CliRunner().invoke(cli, ["stats", str(collection_dir)])
    assert result.exit_code == 0
    table = pd.read_csv(io.StringIO(result.stdout))
    assert len(table) == 1


def test_byte_order_marks_in_text_dumps(tmp_path):
    from gflkit.data.sources.aminer import read_aminer
    from gflkit.data.sources.gfl_release import read_gfl_release

    bom = "\ufeff"
    collection, report = read_gfl_release(gfl_release(tmp_path, feature=bom + "1 0.5 0.5\n2 1.0 0.0\n3 0.0 1.0\n",
                                                       graph=bom + "1 2\n2 3\n"))
    assert not report and [g.num_nodes() for g in collection.graphs] == [3, 3]
    dump = _write(tmp_path / "d.txt", bom + "#index 1\n#* graph mining\n#@ ann, bob\n#c KDD\n\n"
                                            "#index 2\n#* more mining\n#@ bob, cy\n#c KDD\n")
    src = read_aminer(dump, num_classes=1, feat_size=4)
    assert src.meta["papers"] == 2 and "unrecognised line" not in src.report.counts
