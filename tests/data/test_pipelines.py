"""Read -> sample -> save as library calls: the same collection as ``gflkit preprocess``, nothing printed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import invoke

from gflkit.data import SMALL_SPEC
from gflkit.data.pipelines import Sampling, preprocess_synthetic, preprocess_tables
from gflkit.data.sources.tables import TableColumns
from gflkit.errors import GFLError

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "samples" / "tables"


def _manifest(path: Path) -> dict:
    """The manifest without ``graphs_sha256`` (the bytes of graphs.bin differ between writes of one collection)."""
    manifest = json.loads((path / "manifest.json").read_text())
    manifest.pop("graphs_sha256")
    return manifest


def test_synthetic_from_python_is_the_command_s_collection(tmp_path, capsys):
    from dataclasses import replace

    spec = replace(SMALL_SPEC, n_train=2, n_val=1, n_test=1)
    done = preprocess_synthetic(spec, name="syn", seed=3, root=tmp_path / "lib", progress=False)
    assert capsys.readouterr().out == ""
    assert done.path == tmp_path / "lib" / "processed" / "syn" and done.report is None and not done.warnings
    result = invoke("preprocess", "synthetic", "--small", "--graphs", "2,1,1", "--name", "syn", "--seed", "3",
                    "--data-root", tmp_path / "cli")
    assert result.exit_code == 0, result.output
    assert _manifest(done.path) == _manifest(tmp_path / "cli" / "processed" / "syn")


@pytest.mark.parametrize("flags, call", [
    (["--graph-col", "graph", "--graphs", "4,1,1"],
     dict(columns=TableColumns(graph="graph", features="f"), sampling=Sampling(n_graphs=(4, 1, 1)))),
    (["--graphs", "3,1,1", "--walk-length", "20,40", "--min-degree", "1"],
     dict(columns=TableColumns(features="f"), sampling=Sampling(n_graphs=(3, 1, 1), walk_length=(20, 40),
                                                                 min_degree=1))),
    (["--graph-col", "graph", "--test-graphs", "g5", "--keep-whole"],
     dict(columns=TableColumns(graph="graph", features="f"), test_graphs=["g5"], sample=False)),
])
def test_tables_from_python_are_the_command_s_collection(tmp_path, flags, call):
    done = preprocess_tables(SAMPLE, name="t", root=tmp_path / "lib", progress=False, **call)
    assert done.report is not None and done.collection.meta["bad_input"] == done.report.as_dict()
    result = invoke("preprocess", "tables", str(SAMPLE), "--feature-cols", "f", *flags, "--name", "t",
                    "--data-root", tmp_path / "cli")
    assert result.exit_code == 0, result.output
    assert _manifest(done.path) == _manifest(tmp_path / "cli" / "processed" / "t")
    for line in done.warnings:  # what the command prints, the library returns
        assert f"warning: {line}" in result.stderr


def test_tables_warn_about_small_classes_in_the_result(tmp_path):
    done = preprocess_tables(SAMPLE, columns=TableColumns(features="f"), k_shot=10, progress=False,
                             sampling=Sampling(n_graphs=(3, 1, 1), walk_length=(20, 40), min_degree=1),
                             out_dir=tmp_path / "out")
    assert done.path == tmp_path / "out" and len(done.warnings) == 1 and "k_shot + 1 = 11" in done.warnings[0]


@pytest.mark.parametrize("call, needle", [
    (dict(test_graphs=["g5"]), "need columns.graph"),
    (dict(sample=True), "need columns.graph"),
    (dict(structural_features=True, columns=TableColumns(graph="graph")), "structural_features computes"),
    (dict(columns=TableColumns(graph="graph", features="f"), test_graphs=["g5"], sample=False,
          sampling=Sampling(n_graphs=(2, 1, 1))), "n_graphs counts subgraphs"),
])
def test_tables_options_that_do_not_go_together_are_refused_before_writing(tmp_path, call, needle):
    with pytest.raises(GFLError, match=needle):
        preprocess_tables(SAMPLE, root=tmp_path, progress=False, **{"columns": TableColumns(features="f"), **call})
    assert not (tmp_path / "processed" / "tables").exists()
