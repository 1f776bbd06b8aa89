"""compare / ablate / sweep: rows parse with pandas and carry every documented column."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from gflkit.config import EpisodeConfig, TrainConfig
from gflkit.episodes import EpisodeSampler
from gflkit.metrics import baseline_accuracies, transfer_accuracies
from gflkit.models.baselines import PER_GRAPH, TRANSFER
from gflkit.training import fit_transfer
from gflkit_cli.main import cli

RESULT = ["model", "aggregator", "dataset", "split", "n_graphs", "k_shot", "episodes", "accuracy", "ci95", "std", "seed"]
FAST = ["--steps", "4", "--eval-every", "2", "--k-shot", "5"]


def _csv(*args) -> pd.DataFrame:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return pd.read_csv(io.StringIO(result.stdout), keep_default_na=False)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    path = tmp_path_factory.mktemp("root")
    result = CliRunner().invoke(cli, ["preprocess", "synthetic", "--small", "--name", "tiny", "--graphs", "3,2,2",
                                      "--nodes", "100,150", "--data-root", str(path)])
    assert result.exit_code == 0, result.output
    return path


def test_ablate_drop_gate_rows(root):
    df = _csv("ablate", "tiny", "--drop", "gate", *FAST, "--data-root", root)
    assert list(df.columns) == ["variant", "description"] + RESULT[:-1] + ["delta", "seed"]
    assert list(df.variant) == ["full", "gate"]
    assert df.delta[0] == 0
    assert df.delta[1] == pytest.approx(df.accuracy[1] - df.accuracy[0], abs=1e-3)
    assert df.description[1].startswith("M2a")


def test_ablate_all_with_seeds(root):
    df = _csv("ablate", "tiny", "--all", "--seeds", "0,1", *FAST, "--data-root", root)
    assert len(df) == 2 * 5
    assert sorted(set(df.variant)) == ["full", "gate", "hierarchy", "recon", "structure"]
    assert sorted(set(df.seed)) == [0, 1]


def test_sweep_mu_and_k_shot(root):
    df = _csv("sweep", "tiny", "--param", "mu", "--values", "0.5,0.9", *FAST, "--data-root", root)
    assert list(df.columns) == ["param", "value"] + RESULT
    assert list(df.value) == [0.5, 0.9] and set(df.model) == {"gfl"}
    df = _csv("sweep", "tiny", "--param", "k-shot", "--values", "1,3", "--models", "gfl,protonet",
              "--steps", "2", "--eval-every", "2", "--data-root", root)
    assert list(df.k_shot) == [1, 1, 3, 3] and list(df.model) == ["gfl", "protonet"] * 2


def test_compare_rows(root):
    df = _csv("compare", "tiny", "--models", "gfl,protonet,lp", *FAST, "--data-root", root)
    assert list(df.columns) == RESULT
    assert list(zip(df.model, df.aggregator)) == [("gfl", "mean"), ("gfl", "att"), ("protonet", ""), ("lp", "")]


def test_bad_experiment_options_exit_cleanly(root):
    runner = CliRunner()
    result = runner.invoke(cli, ["ablate", "tiny", "--data-root", str(root)])
    assert result.exit_code == 2 and "--drop" in result.output
    result = runner.invoke(cli, ["sweep", "tiny", "--param", "mu", "--values", "high", "--data-root", str(root)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    result = runner.invoke(cli, ["compare", "tiny", "--models", "nope", "--data-root", str(root)])
    assert result.exit_code == 1 and "unknown models" in result.output


@pytest.mark.slow
def test_transfer_baselines_beat_non_transfer_gcn(small_family):
    """On the small seeded family, learning from the train graphs pays off over a
    GCN trained on each test graph's support set alone (same episodes)."""
    sampler = EpisodeSampler(small_family, "test", EpisodeConfig(), seed=0)
    gcn = np.mean(list(baseline_accuracies(PER_GRAPH["gcn"], sampler).values()))
    for name in TRANSFER:
        result = fit_transfer(name, small_family, EpisodeConfig(), TrainConfig(steps=100, eval_every=25),
                              progress=False)
        acc = np.mean(list(transfer_accuracies(result.model, sampler).values()))
        assert acc > gcn + 0.01, f"{name}: {acc:.3f} vs non-transfer GCN {gcn:.3f}"
