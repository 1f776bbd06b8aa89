"""The "Which model, when" rule, written from synthetic regime maps, checked on the real families of Table 2.

    python scripts/rule_check.py [--table2 results/table2] [--table3 results/study/table3.csv] [--details]

Each statement of the rule that came from the synthetic maps
(docs/findings/regimes.md) is turned into a prediction about the real
families it applies to, and checked against the stored Table 2 summaries
(``results/table2/<family>.csv``: accuracy means, and each model's paired
difference to GFL-mean with its p-value). These families were not used to
write those statements, so this is an out-of-sample test, a first one: a
prediction about two models' order is read from their means (the CSVs pair
every model with GFL-mean only, so most orders carry no test), and one about
GFL-mean against Protonet from its verdict in Table 3
(``results/study/table3.csv``, ``p_adjusted``: the source of that comparison,
with four times Table 2's episodes and its records stored).

What a family is, taken from how it was built (docs/tables.md, "Families"),
not from the results: every family shares one label set across its graphs;
Chameleon and Squirrel are heterophilous, the others homophilous; the
cross-network family's test graphs come from another region through a
feature transform fitted elsewhere (a feature shift). Whether a family's
features are weak is read as the regime map reads it: label propagation,
which ignores features, at least as accurate as Protonet.

Prints one Markdown row per statement: the families it applies to, the hits,
the misses, and the hit rate; ``--details`` prints one row per statement and
family instead.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from markdown_table import row_key, without_self

HETEROPHILOUS = {"chameleon", "squirrel"}
FEATURE_SHIFT = {"facebook_xnet"}
FEW_SHOT = ("gfl-mean", "protonet", "maml", "matchingnet", "knn", "gpn", "gmeta")
NAMES = {"facebook": "Facebook", "facebook_xnet": "cross-network Facebook", "cora": "Cora", "citeseer": "Citeseer",
         "chameleon": "Chameleon", "squirrel": "Squirrel", "facebook_small": "small Facebook graphs"}


class Family:
    """One family's Table 2 rows (means by model key) and its Table 3 rows (verdicts by variant)."""

    def __init__(self, name: str, df: pd.DataFrame, study: pd.DataFrame):
        self.name = name
        df = without_self(df)
        self.rows = df.assign(key=df.apply(row_key, axis=1)).set_index("key")
        self.study = study[study["family"] == name].set_index("variant")

    def mean(self, key: str) -> float:
        return float(self.rows.loc[key, "accuracy"]) if key in self.rows.index else float("nan")

    def best(self, keys) -> float:
        return max((self.mean(k) for k in keys if k in self.rows.index), default=float("nan"))

    def weak_features(self) -> bool:
        return self.mean("lp") >= self.mean("protonet")


def transfer_head_first(f: Family):
    """Shared label set: the zero-shot transfer head (or All-Graph-Finetune) is the first model to try."""
    return True, f.best(("transfer-head", "agf")) >= f.best(FEW_SHOT)


def protonet_as_accurate(f: Family):
    """GFL-mean ahead of Protonet only on homophilous graphs with weak features; Protonet as accurate elsewhere."""
    if f.name not in HETEROPHILOUS and f.weak_features():
        return False, None
    r = f.study.loc["protonet"]
    diff = next(c for c in f.study.columns if c.startswith("diff_vs_"))
    return True, not (r["p_adjusted"] < 0.05 and r[diff] < 0)


def gpn_where_it_trains(f: Family):
    """GPN: the best few-shot model on homophilous graphs with clear features, below Protonet elsewhere."""
    if "gpn" not in f.rows.index:
        return False, None
    if f.name in HETEROPHILOUS or f.weak_features():
        return True, f.mean("gpn") < f.mean("protonet")
    return True, f.mean("gpn") >= f.best(FEW_SHOT)


def probes_behind(f: Family):
    """The linear probes (TLP, supervised and GRACE) are behind Protonet wherever features carry signal."""
    if f.weak_features():
        return False, None
    return True, f.best(("tlp", "tlp-sup")) < f.mean("protonet")


def own_labels_under_shift(f: Family):
    """A feature shift between train and test graphs: methods fitted on the test graph's labels come first."""
    if f.name not in FEATURE_SHIFT:
        return False, None
    return True, f.best(("lp", "tlp-sup")) >= f.best(FEW_SHOT)


STATEMENTS = (transfer_head_first, protonet_as_accurate, gpn_where_it_trains, probes_behind, own_labels_under_shift)


def check(families: list[Family]) -> pd.DataFrame:
    """One row per statement and family it applies to: whether the prediction held."""
    rows = []
    for statement in STATEMENTS:
        for f in families:
            applies, hit = statement(f)
            if applies:
                rows.append({"statement": statement.__doc__.rstrip("."), "family": f.name, "hit": bool(hit)})
    return pd.DataFrame(rows)


def markdown(results: pd.DataFrame, details: bool) -> str:
    """The check as a Markdown table, the last row the overall hit rate."""
    if details:
        lines = ["| statement | family | prediction held |", "|---|---|---|"]
        lines += [f"| {r.statement} | {NAMES.get(r.family, r.family)} | {'yes' if r.hit else 'no'} |"
                  for r in results.itertuples()]
        return "\n".join(lines) + "\n"
    lines = ["| statement (from the synthetic maps) | held on | failed on | hit rate |", "|---|---|---|---|"]
    for statement, d in results.groupby("statement", sort=False):
        held = ", ".join(NAMES.get(x, x) for x in d.loc[d["hit"], "family"]) or "none"
        failed = ", ".join(NAMES.get(x, x) for x in d.loc[~d["hit"], "family"]) or "none"
        lines.append(f"| {statement} | {held} | {failed} | {int(d['hit'].sum())} of {len(d)} |")
    lines.append(f"| all predictions | | | {int(results['hit'].sum())} of {len(results)} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    """Read the Table 2 CSVs and print the check."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--table2", default="results/table2", help="folder of the Table 2 CSVs")
    p.add_argument("--table3", default="results/study/table3.csv", help="Table 3 from paired.py")
    p.add_argument("--details", action="store_true", help="one row per statement and family")
    a = p.parse_args(argv)
    paths = [Path(a.table2) / f"{name}.csv" for name in NAMES]
    missing = [str(x) for x in paths if not x.exists()]
    if missing:
        raise SystemExit(f"missing Table 2 CSV {missing[0]}: run the commands of results/README.md")
    if not Path(a.table3).exists():
        raise SystemExit(f"missing Table 3 CSV {a.table3}: run the paired.py command of docs/tables.md")
    study = pd.read_csv(a.table3)
    families = [Family(x.stem, pd.read_csv(x), study) for x in paths]
    sys.stdout.write(markdown(check(families), a.details))


if __name__ == "__main__":
    main()
