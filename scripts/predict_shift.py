"""How trained runs label a user's graph unlike their training data (the distance study).

    python scripts/predict_shift.py --run gfl-inner:0:runs/a --run gfl-euclidean:0:runs/b ... \
        [--graphs 5] [--cases sbm,shifted,weak] [--reference gfl-inner] [--records out.csv] > summary.csv

Each ``--run`` is ``VARIANT:SEED:RUN_FOLDER``. For every case, ``--graphs`` graphs
are drawn (seeded by case and graph index): a stochastic block model of 420
nodes in 4 classes of 105, 128 class-dependent features, 5 labelled nodes per
class, the rest held out with their true labels. Every run labels every graph
with ``gflkit.predict`` (the user's path: tables on disk, no estimate), and its
accuracy on the held-out nodes is one record. The cases:

* ``sbm``: class centres drawn from N(0, 1) per dimension, unit noise; the
  scale and offset of the features are unlike any training collection's;
* ``shifted``: the same graphs with every feature scaled by 3 and moved by +2;
* ``weak``: centres drawn from N(0, 0.3^2): a weaker feature signal.

Edges: within a class with probability 0.05, across classes 0.005 (homophily
about 0.83). Printed: per case and variant the accuracy over (seed, graph)
units and the paired difference to ``--reference``
(:mod:`gflkit.evaluation.statistics`, as ``gflkit compare``), plus nearest
centroid on the raw features as a yardstick (no training, no seeds).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import gflkit
from gflkit.evaluation.statistics import paired_estimate, record_estimate

CASES = ("sbm", "shifted", "weak")
NODES, CLASSES, FEATS, SHOTS = 420, 4, 128, 5


def make_graph(case: str, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(edges (E, 2), features (N, F), labels (N,), labelled ids)`` of one graph of ``case``."""
    rng = np.random.default_rng([CASES.index(case) if case != "shifted" else 0, index])
    label = np.repeat(np.arange(CLASSES), NODES // CLASSES)
    spread = 0.3 if case == "weak" else 1.0
    centres = rng.normal(0.0, spread, (CLASSES, FEATS))
    feat = centres[label] + rng.normal(0.0, 1.0, (NODES, FEATS))
    if case == "shifted":
        feat = 3.0 * feat + 2.0
    same = label[:, None] == label[None, :]
    upper = np.triu(rng.random((NODES, NODES)) < np.where(same, 0.05, 0.005), 1)
    edges = np.argwhere(upper)
    labelled = np.concatenate([rng.choice(np.flatnonzero(label == c), SHOTS, replace=False) for c in range(CLASSES)])
    return edges, feat.astype(np.float32), label, labelled


def nearest_centroid(feat: np.ndarray, label: np.ndarray, labelled: np.ndarray) -> float:
    """Accuracy of the nearest class mean of the labelled nodes' raw features on the other nodes."""
    centres = np.stack([feat[labelled[label[labelled] == c]].mean(0) for c in range(CLASSES)])
    rest = np.setdiff1d(np.arange(len(label)), labelled)
    guess = ((feat[rest, None, :] - centres[None]) ** 2).sum(-1).argmin(1)
    return float((guess == label[rest]).mean())


def main(argv=None) -> None:
    """Parse the command line, label every graph with every run and print the summary."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", action="append", required=True, help="VARIANT:SEED:RUN_FOLDER")
    p.add_argument("--graphs", type=int, default=5)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--reference", default=None, help="variant the others are paired with (default: the first)")
    p.add_argument("--records", default=None, help="also write every (case, variant, seed, graph) accuracy here")
    a = p.parse_args(argv)
    runs = [r.split(":", 2) for r in a.run]
    reference = a.reference or runs[0][0]
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in a.cases.split(","):
            for index in range(a.graphs):
                edges, feat, label, labelled = make_graph(case, index)
                folder = Path(tmp) / f"{case}-{index}"
                folder.mkdir()
                pd.DataFrame(edges, columns=["src", "dst"]).to_csv(folder / "edges.csv", index=False)
                np.save(folder / "feat.npy", feat)
                pd.DataFrame({"node": labelled, "label": label[labelled]}).to_csv(folder / "labels.csv", index=False)
                rest = np.setdiff1d(np.arange(NODES), labelled)
                records.append({"case": case, "variant": "nearest-centroid", "seed": 0, "graph_id": index,
                                "accuracy": nearest_centroid(feat, label, labelled)})
                for variant, seed, run in runs:
                    table = gflkit.predict(run, edges=folder / "edges.csv", features=folder / "feat.npy",
                                           labels=folder / "labels.csv", estimate=False)
                    guess = table.set_index("node").loc[rest, "label"].astype(int).to_numpy()
                    records.append({"case": case, "variant": variant, "seed": int(seed), "graph_id": index,
                                    "accuracy": float((guess == label[rest]).mean())})
                print(f"{case} graph {index} done", file=sys.stderr)
    df = pd.DataFrame(records).assign(episode=0)
    if a.records:
        df.to_csv(a.records, index=False)
    rows = []
    for case, d in df.groupby("case", sort=False):
        ref = d[d["variant"] == reference]
        for variant, own in d.groupby("variant", sort=False):
            acc = record_estimate(own, "accuracy", scale=100)
            row = {"case": case, "variant": variant, "n_seeds": acc.n_seeds, "n_graphs": acc.n_graphs,
                   "accuracy": acc.mean, "ci95": acc.half}
            if variant not in (reference, "nearest-centroid"):
                diff, prob = paired_estimate(own, ref, "accuracy")
                row.update({"reference": reference, "delta": diff.mean, "delta_lo": diff.lo,
                            "delta_hi": diff.hi, "prob_improvement": prob, "p_value": diff.p_value})
            rows.append(row)
    pd.DataFrame(rows).to_csv(sys.stdout, index=False, float_format="%.4g")


if __name__ == "__main__":
    main()
