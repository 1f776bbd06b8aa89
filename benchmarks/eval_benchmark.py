"""Seconds to score the test graphs of a family, and peak memory of meta-training on it.

Two measurements, each for the current code and (with ``--baseline``) an earlier
commit's source tree, in separate processes taking their turns
(:mod:`interleave`):

* ``evaluate``: :func:`gflkit.evaluation.scoring.graph_accuracies` of a seeded, untrained
  GFL (default ``GFLConfig``) on every test graph of the family with
  ``--episodes`` episodes each (10-shot, every other labelled node a query),
  graphs prepared afresh in every call, as a new evaluation does;
* ``memory``: peak RSS of a process that loads the family, prepares every
  training graph (as training's graph cache does over a run) and takes
  ``--steps`` meta-training steps on random meta-batches of 5 graphs.

Families: ``default`` is the built-in family (:class:`~gflkit.data.SyntheticSpec`
defaults: 100/10/20 graphs of 3,000-6,000 nodes); ``collab`` is a family of 120
graphs of 4,500 nodes, the size of the released Collaboration data.
Usage::

    python benchmarks/eval_benchmark.py --baseline /tmp/base            # Markdown table
    python benchmarks/eval_benchmark.py --families default --episodes 20 --csv
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interleave import interleave, serve, worker_env  # noqa: E402

CURRENT, BASELINE = "gflkit", "baseline (--baseline)"
K_SHOT = 10


def build_family(name: str, folder: Path) -> Path:
    """The family ``default`` or ``collab``, saved to ``folder``."""
    from gflkit.data import SyntheticSpec, make_synthetic_family

    spec = SyntheticSpec() if name == "default" else SyntheticSpec(
        n_train=100, n_val=0, n_test=20, min_nodes=4500, max_nodes=4500)
    make_synthetic_family(spec, seed=0, name=name).save(folder)
    return folder


def _evaluate_setup(folder: str, episodes: int, threads: int):
    def setup():
        import gflkit  # noqa: F401  (before dgl)
        import torch

        from gflkit.config import EpisodeConfig, GFLConfig
        from gflkit.data import GraphCollection
        from gflkit.episodes import EpisodeSampler
        from layout import gflkit_layout

        parts = gflkit_layout()
        GFL, GraphCache, graph_accuracies = parts.GFL, parts.GraphCache, parts.graph_accuracies
        torch.set_num_threads(threads)
        torch.manual_seed(0)
        collection = GraphCollection.load(folder)
        sampler = EpisodeSampler(collection, "test", EpisodeConfig(k_shot=K_SHOT))
        model = GFL(collection.feat_size, GFLConfig())
        return lambda i: graph_accuracies(model, sampler, episodes, GraphCache(collection))
    return setup


def _memory_setup(folder: str, threads: int):
    def setup():
        import gflkit  # noqa: F401  (before dgl)
        import numpy as np
        import torch

        from gflkit.config import EpisodeConfig, GFLConfig
        from gflkit.data import GraphCollection
        from gflkit.episodes import EpisodeSampler
        from gflkit.models.gfl import GFL

        from layout import gflkit_layout, training_step

        parts = gflkit_layout()
        torch.set_num_threads(threads)
        torch.manual_seed(0)
        collection = GraphCollection.load(folder)
        sampler = EpisodeSampler(collection, "train", EpisodeConfig(k_shot=K_SHOT))
        cache = parts.GraphCache(collection)
        for gid in sampler.graph_ids:
            cache[gid]
        model = GFL(collection.feat_size, GFLConfig())

        def ids_of(i: int) -> list[int]:  # 5 graphs per step, drawn from the step number
            return [int(x) for x in np.random.default_rng([0, i]).choice(sampler.graph_ids, size=5, replace=False)]

        return training_step(parts, model, cache, sampler, ids_of)
    return setup


def _configs(args) -> list[tuple[str, str | None]]:
    return [(CURRENT, None)] + ([(BASELINE, args.baseline)] if args.baseline else [])


def _worker(kind: str, folder: Path, args, source: str | None):
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--family-dir", str(folder),
            "--episodes", str(args.episodes), "--threads", str(args.threads)]
    return argv, worker_env(args.threads, source), source or tempfile.gettempdir()


def _measure(family: str, folder: Path, args) -> list[dict]:
    rows = []
    configs = _configs(args)
    evals = interleave([_worker("evaluate", folder, args, src) for _, src in configs], args.repeats)
    for (impl, _), s in zip(configs, evals):
        rows.append({"measure": f"evaluate {args.episodes} episodes per test graph", "family": family,
                     "implementation": impl, "value": s["seconds"], "unit": "s (median)",
                     "repeats": len(s["times"])})
    mems = interleave([_worker("memory", folder, args, src) for _, src in configs], args.steps)
    for (impl, _), s in zip(configs, mems):
        # A tree whose steps fork a process (c12ac78 to d63f082) shares the loaded graphs with it:
        # what that process adds is its private memory.
        rows.append({"measure": f"peak RSS, all train graphs prepared, {len(s['times'])} steps", "family": family,
                     "implementation": impl, "value": s["peak_rss_mb"] + s.get("children_private_mb", 0.0),
                     "unit": "MB", "repeats": len(s["times"])})
    base = {r["measure"]: r["value"] for r in rows if r["implementation"] == BASELINE}
    for r in rows:
        r["baseline_over_this"] = base[r["measure"]] / r["value"] if r["measure"] in base else float("nan")
    return rows


def _markdown(rows: list[dict]) -> str:
    lines = ["| measure | family | implementation | value | baseline / this |", "|---|---|---|---:|---:|"]
    for r in rows:
        ratio = "" if r["baseline_over_this"] != r["baseline_over_this"] else f"{r['baseline_over_this']:.2f}x"
        value = f"{r['value']:.2f} {r['unit']}" if r["unit"].startswith("s") else f"{r['value']:,.0f} {r['unit']}"
        lines.append(f"| {r['measure']} | {r['family']} | {r['implementation']} | {value} | {ratio} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and print the measurements."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default="default,collab", help="Comma-separated: default, collab.")
    parser.add_argument("--episodes", type=int, default=20, help="Episodes per test graph.")
    parser.add_argument("--repeats", type=int, default=3, help="Timed evaluations per implementation.")
    parser.add_argument("--steps", type=int, default=3, help="Meta-training steps of the memory measurement.")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch and OpenMP threads.")
    parser.add_argument("--baseline", metavar="DIR", help="Source tree of an earlier commit, measured beside.")
    parser.add_argument("--csv", action="store_true", help="CSV instead of a Markdown table.")
    parser.add_argument("--worker", choices=["evaluate", "memory"], help=argparse.SUPPRESS)
    parser.add_argument("--family-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker == "evaluate":
        serve(_evaluate_setup(args.family_dir, args.episodes, args.threads), warmup=0)
        return
    if args.worker == "memory":
        serve(_memory_setup(args.family_dir, args.threads), warmup=0, reset_peak=False)
        return
    if args.baseline:
        args.baseline = str(Path(args.baseline).resolve())

    import gflkit  # noqa: F401  (before dgl)
    import torch

    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory(prefix="gflkit-bench-") as tmp:
        for family in [f.strip() for f in args.families.split(",") if f.strip()]:
            if family not in ("default", "collab"):
                raise SystemExit(f"unknown family {family!r}: choose default or collab")
            print(f"generating the {family} family", file=sys.stderr, flush=True)
            folder = build_family(family, Path(tmp) / family)
            print(f"measuring the {family} family", file=sys.stderr, flush=True)
            rows += _measure(family, folder, args)
    if args.csv:
        import pandas as pd

        sys.stdout.write(pd.DataFrame(rows).to_csv(index=False, float_format="%.3f"))
    else:
        sys.stdout.write(_markdown(rows))


if __name__ == "__main__":
    main()
