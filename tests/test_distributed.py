"""Distributed meta-training (torch.distributed, gloo over loopback) and --jobs pools.

Every subprocess is bounded: the process-group timeout and subprocess timeouts
end a test that would hang; child processes are checked to be gone.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest
import torch

import gflkit
from gflkit.config import TrainConfig
from gflkit.distributed import DistContext
from gflkit.errors import GFLError
from gflkit.parallel import run_jobs
from gflkit.run_folder import LAST_FILE, RunFolder, partial_path

TIMEOUT = 120  # seconds: process-group timeout of the runs below, and the bound on each subprocess
TINY = TrainConfig(steps=5, meta_batch=4, eval_every=2, patience=8)


@pytest.fixture
def one_thread(torch_threads):
    """This process on one thread, as each rank (restored afterwards)."""
    torch_threads(1)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "gflkit", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}


def _gone(pid: int, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # reap it if it is our zombie child
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.2)
    return False


def test_share_covers_every_item_once():
    for n in range(2, 12):
        for world in range(1, n + 1):
            parts = [list(range(n))[DistContext(r, world).share(n)] for r in range(world)]
            assert sum(parts, []) == list(range(n))
            assert max(map(len, parts)) - min(map(len, parts)) <= 1


@pytest.mark.parametrize("meta_batch", [4, 5])
def test_two_ranks_match_one_process(small_family, tmp_path, meta_batch, one_thread):
    """B graphs over 2 ranks (even and uneven split) give the single-process parameters, val curve and row."""
    cfg = replace(TINY, meta_batch=meta_batch)
    single, single_table = gflkit.train(small_family, train_cfg=cfg, progress=False, return_result=True)
    out = tmp_path / "run"
    dist, dist_table = gflkit.train(small_family, train_cfg=cfg, progress=False, out=out, nproc=2,
                                    threads_per_proc=1, timeout=TIMEOUT, return_result=True)
    ref, got = dict(single.model.named_parameters()), dict(dist.model.named_parameters())
    assert ref.keys() == got.keys()
    for name, p in ref.items():
        rel = float((got[name] - p).detach().norm() / p.detach().norm().clamp_min(1e-12))
        assert rel < 1e-5, (name, rel)
    assert dist.best_step == single.best_step
    pd.testing.assert_series_equal(dist.history["val_accuracy"], single.history["val_accuracy"])
    pd.testing.assert_series_equal(dist.history["loss"], single.history["loss"], rtol=1e-5)
    pd.testing.assert_frame_equal(dist_table, single_table, rtol=1e-9)
    # rank 0 wrote the run; a single process loads its checkpoint (no DDP prefix) and scores the same
    assert sorted(p.name for p in out.iterdir()) == ["best.pt", "config.json", "metrics.csv"]
    assert not partial_path(out).exists()
    pd.testing.assert_frame_equal(gflkit.evaluate(out, small_family), single_table, rtol=1e-9)


def test_meta_batch_smaller_than_ranks_is_a_user_error(small_family):
    with pytest.raises(GFLError, match="--meta-batch 1 is smaller than the 2 processes"):
        gflkit.train(small_family, train_cfg=replace(TINY, meta_batch=1), nproc=2, progress=False)
    with pytest.raises(GFLError, match="--nproc trains GFL models"):
        gflkit.train(small_family, train_cfg=TINY, model="agf", nproc=2, progress=False)


def _start_long_run(small_family_dir: Path, out: Path, timeout: int) -> tuple[subprocess.Popen, list[int]]:
    """A 2-rank CLI run that would train for long; returns it once rank 0 has started the run folder."""
    proc = subprocess.Popen(
        _cli("-v", "train", str(small_family_dir), "--steps", "100000", "--eval-every", "100000", "--nproc", "2",
             "--timeout", str(timeout), "--checkpoint-every", "1", "--run-dir", str(out)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), start_new_session=True,
    )
    pids: list[int] = []
    end = time.monotonic() + TIMEOUT
    for line in proc.stderr:
        found = re.findall(r"rank (\d) pid (\d+)", line)
        if found:
            pids = [int(pid) for _, pid in sorted(found)]
            break
        assert time.monotonic() < end, "ranks did not start"
    while not (partial_path(out) / LAST_FILE).exists():
        assert proc.poll() is None and time.monotonic() < end, "training did not start"
        time.sleep(0.2)
    time.sleep(1.0)  # a few steps in
    return proc, pids


def test_killed_rank_ends_the_job_naming_it(small_family_dir, tmp_path):
    out, timeout = tmp_path / "run", 60
    proc, pids = _start_long_run(small_family_dir, out, timeout)
    try:
        start = time.monotonic()
        os.kill(pids[1], signal.SIGKILL)
        _, err = proc.communicate(timeout=timeout + 30)
        assert time.monotonic() - start < timeout
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1, err
    assert err.strip().splitlines()[-1] == "Error: rank 1 died: killed by signal SIGKILL", err
    assert not out.exists()
    # rank 0 left the partial run with a resume checkpoint holding every rank's generator states
    last = torch.load(partial_path(out) / LAST_FILE, weights_only=True)
    assert last["format"] == "gflkit.resume" and last["step"] >= 1 and len(last["rank_rng"]) == 2
    assert all(_gone(pid) for pid in pids)


def test_ctrl_c_stops_every_rank(small_family_dir, tmp_path):
    out = tmp_path / "run"
    proc, pids = _start_long_run(small_family_dir, out, TIMEOUT)
    try:
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    assert all(_gone(pid) for pid in pids)
    assert not out.exists() and (partial_path(out) / LAST_FILE).is_file()
    assert "gflkit train --resume" in err


def test_existing_run_needs_force(small_family, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    with pytest.raises(GFLError, match="exists: pass --force"):
        gflkit.train(small_family, train_cfg=TINY, out=out, nproc=2, progress=False)


def test_resume_over_two_ranks_matches_an_uninterrupted_run(small_family, tmp_path, monkeypatch, one_thread):
    """A run interrupted after its step-2 checkpoint, resumed with --nproc 2, ends as if never stopped."""
    cfg = replace(TINY, steps=6)
    whole, whole_table = gflkit.train(small_family, train_cfg=cfg, progress=False, return_result=True)
    out = tmp_path / "run"
    save_last = RunFolder.save_last

    def save_then_stop(self, ckpt):
        save_last(self, ckpt)
        raise KeyboardInterrupt

    monkeypatch.setattr(RunFolder, "save_last", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        gflkit.train(small_family, train_cfg=cfg, out=out, checkpoint_every=2, progress=False)
    monkeypatch.undo()
    assert torch.load(partial_path(out) / LAST_FILE, weights_only=True)["step"] == 2
    resumed, table = gflkit.train(small_family, resume=out, nproc=2, threads_per_proc=1, timeout=TIMEOUT,
                                  progress=False, return_result=True)
    assert resumed.run_dir == out and not partial_path(out).exists()
    for name, p in dict(whole.model.named_parameters()).items():
        got = dict(resumed.model.named_parameters())[name]
        assert float((got - p).detach().norm() / p.detach().norm().clamp_min(1e-12)) < 1e-5, name
    assert list(resumed.history["step"]) == list(range(1, 7))
    pd.testing.assert_frame_equal(table, whole_table, rtol=1e-9)
    pd.testing.assert_frame_equal(gflkit.evaluate(out, small_family), whole_table, rtol=1e-9)


def test_torchrun_prints_the_single_process_row(small_family_dir, tmp_path):
    args = ["train", str(small_family_dir), "--steps", "3", "--eval-every", "2", "--meta-batch", "3"]
    single = subprocess.run(_cli(*args, "--run-dir", str(tmp_path / "one")), capture_output=True, text=True,
                            env=_env(), timeout=TIMEOUT)
    assert single.returncode == 0, single.stderr
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m",
              "gflkit", *args, "--run-dir", str(tmp_path / "two"), "--timeout", "60"]
    multi = subprocess.run(launch, capture_output=True, text=True, env=_env(), timeout=TIMEOUT)
    assert multi.returncode == 0, multi.stderr
    ref, got = pd.read_csv(StringIO(single.stdout)), pd.read_csv(StringIO(multi.stdout))
    assert len(got) == 1  # rank 1 prints nothing
    pd.testing.assert_frame_equal(got, ref, rtol=1e-6)
    assert (tmp_path / "two" / "best.pt").is_file()


def test_run_jobs_keeps_order_and_raises():
    assert run_jobs(abs, [-3, 1, -2, 5], jobs=2) == [3, 1, 2, 5]
    assert run_jobs(abs, [-3, 1], jobs=1) == [3, 1]
    for jobs in (1, 2):
        ended: list[int] = []
        assert run_jobs(abs, [-3, 1, -2], jobs=jobs, on_result=ended.append) == [3, 1, 2]
        assert sorted(ended) == [0, 1, 2]
    with pytest.raises(ValueError):
        run_jobs(int, ["1", "x", "3"], jobs=2)


def test_compare_jobs_gives_the_same_rows(small_family_dir, one_thread):
    from gflkit.experiments import compare

    kwargs = dict(models=["gfl", "protonet", "knn"], aggregators=("mean",),
                  train_cfg=replace(TINY, steps=3), seeds=(0, 1), progress=False)
    one = compare(str(small_family_dir), jobs=1, **kwargs)
    two = compare(str(small_family_dir), jobs=2, **kwargs)
    assert list(two["model"]) == ["gfl", "protonet", "knn", "majority"]
    assert list(two["seed"]) == ["0,1"] * 4 and two["delta"][1:].notna().all()  # the reference row's is empty
    pd.testing.assert_frame_equal(two, one)


def test_ablate_jobs_gives_the_same_rows(small_family_dir, one_thread):
    from gflkit.experiments import ablate

    kwargs = dict(drop=["gate"], seeds=(0, 1), train_cfg=replace(TINY, steps=2), progress=False)
    one = ablate(str(small_family_dir), jobs=1, **kwargs)
    two = ablate(str(small_family_dir), jobs=2, **kwargs)
    assert list(two["variant"]) == ["full", "gate"]
    pd.testing.assert_frame_equal(two, one)
