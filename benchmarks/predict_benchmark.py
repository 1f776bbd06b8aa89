"""Time and peak memory of ``gflkit predict`` on one large random graph.

The graph is what a user would bring: an edge table (Parquet, ``src,dst``)
over ids ``0..n-1`` drawn uniformly at random, a ``.npy`` feature matrix with
one row per node, and a labels table with ``--shots`` nodes per class. The
run is a GFL model (default ``GFLConfig``: GCN encoder, 3-hop common-neighbour
relational structure, PGNN prototypes, 3-level hierarchy gate) meta-trained
for a few steps on a small synthetic family with the same feature size: its
weights do not change the cost.

Prediction runs in a fresh subprocess (``gflkit.predict`` phase by phase), so
the peak RSS is its own: interpreter, torch, DGL, the tables, the graph and the
model. Each ``--methods`` entry is one subprocess: ``model`` (the run's model
alone, with its accuracy estimate, as predict did before it had candidates)
and ``auto`` (every candidate cross-validated on the labels, one chosen); for
``auto`` the child also times each candidate's preparation and
cross-validation on its own, to say what dominates. Usage::

    python benchmarks/predict_benchmark.py                       # 1M nodes, 5M edges
    python benchmarks/predict_benchmark.py --nodes 100000 --edges 500000

Prints one CSV row per method on stdout (and, for ``auto``, one line per
candidate on stderr); progress on stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

CLASSES = 4


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def make_inputs(folder: Path, nodes: int, edges: int, feats: int, shots: int, seed: int) -> dict[str, Path]:
    """Write the random graph's tables, features and labels into ``folder``."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    paths = {"edges": folder / "edges.parquet", "features": folder / "feat.npy", "labels": folder / "labels.csv"}
    src = rng.integers(0, nodes, edges)
    dst = rng.integers(0, nodes, edges)
    pd.DataFrame({"src": src, "dst": dst}).to_parquet(paths["edges"], index=False)
    np.save(paths["features"], rng.standard_normal((nodes, feats), dtype=np.float32))
    chosen = rng.choice(nodes, CLASSES * shots, replace=False)
    pd.DataFrame({"node": chosen, "label": [f"c{i // shots}" for i in range(len(chosen))]}).to_csv(
        paths["labels"], index=False)
    return paths


def train_run(folder: Path, feats: int, seed: int) -> Path:
    """A GFL run meta-trained for 3 steps on a small synthetic family of ``feats`` features."""
    from dataclasses import replace

    import gflkit
    from gflkit.data import SMALL_SPEC, make_synthetic_family

    family = make_synthetic_family(replace(SMALL_SPEC, feat_size=feats, n_train=4, n_val=1, n_test=1), seed=seed,
                                   name="bench")
    family.save(folder / "bench")
    run = folder / "run"
    gflkit.train(family, train_cfg=gflkit.TrainConfig(steps=3, eval_every=3, seed=seed), run_dir=run, eval_split=None,
                 progress=False)
    return run


def candidate_costs(predictor, g, support, what: str) -> dict[str, float]:
    """Seconds of each candidate alone, as predict runs it: its shared part (features, propagation, model
    embeddings), its cross-validation on the labels (15 folds: the held-out labelled nodes scored alone, or
    the folds propagated side by side) and its prediction of the whole graph; then the structural features
    of a graph without any."""
    from gflkit.data.structure import structural_features
    from gflkit.prediction.checks import check_support
    from gflkit.prediction.diagnostics import cross_validate
    from gflkit.prediction.predictor import contenders
    from gflkit.prediction.selection import fold_predictors
    from gflkit.refine import RefineConfig

    names, ids = check_support(support, g.num_nodes(), predictor.k_shot, what)
    t0 = time.perf_counter()
    found, _, _ = contenders(predictor, g, what, RefineConfig())
    costs = {"graphs": time.perf_counter() - t0}
    for c in found:
        t0 = time.perf_counter()
        predicts, batched, batch = fold_predictors([c], ids)
        cross_validate(predicts, names, ids, batched=batched, batch=batch)
        c.probabilities(ids)
        costs[c.name] = time.perf_counter() - t0
    src, dst = g.edges()
    t0 = time.perf_counter()
    structural_features(src, dst, g.num_nodes())
    costs["structural_features"] = time.perf_counter() - t0
    return costs


def child(args: argparse.Namespace) -> None:
    """Predict once, phase by phase; print timings and peak RSS as JSON."""
    import gflkit
    from gflkit.prediction.inputs import read_graph, read_labels

    out: dict[str, float] = {}
    t0 = time.perf_counter()
    predictor = gflkit.load(args.run)
    g, ids, what = read_graph(predictor, edges=args.edges, features=args.features)
    out["read_s"] = time.perf_counter() - t0
    support = read_labels(args.labels, ids)
    t1 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        table = predictor.predict(g, support, node_ids=ids, what=what, method=args.method)
    out["predict_s"] = time.perf_counter() - t1
    out["chosen"] = table.method
    if args.method == "auto":
        out["candidates"] = candidate_costs(predictor, g, support, what)
    out["total_s"] = time.perf_counter() - t0
    out["rows"] = len(table)
    out["graph_edges"] = g.num_edges() // 2
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def main() -> None:
    """Parse the command line and print the measurements."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--edges", type=int, default=5_000_000)
    parser.add_argument("--feats", type=int, default=128)
    parser.add_argument("--shots", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default="model,auto", help="predict's --method values to time, comma-separated")
    parser.add_argument("--method", default="auto", help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--edges-path", help=argparse.SUPPRESS)
    parser.add_argument("--features", help=argparse.SUPPRESS)
    parser.add_argument("--labels", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.edges = Path(args.edges_path)
        return child(args)
    with tempfile.TemporaryDirectory(prefix="gflkit-predict-bench-") as tmp:
        folder = Path(tmp)
        _log(f"writing a random graph: {args.nodes} nodes, {args.edges} edges, {args.feats} features")
        paths = make_inputs(folder, args.nodes, args.edges, args.feats, args.shots, args.seed)
        _log("meta-training a small GFL run")
        run = train_run(folder, args.feats, args.seed)
        env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "OMP_WAIT_POLICY": "PASSIVE"}
        rows = []
        for method in args.methods.split(","):
            cmd = [sys.executable, __file__, "--child", "--run", str(run), "--edges-path", str(paths["edges"]),
                   "--features", str(paths["features"]), "--labels", str(paths["labels"]), "--method", method]
            _log(f"predicting in a fresh process (--method {method})")
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                sys.stderr.write(done.stderr)
                raise SystemExit(done.returncode)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            for name, seconds in (result.get("candidates") or {}).items():
                _log(f"  {name}: {seconds:.2f} s")
            rows.append({"method": method, "chosen": result["chosen"], "nodes": args.nodes, "edges": args.edges,
                         "unique_edges": result["graph_edges"], "feats": args.feats, "shots": args.shots,
                         "threads": args.threads, "read_s": round(result["read_s"], 1),
                         "predict_s": round(result["predict_s"], 1), "total_s": round(result["total_s"], 1),
                         "peak_rss_mb": round(result["peak_rss_mb"])})
    print(",".join(rows[0]))
    for row in rows:
        print(",".join(str(v) for v in row.values()))


if __name__ == "__main__":
    main()
