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

import pandas as pd

from gflkit.results import mean_ci, paired_difference


def paired(df: pd.DataFrame, reference: str) -> pd.DataFrame:
    rows = []
    for fam, d in df.groupby("family", sort=False):
        wide = d.pivot_table(index=["seed", "graph", "episode"], columns="variant", values="accuracy").dropna()
        if reference not in wide:
            continue
        seeds = d["seed"].nunique()
        ref_graph = wide[reference].groupby(level="graph").mean() * 100
        for var in d["variant"].unique():
            acc_graph = wide[var].groupby(level="graph").mean() * 100
            accuracy, ci95, _ = mean_ci(acc_graph.to_numpy())
            diff = paired_difference(acc_graph.to_numpy(), ref_graph.to_numpy())
            rows.append({"family": fam, "variant": var, "seeds": seeds, "graphs": diff["n_pairs"],
                         "accuracy": accuracy, "ci95": ci95, f"diff_vs_{reference}": diff["delta"],
                         "diff_lo": diff["delta_lo"], "diff_hi": diff["delta_hi"], "p_value": diff["p_value"]})
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
