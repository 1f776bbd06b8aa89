"""Settings are checked where they are made, for the Python API as for the CLI."""
from __future__ import annotations

import math

import pytest

from gflkit.config import GFLConfig, TrainConfig
from gflkit.errors import GFLError


@pytest.mark.parametrize("cls, changes, needle", [
    (TrainConfig, {"lr": math.inf}, "lr=inf"),
    (TrainConfig, {"lr": math.nan}, "lr=nan"),
    (TrainConfig, {"grad_clip": math.nan}, "grad_clip=nan"),
    (TrainConfig, {"weight_decay": -math.inf}, "weight_decay=-inf"),
    (TrainConfig, {"seed": -1}, "seed=-1"),
    (TrainConfig, {"seed": 10**23}, "seed="),
    (GFLConfig, {"gamma": math.nan}, "gamma=nan"),
    (GFLConfig, {"mu": math.inf}, "mu=inf"),
    (GFLConfig, {"cosine_scale": math.nan}, "cosine_scale=nan"),
])
def test_non_finite_or_out_of_range_settings_are_refused(cls, changes, needle):
    with pytest.raises(GFLError, match=needle.replace("+", r"\+")) as err:
        cls(**changes)
    assert "\n" not in str(err.value)


def test_finite_settings_pass():
    assert TrainConfig(lr=0.5, grad_clip=1.0, seed=2**32 - 1).lr == 0.5
    assert GFLConfig(gamma=0.0).gamma == 0.0


def test_a_budget_left_at_none_is_the_models_own():
    from gflkit.config import budget_defaults

    assert TrainConfig().steps is None and TrainConfig().patience is None
    assert TrainConfig().for_model("gfl").steps == 400 and TrainConfig().for_model("tlp").patience == 8
    gmeta = TrainConfig().for_model("gmeta")
    assert (gmeta.steps, gmeta.patience) == (3000, 20) == (budget_defaults("gmeta")["steps"],
                                                           budget_defaults("gmeta")["patience"])
    given = TrainConfig(steps=7, patience=2).for_model("gmeta")
    assert (given.steps, given.patience, given.lr) == (7, 2, 0.001)  # given values kept, the rest the model's
    with pytest.raises(GFLError, match="steps=0"):
        TrainConfig(steps=0)


def test_self_supervised_pretraining_takes_one_graph_per_step():
    assert TrainConfig().meta_batch is None
    assert [TrainConfig().for_model(m).meta_batch for m in ("gfl", "gmeta", "tlp-sup", "tlp", "tlp-bgrl")] == [
        5, 5, 5, 1, 1]
    assert TrainConfig(meta_batch=3).for_model("tlp").meta_batch == 3
    with pytest.raises(GFLError, match="meta_batch=0"):
        TrainConfig(meta_batch=0)


def test_train_help_says_each_models_budget():
    from cli_helpers import invoke

    out = " ".join(invoke("train", "--help").output.split())
    assert "Maximum meta-training steps (default: the model's own; 400, gmeta 3000)" in out
    assert "(default: the model's own; 8, gmeta 20)" in out
    assert "Graphs per meta-training step (default: the model's own; 5, tlp 1, tlp-bgrl 1)" in out
