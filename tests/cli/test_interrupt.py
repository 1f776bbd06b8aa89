"""Ctrl-C ends every command the same way: exit status 130 and one line, with how to continue a run.

Subprocess tests send SIGINT to ``gflkit train`` while it starts and while it
trains (each bounded in time, the process killed if it outlives the test);
in-process tests interrupt the parsing and a command through Click's runner.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from gflkit_cli.main import GFLGroup, cli

from gflkit.runs.folder import LAST_FILE, partial_path

BOUND = 240  # seconds any process of these tests may live


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def _last_line(err: str) -> str:
    """The last line of stderr as a terminal shows it (a progress bar's updates end in carriage returns)."""
    return re.split(r"[\r\n]", err.strip())[-1]


def _long_train(data: Path, run: Path) -> list[str]:
    return ["train", str(data), "--steps", "100000", "--eval-every", "100000", "--checkpoint-every", "1",
            "--run-dir", str(run)]


def _finish(proc: subprocess.Popen) -> str:
    try:
        _, err = proc.communicate(timeout=BOUND)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return err


def test_ctrl_c_while_train_starts_exits_130(small_family_dir, tmp_path):
    run = tmp_path / "run"
    code = ("import sys; print('go', flush=True); from gflkit_cli.main import cli; "
            f"cli({['-q', *_long_train(small_family_dir, run)]!r}, prog_name='gflkit')")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), cwd=tmp_path)
    try:
        assert proc.stdout.readline().strip() == "go"
        time.sleep(0.5)  # importing the command line, torch and DGL takes seconds
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
    finally:
        err = _finish(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and not [line for line in err.splitlines() if line.startswith("Error")], err
    assert _last_line(err) in ("interrupted", "interrupted before training started",
                               f"interrupted; continue with: gflkit train --resume {run}"), err
    assert not run.exists() and not run.with_name(f".{run.name}.lock").exists()


@pytest.mark.slow
def test_ctrl_c_while_training_exits_130_with_the_resume_command(small_family_dir, tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "gflkit", "-q", *_long_train(small_family_dir, run)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        deadline = time.monotonic() + BOUND
        while not (partial_path(run) / LAST_FILE).is_file():
            assert proc.poll() is None, "training ended before it could be interrupted"
            assert time.monotonic() < deadline, "training did not start in time"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
    finally:
        err = _finish(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines() == [
        f"interrupted; continue with: gflkit train --resume {run}"], err
    assert not run.exists() and (partial_path(run) / LAST_FILE).is_file()
    assert not run.with_name(f".{run.name}.lock").exists()


def test_ctrl_c_while_options_are_parsed_exits_130(monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(GFLGroup, "parse_args", interrupted)
    result = CliRunner().invoke(cli, ["stats", "x"])
    assert (result.exit_code, result.stderr, result.stdout) == (130, "interrupted\n", "")


def test_ctrl_c_inside_a_command_exits_130(tmp_path, monkeypatch):
    import gflkit.data

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(gflkit.data, "load_collection", interrupted)
    result = CliRunner().invoke(cli, ["stats", str(tmp_path)])
    assert (result.exit_code, result.stderr, result.stdout) == (130, "interrupted\n", "")
