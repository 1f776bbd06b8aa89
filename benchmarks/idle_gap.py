"""What a pause between two steps costs the next one.

``step_benchmark.py`` times its configurations in turns, so a configuration's
process waits while the others take their steps. Training never waits between
steps. This script times the step of ``step_benchmark.py`` (5 graphs of 4,500
nodes by default, on ``--threads`` threads) straight after the previous step,
after the process slept for a while, and after the calling thread spun (kept
one core busy) for as long, and prints a Markdown table: on a virtual machine
that lets idle cores go, a multi-threaded step after a long enough sleep can
take much longer than the same step taken straight after another, which is
what ``step_benchmark.py --settle`` avoids::

    python benchmarks/idle_gap.py [--threads 2] [--pauses 45,90] [--steps 12]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and print the measurements."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=4500, help="Nodes per graph.")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of the step.")
    parser.add_argument("--pauses", default="45,90", help="Pauses before a step, in ms (comma-separated).")
    parser.add_argument("--steps", type=int, default=12, help="Timed steps per row (medians printed).")
    args = parser.parse_args(argv)
    pauses = [float(p) for p in args.pauses.split(",") if p.strip()]

    from step_benchmark import SPARSE, _setup, build_collection

    with tempfile.TemporaryDirectory(prefix="gflkit-idle-") as tmp:
        folder = build_collection(args.nodes, Path(tmp) / "graphs")
        step = _setup(SPARSE, str(folder), args.threads)()
    for i in range(3):
        step(i)
    rows = [("none (straight after the previous step)", lambda: None)]
    for ms in pauses:
        rows.append((f"slept {ms:g} ms", lambda s=ms / 1e3: time.sleep(s)))
        rows.append((f"spun {ms:g} ms on the calling thread", lambda s=ms / 1e3: _spin(s)))
    rows.append(("none, again", lambda: None))
    print(f"| before each step ({args.threads} threads, 5 x {args.nodes:,} nodes) | ms per step (median) |")
    print("|---|---:|")
    i = 3
    for label, pause in rows:
        took = []
        for _ in range(args.steps):
            pause()
            start = time.perf_counter()
            step(i)
            took.append((time.perf_counter() - start) * 1e3)
            i += 1
        print(f"| {label} | {statistics.median(took):.1f} |")


if __name__ == "__main__":
    main()
