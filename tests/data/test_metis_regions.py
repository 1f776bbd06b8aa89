"""The ``data/metis_regions.py`` script that cuts one graph's tables into regions."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

SCRIPT = Path(__file__).resolve().parents[2] / "data" / "metis_regions.py"


def test_regions_are_written_with_inner_edges_only(tmp_path):
    # two dense blocks joined by one edge: two parts must separate them
    rng = np.random.default_rng(0)
    blocks = [np.arange(0, 30), np.arange(30, 60)]
    rows = [(a, b) for block in blocks for a in block for b in block if a < b and rng.random() < 0.3]
    rows.append((0, 30))
    pd.DataFrame(rows, columns=["id_1", "id_2"]).to_csv(tmp_path / "edges.csv", index=False)
    pd.DataFrame({"id": np.arange(60) + 100, "label": ["a"] * 30 + ["b"] * 30}).to_csv(
        tmp_path / "nodes.csv", index=False)
    # ids in the edge table are the node table's ids
    edges = pd.read_csv(tmp_path / "edges.csv") + 100
    edges.to_csv(tmp_path / "edges.csv", index=False)
    out = tmp_path / "regions"
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "edges.csv"), str(tmp_path / "nodes.csv"),
                           str(out), "--parts", "2", "--src-col", "id_1", "--dst-col", "id_2"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "60 nodes in 2 regions" in done.stderr
    nodes, kept = pd.read_csv(out / "nodes.csv"), pd.read_csv(out / "edges.csv")
    region = dict(zip(nodes["id"], nodes["region"]))
    assert set(nodes["region"]) == {"r0", "r1"}
    assert (kept["region"] == kept["id_1"].map(region)).all()
    assert (kept["id_1"].map(region) == kept["id_2"].map(region)).all()
    assert len(kept) == len(edges) - 1  # only the bridge is cut
    assert sorted(out.iterdir()) == [out / "edges.csv", out / "nodes.csv"]


def test_planetoid_tables_then_regions(tmp_path, shared_data):
    tables = tmp_path / "cora"
    script = SCRIPT.parent / "planetoid_tables.py"
    done = subprocess.run([sys.executable, str(script), str(shared_data / "planetoid"), str(tables)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "2708 nodes, 5278 edges, 7 classes" in done.stderr
    nodes, edges = pd.read_csv(tables / "nodes.csv"), pd.read_csv(tables / "edges.csv")
    feat = np.load(tables / "features.npy")
    assert len(nodes) == feat.shape[0] == 2708 and feat.shape[1] == 1433
    assert (edges["src"] < edges["dst"]).all() and len(edges) == 5278
    assert sorted(p.name for p in tables.iterdir()) == ["edges.csv", "features.npy", "nodes.csv"]
