"""Per-model time of one seed of ``gflkit compare``, this tree against an earlier one, from a stored run of
``benchmarks/compare_benchmark.py --csv``.

    python scripts/compare_speed.py benchmarks/results/compare_all.csv [--baseline bbase] [--changed gmeta,tlp]
    python scripts/compare_speed.py benchmarks/results/compare_all.csv --total wall   # one number
    python scripts/compare_speed.py benchmarks/results/compare_all.csv --minutes now  # one seed, minutes

Prints one Markdown row per model: the wall and CPU seconds of each tree, the earlier tree's over this
tree's (above 1: this tree is faster), the peak RSS of each, and whether the rows printed were equal; then
the sum over the models (one seed of a compare of these rows, each in a process of its own). ``--total
wall|cpu|rss`` prints only that sum's ratio (``rss``: this tree's largest peak over the earlier one's,
as a change in percent), for a sentence; ``--minutes now|before`` the sum of one tree's wall seconds in
minutes. ``--changed M,...`` names models whose default work differs between the trees (another
protocol): their rows are shown and count in the time of a compare, not in the ratios. ``--with
LATER.csv`` takes the rows of a later run of some models in place of these (both trees of that run), for
a sum over code that changed after the first run.
"""
from __future__ import annotations

import argparse
import sys

import pandas as pd


def load(path: str, baseline: str | None, *, alone: bool = False) -> pd.DataFrame:
    """One row per model: this tree's and the baseline's measurements side by side.

    ``alone``: also the models only this tree ran (models the earlier tree did not have), with empty
    baseline columns."""
    df = pd.read_csv(path)
    trees = [t for t in df["tree"].unique() if t != "this"]
    base = baseline or trees[0]
    this, other = df[df["tree"] == "this"].set_index("model"), df[df["tree"] == base].set_index("model")
    joined = this.join(other.add_suffix("_base"), how="left" if alone else "inner")
    return joined.loc[[m for m in this.index if m in joined.index]]


def totals(t: pd.DataFrame) -> dict[str, float]:
    """Ratios of the sums over the models (wall, CPU) and the change of the largest peak RSS in percent."""
    return {"wall": t["seconds_base"].sum() / t["seconds"].sum(),
            "cpu": t["cpu_seconds_base"].sum() / t["cpu_seconds"].sum(),
            "rss": 100 * (t["peak_rss_mb"].max() / t["peak_rss_mb_base"].max() - 1)}


#: How the measurements of several rows add up: seconds sum, peak memory is the largest.
SUMS = {c: "max" if c.startswith("peak_rss_mb") else "sum"
        for c in ("seconds", "seconds_base", "cpu_seconds", "cpu_seconds_base", "peak_rss_mb", "peak_rss_mb_base")}


def _cell(value: float, digits: int = 1) -> str:
    return "" if value != value else f"{value:.{digits}f}"


def _cells(r: pd.Series, digits: int, *, ratios: bool) -> list[str]:
    """Wall, CPU and peak-RSS cells of a row (or of a sum over rows), before and now, with the ratios or empty."""
    def ratio(before: str, now: str) -> str:
        return f"{r[before] / r[now]:.2f}x" if ratios else ""

    return [_cell(r["seconds_base"], digits), _cell(r["seconds"], digits), ratio("seconds_base", "seconds"),
            _cell(r["cpu_seconds_base"], digits), _cell(r["cpu_seconds"], digits),
            ratio("cpu_seconds_base", "cpu_seconds"), _cell(r["peak_rss_mb_base"], 0), _cell(r["peak_rss_mb"], 0)]


def _line(cells: list[str]) -> str:
    """A Markdown table line; an empty cell is ``| |``."""
    return "|" + "".join(f" {c} |" if c else " |" for c in cells)


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and print the table (or one total)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv")
    parser.add_argument("--baseline", help="The earlier tree's name in the CSV (default: the one that is not 'this').")
    parser.add_argument("--total", choices=("wall", "cpu", "rss"), help="Print only this ratio of the sums.")
    parser.add_argument("--minutes", choices=("now", "before"), help="Print only one tree's summed wall minutes.")
    parser.add_argument("--with", dest="later", metavar="CSV", action="append", default=[],
                        help="A later run of the same benchmark whose models replace these rows (repeatable).")
    parser.add_argument("--changed", default="", metavar="M[,M...]",
                        help="Models whose default work changed between the trees (another protocol): shown, and "
                             "in the time of a compare, but not in the ratios of the sums.")
    parser.add_argument("--seeds", type=int, default=1,
                        help="--minutes for this many seeds: the sum times this (each seed repeats the runs).")
    args = parser.parse_args(argv)
    t = load(args.csv, args.baseline, alone=True)
    for later in args.later:
        newer = load(later, args.baseline, alone=True)
        t = pd.concat([t.drop(index=[m for m in newer.index if m in t.index]), newer]).loc[
            list(t.index) + [m for m in newer.index if m not in t.index]]
    if args.minutes:
        column = "seconds" if args.minutes == "now" else "seconds_base"
        print(f"{args.seeds * t[column].sum() / 60:.0f}")
        return
    every = t
    changed = [m for m in args.changed.split(",") if m]
    new_rows = t[t["seconds_base"].isna() | t.index.isin(changed)]
    t = t[~t.index.isin(new_rows.index)]
    if args.total:
        value = totals(t)[args.total]
        print(f"{value:+.0f}%" if args.total == "rss" else f"{value:.2f}x")
        return
    out = [_line(["model", "wall s, before", "wall s, now", "before / now", "CPU s, before", "CPU s, now",
                  "before / now (CPU)", "peak RSS MB, before", "peak RSS MB, now", "rows equal"]),
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for model, r in t.iterrows():  # the same work in both trees: ratios and whether the rows agree
        out.append(_line([model, *_cells(r, 1, ratios=True), "yes" if r["same_rows_base"] else "no"]))
    for model, r in new_rows.iterrows():  # models the earlier tree lacked or ran otherwise: no ratios
        label = f"{model} (other work)" if r["seconds_base"] == r["seconds_base"] else model
        out.append(_line([label, *_cells(r, 1, ratios=False), ""]))
    out.append(_line([f"all {len(t)} rows", *_cells(t.agg(SUMS), 0, ratios=True), ""]))
    if len(new_rows):
        out.append(_line(["every row", *_cells(every.agg(SUMS), 0, ratios=False), ""]))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
