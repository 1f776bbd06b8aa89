"""Several processes against one: steps per second of one run, and wall time of ``compare --jobs``.

Two measurements, each configuration in fresh processes and repeated
alternately (``--repeats``), so that a load spike on a shared machine does not
fall on one configuration only:

1. **One run** (``gflkit train``): meta-training steps per second of
   1 process x 2 threads against 2 processes x 1 thread (``--nproc 2``) on a
   collection (default: the built-in default family, generated into
   ``--data-root`` on first use). A step's time is rank 0's: its share of the
   meta-batch, forward, backward, the gradient all-reduce and the Adam update.
   The first ``--warmup`` steps are not timed (graph preparation happens there).
2. **Independent runs** (``gflkit compare``): wall time of ``--jobs 1`` against
   ``--jobs 2`` on tiny settings (the small synthetic family, few steps),
   including process start-up.

Usage::

    python benchmarks/distributed_benchmark.py --data-root /tmp/gflkit-data
    python benchmarks/distributed_benchmark.py --collection small --steps 30   # quick
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _env(threads: int) -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": str(threads),
            "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}


def run_worker(data: str, root: str | None, nproc: int, threads: int, steps: int, warmup: int, meta_batch: int) -> dict:
    """One training run in this process (and its ranks); median step time after warm-up."""
    import torch

    import gflkit
    from gflkit.config import TrainConfig

    torch.set_num_threads(threads)
    cfg = TrainConfig(steps=warmup + steps, meta_batch=meta_batch, eval_every=10**6)
    start = time.perf_counter()
    result, _ = gflkit.train(data, train_cfg=cfg, root=root, eval_split=None, progress=False, nproc=nproc,
                             threads_per_proc=threads, return_result=True, run_dir=False)
    wall = time.perf_counter() - start
    seconds = result.history["seconds"].iloc[warmup:-1]  # the last step also validates
    return {"median_s": statistics.median(seconds), "mean_s": float(seconds.mean()), "wall_s": wall}


def _train(args, nproc: int, threads: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", str(nproc), str(threads), "--collection", args.collection,
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--meta-batch", str(args.meta_batch)]
    if args.data_root:
        cmd += ["--data-root", args.data_root]
    out = subprocess.run(cmd, capture_output=True, text=True, env=_env(threads if nproc == 1 else 1),
                         timeout=args.max_seconds)
    if out.returncode != 0:
        raise SystemExit(f"worker failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _compare(small: Path, jobs: int, steps: int, timeout: float) -> float:
    cmd = [sys.executable, "-m", "gflkit", "-q", "compare", str(small), "--model", "gfl,protonet,maml,knn",
           "--steps", str(steps), "--jobs", str(jobs)]
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=_env(2 if jobs == 1 else 1), timeout=timeout)
    if out.returncode != 0:
        raise SystemExit(f"compare failed: {out.stderr.strip().splitlines()[-1:]}")
    return time.perf_counter() - start


_STARTUP = """
import time
from gflkit.training.parallel import default_threads, run_jobs
start = time.perf_counter()
run_jobs(default_threads, [1, 2], jobs=2)
print(time.perf_counter() - start)
"""


def _pool_startup(timeout: float) -> float:
    """Seconds to start a pool of 2 spawned workers that import gflkit (the fixed cost of --jobs 2)."""
    out = subprocess.run([sys.executable, "-c", _STARTUP], capture_output=True, text=True, env=_env(1),
                         timeout=timeout, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _small_family(folder: Path) -> Path:
    from gflkit.data import SMALL_SPEC, make_synthetic_family

    return make_synthetic_family(SMALL_SPEC, seed=0, name="small").save(folder / "small")


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and print the measurements."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", default="synthetic",
                        help="Collection of the one-run measurement: a name under --data-root, a folder, or 'small'.")
    parser.add_argument("--data-root", default=None, help="Data root (the default family is generated there).")
    parser.add_argument("--steps", type=int, default=40, help="Timed steps per training run.")
    parser.add_argument("--warmup", type=int, default=5, help="Untimed steps first.")
    parser.add_argument("--meta-batch", type=int, default=5, help="Graphs per step (5 splits 3 + 2 over two ranks).")
    parser.add_argument("--compare-steps", type=int, default=20, help="Steps per model in the compare measurement.")
    parser.add_argument("--repeats", type=int, default=2, help="Alternating repeats of each configuration.")
    parser.add_argument("--max-seconds", type=float, default=1800, help="Bound on each subprocess.")
    parser.add_argument("--skip-compare", action="store_true", help="Only the one-run measurement.")
    parser.add_argument("--skip-train", action="store_true", help="Only the compare measurement.")
    parser.add_argument("--worker", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(run_worker(args.collection, args.data_root, *args.worker, args.steps, args.warmup,
                                    args.meta_batch)))
        return
    with tempfile.TemporaryDirectory(prefix="gflkit-bench-") as tmp:
        small = _small_family(Path(tmp)) if args.collection == "small" or not args.skip_compare else None
        if args.collection == "small":
            args.collection = str(small)
        train_rows = {"1 process x 2 threads": [], "2 processes x 1 thread": []}
        compare_rows = {"compare --jobs 1 (2 threads)": [], "compare --jobs 2 (1 thread each)": []}
        startup = []
        for r in range(args.repeats):
            for label, (nproc, threads) in zip(train_rows, [(1, 2), (2, 1)] if not args.skip_train else []):
                print(f"[{r + 1}/{args.repeats}] train: {label}", file=sys.stderr, flush=True)
                train_rows[label].append(_train(args, nproc, threads))
            if not args.skip_compare:
                for label, jobs in zip(compare_rows, [1, 2]):
                    print(f"[{r + 1}/{args.repeats}] {label}", file=sys.stderr, flush=True)
                    compare_rows[label].append(_compare(small, jobs, args.compare_steps, args.max_seconds))
                startup.append(_pool_startup(args.max_seconds))
    if not args.skip_train:
        _train_table(args, train_rows)
    if not args.skip_compare:
        print(f"\n| compare (gfl-mean, gfl-att, protonet, maml, knn; small family, {args.compare_steps} steps) "
              f"| wall s per repeat |")
        print("|---|---|")
        for label, walls in compare_rows.items():
            print(f"| {label} | {', '.join(f'{w:.1f}' for w in walls)} |")
        print(f"| start-up of a 2-worker pool alone | {', '.join(f'{w:.1f}' for w in startup)} |")
        j1, j2 = (min(w) for w in compare_rows.values())
        print(f"\nwall-time ratio (jobs 1 / jobs 2, best repeats): {j1 / j2:.2f}")


def _train_table(args, train_rows: dict) -> None:
    print(f"one run on {Path(args.collection).name}, meta-batch {args.meta_batch}, {args.steps} timed steps")
    print("| configuration | ms per step (median of each repeat) | steps/s (best repeat) | wall s (with start-up) |")
    print("|---|---|---|---|")
    best = {}
    for label, runs in train_rows.items():
        best[label] = 1 / min(x["median_s"] for x in runs)
        medians = ", ".join(f"{1000 * x['median_s']:.0f}" for x in runs)
        walls = ", ".join(f"{x['wall_s']:.0f}" for x in runs)
        print(f"| {label} | {medians} | {best[label]:.2f} | {walls} |")
    one, two = best.values()
    print(f"\nsteps/s ratio (2 processes / 1 process): {two / one:.2f}")


if __name__ == "__main__":
    main()
