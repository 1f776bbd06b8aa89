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
