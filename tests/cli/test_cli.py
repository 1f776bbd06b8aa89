"""The command line end to end on a tiny family: CSV on stdout, files, exit codes."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from cli_helpers import csv_table, invoke, one_line_error

COLUMNS = ["model", "aggregator", "dataset", "split", "n_graphs", "k_shot", "accuracy", "ci95", "seed"]
FAST = ["--steps", "5", "--eval-every", "5", "--k-shot", "5"]


@pytest.fixture(scope="module")
def trained(root, tmp_path_factory):
    """A run folder and the CSV that ``gflkit train`` printed."""
    run = tmp_path_factory.mktemp("runs") / "gfl"
    result = invoke("train", *FAST, "--run-dir", run, "--data-root", root, "tiny")
    assert "run written to" in result.stderr
    return run, csv_table(result)


def test_train_prints_one_csv_row(trained):
    run, table = trained
    assert set(COLUMNS) <= set(table.columns) and list(table.columns[:4]) == COLUMNS[:4]
    row = table.iloc[0]
    assert len(table) == 1
    assert (row["model"], row["aggregator"], row["dataset"], row["split"]) == ("gfl", "mean", "tiny", "test")
    assert (row["n_graphs"], row["k_shot"], row["seed"]) == (2, 5, 0)
    assert 0 <= row["accuracy"] <= 100 and row["ci95"] >= 0


def test_run_folder(trained):
    run, _ = trained
    assert {p.name for p in run.iterdir()} >= {"config.json", "metrics.csv", "best.pt"}
    config = json.loads((run / "config.json").read_text())
    assert config["dataset"] == "tiny" and config["train_config"]["steps"] == 5
    metrics = pd.read_csv(run / "metrics.csv")
    assert list(metrics["step"]) == [1, 2, 3, 4, 5]


def test_train_with_attention_aggregator(root, tmp_path):
    table = csv_table(invoke("train", *FAST, "--aggregator", "att", "--run-dir", tmp_path / "att", "--data-root", root,
                             "tiny"))
    assert table.loc[0, "aggregator"] == "att"


def test_train_json_and_output_file(root, tmp_path):
    result = invoke("train", *FAST, "--model", "protonet", "--format", "json", "--run-dir", tmp_path / "p",
                    "--data-root", root, "tiny")
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    assert len(records) == 1 and records[0]["model"] == "protonet" and records[0]["aggregator"] == ""
    out = tmp_path / "table.csv"
    result = invoke("train", *FAST, "--model", "protonet", "-o", out, "--run-dir", tmp_path / "p2", "--data-root", root,
                    "tiny")
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and f"wrote {out}" in result.stderr
    from_file = pd.read_csv(out, keep_default_na=False)  # the empty aggregator stays ""
    # the same seeded run: the same row (CSV rounds to 4 decimals)
    pd.testing.assert_frame_equal(from_file, pd.DataFrame(records)[from_file.columns], check_dtype=False, atol=1e-4)


def test_evaluate_run(trained, root):
    run, trained_table = trained
    table = csv_table(invoke("evaluate", run, "tiny", "--episodes", "2", "--data-root", root))
    assert set(COLUMNS) <= set(table.columns)
    assert table.loc[0, "episodes"] == 2 and table.loc[0, "k_shot"] == 5  # the run's own k_shot
    # the same checkpoint and episodes as right after training
    again = csv_table(invoke("evaluate", run, "tiny", "--data-root", root))
    assert again.loc[0, "accuracy"] == pytest.approx(trained_table.loc[0, "accuracy"])


def test_evaluate_per_graph_baseline(root):
    table = csv_table(invoke("evaluate", "--baseline", "gcn", "--k-shot", "5", "--data-root", root, "tiny"))
    row = table.iloc[0]
    assert (row["model"], row["dataset"], row["n_graphs"], row["k_shot"]) == ("gcn", "tiny", 2, 5)


def test_missing_collection_is_a_one_line_error(tmp_path):
    line = one_line_error(invoke("train", *FAST, "--data-root", tmp_path, "nope"), code=1)
    assert "no collection at 'nope'" in line


def test_missing_run_is_a_one_line_error(root, tmp_path):
    line = one_line_error(invoke("evaluate", tmp_path / "no-run", "tiny", "--data-root", root), code=1)
    assert "no such checkpoint" in line
    assert len(one_line_error(invoke("evaluate", "--data-root", root), code=2)) > 0  # neither RUN nor --baseline


@pytest.mark.parametrize("args", [
    ["train", "--aggregator", "sum"],
    ["train", "--steps", "0"],
    ["evaluate", "--baseline", "nope", "tiny"],
    ["evaluate", "run", "--format", "xml"],
])
def test_bad_option_value_exits_2(args):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "Invalid value" in result.stderr
