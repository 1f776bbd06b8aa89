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
from gflkit.config import EpisodeConfig, TrainConfig
from gflkit.training.distributed import DistContext
from gflkit.errors import GFLError
from gflkit.training.parallel import run_jobs
from gflkit.runs.folder import LAST_FILE, RunFolder, partial_path

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


@pytest.mark.slow
@pytest.mark.parametrize("meta_batch", [4, 5])
def test_two_ranks_match_one_process(small_family, tmp_path, meta_batch, one_thread):
    """B graphs over 2 ranks (even and uneven split) give the single-process parameters, val curve and row."""
    cfg = replace(TINY, meta_batch=meta_batch)
    single, single_table = gflkit.train(small_family, train_cfg=cfg, progress=False, return_result=True, run_dir=False)
    out = tmp_path / "run"
    dist, dist_table = gflkit.train(small_family, train_cfg=cfg, progress=False, run_dir=out, nproc=2,
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
    with pytest.raises(GFLError, match="`meta_batch=1` is smaller than the 2 processes"):
        gflkit.train(small_family, train_cfg=replace(TINY, meta_batch=1), nproc=2, progress=False, run_dir=False)
    with pytest.raises(GFLError, match="`nproc` trains GFL models"):
        gflkit.train(small_family, train_cfg=TINY, model="agf", nproc=2, progress=False, run_dir=False)


def _start_long_run(small_family_dir: Path, out: Path, timeout: int,
                    env: dict[str, str] | None = None) -> tuple[subprocess.Popen, list[int]]:
    """A 2-rank CLI run that would train for long; returns it once rank 0 has started the run folder.

    Its temporary files go under ``out``'s folder, so a test that kills the
    launcher with SIGKILL (which cannot clean up) leaves nothing in the system's.
    """
    tmp = out.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {"TMPDIR": str(tmp), **(env or {})}
    proc = subprocess.Popen(
        _cli("-v", "train", str(small_family_dir), "--steps", "100000", "--eval-every", "100000", "--nproc", "2",
             "--timeout", str(timeout), "--checkpoint-every", "1", "--run-dir", str(out)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**_env(), **env},
        start_new_session=True,
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


@pytest.mark.slow
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
    assert not _lock(out).exists()  # rank 0 was stopped holding it: the launcher took it and removed it


def _lock(run: Path) -> Path:
    return run.with_name(f".{run.name}.lock")


@pytest.mark.slow
def test_ctrl_c_stops_every_rank(small_family_dir, tmp_path):
    out = tmp_path / "run"
    proc, pids = _start_long_run(small_family_dir, out, TIMEOUT)
    try:
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    # the last line as a terminal shows it (the progress bar's updates end in carriage returns)
    assert re.split(r"[\r\n]", err.strip())[-1] == f"interrupted; continue with: gflkit train --resume {out}", err
    assert "Traceback" not in err and not [line for line in err.splitlines() if line.startswith("Error")]
    assert all(_gone(pid) for pid in pids)
    assert not out.exists() and (partial_path(out) / LAST_FILE).is_file()
    assert not _lock(out).exists()


def test_existing_run_needs_force(small_family, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    with pytest.raises(GFLError, match=r"exists: pass `force=True`"):
        gflkit.train(small_family, train_cfg=TINY, run_dir=out, nproc=2, progress=False)


@pytest.mark.slow
def test_resume_over_two_ranks_matches_an_uninterrupted_run(small_family, tmp_path, monkeypatch, one_thread):
    """A run interrupted after its step-2 checkpoint, resumed with --nproc 2, ends as if never stopped."""
    cfg = replace(TINY, steps=6)
    whole, whole_table = gflkit.train(small_family, train_cfg=cfg, progress=False, return_result=True, run_dir=False)
    out = tmp_path / "run"
    save_last = RunFolder.save_last

    def save_then_stop(self, ckpt):
        save_last(self, ckpt)
        raise KeyboardInterrupt

    monkeypatch.setattr(RunFolder, "save_last", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        gflkit.train(small_family, train_cfg=cfg, run_dir=out, checkpoint_every=2, progress=False)
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_run_jobs_keeps_order_and_raises():
    assert run_jobs(abs, [-3, 1, -2, 5], jobs=2) == [3, 1, 2, 5]
    assert run_jobs(abs, [-3, 1], jobs=1) == [3, 1]
    for jobs in (1, 2):
        ended: list[int] = []
        assert run_jobs(abs, [-3, 1, -2], jobs=jobs, on_result=ended.append) == [3, 1, 2]
        assert sorted(ended) == [0, 1, 2]
    with pytest.raises(ValueError):
        run_jobs(int, ["1", "x", "3"], jobs=2)


@pytest.mark.slow
def test_compare_jobs_gives_the_same_rows(small_family_dir, one_thread):
    from gflkit.experiments import compare

    kwargs = dict(models=["gfl", "protonet", "knn"], aggregators=("mean",),
                  train_cfg=replace(TINY, steps=3), seeds=(0, 1), progress=False)
    one = compare(str(small_family_dir), jobs=1, **kwargs)
    two = compare(str(small_family_dir), jobs=2, **kwargs)
    assert list(two["model"]) == ["gfl", "protonet", "knn", "majority"]
    assert list(two["seed"]) == ["0,1"] * 4 and two["delta"][1:].notna().all()  # the reference row's is empty
    pd.testing.assert_frame_equal(two, one)


@pytest.mark.slow
def test_ablate_jobs_gives_the_same_rows(small_family_dir, one_thread):
    from gflkit.experiments import ablate

    kwargs = dict(drop=["gate"], seeds=(0, 1), train_cfg=replace(TINY, steps=2), progress=False)
    one = ablate(str(small_family_dir), jobs=1, **kwargs)
    two = ablate(str(small_family_dir), jobs=2, **kwargs)
    assert list(two["variant"]) == ["full", "gate"]
    pd.testing.assert_frame_equal(two, one)


# -- how many processes, where they listen, what they leave --------------------------------------------------

def test_process_and_thread_counts_above_the_cores_are_usage_errors():
    from cli_helpers import invoke, one_line_error

    from gflkit.devices import usable_cores, worker_limit

    too_many = str(worker_limit() + 1)
    cores = f"of the {usable_cores()} usable cores"
    for args, flag in [(["train", "--nproc", too_many], "--nproc"),
                       (["train", "--threads-per-proc", too_many], "--threads-per-proc"),
                       (["compare", "--jobs", too_many], "--jobs"),
                       (["ablate", "--all", "--jobs", too_many], "--jobs")]:
        line = one_line_error(invoke(*args), f"'{flag}'", f"{too_many} ", cores, code=2)
        assert f"(at most {worker_limit()})" in line


def test_the_most_processes_allowed_still_parse():
    from gflkit_cli.run import train

    from gflkit.devices import worker_limit

    limit = str(worker_limit())
    with train.make_context("train", ["--nproc", limit, "--threads-per-proc", limit]) as ctx:
        assert ctx.params["nproc"] == ctx.params["threads_per_proc"] == worker_limit()


def test_the_library_refuses_too_many_processes_before_starting_any():
    from gflkit.devices import worker_limit
    from gflkit.training.parallel import launch

    too_many = worker_limit() + 1
    with pytest.raises(GFLError, match=rf"^nproc={too_many} is more than .* usable cores"):
        launch(_report_env, (), too_many)
    with pytest.raises(GFLError, match=rf"^threads={too_many} is more than"):
        launch(_report_env, (), 1, threads=too_many)
    with pytest.raises(GFLError, match=rf"^jobs={too_many} is more than"):
        run_jobs(abs, list(range(too_many)), jobs=too_many)


def _report_env(rank: int, nproc: int, folder: str) -> None:
    """A launched process: what its environment holds, and what it held when it started."""
    import json

    started = dict(item.split("=", 1) for item in Path("/proc/self/environ").read_text().split("\0") if "=" in item)
    keys = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
    Path(folder, f"env-{rank}.json").write_text(json.dumps({"now": {k: os.environ.get(k) for k in keys},
                                                            "started": {k: started.get(k) for k in keys}}))


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_loopback_settings_go_to_the_ranks_only():
    import json
    import shutil

    from gflkit.training.distributed import loopback_env
    from gflkit.training.parallel import launch

    before = dict(os.environ)
    env = loopback_env()
    folder = launch(_report_env, (), 2, threads=1, env=env)
    try:
        reports = [json.loads((folder / f"env-{rank}.json").read_text()) for rank in range(2)]
    finally:
        shutil.rmtree(folder)
    assert dict(os.environ) == before
    for report in reports:
        assert report["now"] == env
        # not in the environment the rank started with: the launching process never had them
        assert report["started"] == {k: before.get(k) for k in env}
    assert env["GLOO_SOCKET_IFNAME"] in {name for _, name in __import__("socket").if_nameindex()}


def _tcp_sockets(pid: int) -> list[str]:
    """Local addresses of the TCP sockets process ``pid`` holds open (Linux /proc)."""
    import ipaddress
    import socket

    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = []
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] not in inodes:
                continue
            hex_address = fields[1].split(":")[0]
            # /proc prints each 32-bit word of the address in host (little-endian) order
            raw = b"".join(bytes.fromhex(hex_address[i:i + 8])[::-1] for i in range(0, len(hex_address), 8))
            address = ipaddress.ip_address(socket.inet_ntop(family, raw))
            found.append(str(getattr(address, "ipv4_mapped", None) or address))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="reads /proc")
def test_ranks_listen_and_talk_on_loopback_only(small_family_dir, tmp_path):
    """Even with gloo told to use another interface (as for a run across machines), local ranks stay on loopback."""
    import ipaddress
    import socket

    from gflkit.training.distributed import loopback_env

    lo = loopback_env()["GLOO_SOCKET_IFNAME"]
    other = next((name for _, name in socket.if_nameindex() if name != lo), None)
    out = tmp_path / "run"
    proc, pids = _start_long_run(small_family_dir, out, TIMEOUT, env={"GLOO_SOCKET_IFNAME": other} if other else None)
    try:
        addresses = {pid: _tcp_sockets(pid) for pid in pids}
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    assert all(_gone(pid) for pid in pids)
    assert all(addresses.values()), addresses  # the ranks are connected
    for pid, found in addresses.items():
        assert all(ipaddress.ip_address(a).is_loopback for a in found), (pid, found)


def test_a_stale_lock_file_does_not_stop_a_run(small_family, tmp_path):
    out = tmp_path / "run"
    _lock(out).write_text("")  # as a killed process leaves it
    gflkit.train(small_family, train_cfg=replace(TINY, steps=2), run_dir=out, progress=False, eval_split=None)
    assert (out / "best.pt").is_file()
    assert not _lock(out).exists() and not partial_path(out).exists()


def test_clear_stale_lock_leaves_a_held_lock():
    import tempfile

    from gflkit.runs.folder import _Lock, clear_stale_lock

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        held = _Lock(_lock(run), run).acquire()
        clear_stale_lock(run)  # held (by this process, through another open file): stays
        assert _lock(run).exists()
        held.release()
        _lock(run).write_text("")
        clear_stale_lock(run)
        assert list(Path(tmp).iterdir()) == []


@pytest.mark.slow
def test_a_failed_run_over_ranks_leaves_nothing(small_family, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(GFLError, match="rank 0 failed"):
        gflkit.train(small_family, train_cfg=TINY, episode_cfg=EpisodeConfig(k_shot=1000, on_small="error"),
                     run_dir=out, nproc=2, threads_per_proc=1, timeout=TIMEOUT, progress=False)
    assert list(tmp_path.iterdir()) == []
