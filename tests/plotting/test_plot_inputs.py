"""What ``gflkit plot`` does with cells and sizes it cannot draw: one line naming the file, column and line,
or the option and the largest value that fits; text from the tables drawn as it is."""
from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import invoke, one_line_error

import gflkit.sizes

pytest.importorskip("matplotlib")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _csv(tmp_path: Path, rows: list[str], header: str = "model,aggregator,accuracy,ci95,snr,seed") -> Path:
    path = tmp_path / "rows.csv"
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def test_an_empty_accuracy_cell_names_file_column_and_line(tmp_path):
    path = _csv(tmp_path, ["gfl,mean,50,1,1,0", "gfl,mean,,1,2,0", "gfl,mean,60,1,3,0"])
    one_line_error(invoke("plot", "lines", path, "--x", "snr", "-o", tmp_path / "a.png"),
                   "rows.csv", "'accuracy'", "line 3", "empty or NaN")
    assert not (tmp_path / "a.png").exists()


def test_a_nan_accuracy_cell_is_named_too(tmp_path):
    path = _csv(tmp_path, ["gfl,mean,50,1,1,0", "gfl,mean,NaN,1,2,0"])
    one_line_error(invoke("plot", "lines", path, "--x", "snr", "-o", tmp_path / "a.png"), "'accuracy'", "line 3")


def test_a_text_cell_in_a_column_of_numbers_is_named(tmp_path):
    path = _csv(tmp_path, ["gfl,mean,50,1,1,0", "gfl,mean,abc,1,2,0"])
    one_line_error(invoke("plot", "lines", path, "--x", "snr", "-o", tmp_path / "a.png"),
                   "'accuracy'", "line 3", "'abc' is not a finite number")


def test_an_empty_cell_of_the_x_column_is_named(tmp_path):
    path = _csv(tmp_path, ["gfl,mean,50,1,1,0", "gfl,mean,55,1,,0"])
    one_line_error(invoke("plot", "lines", path, "--x", "snr", "-o", tmp_path / "a.png"), "'snr'", "line 3")


def test_a_text_ci_cell_is_named_in_the_shots_figure(tmp_path):
    path = _csv(tmp_path, ["gfl,mean,50,x,1,0"], header="model,aggregator,accuracy,ci95,k_shot,seed")
    one_line_error(invoke("plot", "shots", path, "-o", tmp_path / "a.png"), "'ci95'", "line 2")


def test_math_notation_in_names_and_values_is_drawn_as_text(tmp_path):
    path = _csv(tmp_path, ["gfl,mean,50,1,$\\frac$,0", "$\\frac$,,55,1,$\\frac$,0", "gfl,mean,60,1,3,0"])
    bars = tmp_path / "bars.csv"
    bars.write_text("model,accuracy,ci95,dataset\ngfl,50,1,$\\frac{a}$\n$\\frac$,55,1,$\\frac{a}$\n")
    for command in (["lines", path, "--x", "snr"], ["bars", bars]):
        out = tmp_path / f"{command[0]}.png"
        result = invoke("plot", *command, "-o", out)
        assert result.exit_code == 0, result.output
        assert out.read_bytes().startswith(PNG_MAGIC)


def test_an_x_column_with_too_many_values_is_refused_before_grouping(tmp_path):
    rows = [f"gfl,mean,{50 + i % 7},1,{i / 7},0" for i in range(100_000)]
    one_line_error(invoke("plot", "lines", _csv(tmp_path, rows), "--x", "snr", "-o", tmp_path / "a.png"),
                   "'snr'", "100000 distinct values", "at most 1000")


def test_a_heatmap_dpi_that_does_not_fit_names_the_largest(tmp_path, monkeypatch):
    monkeypatch.setattr(gflkit.sizes, "available_memory", lambda: 4 * 2**30)
    rows = [f"{i},{j},gfl,mean,50,1,1,0.5,1.5,0" for i in range(40) for j in range(40)]
    path = _csv(tmp_path, rows, header="a,b,model,aggregator,accuracy,ci95,delta,delta_lo,delta_hi,seed")
    line = one_line_error(invoke("plot", "heatmap", path, "--x", "a", "--y", "b", "--dpi", 1200,
                                 "-o", tmp_path / "h.png"), "--dpi 1200", "at most", code=2)
    largest = int(line.rsplit("at most ", 1)[1].split()[0])
    assert 30 <= largest < 1200
    assert not (tmp_path / "h.png").exists()
