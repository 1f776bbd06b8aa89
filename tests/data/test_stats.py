"""``gflkit stats`` and the preprocess commands that feed it, through the CLI."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from gflkit.data.stats import STATS_COLUMNS

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "samples" / "tables"


@pytest.fixture(scope="module")
def run():
    from gflkit_cli.main import cli

    def invoke(*args):
        result = CliRunner().invoke(cli, [str(a) for a in args])
        return result

    return invoke


def _table(result) -> pd.DataFrame:
    assert result.exit_code == 0, result.output
    return pd.read_csv(io.StringIO(result.stdout))


def test_stats_of_synthetic_family(run, small_family_dir, small_family):
    df = _table(run("stats", small_family_dir))
    assert list(df.columns) == STATS_COLUMNS and len(df) == 1
    row = df.iloc[0]
    assert row.dataset == "small" and (row.n_train, row.n_val, row.n_test) == (16, 4, 8)
    assert row.avg_nodes == pytest.approx(sum(g.num_nodes() for g in small_family.graphs) / 28, abs=1e-3)
    assert row.feat_size == 32 and row.num_classes == small_family.num_classes
    assert pd.isna(row.avg_walk_steps) and pd.isna(row.overlap_test)


def test_tables_sampled_then_stats(run, tmp_path):
    common = ["--graphs", "3,1,1", "--walk-length", "20,40", "--min-degree", "3", "--feature-cols", "f",
              "--data-root", tmp_path]
    r = run("preprocess", "tables", SAMPLE, "--name", "shared", *common)
    assert r.exit_code == 0, r.output
    r = run("preprocess", "tables", SAMPLE, "--name", "apart", "--disjoint", *common)
    assert r.exit_code == 0, r.output
    df = _table(run("stats", "shared", "apart", "--data-root", tmp_path))
    assert df.dataset.tolist() == ["shared", "apart"] and df.method.tolist() == ["walk", "walk"]
    assert (df.avg_walk_steps >= 20).all() and (df.avg_walk_steps < 40).all()
    assert (df.avg_nodes <= df.avg_walk_steps + 1).all()
    assert df.overlap_val.iloc[1] == 0 and df.overlap_test.iloc[1] == 0
    assert df.feat_size.tolist() == [4, 4] and df.num_classes.tolist() == [3, 3]


def test_tables_many_graphs_and_json_output(run, tmp_path):
    r = run("preprocess", "tables", SAMPLE, "--graph-col", "graph", "--feature-cols", "f0,f1,f2",
            "--graphs", "4,1,1", "--out-dir", tmp_path / "many")
    assert r.exit_code == 0, r.output
    out = tmp_path / "stats.json"
    r = run("stats", tmp_path / "many", "-o", out, "--format", "json")
    assert r.exit_code == 0 and r.stdout == ""
    (row,) = json.loads(out.read_text())
    assert (row["n_train"], row["n_val"], row["n_test"]) == (4, 1, 1)
    assert row["avg_nodes"] == 30 and row["feat_size"] == 3 and row["overlap_test"] == 0


def test_gfl_release_then_stats(run, shared_data, tmp_path):
    r = run("preprocess", "gfl-release", shared_data / "gfl_release_sample", "--data-root", tmp_path)
    assert r.exit_code == 0, r.output
    row = _table(run("stats", "gfl_release", "--data-root", tmp_path)).iloc[0]
    assert (row.avg_nodes, row.avg_edges, row.avg_walk_steps) == (6.5, 5.0, 5.0)
    assert (row.n_train, row.n_val, row.n_test, row.overlap_test) == (1, 0, 1, 0.0)


def test_missing_input_is_one_line_exit_1(run, tmp_path):
    r = run("preprocess", "tables", tmp_path, "--feature-cols", "f")
    assert r.exit_code == 1
    assert str(tmp_path / "edges.csv") in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run("preprocess", "gfl-release", "--data-root", tmp_path)
    assert r.exit_code == 1 and "gfl_release" in r.stderr
    r = run("stats", tmp_path / "nothing")
    assert r.exit_code == 1 and "nothing" in r.stderr


def test_stats_without_data_lists_every_collection(run, small_family, tmp_path):
    for name in ("beta", "alpha"):
        small_family.save(tmp_path / "processed" / name)
    (tmp_path / "processed" / "not-a-collection").mkdir()
    df = _table(run("stats", "--data-root", tmp_path))
    assert df.dataset.tolist() == ["small", "small"] and len(df) == 2  # names come from the manifests
    r = run("stats", "--data-root", tmp_path / "empty")
    assert r.exit_code == 1 and "preprocess" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_folder_in_working_directory_does_not_shadow_a_collection(run, small_family, tmp_path, monkeypatch,
                                                                  caplog):
    from gflkit.data import SMALL_SPEC, make_synthetic_family
    from gflkit.paths import resolve_collection

    small_family.save(tmp_path / "root" / "processed" / "fam")
    other = make_synthetic_family(SMALL_SPEC, seed=1, name="local")
    other.save(tmp_path / "cwd" / "fam")
    monkeypatch.chdir(tmp_path / "cwd")
    with caplog.at_level("WARNING", logger="gflkit.paths"):
        assert resolve_collection("fam", tmp_path / "root") == tmp_path / "root" / "processed" / "fam"
    assert len(caplog.records) == 1 and "./fam" in caplog.text
    assert resolve_collection("./fam", tmp_path / "root").resolve() == (tmp_path / "cwd" / "fam").resolve()
    assert resolve_collection("fam", tmp_path / "elsewhere") == Path("fam")  # no collection: the folder
    assert resolve_collection("nothing", tmp_path / "root") is None
    assert _table(run("stats", "fam", "--data-root", tmp_path / "root")).dataset.tolist() == ["small"]
    assert _table(run("stats", "./fam", "--data-root", tmp_path / "root")).dataset.tolist() == ["local"]
