"""The "Which model, when" rule, written from synthetic regime maps, checked on the real families of Table 2.

    python scripts/rule_check.py [--table2 results/table2] [--table3 results/table3/table3.csv] [--details]
    python scripts/rule_check.py --held-out [--rule-dir results/rule]

Each statement of the rule that came from the synthetic maps
(docs/findings/regimes.md) is turned into a prediction about the real
families it applies to, and checked against the stored Table 2 summaries
(``results/table2/<family>.csv``: accuracy means, and each model's paired
difference to GFL-mean with its p-value). These families were not used to
write those statements, so this is an out-of-sample test, a first one: a
prediction about two models' order is read from their means (the CSVs pair
every model with GFL-mean only, so most orders carry no test), and one about
GFL-mean against Protonet from its verdict in Table 3
(``results/table3/table3.csv``, ``p_adjusted``: the source of that comparison,
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

``--held-out`` checks the same statements on families used neither to write
them nor in Table 2 (:data:`HELD_OUT`, each a ``gflkit compare`` CSV and its
records in ``--rule-dir``). A prediction orders two models (for "the best
of", the model of that set with the highest mean); besides whether the means
are in that order, the paired difference of the two is computed from the
records over (seed, graph) units, and the order is **shown** when it is
positive and its p-value, adjusted by Holm's method over every prediction of
the held-out check, is below 0.05 (**shown against** when negative). GFL-mean
against Protonet uses the compare CSV's own adjusted verdict, as Table 3 is
used for the Table 2 families. One row per statement and family, then the
hit rates.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from gflkit.evaluation.statistics import adjust_p, paired_estimate
from gflkit.names import display_name
from markdown_table import row_key, without_self

#: Families never used to write the rule nor in Table 2 (built as results/README.md says): two networks of
#: Table 2 without their features, each graph's degree profile as node features (``--structural-features``),
#: and Citeseer cut into two METIS regions, train graphs from one, test graphs from the other (5-shot).
HELD_OUT = {"facebook_structure": "Facebook pages, structural features",
            "chameleon_structure": "Chameleon, structural features",
            "citeseer_xnet": "cross-network Citeseer"}
HETEROPHILOUS = {"chameleon", "squirrel", "chameleon_structure"}
FEATURE_SHIFT = {"facebook_xnet", "citeseer_xnet"}
FEW_SHOT = ("gfl-mean", "protonet", "maml", "matchingnet", "knn", "gpn", "gmeta")
NAMES = {"facebook": "Facebook", "facebook_xnet": "cross-network Facebook", "cora": "Cora", "citeseer": "Citeseer",
         "chameleon": "Chameleon", "squirrel": "Squirrel", "facebook_small": "small Facebook graphs"}


class Family:
    """One family's Table 2 rows (means by model key) and its Table 3 rows (verdicts by variant)."""

    def __init__(self, name: str, df: pd.DataFrame, study: pd.DataFrame | None):
        self.name = name
        df = without_self(df)
        self.rows = df.assign(key=df.apply(row_key, axis=1)).set_index("key")
        self.study = study[study["family"] == name].set_index("variant") if study is not None else None

    def mean(self, key: str) -> float:
        return float(self.rows.loc[key, "accuracy"]) if key in self.rows.index else float("nan")

    def best(self, keys) -> float:
        return max((self.mean(k) for k in keys if k in self.rows.index), default=float("nan"))

    def best_key(self, keys) -> str:
        """The model of ``keys`` with the highest mean on this family."""
        return max((k for k in keys if k in self.rows.index), key=self.mean)

    def protonet_behind(self) -> bool:
        """Protonet shown behind GFL-mean: Table 3's verdict, or for a held-out family its compare CSV's."""
        if self.study is not None:
            r = self.study.loc["protonet"]
            diff = next(c for c in self.study.columns if c.startswith("diff_vs_"))
            return bool(r["p_adjusted"] < 0.05 and r[diff] < 0)
        r = self.rows.loc["protonet"]
        return bool(r["reference"] == "gfl-mean" and r["p_adjusted"] < 0.05 and r["delta"] < 0)

    def shots(self) -> int:
        """The support nodes per class the family's table was scored with."""
        return int(self.rows["k_shot"].max())

    def weak_features(self) -> bool:
        return self.mean("lp") >= self.mean("protonet")


# Each statement returns whether it applies to a family, whether its prediction held (by the means, or for
# GFL-mean against Protonet by the verdict), and the two models it orders (predicted higher, predicted lower).

def transfer_head_first(f: Family):
    """Shared label set: the zero-shot transfer head (or All-Graph-Finetune) is the first model to try."""
    pair = (f.best_key(("transfer-head", "agf")), f.best_key(FEW_SHOT))
    return True, f.best(("transfer-head", "agf")) >= f.best(FEW_SHOT), pair


def protonet_as_accurate(f: Family):
    """GFL-mean ahead of Protonet only on homophilous graphs with weak features; Protonet as accurate elsewhere."""
    if f.name not in HETEROPHILOUS and f.weak_features():
        if f.study is not None:  # the Table 2 check reads this side from no family (none has weak features)
            return False, None, None
        return True, f.mean("gfl-mean") > f.mean("protonet"), ("gfl-mean", "protonet")
    return True, not f.protonet_behind(), ("protonet", "gfl-mean")


def gpn_with_ten_shots(f: Family):
    """GPN at 10 shots: as accurate as Protonet or more on homophilous graphs; not so when heterophilous or at 5."""
    if "gpn" not in f.rows.index:
        return False, None, None
    if f.shots() <= 5 or f.name in HETEROPHILOUS:
        return True, f.mean("protonet") >= f.mean("gpn"), ("protonet", "gpn")
    return True, f.mean("gpn") >= f.mean("protonet"), ("gpn", "protonet")


def probes_behind(f: Family):
    """The linear probes (TLP, supervised and GRACE) are behind Protonet wherever features carry signal."""
    if f.weak_features():
        return False, None, None
    return True, f.best(("tlp", "tlp-sup")) < f.mean("protonet"), ("protonet", f.best_key(("tlp", "tlp-sup")))


def gpn_first_under_shift(f: Family):
    """A feature shift, 10 shots: GPN first, above the other few-shot models and those fitted on the test labels."""
    if "gpn" not in f.rows.index or f.name not in FEATURE_SHIFT or f.shots() < 10:
        return False, None, None
    others = [k for k in (*FEW_SHOT, "lp", "tlp-sup") if k != "gpn"]
    return True, f.mean("gpn") >= f.best(others), ("gpn", f.best_key(others))


STATEMENTS = (transfer_head_first, protonet_as_accurate, gpn_with_ten_shots, probes_behind, gpn_first_under_shift)


def check(families: list[Family]) -> pd.DataFrame:
    """One row per statement and family it applies to: whether the prediction held."""
    rows = []
    for statement in STATEMENTS:
        for f in families:
            applies, hit, pair = statement(f)
            if applies:
                rows.append({"statement": statement.__doc__.rstrip("."), "family": f.name, "hit": bool(hit),
                             "higher": pair[0], "lower": pair[1]})
    return pd.DataFrame(rows)


def paired_orders(results: pd.DataFrame, records: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """``results`` with each predicted order's paired difference (higher minus lower, points), its interval,
    its p-value adjusted by Holm's method over all of them, and whether the order is shown, or shown against."""
    rows = []
    for r in results.itertuples():
        rec = records[r.family]
        est, _ = paired_estimate(rec[rec["row"] == r.higher], rec[rec["row"] == r.lower])
        rows.append({"diff": est.mean, "lo": est.mean - est.half, "hi": est.mean + est.half, "p": est.p_value})
    out = pd.concat([results.reset_index(drop=True), pd.DataFrame(rows)], axis=1)
    out["p_adjusted"] = adjust_p(out["p"].to_numpy(float), "holm")
    out["shown"] = (out["p_adjusted"] < 0.05) & (out["diff"] > 0)
    out["against"] = (out["p_adjusted"] < 0.05) & (out["diff"] < 0)
    return out


def held_out_markdown(out: pd.DataFrame) -> str:
    """The held-out check: one row per statement and family, then the hit rates by means and shown."""
    name = display_name
    lines = ["| statement (from the synthetic maps) | family | predicted order | difference [95% interval] "
             "| p adjusted | held (means) | order shown |", "|---|---|---|---|---|---|---|"]
    for r in out.itertuples():
        verdict = "yes" if r.shown else "against" if r.against else "no"
        lines.append(f"| {r.statement} | {HELD_OUT.get(r.family, r.family)} | {name(r.higher)} above "
                     f"{name(r.lower)} | {r.diff:+.1f} [{r.lo:+.1f}, {r.hi:+.1f}] | {r.p_adjusted:.3f} "
                     f"| {'yes' if r.hit else 'no'} | {verdict} |")
    n = len(out)
    lines.append(f"| all predictions | | | | | {int(out['hit'].sum())} of {n} | {int(out['shown'].sum())} of {n}"
                 f" ({int(out['against'].sum())} shown against) |")
    return "\n".join(lines) + "\n"


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
    p.add_argument("--table3", default="results/table3/table3.csv", help="Table 3 from paired.py")
    p.add_argument("--details", action="store_true", help="one row per statement and family")
    p.add_argument("--held-out", action="store_true", help="check the families of HELD_OUT instead, with paired orders")
    p.add_argument("--rule-dir", default="results/rule", help="folder of the held-out compare CSVs and records")
    a = p.parse_args(argv)
    if a.held_out:
        paths = {name: (Path(a.rule_dir) / f"{name}.csv", Path(a.rule_dir) / f"{name}_records.csv")
                 for name in HELD_OUT}
        missing = [str(x) for pair in paths.values() for x in pair if not x.exists()]
        if missing:
            raise SystemExit(f"missing held-out file {missing[0]}: run the commands of results/README.md")
        families = [Family(name, pd.read_csv(csv), None) for name, (csv, _) in paths.items()]
        records = {name: pd.read_csv(rec) for name, (_, rec) in paths.items()}
        sys.stdout.write(held_out_markdown(paired_orders(check(families), records)))
        return
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
