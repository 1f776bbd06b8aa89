"""Result CSVs of ``gflkit compare`` side by side, as one Markdown table.

    python scripts/markdown_table.py Facebook=facebook.csv Cora=cora.csv [...] > table.md
    python scripts/markdown_table.py Facebook=a.csv+b.csv --save-dir results/table2 > table.md

A family may take several CSVs joined by ``+`` (runs of more models against the
same reference on the same seeds and episodes); a row found twice (the
reference, rerun in each) is kept once, from the first file. ``--save-dir``
writes each family's joined CSV there as ``<name>.csv``.

One row per model (the paper's names), per family two cells: accuracy ± the
half-width of its 95% interval, and the paired difference to the CSV's
reference row with its interval (``delta [delta_lo, delta_hi]``; bold when the
interval excludes zero). A model missing from a family's CSV gets empty cells.
The header says over how many seeds and graphs the intervals are.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from gflkit.names import display_name


def row_key(row: pd.Series) -> str:
    """``gfl-mean``, ``protonet``, ``protonet+lp``: the model, its aggregator and its refinement."""
    key = str(row["model"])
    if key == "gfl" and isinstance(row.get("aggregator"), str) and row["aggregator"]:
        key += f"-{row['aggregator']}"
    refine = row.get("refine")
    if isinstance(refine, str) and refine not in ("", "none"):
        key += f"+{refine}"
    return key


def cells(row: pd.Series) -> tuple[str, str]:
    """``accuracy ± ci95`` and ``delta [lo, hi]`` of one CSV row."""
    acc = f"{row['accuracy']:.2f} ± {row['ci95']:.2f}"
    if pd.isna(row.get("delta")):
        return acc, ""
    delta = f"{row['delta']:+.2f} [{row['delta_lo']:+.2f}, {row['delta_hi']:+.2f}]"
    if row["delta_lo"] > 0 or row["delta_hi"] < 0:
        delta = f"**{delta}**"
    return acc, delta


def main(argv=None) -> None:
    """Parse ``NAME=CSV`` pairs and print the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("families", nargs="+", help="NAME=CSV[+CSV...]")
    p.add_argument("--save-dir", default=None, help="write each family's joined CSV here")
    a = p.parse_args(argv)
    tables = {}
    for item in a.families:
        name, _, paths = item.partition("=")
        df = pd.concat([pd.read_csv(path) for path in paths.split("+")], ignore_index=True)
        df = df[~df.apply(row_key, axis=1).duplicated()].reset_index(drop=True)
        tables[name] = df
        if a.save_dir:
            Path(a.save_dir).mkdir(parents=True, exist_ok=True)
            df.to_csv(Path(a.save_dir) / f"{name}.csv", index=False, float_format="%.4f")
    order: list[str] = []
    for df in tables.values():
        order += [k for k in map(row_key, (r for _, r in df.iterrows())) if k not in order]
    head = ["model"]
    for name, df in tables.items():
        reference = df["reference"].dropna().iloc[0] if df["reference"].notna().any() else "reference"
        head += [f"{name} ({int(df['n_seeds'].max())} seeds x {int(df['n_graphs'].max())} graphs)",
                 f"Δ vs {display_name(reference)}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in order:
        line = [display_name(key)]
        for df in tables.values():
            match = [r for _, r in df.iterrows() if row_key(r) == key]
            line += list(cells(match[0])) if match else ["", ""]
        lines.append("| " + " | ".join(line) + " |")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
