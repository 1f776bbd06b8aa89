"""Wall time of ``gflkit --help`` and of every ``gflkit <cmd> --help``, against a base commit.

Each command runs in a fresh interpreter (as a user's shell starts it), ``--repeats``
times, alternating between the working tree and the base commit, so both see
the same machine load. The base commit is exported with ``git archive`` into a
temporary folder; both trees are put first on ``PYTHONPATH`` under the names
``gflkit`` and ``gflkit_cli`` (the installed layout), so neither is measured
through the editable install.

Usage::

    python benchmarks/startup_benchmark.py                 # Markdown table on stdout
    python benchmarks/startup_benchmark.py --base 2e2fb7f --now HEAD --repeats 5 --csv
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The last commit before the command line stopped importing torch and DGL up front.
DEFAULT_BASE = "2e2fb7f"
# The command's entry function where the tree has one (it sets up the process first), else the Click group.
RUN_CLI = ("import sys; import gflkit_cli.main as m; "
           "m.main() if hasattr(m, 'main') else m.cli(sys.argv[1:], prog_name='gflkit')")


def _layout(tree: Path, into: Path) -> Path:
    """A folder holding ``gflkit`` and ``gflkit_cli`` links into ``tree`` (the installed package names)."""
    into.mkdir(parents=True, exist_ok=True)
    (into / "gflkit").symlink_to(tree / "gflkit")
    (into / "gflkit_cli").symlink_to(tree / "cli")
    return into


def _export(commit: str, into: Path) -> Path:
    """The tree of ``commit`` as plain files under ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _commands() -> list[list[str]]:
    """``[]`` for the group, then every command and sub-command path of the working tree's CLI."""
    sys.path.insert(0, str(REPO))
    from gflkit_cli.main import cli

    paths: list[list[str]] = [[]]

    def walk(group, prefix: list[str]) -> None:
        for name, command in sorted(group.commands.items()):
            paths.append([*prefix, name])
            if hasattr(command, "commands"):
                walk(command, [*prefix, name])

    walk(cli, [])
    return paths


def _time(pythonpath: Path, args: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", RUN_CLI, *args, "--help"], env=env, capture_output=True,
                          timeout=120)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"gflkit {' '.join(args)} --help failed: {proc.stderr.decode()[-400:]}")
    return elapsed


def main() -> None:
    """Parse the command line and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=DEFAULT_BASE, help="commit to compare against (default: %(default)s)")
    parser.add_argument("--now", default=None, help="commit to measure instead of the working tree")
    parser.add_argument("--repeats", type=int, default=5, help="runs per command and tree (median reported)")
    parser.add_argument("--csv", action="store_true", help="CSV instead of a Markdown table")
    args = parser.parse_args()

    commands = _commands()
    with tempfile.TemporaryDirectory() as tmp:
        tree = REPO if args.now is None else _export(args.now, Path(tmp) / "now-tree")
        now = _layout(tree, Path(tmp) / "now")
        base = _layout(_export(args.base, Path(tmp) / "base-tree"), Path(tmp) / "base")
        rows = []
        for command in commands:
            times: dict[str, list[float]] = {"now": [], "base": []}
            for _ in range(args.repeats):
                times["base"].append(_time(base, command))
                times["now"].append(_time(now, command))
            med_now, med_base = statistics.median(times["now"]), statistics.median(times["base"])
            rows.append((" ".join(["gflkit", *command, "--help"]), med_base, med_now, med_base / med_now))
            print(f"{rows[-1][0]}: {med_base:.3f} s -> {med_now:.3f} s", file=sys.stderr)

    if args.csv:
        print("command,base_s,now_s,speedup")
        for name, b, n, r in rows:
            print(f"{name},{b:.3f},{n:.3f},{r:.1f}")
        return
    print(f"| command | base {args.base} (s) | now (s) | ratio |")
    print("|---|---|---|---|")
    for name, b, n, r in rows:
        print(f"| `{name}` | {b:.2f} | {n:.2f} | {r:.1f}x |")
    print(f"\nmedian of {args.repeats} fresh processes per command and tree, alternating; "
          f"slowest now: {max(n for _, _, n, _ in rows):.2f} s")


if __name__ == "__main__":
    main()
