"""Every command in the README, the getting-started page and the tutorials runs.

The ```bash blocks of the pages below are split into commands and run in order,
one temporary working folder per page, against a small data root: there the
default family ``synthetic`` is a small one, and training is shortened through
the environment (``GFLKIT_TRAIN_STEPS=3`` and the like, which set option
defaults; a flag written in a command still wins).

Conventions in the pages:

- ``<!-- docs-test: skip: REASON -->`` on a line of its own before a block
  skips the whole block; ``<!-- docs-test: skip "PREFIX": REASON -->`` skips
  the block's commands that start with PREFIX; ``skip "PREFIX" without
  MODULE: REASON`` skips them only where MODULE cannot be imported (an
  optional extra). A block may carry several.
- Fresh-machine setup in a ``&&`` chain (``python3 -m venv``, ``. .venv/...``,
  ``pip install``) is left out, since the test runs in an installed
  environment; the rest of the chain runs.
- Variable assignments (``D=...``, ``export X=...``) apply to the block's later
  commands.

The quoted result row of the main command is checked against what ``gflkit
train`` prints on the real default family (slow).
"""
from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "docs/getting-started.md", *sorted(
    str(p.relative_to(REPO)) for p in (REPO / "docs" / "tutorials").glob("*.md"))]

MARKER = re.compile(r'<!--\s*docs-test:\s*skip(?:\s+"([^"]+)")?(?:\s+without\s+([\w.]+))?\s*:\s*(.+?)\s*-->')
SETUP = re.compile(r"^(python3? -m venv\b|\. \S*activate\b|source \S*activate\b|pip install\b)")
ASSIGNMENT = re.compile(r"^(export\s+)?[A-Za-z_][A-Za-z0-9_]*=\S*(\s+#.*)?$")

# Shortened training for every command; a flag written in the command wins.
SHORT = {
    "GFLKIT_NO_PROGRESS": "1",
    "GFLKIT_TRAIN_STEPS": "3",
    "GFLKIT_COMPARE_STEPS": "3",
    "GFLKIT_COMPARE_SEED": "0",
    "GFLKIT_ABLATE_STEPS": "3",
    "GFLKIT_ABLATE_SEED": "0",
    "GFLKIT_SWEEP_STEPS": "3",
    "GFLKIT_SWEEP_SEED": "0",
}
TIMEOUT = 600  # seconds per command


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    commands: list[str]
    skip_all: str | None = None
    skip_prefixes: list[tuple[str, str]] = field(default_factory=list)


def _complete(text: str) -> bool:
    """Whether ``text`` closes every quote it opens (a multi-line ``python -c "..."`` goes on)."""
    try:
        shlex.split(text, comments=True)
    except ValueError:
        return False
    return True


def _split_commands(lines: list[str]) -> list[str]:
    """The block's commands: continuation lines and multi-line quoted strings joined, comment lines dropped."""
    commands, current = [], []
    for line in lines:
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current.append(line)
        text = "\n".join(current)
        if line.rstrip().endswith("\\") or not _complete(text):
            continue
        commands.append(text.strip())
        current = []
    assert not current, f"unterminated command: {current}"
    return commands


def bash_blocks(page: str) -> list[Block]:
    lines = (REPO / page).read_text(encoding="utf-8").splitlines()
    blocks, markers, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.search(line)
        if m:
            markers.append(m)
        elif line.strip() == "```bash":
            start, body = i + 1, []
            i += 1
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            block = Block(page, start, _split_commands(body))
            for m in markers:
                prefix, module, reason = m.groups()
                if module and importlib.util.find_spec(module) is not None:
                    continue  # skipped only where the module is missing
                if prefix:
                    block.skip_prefixes.append((prefix, reason))
                else:
                    block.skip_all = reason
            blocks.append(block)
            markers = []
        elif line.strip():
            markers = []  # a marker belongs to the block right after it
        i += 1
    return blocks


def _without_setup(command: str) -> tuple[str, list[str]]:
    """The command without its fresh-machine setup steps, and those steps."""
    parts = [p.strip() for p in command.split("&&")]
    setup = [p for p in parts if SETUP.match(p)]
    return " && ".join(p for p in parts if not SETUP.match(p)), setup


@pytest.fixture(scope="module")
def small_root(tmp_path_factory) -> Path:
    """A data root whose default family ``synthetic`` is small (16/4/8 graphs of 200-400 nodes)."""
    root = tmp_path_factory.mktemp("data")
    env = {**os.environ, "GFLKIT_DATA": str(root)}
    subprocess.run([sys.executable, "-m", "gflkit", "preprocess", "synthetic", "--graphs", "16,4,8",
                    "--nodes", "200,400", "--feat-size", "32"],
                   env=env, check=True, capture_output=True, timeout=TIMEOUT)
    return root


def test_pages_have_bash_blocks():
    blocks = [b for page in PAGES for b in bash_blocks(page)]
    assert len(PAGES) >= 6 and len(blocks) >= 15
    # every skip marker names a command of its block
    for b in blocks:
        for prefix, _ in b.skip_prefixes:
            assert any(_without_setup(c)[0].startswith(prefix) for c in b.commands), \
                f"{b.page}:{b.line}: no command starts with {prefix!r}"


@pytest.mark.slow
def test_documented_commands_run(small_root, tmp_path, capsys):
    env = {**os.environ, **SHORT, "GFLKIT_DATA": str(small_root)}
    ran, skipped, setup_left_out, failures = [], [], [], []
    t0 = time.monotonic()
    for page in PAGES:
        cwd = tmp_path / page.replace("/", "_")
        cwd.mkdir()
        for block in bash_blocks(page):
            prelude = []
            for command in block.commands:
                where = f"{page}:{block.line}"
                command, setup = _without_setup(command)
                setup_left_out += [(where, s) for s in setup]
                if block.skip_all:
                    skipped.append((where, command, block.skip_all))
                    continue
                reason = next((r for p, r in block.skip_prefixes if command.startswith(p)), None)
                if reason:
                    skipped.append((where, command, reason))
                    continue
                if ASSIGNMENT.match(command):
                    prelude.append(command)
                    continue
                script = "set -eo pipefail\n" + "\n".join(prelude) + "\n" + command
                started = time.monotonic()
                proc = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True,
                                      text=True, timeout=TIMEOUT)
                ran.append((where, command, time.monotonic() - started))
                if proc.returncode != 0:
                    tail = "\n    ".join(proc.stderr.strip().splitlines()[-5:])
                    failures.append(f"{where}: `{command}` exited {proc.returncode}:\n    {tail}")
    total = time.monotonic() - t0
    with capsys.disabled():
        print(f"\ndocumented commands: {len(ran)} run in {total:.0f} s, {len(skipped)} skipped, "
              f"{len(setup_left_out)} setup steps left out (installed environment)")
        for where, command, reason in skipped:
            print(f"  skipped {where}: {command.splitlines()[0][:70]} -- {reason}")
        for where, command, seconds in ran:
            print(f"  ran {where} ({seconds:.0f} s): {command.splitlines()[0][:70]}")
    assert not failures, "documented commands failed:\n" + "\n".join(failures)
    assert len(ran) >= 15


def _quoted_rows(page: str) -> list[str]:
    """The result rows quoted in plain ``` blocks of a page right after the result header."""
    lines = (REPO / page).read_text(encoding="utf-8").splitlines()
    return [lines[i + 1] for i, line in enumerate(lines[:-1])
            if line.startswith("model,aggregator,dataset,") and lines[i + 1].startswith("gfl,mean,synthetic,")]


@pytest.mark.slow
def test_quoted_result_row_is_what_train_prints(tmp_path):
    quoted = {page: _quoted_rows(page) for page in ("README.md", "docs/getting-started.md")}
    assert all(len(rows) == 1 for rows in quoted.values()), quoted
    env = {k: v for k, v in os.environ.items() if not k.startswith("GFLKIT_")}
    env["GFLKIT_DATA"] = str(tmp_path / "data")
    proc = subprocess.run([sys.executable, "-m", "gflkit", "train"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = proc.stdout.strip().splitlines()[-1]
    for page, rows in quoted.items():
        assert rows[0] == printed, f"{page} quotes {rows[0]!r}; gflkit train printed {printed!r}"
