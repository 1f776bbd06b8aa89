"""Wall time of ``gflkit compare`` per model, with where it goes, for this tree and earlier ones.

Each measurement is one fresh ``python -m gflkit --no-progress compare DATA --model M
--seed S --no-majority`` process (the command as users run it: the current
tree's command sets up its process as ``gflkit`` does), run from a neutral
folder with the tree first on ``PYTHONPATH`` (``--baseline DIR``: a ``git
worktree`` of an earlier commit). The trees take their turns model by model,
one process at a time, so that they share the machine's load alike. Usage::

    git worktree add /tmp/base b3251a4
    python benchmarks/compare_benchmark.py --data synthetic-small --baseline /tmp/base
    python benchmarks/compare_benchmark.py --data synthetic-small --data facebook --models gmeta,tlp --csv
    python benchmarks/compare_benchmark.py --data synthetic-small --whole --baseline /tmp/base   # one compare of all

Besides the wall time of each process, the worker times, by wrapping the
tree's functions where they exist: start-up (interpreter and imports until the
command starts), loading the collection, training steps, validation rounds and
scoring the test graphs (per-graph baselines such as K-NN and label
propagation are fitted inside their scoring). It also keeps the rows the
command printed, so that the table says whether both trees gave the same
digits. See ``benchmarks/README.md`` for the table and how to read it.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: (module, function) -> phase. Wrapped where the tree has them; calls nested in a timed call count once.
PHASES = {
    ("gflkit.experiments", "load_collection"): "loading",
    ("gflkit.training.loop", "_train_step"): "training steps",
    ("gflkit.training.meta", "graph_accuracies"): "validation",
    ("gflkit.training.meta", "transfer_accuracies"): "validation",
    ("gflkit.experiments", "score_records"): "scoring",
    ("gflkit.experiments", "baseline_records"): "scoring",
    ("gflkit.experiments.tasks", "score_records"): "scoring",  # where the trees since the experiments package call them
    ("gflkit.experiments.tasks", "baseline_records"): "scoring",
}
PHASE_NAMES = ["start-up", "loading", "training steps", "validation", "scoring"]
#: Columns of a result row compared between trees (the seconds of a run are not in a compare row).
ROW_KEYS = ("model", "aggregator", "refine", "accuracy", "ci95", "balanced_accuracy", "macro_f1")


def _wrap_phases(spent: dict[str, float]) -> None:
    import importlib

    depth = [0]

    def timed(fn, phase):
        def inner(*args, **kwargs):
            if depth[0]:
                return fn(*args, **kwargs)
            depth[0] += 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                depth[0] -= 1
                spent[phase] = spent.get(phase, 0.0) + time.perf_counter() - start
        return inner

    for (module, name), phase in PHASES.items():
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        if hasattr(mod, name):
            setattr(mod, name, timed(getattr(mod, name), phase))


def worker(argv: list[str]) -> None:
    """In the worker process: run the command with the phase timers, print one JSON line on stdout."""
    started = time.perf_counter()
    try:  # the process set up as the tree's command sets it up, before torch is imported (absent before it did)
        from gflkit_cli.process import configure_process
    except ImportError:
        pass
    else:
        configure_process()  # the entry's own call below then finds it done
    import gflkit.__main__ as entry

    spent: dict[str, float] = {}
    _wrap_phases(spent)
    spent["start-up"] = time.perf_counter() - started + _interpreter_seconds()
    out = Path(tempfile.mkdtemp(prefix="gflkit-cmp-")) / "rows.csv"
    sys.argv = ["gflkit", "--no-progress", "compare", *argv, "-o", str(out)]
    code = 0
    try:
        entry.main()
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    peak = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    rows = list(csv.DictReader(io.StringIO(out.read_text()))) if out.exists() else []
    sys.__stdout__.write(json.dumps({"code": code, "phases": spent, "peak_rss_mb": peak / 1024,
                                     "rows": [{k: r.get(k, "") for k in ROW_KEYS} for r in rows]}) + "\n")


def _interpreter_seconds() -> float:
    """Seconds from the process's start to now minus this module's own run, from ``/proc`` (0 where absent)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, boot - ticks / os.sysconf("SC_CLK_TCK") - (time.perf_counter() - _LOADED))
    except (OSError, ValueError, IndexError):
        return 0.0


_LOADED = time.perf_counter()


def _run(tree: str, args: list[str], threads: int | None, names: Path) -> dict:
    """One worker process running ``tree``'s code: ``tree`` and, under ``names``, its ``cli/`` as the
    installed name ``gflkit_cli`` first on the path, from a neutral folder."""
    names.mkdir(parents=True, exist_ok=True)
    if not (names / "gflkit_cli").exists():
        (names / "gflkit_cli").symlink_to(Path(tree) / "cli", target_is_directory=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [tree, str(names), str(HERE), env.get("PYTHONPATH")]))
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    start, used = time.perf_counter(), _children_cpu()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", "--", *args], env=env,
                          cwd=names, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, _children_cpu() - used
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{tree}: compare {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    result = json.loads(lines[-1])
    if result["code"] != 0:
        raise SystemExit(f"{tree}: compare {' '.join(args)} exited {result['code']}:\n"
                         f"{proc.stderr[-2000:]}")
    result["seconds"], result["cpu_seconds"] = wall, cpu
    return result


def _children_cpu() -> float:
    """User and system CPU seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _models(data_models: str | None) -> list[str]:
    if data_models:
        return [m for m in data_models.split(",") if m]
    from gflkit.names import model_names

    return [n for m in model_names() for n in (["gfl-mean", "gfl-att"] if m == "gfl" else [m])]


def main(argv: list[str] | None = None) -> None:
    """Parse the command line, run the workers in turns and print the table."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        worker(argv[2:] if argv[1:2] == ["--"] else argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", action="append", required=True, help="Collection name or folder (repeatable).")
    parser.add_argument("--models", help="Comma-separated models (default: every model compare runs).")
    parser.add_argument("--whole", action="store_true", help="One compare of all the models per tree instead.")
    parser.add_argument("--seed", default="0", help="Seeds of each compare (default 0).")
    parser.add_argument("--baseline", metavar="DIR", action="append", default=[], help="An earlier tree to time.")
    parser.add_argument("--threads", type=int, help="OMP_NUM_THREADS of the workers (default: as inherited).")
    parser.add_argument("--extra", default="", help="More compare options, as one string (e.g. '--steps 40').")
    parser.add_argument("--csv", action="store_true", help="CSV instead of a Markdown table.")
    args = parser.parse_args(argv)
    trees = [("this", str(HERE.parent))] + [(Path(b).name, str(Path(b).resolve())) for b in args.baseline]
    groups = [None] if args.whole else _models(args.models)
    table = []
    names = Path(tempfile.mkdtemp(prefix="gflkit-cmp-trees-"))
    for data in args.data:
        for model in groups:
            cmd = [data, "--seed", args.seed, "--no-majority", *([] if model is None else ["--model", model]),
                   *args.extra.split()]
            results = {}
            for name, tree in trees:
                load = os.getloadavg()[0]
                print(f"{data} {model or 'all models'}: {name} (load {load:.1f})", file=sys.stderr, flush=True)
                results[name] = _run(tree, cmd, args.threads, names / name)
                results[name]["load"] = load
            this = results["this"]
            for name, _ in trees:
                r = results[name]
                row = {"data": data, "model": model or "all", "tree": name, "seconds": r["seconds"],
                       "ratio": r["seconds"] / this["seconds"], "cpu_seconds": r["cpu_seconds"],
                       "cpu_ratio": r["cpu_seconds"] / this["cpu_seconds"], "peak_rss_mb": r["peak_rss_mb"],
                       "same_rows": r["rows"] == this["rows"], "load": r["load"]}
                row.update({p: r["phases"].get(p, 0.0) for p in PHASE_NAMES})
                row["accuracy"] = ";".join(x["accuracy"] for x in r["rows"])
                table.append(row)
    _print(table, args.csv)


def _print(table: list[dict], as_csv: bool) -> None:
    if as_csv:
        writer = csv.DictWriter(sys.stdout, list(table[0]))
        writer.writeheader()
        writer.writerows(table)
        return
    head = ["data", "model", "tree", "wall s", "tree / this", "CPU s", "tree / this (CPU)",
            *(f"{p} s" for p in PHASE_NAMES), "peak RSS MB", "accuracy", "rows equal to this", "load"]
    print("| " + " | ".join(head) + " |")
    print("|---|---|---|" + "---:|" * (len(head) - 6) + "---|---|---:|")
    for r in table:
        cells = [r["data"], r["model"], r["tree"], f"{r['seconds']:.1f}", f"{r['ratio']:.2f}x",
                 f"{r['cpu_seconds']:.1f}", f"{r['cpu_ratio']:.2f}x", *(f"{r[p]:.1f}" for p in PHASE_NAMES),
                 f"{r['peak_rss_mb']:.0f}", r["accuracy"], "yes" if r["same_rows"] else "NO", f"{r['load']:.1f}"]
        print("| " + " | ".join(cells) + " |")

if __name__ == "__main__":
    main()
