"""Result CSVs side by side, as one Markdown table (Table 2 from ``gflkit compare``, Table 3 from ``paired.py``).

    python scripts/markdown_table.py Facebook=facebook.csv Cora=cora.csv [...] > table.md
    python scripts/markdown_table.py Facebook=a.csv+b.csv --save-dir results/table2 > table.md
    python scripts/markdown_table.py --study results/table3/table3.csv Facebook=facebook Cora=cora [...]
    python scripts/markdown_table.py --sweep synthetic=synthetic_shots.csv Facebook=facebook_shots.csv
    python scripts/markdown_table.py --grid homophily,snr map=results/regimes/homophily_snr.csv
    python scripts/markdown_table.py --paired "family=dataset;model;distance=value" a.csv b.csv
    python scripts/markdown_table.py --columns "family;encoder=grad_encoder" --where when=init grads.csv

Table 2 (``NAME=CSV``): a family may take several CSVs joined by ``+`` (runs
of more models against the same reference on the same seeds and episodes); a
row found twice (the reference, rerun in each) is kept once, from the first
file. ``--save-dir`` writes each family's joined CSV there as ``<name>.csv``.
One row per model (the paper's names), per family two cells: accuracy ± the
half-width of its 95% interval, and the paired difference to the CSV's
reference row with its interval (``delta [delta_lo, delta_hi]``; a file
whose rows have several references, such as ``--reference +none``, says "Δ vs
its reference"). A model
missing from a family's CSV gets empty cells. The header says over how many
seeds and graphs the intervals are (``--no-counts`` leaves that out).

Table 3 (``--study CSV``, the output of ``scripts/paired.py``; ``NAME=FAMILY``
names a column and the family it reads): one row per variant, named by what it
removes (``no-gate``) or by the options it sets (``mu=0.6``); the reference's
row holds its accuracy, the others the paired difference to it.

A sweep (``--sweep``, ``NAME=CSV`` of ``gflkit sweep``): one row per value of
the swept parameter, one column per family and model, the mean accuracy.

A regime map (``--grid A,B``, one ``NAME=CSV`` written by
``scripts/regime_map.py``): one row per cell of the grid (the values of the
columns A and B), one column per model (``--rows`` picks them; maps joined by
``+`` keep a cell's model from the first file that has it): the
reference's and the majority row's accuracy, the others' paired difference to
the reference, to one decimal. The family is the whole map.

A sweep or a grid read row by row (``--paired LABELS``, CSVs of ``gflkit
sweep`` or ``compare``): one line per row of each CSV in turn, the
LABELS columns first (``HEADER=COLUMN`` or ``COLUMN``, separated by
semicolons; a ``model`` column is printed as its row key), then accuracy,
the paired difference with its interval, P(improvement), the p-value and the
p-value adjusted over the CSV's comparisons. The family is each CSV.

Any CSV's columns (``--columns LABELS``, the same syntax; ``--where COL=VALUE``
keeps matching rows; a CSV given as ``NAME=CSV`` has ``NAME`` in a column
``file``, for runs that differ in a setting the CSV does not record): whole numbers as they are, others from 1 up to two
decimals and below 1 to three significant digits (:func:`measurement`), for
stored measurements that are not comparisons.

A difference is bold when it is shown: its p-value adjusted over the family
is below 0.05. The family is the CSV the difference is read from (one
family's joined CSV in Table 2, the whole study CSV in Table 3). A file's
``p_adjusted`` column is used when the family is that one file; otherwise the
stored ``p_value`` column is adjusted (``--adjust``, Holm's method by default;
:func:`gflkit.evaluation.statistics.adjust_p`). ``--rows`` picks the rows and
their order, separated by semicolons (model keys such as ``gfl-mean`` or
variant names such as ``no-gate``); the family is still the whole CSV. A
``compare`` file written before the two-level interval (no ``n_seeds``
column) is printed without bold. Minus signs are ASCII.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from gflkit.evaluation.statistics import ADJUSTMENTS, adjust_p
from gflkit.names import display_name

#: Table 3's variants, as component_study.py names them, to the names of :data:`gflkit.names.VARIANT_DISPLAY_NAMES`.
STUDY_VARIANTS = {"gfl": "full", "protonet": "structure", "no-gate": "gate", "no-hierarchy": "hierarchy",
                  "no-recon": "recon"}
THRESHOLD = 0.05


def variant_name(variant: str) -> str:
    """Table 3's name of a study variant: ``no-gate`` as the paper names it, ``mu=0.6`` as ```mu = 0.6```."""
    if variant in STUDY_VARIANTS:
        return display_name(STUDY_VARIANTS[variant])
    if "=" in variant:
        return ", ".join(f"`{k} = {v}`" for k, _, v in (part.partition("=") for part in variant.split(",")))
    return display_name(variant)


def row_key(row: pd.Series) -> str:
    """``gfl-mean``, ``protonet``, ``protonet+lp``: the model, its aggregator and its refinement."""
    key = str(row["model"])
    if key == "gfl" and isinstance(row.get("aggregator"), str) and row["aggregator"]:
        key += f"-{row['aggregator']}"
    refine = row.get("refine")
    if isinstance(refine, str) and refine not in ("", "none"):
        key += f"+{refine}"
    return key


def shown_column(df: pd.DataFrame, one_file: bool, adjust: str) -> pd.Series:
    """Per row, whether its difference is shown: adjusted p-value over the rows of ``df`` below 0.05.

    A file written before intervals counted seeds and graphs as two levels
    (no ``n_seeds`` column: its p-values leave training randomness out) or
    before paired comparisons (no ``p_value``) shows nothing.
    """
    if "n_seeds" not in df:
        return pd.Series(False, index=df.index)
    if one_file and "p_adjusted" in df:
        p = df["p_adjusted"].to_numpy(dtype=float)
    elif "p_value" in df:
        p = adjust_p(df["p_value"].to_numpy(dtype=float), adjust)
    else:
        return pd.Series(False, index=df.index)
    return pd.Series(p < THRESHOLD, index=df.index)


def without_self(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` without the reference's comparison with itself, which older ``compare`` files hold (delta 0, p 1)."""
    if "reference" not in df or "delta" not in df:
        return df
    own = df.apply(row_key, axis=1) == df["reference"]
    df = df.copy()
    df.loc[own, ["delta", "delta_lo", "delta_hi", "p_value"]] = float("nan")
    return df


def interval(mean: float, lo: float, hi: float, shown: bool) -> str:
    """``+1.23 [-0.45, +2.91]``, bold when shown."""
    text = f"{mean:+.2f} [{lo:+.2f}, {hi:+.2f}]"
    return f"**{text}**" if shown else text


def cells(row: pd.Series) -> tuple[str, str]:
    """``accuracy ± ci95`` and ``delta [lo, hi]`` of one Table 2 row (its ``shown`` column set)."""
    acc = f"{row['accuracy']:.2f} ± {row['ci95']:.2f}"
    if pd.isna(row.get("delta")):
        return acc, ""
    return acc, interval(row["delta"], row["delta_lo"], row["delta_hi"], bool(row["shown"]))


def markdown(head: list[str], body: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(line) + " |" for line in body]
    return "\n".join(lines) + "\n"


def compare_table(families: list[str], rows: list[str] | None, adjust: str, counts: bool,
                  save_dir: str | None) -> str:
    """Table 2: ``NAME=CSV[+CSV...]`` families of ``gflkit compare`` rows side by side."""
    tables = {}
    for item in families:
        name, _, paths = item.partition("=")
        parts = paths.split("+")
        df = pd.concat([pd.read_csv(path) for path in parts], ignore_index=True)
        df = df[~df.apply(row_key, axis=1).duplicated()].reset_index(drop=True)
        if save_dir:
            Path(save_dir).mkdir(parents=True, exist_ok=True)
            df.to_csv(Path(save_dir) / f"{name}.csv", index=False, float_format="%.4f")
        df = without_self(df)
        df["shown"] = shown_column(df, len(parts) == 1, adjust)
        tables[name] = df
    order: list[str] = []
    for df in tables.values():
        order += [k for k in map(row_key, (r for _, r in df.iterrows())) if k not in order]
    head = ["model"]
    for name, df in tables.items():
        known = df["reference"].dropna().unique() if "reference" in df else ()
        reference = display_name(known[0]) if len(known) == 1 else "its reference" if len(known) else "reference"
        size = ""
        if counts:
            seeds, graphs = int(df["n_seeds"].max()), int(df["n_graphs"].max())
            size = f" ({seeds} seed{'s' * (seeds != 1)} x {graphs} graph{'s' * (graphs != 1)})"
        head += [f"{name}{size}", f"Δ vs {reference}"]
    body = []
    for key in rows or order:
        line = [display_name(key)]
        for df in tables.values():
            match = [r for _, r in df.iterrows() if row_key(r) == key]
            line += list(cells(match[0])) if match else ["", ""]
        body.append(line)
    return markdown(head, body)


def study_table(path: str, families: list[str], rows: list[str] | None, adjust: str) -> str:
    """Table 3: the variants of ``paired.py``'s output (``path``), one column per ``NAME=FAMILY``."""
    df = pd.read_csv(path)
    diff = next(c for c in df.columns if c.startswith("diff_vs_"))
    df["shown"] = shown_column(df, True, adjust)
    columns = [item.partition("=") for item in families]
    variants = rows or list(dict.fromkeys(df["variant"]))
    body = []
    for variant in variants:
        name = variant_name(variant)
        line = [name]
        for _, _, family in columns:
            match = df[(df["family"] == family) & (df["variant"] == variant)]
            if match.empty:
                line.append("")
                continue
            r = match.iloc[0]
            if pd.isna(r[diff]):
                line[0] = f"{name}, accuracy"
                line.append(f"{r['accuracy']:.2f} ± {r['ci95']:.2f}")
            else:
                line.append(interval(r[diff], r["diff_lo"], r["diff_hi"], bool(r["shown"])))
        body.append(line)
    return markdown(["variant"] + [name for name, _, _ in columns], body)


def sweep_table(families: list[str]) -> str:
    """A sweep's mean accuracy: one row per value of its parameter, one column per family and model."""
    tables = {name: pd.read_csv(path) for name, _, path in (item.partition("=") for item in families)}
    param = next(iter(tables.values()))["param"].iloc[0]
    head, columns = ["shots" if param == "k-shot" else param], []
    for name, df in tables.items():
        keys = list(dict.fromkeys(df.apply(row_key, axis=1)))
        head += [f"{name} {display_name(k)}" if i == 0 else display_name(k) for i, k in enumerate(keys)]
        columns += [(df, k) for k in keys]
    values = sorted({v for df in tables.values() for v in df["value"]}, key=float)
    body = []
    for value in values:
        line = [str(value)]
        for df, key in columns:
            match = df[(df["value"] == value) & (df.apply(row_key, axis=1) == key)]
            line.append(f"{match['accuracy'].iloc[0]:.2f}" if len(match) else "")
        body.append(line)
    return markdown(head, body)


def grid_table(columns: list[str], item: str, rows: list[str] | None, adjust: str) -> str:
    """A regime map: one row per cell of ``columns``, one column per model (accuracy or difference)."""
    paths = (item.partition("=")[2] or item).split("+")
    df = pd.concat([pd.read_csv(path) for path in paths], ignore_index=True)
    df = df.assign(key=df.apply(row_key, axis=1))
    df = df[~df[columns + ["key"]].duplicated()].reset_index(drop=True)
    df["shown"] = shown_column(df, len(paths) == 1, adjust)
    models = rows or list(dict.fromkeys(df["key"]))
    body = []
    for cell, d in df.groupby(columns, sort=True):
        line = [str(v) for v in (cell if isinstance(cell, tuple) else (cell,))]
        for key in models:
            match = d[d["key"] == key]
            if match.empty:
                line.append("")
                continue
            r = match.iloc[0]
            if pd.isna(r.get("delta")) or key == "majority":
                line.append(f"{r['accuracy']:.1f}")
            else:
                text = f"{r['delta']:+.1f} [{r['delta_lo']:+.1f}, {r['delta_hi']:+.1f}]"
                line.append(f"**{text}**" if r["shown"] else text)
        body.append(line)
    return markdown([axis_name(df, c) for c in columns] + [display_name(k) for k in models], body)


def axis_name(df: pd.DataFrame, column: str) -> str:
    """A grid column's header: ``shots`` for a sweep's values of ``k-shot``, the swept parameter for other values."""
    if column == "value" and "param" in df:
        param = str(df["param"].iloc[0])
        return "shots" if param == "k-shot" else param
    return column.replace("_", " ")


def labels(spec: str) -> list[tuple[str, str]]:
    """``"family=dataset;model"`` -> ``[("family", "dataset"), ("model", "model")]``."""
    return [(head or column, column) for head, _, column in
            (item.rpartition("=") for item in spec.split(";"))]


def label_cell(row: pd.Series, column: str) -> str:
    """One label cell: a model as its display name (with its aggregator), anything else as written."""
    return display_name(row_key(row)) if column == "model" else str(row[column])


def paired_table(spec: str, paths: list[str], adjust: str) -> str:
    """Every row of each CSV: its labels, accuracy, and where compared the difference, P(improvement), p, adjusted p."""
    head = [h for h, _ in labels(spec)] + ["accuracy", "delta [95% interval]", "P(improvement)", "p", "p adjusted"]
    body = []
    for path in paths:
        df = pd.read_csv(path)
        df = without_self(df) if "model" in df else df
        df["shown"] = shown_column(df, True, adjust)
        df["p_adj"] = df["p_adjusted"] if "p_adjusted" in df else adjust_p(df["p_value"].to_numpy(float), adjust)
        for _, r in df.iterrows():
            compared = [] if pd.isna(r["delta"]) else [
                interval(r["delta"], r["delta_lo"], r["delta_hi"], bool(r["shown"])),
                f"{r['prob_improvement']:.2f}", f"{r['p_value']:.3f}", f"{r['p_adj']:.3f}"]
            body.append([label_cell(r, c) for _, c in labels(spec)] + [f"{r['accuracy']:.2f}"]
                        + (compared or [""] * 4))
    return markdown(head, body)


def columns_table(spec: str, paths: list[str], where: list[str]) -> str:
    """Chosen columns of stored CSVs, numbers to three significant digits."""
    df = pd.concat([pd.read_csv(path).assign(file=name) for name, _, path in
                    (item.rpartition("=") for item in paths)], ignore_index=True)
    for condition in where:
        column, _, value = condition.partition("=")
        df = df[df[column].astype(str) == value]
    return markdown([h for h, _ in labels(spec)], [[measurement(r[c]) for _, c in labels(spec)]
                                                   for _, r in df.iterrows()])


def measurement(value) -> str:
    """A stored measurement: a whole number as it is, from 1 up to two decimals, below 1 three significant
    digits (``0.0518``, ``7.28e-06``), anything else as written."""
    if not isinstance(value, float) or value != value:
        return "" if isinstance(value, float) else str(value)
    if value.is_integer():
        return str(int(value))
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3g}"


def main(argv=None) -> None:
    """Parse the families and print the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("families", nargs="+", help="NAME=CSV[+CSV...], or NAME=FAMILY with --study")
    p.add_argument("--study", default=None, metavar="CSV", help="read Table 3 from this output of paired.py")
    p.add_argument("--sweep", action="store_true", help="NAME=CSV are gflkit sweep outputs: accuracy by value")
    p.add_argument("--grid", default=None, metavar="A,B", help="NAME=CSV is a regime map over these columns")
    p.add_argument("--paired", default=None, metavar="LABELS",
                   help="CSVs row by row: these label columns, then the paired difference")
    p.add_argument("--columns", default=None, metavar="LABELS", help="CSVs' columns as they are")
    p.add_argument("--where", action="append", default=[], metavar="COL=VALUE", help="with --columns: keep these rows")
    p.add_argument("--rows", default=None, help="rows to print in this order, separated by semicolons (default: all)")
    p.add_argument("--adjust", choices=list(ADJUSTMENTS), default="holm",
                   help="adjustment of stored p-values over a family (default: holm)")
    p.add_argument("--no-counts", dest="counts", action="store_false",
                   help="leave the seeds and graphs out of the header")
    p.add_argument("--save-dir", default=None, help="write each family's joined CSV here")
    a = p.parse_args(argv)
    rows = a.rows.split(";") if a.rows else None
    if a.paired:
        text = paired_table(a.paired, a.families, a.adjust)
    elif a.columns:
        text = columns_table(a.columns, a.families, a.where)
    elif a.grid:
        text = grid_table(a.grid.split(","), a.families[0], rows, a.adjust)
    elif a.sweep:
        text = sweep_table(a.families)
    elif a.study:
        text = study_table(a.study, a.families, rows, a.adjust)
    else:
        text = compare_table(a.families, rows, a.adjust, a.counts, a.save_dir)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
