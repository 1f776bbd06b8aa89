"""One switch for progress: bars on a terminal, log lines elsewhere; --no-progress hides bars, -q all but warnings."""
from __future__ import annotations

import io

import pytest
from cli_helpers import invoke
from click.testing import CliRunner

from gflkit.progress import ProgressLines, draws_bars, progress_bar, progress_enabled, set_progress
from gflkit_cli.main import cli

TINY = ["preprocess", "synthetic", "--graphs", "2,1,1", "--nodes", "40,50", "--feat-size", "4"]


@pytest.fixture(autouse=True)
def restore_progress():
    yield
    set_progress(True, counters=True)


@pytest.mark.parametrize("flags, shown", [([], True), (["--no-progress"], False), (["-q"], False)])
def test_root_flags_hide_progress_bars(tmp_path, flags, shown):
    result = CliRunner().invoke(cli, [*flags, *TINY, "--data-root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert ("generating synthetic" in result.stderr) is shown
    assert progress_enabled() is shown


def test_progress_bar_obeys_switch_and_caller(capsys):
    list(progress_bar(range(3), desc="counting"))
    assert "counting" in capsys.readouterr().err
    list(progress_bar(range(3), desc="asked-off", enabled=False))
    set_progress(False)
    list(progress_bar(range(3), desc="switched-off"))
    err = capsys.readouterr().err
    assert "asked-off" not in err and "switched-off" not in err


def test_per_graph_baseline_shows_progress_over_graphs(small_family, capsys):
    from gflkit.config import EpisodeConfig
    from gflkit.episodes import EpisodeSampler
    from gflkit.evaluation.scoring import baseline_accuracies
    from gflkit.models.baselines import PER_GRAPH

    sampler = EpisodeSampler(small_family, "test", EpisodeConfig(k_shot=5), seed=0)
    baseline_accuracies(PER_GRAPH["lp"], sampler)
    err = capsys.readouterr().err
    n = len(sampler.graph_ids)
    assert "per graph" in err and f"{n}/{n} graph" in err and "\r" not in err  # capsys is no terminal: a log line


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bars_on_a_terminal_lines_elsewhere():
    terminal, log = _Terminal(), io.StringIO()
    assert draws_bars(terminal) and not draws_bars(log)
    list(progress_bar(range(5), desc="drawn", file=terminal))
    assert "\r" in terminal.getvalue() and "drawn" in terminal.getvalue()
    bar = progress_bar(range(5), desc="logged", unit="step", file=log)
    assert isinstance(bar, ProgressLines)
    list(bar)
    assert log.getvalue() == "logged: 5/5 steps in 0s\n"


def test_progress_lines_every_tenth_or_30_seconds_whichever_is_rarer():
    now, out = [0.0], io.StringIO()
    lines = ProgressLines(range(1, 401), desc="training gfl", unit="steps", file=out, clock=lambda: now[0])
    for step in lines:  # 400 steps of 1 s: 10% (40 s) is rarer than 30 s
        now[0] += 1
        if step == 200:
            lines.set_postfix(loss="0.512", val="0.640")
    lines.close()  # the loop's end closed it already: one closing line
    written = out.getvalue().splitlines()
    assert len(written) == 10  # at 40, 80, ... 360 steps, then the closing line
    assert written[0] == "training gfl: 40/400 steps (10%), 40s so far, about 6m00s left"
    assert written[4] == "training gfl: 200/400 steps (50%), 3m20s so far, about 3m20s left, loss=0.512, val=0.640"
    assert written[-1] == "training gfl: 400/400 steps in 6m40s, loss=0.512, val=0.640"
    now[0], out = 0.0, io.StringIO()
    fast = ProgressLines(desc="fast", total=1000, file=out, clock=lambda: now[0])
    for _ in range(1000):  # 1000 steps of 1/8 s: 30 s (240 steps) is rarer than 10% (100 steps)
        now[0] += 0.125
        fast.update(1)
    assert [line.split(" (")[0] for line in out.getvalue().splitlines()] == [
        "fast: 240/1000 it", "fast: 480/1000 it", "fast: 720/1000 it", "fast: 960/1000 it"]


def test_resumed_progress_estimates_from_the_steps_it_ran():
    now, out = [0.0], io.StringIO()
    lines = ProgressLines(desc="training", total=100, initial=50, unit="steps", file=out, clock=lambda: now[0])
    now[0] = 60.0
    lines.update(20)
    assert out.getvalue() == "training: 70/100 steps (70%), 1m00s so far, about 1m30s left\n"


def test_captured_train_and_compare_stderr_has_no_carriage_return(root, tmp_path):
    train = invoke("train", "tiny", "--steps", "4", "--eval-every", "2", "--k-shot", "5", "--data-root", root,
                   "--run-dir", tmp_path / "run")
    assert train.exit_code == 0, train.output
    assert "\r" not in train.stderr and "training gfl: 4/4 steps in" in train.stderr
    compare = invoke("compare", "tiny", "--model", "protonet,lp", "--seed", "0", "--steps", "2", "--eval-every", "2",
                     "--k-shot", "5", "--data-root", root)
    assert compare.exit_code == 0, compare.output
    assert "\r" not in compare.stderr and "compare: run 2 of 2 (lp, seed 0)" in compare.stderr


def test_quiet_shows_warnings_only(root, tmp_path):
    result = invoke("-q", "train", "tiny", "--steps", "2", "--eval-every", "2", "--k-shot", "5", "--data-root", root,
                    "--run-dir", tmp_path / "run", "-o", tmp_path / "row.csv")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "best.pt").is_file() and (tmp_path / "row.csv").is_file()
    assert "run written" not in result.stderr and "wrote " not in result.stderr and "training gfl" not in result.stderr
    assert [line for line in result.stderr.splitlines() if not line.startswith("warning: ")] == []
    loud = invoke("train", "tiny", "--steps", "2", "--eval-every", "2", "--k-shot", "5", "--data-root", root,
                  "--run-dir", tmp_path / "run2", "-o", tmp_path / "row2.csv")
    assert f"run written to {tmp_path / 'run2'}" in loud.stderr and f"wrote {tmp_path / 'row2.csv'}" in loud.stderr
