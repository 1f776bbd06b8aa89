"""The ten operators that take most of a meta-training step, with their share.

Profiles the step of ``step_benchmark.py`` (5 graphs, default GFL, 10-shot,
every other labelled node a query) with :mod:`torch.profiler` and prints a
Markdown table: operator, share of the operators' own CPU time, milliseconds
and calls per step. Run it with an earlier commit's source tree first on
``PYTHONPATH`` (from that tree's folder) to profile that commit::

    python benchmarks/profile_step.py --nodes 4500 --threads 1
    cd /tmp/base && PYTHONPATH=/tmp/base python /path/to/benchmarks/profile_step.py

On a loaded machine the profiler's times include waits for a core, spread over
all operators; the shares remain comparable, the milliseconds do not.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def profile_rows(nodes: int, threads: int, steps: int, top: int) -> tuple[list[dict], float]:
    """The ``top`` operators by own CPU time per step, and the total of all operators."""
    import gflkit  # noqa: F401  (before dgl)
    import torch
    from torch.profiler import ProfilerActivity, profile

    from gflkit.data import GraphCollection
    from step_benchmark import _sparse_step, build_collection

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="gflkit-profile-") as tmp:
        collection = GraphCollection.load(build_collection(nodes, Path(tmp) / "graphs"))
    _, step = _sparse_step(collection)
    for i in range(3):
        step(i)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(3, 3 + steps):
            step(i)
    events = [e for e in prof.key_averages() if not e.key.startswith(("ProfilerStep", "Optimizer.step#"))]
    total = sum(e.self_cpu_time_total for e in events)
    events.sort(key=lambda e: -e.self_cpu_time_total)
    rows = [{"op": e.key, "share": e.self_cpu_time_total / total,
             "ms_per_step": e.self_cpu_time_total / steps / 1000, "calls_per_step": e.count / steps}
            for e in events[:top]]
    return rows, total / steps / 1000


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and print the profile."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=4500, help="Nodes per graph.")
    parser.add_argument("--threads", type=int, default=1, help="torch threads.")
    parser.add_argument("--steps", type=int, default=20, help="Profiled steps.")
    parser.add_argument("--top", type=int, default=10, help="Operators listed.")
    args = parser.parse_args(argv)
    rows, total = profile_rows(args.nodes, args.threads, args.steps, args.top)
    print("| operator | share of op CPU time | ms per step | calls per step |\n|---|---:|---:|---:|")
    for r in rows:
        print(f"| `{r['op']}` | {100 * r['share']:.1f}% | {r['ms_per_step']:.1f} | {r['calls_per_step']:.0f} |")
    print(f"| all operators | 100% | {total:.1f} | |")


if __name__ == "__main__":
    main()
