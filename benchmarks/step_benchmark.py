"""Milliseconds per meta-training step and peak memory, sparse gflkit vs dense.

One step is what ``gflkit.training.meta.meta_train`` does per iteration: draw one
episode per graph (10-shot, 4 classes, every other labelled node a query),
batch the 5 graphs, run the full GFL model (default ``GFLConfig``), the loss,
the backward pass and an Adam update. The dense reference
(``dense_reference.DenseGFL``) does the same step with ``n x n`` matrices.

Each configuration runs in a process of its own, so that its peak memory is its
own; the configurations of one size take their timed steps in turns
(:mod:`interleave`), so that they share the machine's load alike, each timed
step right after an untimed one of its own (``--settle``), as training takes
its steps one after another. Usage::

    python benchmarks/step_benchmark.py                      # Markdown table
    python benchmarks/step_benchmark.py --sizes 1000,5000 --dense-sizes 1000 --csv
    # the current code and an earlier commit, step by step in turns, on 1 and 2 threads
    git worktree add /tmp/base 2a76192
    python benchmarks/step_benchmark.py --sizes 4500 --dense-sizes '' --threads 1,2 --baseline /tmp/base
    # also with the batch's features copied into one tensor instead of read graph by graph
    python benchmarks/step_benchmark.py --sizes 4500 --dense-sizes '' --copy-features

See ``benchmarks/README.md`` for what the columns mean.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interleave import interleave, serve, worker_env  # noqa: E402

GRAPHS, K_SHOT, CLASSES, FEATS = 5, 10, 4, 128
SPARSE, DENSE, BASELINE = "sparse gflkit", "dense reference", "baseline (--baseline)"
COMMAND = f"{SPARSE} (gflkit command)"
COPIED = "sparse gflkit (features copied)"


def baseline_names(dirs: list[str]) -> list[str]:
    """The implementation name of each ``--baseline`` tree: ``baseline (--baseline)`` for a single
    one, ``baseline (<folder name>)`` for each of several."""
    if len(dirs) == 1:
        return [BASELINE]
    return [f"baseline ({Path(d).name})" for d in dirs]


def build_collection(nodes: int, folder: Path):
    """The 5 benchmark graphs of ``nodes`` nodes each, saved to ``folder``."""
    from gflkit.data import SyntheticSpec, make_synthetic_family

    spec = SyntheticSpec(n_train=GRAPHS, n_val=0, n_test=0, num_classes=CLASSES, feat_size=FEATS,
                         min_nodes=nodes, max_nodes=nodes)
    return make_synthetic_family(spec, seed=0, name=f"bench-{nodes}").save(folder)


def reorder_collection(source: Path, folder: Path, algo: str) -> Path:
    """The collection at ``source`` with the nodes of each graph renumbered by
    ``dgl.reorder_graph`` (``rcmk``: reverse Cuthill-McKee; ``metis``: METIS
    partitions, 64 per graph), saved to ``folder``."""
    import dgl

    from gflkit.data import GraphCollection

    collection = GraphCollection.load(source)
    options = {"permute_config": {"k": 64}} if algo == "metis" else {}
    graphs = []
    for g in collection.graphs:
        h = dgl.reorder_graph(g, node_permute_algo=algo, edge_permute_algo="src", store_ids=False, **options)
        for data in (h.ndata, h.edata):
            data.pop(dgl.NID, None)
            data.pop(dgl.EID, None)
        graphs.append(h)
    collection.graphs = graphs
    return collection.save(folder)


def _sparse_step(collection, copy_features: bool = False):
    """A closure doing one gflkit meta-training step (as in ``meta_train``); ``copy_features``: with
    the batch's features copied into one tensor, as for a model that does not take them graph by graph."""
    from gflkit.config import EpisodeConfig, GFLConfig
    from gflkit.episodes import EpisodeSampler
    from layout import gflkit_layout, training_step

    parts = gflkit_layout()
    sampler = EpisodeSampler(collection, "train", EpisodeConfig(k_shot=K_SHOT))
    cache = parts.GraphCache(collection)
    ids = sampler.graph_ids
    for gid in ids:  # prepared once, as meta_train's cache does
        cache[gid]
    model_class = parts.GFL
    if copy_features:  # the same model, declaring that it does not take the features graph by graph
        model_class = type("GFL", (parts.GFL,), {"takes_feature_parts": False})
    model = model_class(collection.feat_size, GFLConfig())
    return model, training_step(parts, model, cache, sampler, lambda i: ids)


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


def _setup(impl: str, collection_dir: str, threads: int, copy_features: bool = False):
    """The worker's timed function: one step of ``impl`` on the saved collection."""
    def setup():
        import gflkit  # noqa: F401  (before dgl)
        import torch

        from gflkit.data import GraphCollection
        from gflkit.models.gfl import GFL

        torch.set_num_threads(threads)
        torch.manual_seed(0)
        collection = GraphCollection.load(collection_dir)
        model, step = _dense_step(collection) if impl == DENSE else _sparse_step(collection, copy_features)
        if _parameter_shapes(model) != _parameter_shapes(GFL(collection.feat_size)):
            raise SystemExit(f"{impl}: parameter shapes differ from gflkit's GFL")
        return step
    return setup


def _int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _rows_for_size(n: int, folder: Path, args) -> list[dict]:
    """Every configuration at ``n`` nodes, timed in turns (:func:`interleave.interleave`)."""
    reordered = {}
    for algo in args.reorder:
        print(f"renumbering the nodes of the {n:,}-node graphs ({algo})", file=sys.stderr, flush=True)
        reordered[algo] = reorder_collection(folder, folder.with_name(f"{folder.name}-{algo}"), algo)
    configs = []
    for threads in args.threads:
        configs.append((SPARSE, None, threads, folder))
        if args.command_process:
            configs.append((COMMAND, None, threads, folder))
        if args.copy_features:
            configs.append((COPIED, None, threads, folder))
        for algo, other in reordered.items():
            configs.append((f"{SPARSE} ({algo} order)", None, threads, other))
        for name, source in zip(baseline_names(args.baseline), args.baseline):
            configs.append((name, source, threads, folder))
        if n in args.dense_sizes:
            configs.append((DENSE, None, threads, folder))
    commands = []
    for impl, source, threads, graphs in configs:
        argv = [sys.executable, str(Path(__file__).resolve()), "--worker", DENSE if impl == DENSE else SPARSE,
                "--collection", str(graphs), "--warmup", str(args.warmup), "--settle", str(args.settle),
                "--threads", str(threads)] + (["--as-command"] if impl == COMMAND else []) + \
            (["--copy-features"] if impl == COPIED else [])
        # From the baseline's tree (or a neutral folder): the current folder must not shadow the code timed.
        commands += [(argv, worker_env(threads, source), source or tempfile.gettempdir())] * args.processes
    summaries = interleave(commands, args.steps, args.max_seconds)
    rows = []
    for c, (impl, _, threads, _) in enumerate(configs):
        rows.append({"implementation": impl, "nodes": n, "threads": threads,
                     **_across_processes(summaries[c * args.processes:(c + 1) * args.processes])})
    return rows


def _across_processes(summaries: list[dict]) -> dict:
    """One configuration's figures: each the median over its worker processes of that process's
    figure (a step's time, its page faults and its peak depend on the state the process's memory
    allocator happens to reach, which differs from process to process)."""
    def each(key: str, scale: float = 1.0) -> float:
        return statistics.median(scale * s.get(key, 0.0) for s in summaries)

    ms = [1000 * s["seconds"] for s in summaries]
    return {"ms_per_step": statistics.median(ms), "cpu_ms_per_step": each("cpu_seconds", 1000),
            "steps": min(len(s["times"]) for s in summaries),
            "system_ms_per_step": each("system_seconds", 1000), "page_faults_per_step": each("page_faults"),
            "peak_step_mb": each("peak_step_mb"), "peak_rss_mb": each("peak_rss_mb"),
            "rss_before_mb": each("rss_loaded_mb"), "peak_exact": all(s["peak_exact"] for s in summaries),
            "children_peak_rss_mb": each("children_peak_rss_mb"), "children_private_mb": each("children_private_mb"),
            "processes": len(summaries), "ms_per_step_min": min(ms), "ms_per_step_max": max(ms)}


def _add_ratios(rows: list[dict], baselines: list[str]) -> None:
    """``speedup``: the (first) baseline's time over this row's at the same size and threads
    (``cpu_speedup``: the same for CPU time); with several baselines also ``speedup <name>``
    for each; ``thread_speedup``: the same implementation's time on one thread over this row's."""
    by_key = {(r["implementation"], r["nodes"], r["threads"]): r for r in rows}
    for r in rows:
        for i, name in enumerate(baselines):
            base = by_key.get((name, r["nodes"], r["threads"]))
            wall = base["ms_per_step"] / r["ms_per_step"] if base else float("nan")
            if i == 0:
                r["speedup"] = wall
                r["cpu_speedup"] = base["cpu_ms_per_step"] / r["cpu_ms_per_step"] if base else float("nan")
            if len(baselines) > 1:
                r[f"speedup {name}"] = wall
        if not baselines:
            r["speedup"] = r["cpu_speedup"] = float("nan")
        one = by_key.get((r["implementation"], r["nodes"], 1))
        r["thread_speedup"] = one["ms_per_step"] / r["ms_per_step"] if one else float("nan")


def _markdown(rows: list[dict], baselines: list[str]) -> str:
    several = baselines if len(baselines) > 1 else []
    head = ("| implementation | nodes per graph | threads | ms per step (median) | CPU ms per step | steps timed "
            "| peak memory MB (steps) | peak RSS MB (total) | baseline / this | baseline / this (CPU) "
            + "".join(f"| {name[len('baseline '):].strip('()')} / this " for name in several) + "| 1 thread / this |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(several) + "---:|"]
    for r in rows:
        lines.append(f"| {r['implementation']} | {r['nodes']:,} | {r['threads']} | {r['ms_per_step']:.0f} "
                     f"| {r['cpu_ms_per_step']:.0f} | {r['steps']} | {r['peak_step_mb']:.0f} | {r['peak_rss_mb']:.0f} "
                     f"| {_ratio(r['speedup'])} | {_ratio(r['cpu_speedup'])} "
                     + "".join(f"| {_ratio(r[f'speedup {name}'])} " for name in several)
                     + f"| {_ratio(r['thread_speedup'])} |")
    return "\n".join(lines) + "\n"


def _ratio(x: float) -> str:
    return "" if x != x else f"{x:.2f}x"


def _csv(rows: list[dict]) -> str:
    import pandas as pd

    return pd.DataFrame(rows).to_csv(index=False, float_format="%.2f")


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and print the measurements."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=_int_list, default=[1000, 5000, 20000, 100000],
                        help="Nodes per graph for sparse gflkit (comma-separated).")
    parser.add_argument("--dense-sizes", type=_int_list, default=[1000, 5000],
                        help="Nodes per graph for the dense reference (comma-separated; '' for none).")
    parser.add_argument("--steps", type=int, default=10, help="Timed steps per configuration (at most).")
    parser.add_argument("--warmup", type=int, default=2, help="Untimed steps before timing.")
    parser.add_argument("--settle", type=int, default=1,
                        help="Untimed steps right before each timed one, so that every timed step follows a "
                             "step of its own configuration as in training, not the other configurations' "
                             "turns (0: time the first step after the wait).")
    parser.add_argument("--max-seconds", type=float, default=120.0,
                        help="Stop timing a size after its configurations have used this many seconds "
                             "(at least 3 steps each).")
    parser.add_argument("--threads", type=_int_list, default=[os.cpu_count() or 1],
                        help="torch and OpenMP threads; several (e.g. 1,2) time each, in turns.")
    parser.add_argument("--baseline", metavar="DIR", action="append", default=[],
                        help="Source tree of an earlier commit (e.g. a `git worktree`), timed in turns with "
                             "the current code on the same graphs; repeat it to time several (the first gives "
                             "the 'baseline / this' columns).")
    parser.add_argument("--reorder", type=lambda t: [a for a in t.split(",") if a], default=[],
                        help="Also time the graphs with their nodes renumbered by dgl.reorder_graph: "
                             "'rcmk', 'metis' or both (comma-separated).")
    parser.add_argument("--processes", type=int, default=1,
                        help="Worker processes per configuration, all taking turns; each figure is the median "
                             "over them (the CSV adds the fastest and slowest process's ms per step).")
    parser.add_argument("--command-process", action="store_true",
                        help="Also time the current tree in a process set up as the gflkit command sets up its own "
                             "(gflkit_cli.process.configure_process: glibc's trim and mmap thresholds).")
    parser.add_argument("--copy-features", action="store_true",
                        help="Also time the current code with each batch's features copied into one tensor "
                             "(a model that does not take them graph by graph), in turns with the rest.")
    parser.add_argument("--csv", action="store_true", help="CSV instead of a Markdown table.")
    parser.add_argument("--worker", choices=[SPARSE, DENSE], help=argparse.SUPPRESS)
    parser.add_argument("--as-command", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--collection", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.processes < 1:
        parser.error("--processes must be at least 1")

    if args.worker:
        if args.as_command:  # before anything allocates a tensor, as the command's entry does
            from gflkit_cli.process import configure_process

            if not configure_process():
                raise SystemExit("--command-process: the command's process settings were not applied "
                                 "(not glibc, GFLKIT_NO_MALLOPT or one of glibc's MALLOC_ variables set)")
        serve(_setup(args.worker, args.collection, args.threads[0], args.copy_features), args.warmup,
              settle=args.settle)
        return
    args.baseline = [str(Path(b).resolve()) for b in args.baseline]

    import gflkit  # noqa: F401  (before dgl)
    import torch

    # The parent only generates graphs. One thread keeps it from leaving OpenMP
    # workers behind that, under OMP_WAIT_POLICY=active, would spin beside the
    # timed subprocesses for the whole run.
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory(prefix="gflkit-bench-") as tmp:
        for n in sorted(set(args.sizes) | set(args.dense_sizes)):
            print(f"generating 5 graphs of {n:,} nodes", file=sys.stderr, flush=True)
            folder = build_collection(n, Path(tmp) / str(n))
            print(f"timing {n:,} nodes", file=sys.stderr, flush=True)
            rows += [r for r in _rows_for_size(n, folder, args)
                     if r["implementation"] == DENSE or n in args.sizes]
    _add_ratios(rows, baseline_names(args.baseline))
    if not all(r["peak_exact"] for r in rows):
        print("note: could not reset the peak-RSS mark; peaks include setup", file=sys.stderr)
    sys.stdout.write(_csv(rows) if args.csv else _markdown(rows, baseline_names(args.baseline)))


if __name__ == "__main__":
    main()
