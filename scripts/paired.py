"""Paired differences between variants of a component study (see component_study.py).

    python scripts/paired.py study.csv --reference protonet [--ci t|paper] [--adjust holm|bh|none] [--variants "A;B"]

For every family and variant: mean accuracy with its 95% interval, and the
mean difference to the reference over the same (seed, graph, episode) triples,
with its 95% interval, probability of improvement and two-sided p-value. The
units are (seed, graph) pairs, each the mean over its episodes, with seeds and
graphs as two levels (:mod:`gflkit.evaluation.statistics`, as ``gflkit compare``); ``--ci
paper`` gives the paper's ``1.96 x std / sqrt(n)`` over graphs instead. The
reference's own difference columns are empty. ``p_adjusted`` is the p-value
adjusted over every comparison the output holds (all families and variants:
the family of a claim is the table), by Holm's method unless ``--adjust``
says otherwise (:func:`gflkit.evaluation.statistics.adjust_p`); a difference
is shown when it is below 0.05. ``--variants`` keeps only those variants (and
the reference), so the family is what is printed.
"""
from __future__ import annotations

import argparse
import sys

import pandas as pd

from gflkit.evaluation.statistics import ADJUSTMENTS, adjust_p, paired_estimate, record_estimate


def paired(df: pd.DataFrame, reference: str, ci: str = "t", adjust: str = "holm") -> pd.DataFrame:
    """Per family and variant: the paired difference to ``reference`` with its interval.

    ``p_adjusted`` adjusts the p-values of every row together (``adjust``:
    ``holm``, ``bh`` or ``none``).
    """
    rows = []
    records = df.rename(columns={"graph": "graph_id"})
    for fam, d in records.groupby("family", sort=False):
        ref = d[d["variant"] == reference]
        if ref.empty:
            continue
        for var in d["variant"].unique():
            own = d[d["variant"] == var]
            acc = record_estimate(own, "accuracy", ci, scale=100)
            row = {"family": fam, "variant": var, "seeds": acc.n_seeds, "graphs": acc.n_graphs,
                   "accuracy": acc.mean, "ci95": acc.half, "ci_over": acc.over}
            if var != reference:
                diff, prob = paired_estimate(own, ref, "accuracy", ci)
                row.update({f"diff_vs_{reference}": diff.mean, "diff_lo": diff.lo, "diff_hi": diff.hi,
                            "prob_improvement": prob, "p_value": diff.p_value, "n_pairs": diff.n_units})
            rows.append(row)
    table = pd.DataFrame(rows)
    if "p_value" in table:
        table.insert(table.columns.get_loc("p_value") + 1, "p_adjusted", adjust_p(table["p_value"], adjust))
    return table


def main(argv=None) -> None:
    """Parse the command line and print the paired comparison."""
    p = argparse.ArgumentParser()
    p.add_argument("csv", nargs="+")
    p.add_argument("--reference", default="protonet")
    p.add_argument("--ci", choices=["t", "paper"], default="t")
    p.add_argument("--adjust", choices=list(ADJUSTMENTS), default="holm",
                   help="adjust the p-values over every comparison printed (default: holm)")
    p.add_argument("--variants", default=None, help="variants to keep, separated by semicolons (default: all)")
    a = p.parse_args(argv)
    df = pd.concat([pd.read_csv(f) for f in a.csv])
    if a.variants:
        df = df[df["variant"].isin(a.variants.split(";") + [a.reference])]
    table = paired(df, a.reference, a.ci, a.adjust)
    if "n_pairs" in table:
        table["n_pairs"] = table["n_pairs"].astype("Int64")
    table.to_csv(sys.stdout, index=False, float_format="%.6g")


if __name__ == "__main__":
    main()
