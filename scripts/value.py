"""One number from a stored CSV, for a sentence of the docs (publish.py's inline values).

    python scripts/value.py CSV --where COL=VALUE [--where ...] --column COL [--minus COL] [--scale 100] [--format .1f]
    python scripts/value.py CSV --where COL=VALUE --column COL --agg min

The rows matching every ``--where`` (``COL!=VALUE`` excludes; a ``model``
condition matches the row key, e.g. ``gfl-mean``) must be exactly one; its ``--column``, minus the
``--minus`` column if given, times ``--scale``, is printed with ``--format``.
With ``--agg min|max|mean|median`` any number of matching rows (at least one) are
summarised instead.
In a page the value sits between two comments, which ``publish.py`` rewrites::

    auto's mean regret is <!-- value: python scripts/value.py results/predict/rules.csv --where rule=auto
    --column regret --scale 100 -->1.5<!-- end value --> points
"""
from __future__ import annotations

import argparse

import pandas as pd

from markdown_table import row_key


def pick(df: pd.DataFrame, where: list[str], many: bool = False) -> pd.DataFrame:
    """The rows of ``df`` that match every ``COL=VALUE``: exactly one unless ``many`` (then at least one)."""
    keep = pd.Series(True, index=df.index)
    for condition in where:
        column, _, value = condition.partition("=")
        negate = column.endswith("!")
        column = column.rstrip("!")
        cells = df.apply(row_key, axis=1) if column == "model" else df[column].astype(str)
        keep &= (cells != value) if negate else (cells == value)
    if keep.sum() == 0 or (keep.sum() > 1 and not many):
        raise SystemExit(f"value.py: {keep.sum()} rows match {' and '.join(where) or 'no condition'}; need one")
    return df[keep]


def main(argv=None) -> None:
    """Print the value."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv")
    p.add_argument("--where", action="append", default=[], metavar="COL=VALUE", help="keep the rows that match")
    p.add_argument("--column", required=True, help="the column to print")
    p.add_argument("--minus", default=None, metavar="COL", help="subtract this column of the same row")
    p.add_argument("--scale", type=float, default=1.0, help="multiply by this (100: a share as points)")
    p.add_argument("--format", default=".1f", help="Python format of the number (default: .1f)")
    p.add_argument("--agg", choices=("min", "max", "mean", "median"), default=None,
                   help="summarise several matching rows")
    a = p.parse_args(argv)
    rows = pick(pd.read_csv(a.csv), a.where, many=a.agg is not None)
    values = rows[a.column].astype(float) - (rows[a.minus].astype(float) if a.minus else 0.0)
    value = float(values.agg(a.agg)) if a.agg else float(values.iloc[0])
    print(format(value * a.scale, a.format))


if __name__ == "__main__":
    main()
