"""Quantile classes from a numeric label column (``label_quantiles``, ``preprocess tables --bin-quantiles``)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gflkit.data import GraphCollection
from gflkit.data.sources.table_labels import quantile_classes
from gflkit.data.sources.tables import TableColumns, read_table_collection, read_table_graph
from gflkit.errors import GFLError
from gflkit_cli.main import cli


def _tables(tmp_path: Path, labels: list[str], graphs: int = 1) -> tuple[Path, Path]:
    """A ring per graph over ``labels`` (one node each), one feature column, optional graph column."""
    n = len(labels)
    nodes = tmp_path / "nodes.csv"
    edges = tmp_path / "edges.csv"
    with_graph = graphs > 1
    head = "graph," if with_graph else ""
    nodes.write_text(f"{head}id,count,f_a\n" + "".join(
        f"{'g%d,' % (i % graphs) if with_graph else ''}{i},{v},{i % 3}\n" for i, v in enumerate(labels)))
    rows = []
    for g in range(graphs):
        members = [i for i in range(n) if i % graphs == g]
        for a, b in zip(members, members[1:] + members[:1]):
            rows.append(f"{'g%d,' % g if with_graph else ''}{a},{b}\n")
    edges.write_text(f"{head}src,dst\n" + "".join(rows))
    return edges, nodes


COLUMNS = TableColumns(label="count", features="f_", label_quantiles=4)


def test_quantile_classes_split_values_evenly_and_in_order():
    raw = np.array([str(v) for v in range(20)][::-1], dtype=object)
    names, bins = quantile_classes(raw, 4, "t.csv: column 'count'")
    assert [int(x) for x in names] == [int(v) // 5 for v in range(20)][::-1]
    assert bins["counts"] == [5, 5, 5, 5] and bins["quantiles"] == 4
    assert bins["edges"][0] == 0.0 and bins["edges"][-1] == 19.0 and len(bins["edges"]) == 5


def test_ties_share_a_class_and_empty_bins_are_dropped():
    raw = np.array(["0"] * 6 + ["1", "2", "3", "4"], dtype=object)  # the 0s fill more than one quartile
    names, bins = quantile_classes(raw, 4, "where")
    assert len({names[i] for i in range(6)}) == 1  # equal values, one class
    assert sum(bins["counts"]) == 10 and len(bins["counts"]) == len(bins["edges"]) - 1 < 4
    assert [int(x) for x in names] == sorted(int(x) for x in names)  # classes follow the values
    again, same = quantile_classes(raw, 4, "where")
    assert list(again) == list(names) and same == bins


def test_unlabelled_and_non_numeric_cells():
    raw = np.array(["", "3", "x", "inf", "1", "2", "4"], dtype=object)
    names, bins = quantile_classes(raw, 2, "where")
    assert names[0] == "" and names[2] is None and names[3] is None
    assert sum(bins["counts"]) == 4


def test_one_graph_is_binned_and_the_bins_recorded(tmp_path):
    edges, nodes = _tables(tmp_path, [str(v * 10) for v in range(16)] + ["-1", "abc"])
    s = read_table_graph(edges, nodes, columns=COLUMNS)
    assert s.classes == ["0", "1", "2", "3"]
    label = s.g.ndata["label"].tolist()
    assert label[:16] == [v // 4 for v in range(16)]
    assert label[16:] == [-1, -1]  # the -1 marker, and a non-numeric cell (counted)
    assert s.report.counts == {"non-numeric label": 1}
    assert s.meta["label_bins"] == {"quantiles": 4, "edges": [0.0, 37.5, 75.0, 112.5, 150.0],
                                    "counts": [4, 4, 4, 4], "column": "count"}


def test_many_graphs_bins_over_every_graph(tmp_path):
    edges, nodes = _tables(tmp_path, [str(v) for v in range(24)], graphs=3)
    c, _ = read_table_collection(edges, nodes, columns=TableColumns(label="count", features="f_", graph="graph",
                                                                    label_quantiles=3), n_graphs=(1, 1, 1))
    assert c.classes == ["0", "1", "2"] and c.meta["label_bins"]["counts"] == [8, 8, 8]


def test_a_non_numeric_column_is_one_error_naming_file_and_column(tmp_path):
    edges, nodes = _tables(tmp_path, ["low", "high", "mid", "low"])
    with pytest.raises(GFLError) as err:
        read_table_graph(edges, nodes, columns=COLUMNS)
    assert str(nodes) in str(err.value) and "'count'" in str(err.value)


def test_cli_bins_and_writes_the_manifest(tmp_path):
    edges, nodes = _tables(tmp_path, [str(v) for v in range(60)])
    root = tmp_path / "root"
    args = ["preprocess", "tables", "--edges", str(edges), "--nodes", str(nodes), "--label-col", "count",
            "--feature-cols", "f_", "--bin-quantiles", "3", "--graphs", "2,1,1", "--walk-length", "20,40",
            "--min-degree", "1", "--k-shot", "2", "--name", "binned", "--data-root", str(root)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    manifest = json.loads((root / "processed" / "binned" / "manifest.json").read_text())
    assert manifest["meta"]["label_bins"]["counts"] == [20, 20, 20]
    assert GraphCollection.load(root / "processed" / "binned").classes == ["0", "1", "2"]


def test_cli_non_numeric_column_is_one_line(tmp_path):
    edges, nodes = _tables(tmp_path, ["a", "b", "c", "d"])
    root = tmp_path / "root"
    result = CliRunner().invoke(cli, ["preprocess", "tables", "--edges", str(edges), "--nodes", str(nodes),
                                      "--label-col", "count", "--feature-cols", "f_", "--bin-quantiles", "2",
                                      "--data-root", str(root)])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "nodes.csv" in lines[0] and "'count'" in lines[0] and "Traceback" not in lines[0]
    assert not (root / "processed").exists() or not any((root / "processed").iterdir())


@pytest.mark.parametrize("value", ["1", "0", "x"])
def test_cli_refuses_a_bad_quantile_count(tmp_path, value):
    result = CliRunner().invoke(cli, ["preprocess", "tables", "--bin-quantiles", value, "--data-root",
                                      str(tmp_path)])
    assert result.exit_code == 2 and "--bin-quantiles" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("network, expected", [("chameleon", 2277), ("squirrel", 5201)])
def test_wikipedia_networks_build(shared_data, network, expected):
    d = shared_data / "wikipedia"
    s = read_table_graph(d / f"{network}_edges.csv", d / f"{network}_target.csv",
                         features=d / f"{network}_features.json", feat_size=16,
                         columns=TableColumns(src="id1", dst="id2", label="target", label_quantiles=5))
    assert s.g.num_nodes() == expected and s.classes == ["0", "1", "2", "3", "4"]
    counts = s.meta["label_bins"]["counts"]
    assert sum(counts) == expected and max(counts) - min(counts) < 0.05 * expected
    assert set(s.report.counts) <= {"self-loop (dropped)"}
