"""Milliseconds per meta-training step and peak memory, sparse gflkit vs dense.

One step is what ``gflkit.training.meta_train`` does per iteration: draw one
episode per graph (10-shot, 4 classes, every other labelled node a query),
batch the 5 graphs, run the full GFL model (default ``GFLConfig``), the loss,
the backward pass and an Adam update. The dense reference
(``dense_reference.DenseGFL``) does the same step with ``n x n`` matrices.

Each configuration runs in a fresh subprocess so that its peak memory is its
own. Usage::

    python benchmarks/step_benchmark.py                      # Markdown table
    python benchmarks/step_benchmark.py --sizes 1000,5000 --dense-sizes 1000 --csv
    # the current code beside an earlier commit, alternating, on 1 and 2 threads
    git worktree add /tmp/base 2a76192
    python benchmarks/step_benchmark.py --sizes 4500 --dense-sizes '' --threads 1,2 --baseline /tmp/base --rounds 3

See ``benchmarks/README.md`` for what the columns mean.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GRAPHS, K_SHOT, CLASSES, FEATS = 5, 10, 4, 128
SPARSE, DENSE, BASELINE = "sparse gflkit", "dense reference", "baseline (--baseline)"


def _rss_mb() -> float:
    """Current resident set size (VmRSS) in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (Linux >= 4.0), so setup does not count.

    Returns:
        Whether the reset worked; when it did not, the reported peak is the
        larger of the setup's and the steps' peaks.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


def build_collection(nodes: int, folder: Path):
    """The 5 benchmark graphs of ``nodes`` nodes each, saved to ``folder``."""
    from gflkit.data import SyntheticSpec, make_synthetic_family

    spec = SyntheticSpec(n_train=GRAPHS, n_val=0, n_test=0, num_classes=CLASSES, feat_size=FEATS,
                         min_nodes=nodes, max_nodes=nodes)
    return make_synthetic_family(spec, seed=0, name=f"bench-{nodes}").save(folder)


def _sparse_step(collection):
    """A closure doing one gflkit meta-training step (as in ``meta_train``)."""
    import torch

    from gflkit.config import EpisodeConfig, GFLConfig
    from gflkit.episodes import EpisodeSampler
    from gflkit.models.gfl import GFL

    try:
        from gflkit.batching import GraphCache, batch_episodes
    except ImportError:  # the layout of an earlier commit (--baseline)
        from gflkit.metrics import GraphCache
        from gflkit.models.gfl import batch_episodes

    sampler = EpisodeSampler(collection, "train", EpisodeConfig(k_shot=K_SHOT))
    cache = GraphCache(collection)
    ids = sampler.graph_ids
    for gid in ids:  # prepared once, as meta_train's cache does
        cache[gid]
    model = GFL(collection.feat_size, GFLConfig())
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

    def step(i: int) -> None:
        eps = [sampler.episode(gid, i) for gid in ids]
        bg, support, queries = batch_episodes([cache[gid] for gid in ids], eps)
        loss, _ = model.loss(model(bg, support, queries), [e.query_label for e in eps])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return model, step


def _dense_step(collection):
    """A closure doing the same step with :class:`dense_reference.DenseGFL`."""
    import torch

    from dense_reference import DenseGFL, dense_graph
    from gflkit.config import EpisodeConfig
    from gflkit.episodes import EpisodeSampler

    sampler = EpisodeSampler(collection, "train", EpisodeConfig(k_shot=K_SHOT))
    ids = sampler.graph_ids
    graphs = []
    for gid in ids:  # dense adjacencies are built once, like the authors' preprocessing
        g = collection.graphs[gid]
        src, dst = g.edges()
        graphs.append(dense_graph(src, dst, g.num_nodes(), g.ndata["feat"]))
    model = DenseGFL(collection.feat_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

    def step(i: int) -> None:
        loss = model(graphs, [sampler.episode(gid, i) for gid in ids])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return model, step


def _parameter_shapes(model) -> list[tuple[int, ...]]:
    return sorted(tuple(p.shape) for p in model.parameters())


def run_worker(impl: str, collection_dir: str, steps: int, warmup: int, max_seconds: float,
               threads: int) -> dict:
    """Time one configuration in this process; returns one result row with every step's time."""
    import gflkit  # noqa: F401  (before dgl)
    import torch

    from gflkit.data import GraphCollection
    from gflkit.models.gfl import GFL

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    collection = GraphCollection.load(collection_dir)
    model, step = (_sparse_step if impl == SPARSE else _dense_step)(collection)
    if _parameter_shapes(model) != _parameter_shapes(GFL(collection.feat_size)):
        raise SystemExit(f"{impl}: parameter shapes differ from gflkit's GFL")
    exact = _reset_peak_rss()
    before = _rss_mb()
    for i in range(warmup):
        step(i)
    times = []
    for i in range(warmup, warmup + steps):
        start = time.perf_counter()
        step(i)
        times.append(time.perf_counter() - start)
        if len(times) >= 3 and sum(times) > max_seconds:
            break
    peak = _peak_rss_mb()
    return {
        "implementation": impl, "nodes": collection.graphs[0].num_nodes(),
        "ms_per_step": 1000 * statistics.median(times), "steps": len(times), "times": times,
        "peak_step_mb": peak - before, "peak_rss_mb": peak, "rss_before_mb": before,
        "peak_exact": exact, "threads": threads,
    }


def _int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _worker_env(threads: int, source: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # With the default (active) wait policy, idle OpenMP threads spin between
    # parallel regions and take the cores from any other work: steps get
    # several times slower and very noisy on a shared machine.
    env.setdefault("OMP_WAIT_POLICY", "passive")
    env["OMP_NUM_THREADS"] = str(threads)
    # A baseline source tree goes first on the path, ahead of the installed gflkit.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, str(HERE), env.get("PYTHONPATH")]))
    return env


def _run_config(impl: str, folder: Path, threads: int, args, source: str | None = None) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", impl, "--collection", str(folder),
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--max-seconds", str(args.max_seconds),
           "--threads", str(threads)]
    # Run from the baseline's tree (or a neutral folder) so that the current
    # folder does not shadow the code under test.
    cwd = source or tempfile.gettempdir()
    proc = subprocess.run(cmd, env=_worker_env(threads, source), stdout=subprocess.PIPE, text=True,
                          check=False, cwd=cwd)
    if proc.returncode != 0:
        raise SystemExit(f"{impl} on {folder.name} failed (exit {proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _merge(runs: list[dict]) -> dict:
    """One row from the rounds of one configuration: the median over all their steps."""
    times = [t for r in runs for t in r["times"]]
    row = {k: v for k, v in runs[0].items() if k != "times"}
    row.update(ms_per_step=1000 * statistics.median(times), steps=len(times),
               peak_step_mb=max(r["peak_step_mb"] for r in runs), peak_rss_mb=max(r["peak_rss_mb"] for r in runs),
               peak_exact=all(r["peak_exact"] for r in runs))
    return row


def _add_ratios(rows: list[dict]) -> None:
    """``speedup``: the baseline's time over this row's at the same size and threads;
    ``thread_speedup``: the same implementation's time on one thread over this row's."""
    by_key = {(r["implementation"], r["nodes"], r["threads"]): r for r in rows}
    for r in rows:
        base = by_key.get((BASELINE, r["nodes"], r["threads"]))
        r["speedup"] = base["ms_per_step"] / r["ms_per_step"] if base else float("nan")
        one = by_key.get((r["implementation"], r["nodes"], 1))
        r["thread_speedup"] = one["ms_per_step"] / r["ms_per_step"] if one else float("nan")


def _markdown(rows: list[dict]) -> str:
    head = ("| implementation | nodes per graph | threads | ms per step (median) | steps timed "
            "| peak memory MB (steps) | peak RSS MB (total) | baseline / this | 1 thread / this |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['implementation']} | {r['nodes']:,} | {r['threads']} | {r['ms_per_step']:.0f} "
                     f"| {r['steps']} | {r['peak_step_mb']:.0f} | {r['peak_rss_mb']:.0f} "
                     f"| {_ratio(r['speedup'])} | {_ratio(r['thread_speedup'])} |")
    return "\n".join(lines) + "\n"


def _ratio(x: float) -> str:
    return "" if x != x else f"{x:.2f}x"


def _csv(rows: list[dict]) -> str:
    import pandas as pd

    return pd.DataFrame(rows).to_csv(index=False, float_format="%.2f")


def _plan(args) -> list[tuple[str, str | None, int, int]]:
    """``(implementation, source tree, nodes, threads)`` of every configuration."""
    plan = []
    for n in args.sizes:
        for t in args.threads:
            plan.append((SPARSE, None, n, t))
            if args.baseline:
                plan.append((BASELINE, args.baseline, n, t))
    plan += [(DENSE, None, n, t) for n in args.dense_sizes for t in args.threads]
    return plan


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=_int_list, default=[1000, 5000, 20000, 100000],
                        help="Nodes per graph for sparse gflkit (comma-separated).")
    parser.add_argument("--dense-sizes", type=_int_list, default=[1000, 5000],
                        help="Nodes per graph for the dense reference (comma-separated; '' for none).")
    parser.add_argument("--steps", type=int, default=10, help="Timed steps per configuration and round (at most).")
    parser.add_argument("--warmup", type=int, default=2, help="Untimed steps before timing.")
    parser.add_argument("--max-seconds", type=float, default=60.0,
                        help="Stop timing a configuration after this many seconds (at least 3 steps).")
    parser.add_argument("--threads", type=_int_list, default=[os.cpu_count() or 1],
                        help="torch and OpenMP threads of each run; several (e.g. 1,2) time each.")
    parser.add_argument("--baseline", metavar="DIR",
                        help="Source tree of an earlier commit (e.g. a `git worktree`), timed beside the "
                             "current code, alternating, with the same graphs.")
    parser.add_argument("--rounds", type=int, default=1,
                        help="Run every configuration this many times, alternating; rows report the median "
                             "over all rounds' steps.")
    parser.add_argument("--csv", action="store_true", help="CSV instead of a Markdown table.")
    parser.add_argument("--worker", choices=[SPARSE, DENSE], help=argparse.SUPPRESS)
    parser.add_argument("--collection", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        print(json.dumps(run_worker(args.worker, args.collection, args.steps, args.warmup,
                                    args.max_seconds, args.threads[0])))
        return
    if args.baseline:
        args.baseline = str(Path(args.baseline).resolve())

    import gflkit  # noqa: F401  (before dgl)
    import torch

    # The parent only generates graphs. One thread keeps it from leaving OpenMP
    # workers behind that, under OMP_WAIT_POLICY=active, would spin beside the
    # timed subprocess for the whole run.
    torch.set_num_threads(1)
    plan = _plan(args)
    runs: dict[tuple, list[dict]] = {cfg: [] for cfg in plan}
    with tempfile.TemporaryDirectory(prefix="gflkit-bench-") as tmp:
        folders: dict[int, Path] = {}
        for _, _, n, _ in plan:
            if n not in folders:
                print(f"generating 5 graphs of {n:,} nodes", file=sys.stderr, flush=True)
                folders[n] = build_collection(n, Path(tmp) / str(n))
        for round_ in range(args.rounds):
            for cfg in plan:
                impl, source, n, threads = cfg
                print(f"round {round_ + 1}/{args.rounds}: {impl} at {n:,} nodes, {threads} thread(s)",
                      file=sys.stderr, flush=True)
                row = _run_config(SPARSE if impl == BASELINE else impl, folders[n], threads, args, source)
                row["implementation"] = impl
                runs[cfg].append(row)
    rows = [_merge(r) for r in runs.values()]
    _add_ratios(rows)
    if not all(r["peak_exact"] for r in rows):
        print("note: could not reset the peak-RSS mark; peaks include setup", file=sys.stderr)
    sys.stdout.write(_csv(rows) if args.csv else _markdown(rows))


if __name__ == "__main__":
    main()
