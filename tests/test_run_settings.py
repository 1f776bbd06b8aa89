"""The launch settings of a training run: checked once, in one object, each bad value named in one line."""
from __future__ import annotations

import dataclasses
import inspect

import pytest
import torch

import gflkit
from gflkit.config import RunSettings
from gflkit.errors import GFLError


@pytest.mark.parametrize("bad, named", [
    (dict(checkpoint_every=0), "checkpoint_every=0"),
    (dict(nproc=1.5), "nproc=1.5"),
    (dict(nproc=True), "nproc=True"),
    (dict(threads_per_proc=0), "threads_per_proc=0"),
    (dict(timeout=float("nan")), "timeout=nan"),
    (dict(timeout=-1), "timeout=-1"),
    (dict(run_dir=True), "run_dir=True"),
    (dict(resume=3), "resume=3"),
    (dict(device="tpu"), "device=tpu"),
])
def test_a_bad_run_setting_is_refused_in_one_line_naming_it(bad, named):
    with pytest.raises(GFLError) as err:
        RunSettings(**bad)
    message = str(err.value)
    assert named in message and "\n" not in message


def test_the_device_is_resolved_once_into_the_settings():
    run = RunSettings(device="cpu", run_dir=False)
    assert run.device == torch.device("cpu") and RunSettings().device == torch.device("cpu")
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.nproc = 2  # frozen: checked values stay checked


def test_train_takes_at_most_eight_parameters_and_checks_every_setting_before_any_work(tmp_path):
    params = inspect.signature(gflkit.train).parameters
    assert len(params) <= 8 and params["run"].kind is inspect.Parameter.KEYWORD_ONLY
    missing = tmp_path / "no-such-collection"
    with pytest.raises(GFLError, match="checkpoint_every=0"):  # before the (missing) data is read
        gflkit.train(missing, checkpoint_every=0, run_dir=False, progress=False)
    with pytest.raises(GFLError, match="unknown settings stepz"):  # the one check names the unknown setting
        gflkit.train(missing, stepz=3, run_dir=False)
    with pytest.raises(GFLError, match=r"drop model, run_dir"):
        gflkit.train(resume=tmp_path / "run", model="protonet", run_dir=tmp_path / "other", progress=False)
    with pytest.raises(GFLError, match=r"drop lr, steps"):  # keyword settings are refused by name
        gflkit.train(resume=tmp_path / "run", steps=3, lr=0.1)
    with pytest.raises(GFLError, match="refine="):
        gflkit.train(missing, refine="lp")
    assert not any(tmp_path.iterdir())


def test_run_settings_given_whole_or_by_keyword_are_the_same(tmp_path):
    from gflkit.api import train_settings

    whole = train_settings("gfl", None, None, None, RunSettings(run_dir=False, episodes=3, eval_split=None), {})[4]
    keywords = train_settings("gfl", None, None, None, None, dict(run_dir=False, episodes=3, eval_split=None))[4]
    assert whole == keywords and whole.refine.method == "none"
    mixed = train_settings("gfl", None, None, None, RunSettings(episodes=3), dict(run_dir=False))[4]
    assert mixed.episodes == 3 and mixed.run_dir is False
