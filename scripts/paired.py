"""Paired differences between variants of a component study (see component_study.py).

    python scripts/paired.py study.csv --reference protonet

For every family and variant: mean accuracy, and the mean difference to the
reference over the same (seed, graph, episode) triples, with a t-based 95%
interval and a two-sided p-value over test graphs (each graph's difference
averaged over its episodes and the seeds first, so graphs are the units).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd
from scipy import stats


def paired(df: pd.DataFrame, reference: str) -> pd.DataFrame:
    rows = []
    for fam, d in df.groupby("family", sort=False):
        wide = d.pivot_table(index=["seed", "graph", "episode"], columns="variant", values="accuracy").dropna()
        if reference not in wide:
            continue
        ref = wide[reference]
        seeds = d["seed"].nunique()
        for var in d["variant"].unique():
            per_graph = (wide[var] - ref).groupby(level="graph").mean() * 100
            acc_graph = wide[var].groupby(level="graph").mean() * 100
            n = len(per_graph)
            mean, sd = per_graph.mean(), per_graph.std(ddof=1)
            half = stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n) if n > 1 and sd > 0 else 0.0
            p = stats.ttest_1samp(per_graph, 0).pvalue if n > 1 and sd > 0 else float("nan")
            acc_half = stats.t.ppf(0.975, n - 1) * acc_graph.std(ddof=1) / np.sqrt(n)
            rows.append({"family": fam, "variant": var, "seeds": seeds, "graphs": n,
                         "accuracy": acc_graph.mean(), "ci95": acc_half, f"diff_vs_{reference}": mean,
                         "diff_lo": mean - half, "diff_hi": mean + half, "p_value": p})
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("csv", nargs="+")
    p.add_argument("--reference", default="protonet")
    a = p.parse_args(argv)
    df = pd.concat([pd.read_csv(f) for f in a.csv])
    paired(df, a.reference).to_csv(sys.stdout, index=False, float_format="%.3f")


if __name__ == "__main__":
    main()
