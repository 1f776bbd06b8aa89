"""GFL minus Protonet under the former interval and the two-level one, from the component study's records.

    python scripts/interval_recheck.py results/study/components.csv results/study/cross_network.csv \
        --rows "cora:0;cora:2;cora:0,1,2;facebook:0,1,2"

Each ``FAMILY:SEEDS`` of ``--rows`` is one line: the paired difference of the
``gfl`` and ``protonet`` variants of that family over the given seeds (the
records of ``scripts/component_study.py``: family, variant, seed, graph,
episode, accuracy), with the former interval (the seeds averaged per
(graph, episode) pair, a t interval over those pairs as if they were
independent) and the two-level interval over (seed, graph) units
(:func:`gflkit.evaluation.statistics.paired_estimate`, as ``gflkit compare``
prints it). Markdown on stdout.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd
from scipy import stats

from gflkit.evaluation.statistics import paired_estimate
from markdown_table import markdown


def former(diff: pd.DataFrame) -> tuple[float, float, float, int]:
    """Mean, half-width, p-value and count of the differences averaged over seeds per (graph, episode)."""
    d = diff.groupby(["graph_id", "episode"])["diff"].mean().to_numpy(np.float64)
    se = d.std(ddof=1) / np.sqrt(d.size)
    return float(d.mean()), float(stats.t.ppf(0.975, d.size - 1) * se), float(2 * stats.t.sf(abs(d.mean()) / se,
                                                                                            d.size - 1)), d.size


def cell(mean: float, half: float, p: float, n: int) -> str:
    """``+0.43 [+0.31, +0.55], p = 2e-11 (n = 160)``."""
    return f"{mean:+.2f} [{mean - half:+.2f}, {mean + half:+.2f}], p = {p:.2g} (n = {n})"


def main(argv=None) -> None:
    """Print one line per family and seeds."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("records", nargs="+", help="component study records (family,variant,seed,graph,episode,accuracy)")
    p.add_argument("--rows", required=True, help="FAMILY:SEEDS, separated by semicolons")
    a = p.parse_args(argv)
    df = pd.concat([pd.read_csv(x) for x in a.records], ignore_index=True).rename(columns={"graph": "graph_id"})
    body = []
    for item in a.rows.split(";"):
        family, _, seeds = item.partition(":")
        keep = df[(df["family"] == family) & df["seed"].isin([int(s) for s in seeds.split(",")])]
        gfl, proto = (keep[keep["variant"] == v] for v in ("gfl", "protonet"))
        est, _ = paired_estimate(gfl, proto)
        diff = gfl.merge(proto, on=["seed", "graph_id", "episode"], suffixes=("", "_ref"))
        diff = diff.assign(diff=100 * (diff["accuracy"] - diff["accuracy_ref"]))
        body.append([family, seeds.replace(",", ", "), cell(*former(diff)),
                     cell(est.mean, est.half, est.p_value, est.n_units)])
    sys.stdout.write(markdown(["family", "seeds", "former interval, (graph, episode) pairs",
                               "two-level interval, (seed, graph) units"], body))


if __name__ == "__main__":
    main()
