"""Helpers shared by the tests that drive the command line through Click's test runner."""
from __future__ import annotations

import io
import os
import resource
import subprocess
import sys

import pandas as pd
from click.testing import CliRunner, Result
from gflkit_cli.main import cli

__all__ = ["invoke", "invoke_until_first_checkpoint", "csv_table", "one_line_error", "cli_bounded"]


def invoke(*args) -> Result:
    """Run ``gflkit ARGS...`` in-process; arguments may be paths or numbers."""
    return CliRunner().invoke(cli, [str(a) for a in args])


def invoke_until_first_checkpoint(monkeypatch, *args) -> Result:
    """``invoke(*args)`` with a Ctrl-C right after the run's first resume checkpoint (``last.pt``) is written."""
    from gflkit.runs.folder import RunFolder

    original = RunFolder.save_last

    def save_then_stop(self, ckpt):
        original(self, ckpt)
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(RunFolder, "save_last", save_then_stop)
        return invoke(*args)


def csv_table(result: Result, **read_csv) -> pd.DataFrame:
    """The CSV a successful command printed on stdout."""
    assert result.exit_code == 0, result.output
    return pd.read_csv(io.StringIO(result.stdout), **read_csv)


def one_line_error(result: Result, *needles: str, code: int = 1) -> str:
    """The one ``Error`` line of a failed command: exit ``code``, no traceback, nothing on stdout."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and result.stdout == "", result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def cli_bounded(*args, timeout: float = 120, memory: int = 2 << 30) -> subprocess.CompletedProcess:
    """``gflkit ARGS`` in its own process, of at most ``memory`` bytes of address space and ``timeout`` seconds.

    For inputs that a regression would make hang (a pipe) or read without end (``/dev/zero``).
    """
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run([sys.executable, "-m", "gflkit", *map(str, args)], capture_output=True, text=True,
                          encoding="utf-8", timeout=timeout, preexec_fn=limit,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
