"""One switch for progress bars: --no-progress and -q hide them; per-graph baselines show one."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from gflkit.progress import progress_bar, progress_enabled, set_progress
from gflkit_cli.main import cli

TINY = ["preprocess", "synthetic", "--graphs", "2,1,1", "--nodes", "40,50", "--feat-size", "4"]


@pytest.fixture(autouse=True)
def restore_progress():
    yield
    set_progress(True)


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
    from gflkit.metrics import baseline_accuracies
    from gflkit.models.baselines import PER_GRAPH

    sampler = EpisodeSampler(small_family, "test", EpisodeConfig(k_shot=5), seed=0)
    baseline_accuracies(PER_GRAPH["lp"], sampler)
    err = capsys.readouterr().err
    assert "per graph" in err and f"0/{len(sampler.graph_ids)}" in err
