"""Result tables and their records: the rows of ``compare``, ``ablate`` and ``sweep``, and the same rows
rebuilt from the stored records alone.

A table row summarises records, one per (seed, test graph, episode) of one
model (or variant, or swept value). :func:`table_records` lays every record of
a table out in one long frame, each line carrying what identifies its row
(``row``, its label, and ``reference``, the label of the row it is paired
with); :func:`summarize` turns such a frame back into the table, the same
digits as the command printed. So a published table can be recomputed, and
rechecked with another interval or adjustment, from its records.
"""
from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from ..errors import GFLError
from .scoring import paired, summarise
from .statistics import adjust_p, warn_one_graph, warn_one_seed
from .tables import P_ADJUSTED, PAIRED_COLUMNS, RESULT_COLUMNS, SEED_STD, to_frame

__all__ = ["join_records", "summarize"]

#: The label of the row a record belongs to, and of the row it is paired with ("" for none).
ROW, REFERENCE = "row", "reference"
#: What a row says of itself besides its metrics, stored on each of its records.
ROW_FIELDS = ["model", "aggregator", "dataset", "split", "k_shot", "episodes", "refine"]
#: The columns a table puts first: ``ablate``'s and ``sweep``'s.
FIRST_COLUMNS = ("variant", "description", "param", "value")
#: The columns of one record.
RECORD_FIELDS = ["seed", "graph_id", "episode", "correct", "n", "accuracy", "balanced_accuracy", "macro_f1"]

#: The paired columns of a row that is its own reference: empty.
EMPTY_PAIRED = {REFERENCE: None, "delta": math.nan, "delta_lo": math.nan, "delta_hi": math.nan,
                "prob_improvement": math.nan, "p_value": math.nan, "n_pairs": None}


def result_table(rows: list[dict], first: Sequence[str] = (), adjust: str = "holm") -> pd.DataFrame:
    """The rows as a DataFrame: ``first``, the result columns, ``seed_std``, the paired columns (``p_adjusted``
    after ``p_value``: adjusted by ``adjust`` over every comparison of the table), then ``seed``."""
    columns = list(PAIRED_COLUMNS)
    columns.insert(columns.index("p_value") + 1, P_ADJUSTED)
    rows = [{**row, P_ADJUSTED: p} for row, p in zip(rows, adjust_p([row["p_value"] for row in rows], adjust))]
    df = to_frame(rows, [*first, *RESULT_COLUMNS[:-1], SEED_STD, *columns, "seed"])
    if "n_pairs" in df:
        df["n_pairs"] = df["n_pairs"].astype("Int64")  # empty for the reference row
    return df


def warn_units(rows: list[dict], n_seeds: int, dataset: str, stacklevel: int = 4) -> None:
    """The one-seed and one-test-graph warnings of a table."""
    warn_one_seed(n_seeds, stacklevel=stacklevel)
    warn_one_graph(min((int(row["n_graphs"]) for row in rows), default=0), dataset, stacklevel=stacklevel)


def table_records(labels: Sequence[str], rows: Sequence[dict], records: Sequence[pd.DataFrame],
                  first: Sequence[str] = ()) -> pd.DataFrame:
    """Every record of a table, one line per (row, seed, graph, episode), in the table's order.

    Args:
        labels: each row's label (what other rows name as their ``reference``).
        rows: the table's rows, with their paired columns (``reference``).
        records: each row's records (``seed``, ``graph_id``, ``episode``, the metrics).
        first: the row keys the table puts first (``variant``, ``description``...).
    """
    parts = []
    for label, row, rec in zip(labels, rows, records):
        ident = {**{c: row[c] for c in first}, ROW: label, REFERENCE: row.get(REFERENCE) or "",
                 **{c: row[c] for c in ROW_FIELDS}}
        fields = [c for c in RECORD_FIELDS if c in rec] + [c for c in rec if c not in RECORD_FIELDS]
        parts.append(rec[fields].assign(**ident)[[*ident, *fields]])
    return pd.concat(parts, ignore_index=True)


def read_records(path) -> pd.DataFrame:
    """A records CSV written by ``--records``: text columns keep their empty cells, metrics their NaN."""
    numeric = {c: ["", "nan", "NaN"] for c in ("accuracy", "balanced_accuracy", "macro_f1")}
    return pd.read_csv(path, keep_default_na=False, na_values=numeric)


def join_records(parts: Sequence[pd.DataFrame], names: Sequence[str] | None = None) -> pd.DataFrame:
    """Records of several runs on the same test graphs, seeds and episodes, as one table's.

    Rows (their labels in the ``row`` column) keep the order in which they first
    appear; a row found in a later part replaces the earlier one's records in
    place (a model rerun after a fix, or compared later beside a stored table).
    Units are paired on ``(seed, graph_id, episode)`` by :func:`summarize`.

    Raises:
        GFLError: the parts are of different collections, splits or shots (``names``: how the
            message calls each part, e.g. its file).
    """
    names = list(names) if names is not None else [f"records {i + 1}" for i in range(len(parts))]
    if len(parts) < 2:
        return parts[0] if parts else pd.DataFrame()
    rows: dict[str, pd.DataFrame] = {}
    for name, part in zip(names, parts):
        if ROW not in part:
            raise GFLError(f"{name}: records without the column {ROW}: give a records CSV that compare, ablate "
                           "or sweep wrote")
        for column in ("dataset", "split", "k_shot"):
            if column in part and column in parts[0]:
                ours, theirs = set(part[column].astype(str)), set(parts[0][column].astype(str))
                if ours != theirs:
                    raise GFLError(f"{name}: {column} {', '.join(sorted(ours))} where {names[0]} has "
                                   f"{', '.join(sorted(theirs))}; join records of one table's test graphs only")
        for label, group in part.groupby(ROW, sort=False):
            rows[label] = group
    return pd.concat(list(rows.values()), ignore_index=True)


def summarize(records: pd.DataFrame, ci: str = "t", adjust: str = "holm",
              reference: str | None = None) -> pd.DataFrame:
    """The table whose records these are (:func:`table_records`): its rows, intervals and paired columns.

    Args:
        records: one line per (row, seed, graph, episode), as ``compare``,
            ``ablate`` and ``sweep`` store them (``--records``) and
            :func:`read_records` reads them.
        ci, adjust: as :func:`gflkit.experiments.compare`'s; the table the
            command printed comes back with the same ones.
        reference: pair every row with this row instead (its label, as in the
            ``row`` column: ``gcn``, ``gfl-mean``...), the reference row's own
            paired columns empty; the adjustment is then over these comparisons.

    Returns:
        the table, with the records it summarises in ``attrs["records"]`` (their ``reference``
        column set to ``reference`` when one is given), which summarise to it again.

    Raises:
        GFLError: a column is missing, or a row's reference is no row of the records.
    """
    missing = [c for c in (ROW, REFERENCE, *ROW_FIELDS, "seed", "graph_id", "episode", "accuracy")
               if c not in records]
    if missing:
        raise GFLError(f"records without the column(s) {', '.join(missing)}: give the records CSV that compare, "
                       "ablate or sweep wrote")
    first = [c for c in FIRST_COLUMNS if c in records]
    own = [c for c in records if c not in (*first, ROW, REFERENCE, *ROW_FIELDS)]
    groups = {label: part for label, part in records.groupby(ROW, sort=False)}
    if reference is not None and reference not in groups:
        raise GFLError(f"reference {reference!r} is no row of the records: choose from {', '.join(groups)}")
    rows, seeds = [], []
    for label, part in groups.items():
        head = part.iloc[0]
        rec = part[own].reset_index(drop=True)
        row_seeds = list(dict.fromkeys(int(s) for s in rec["seed"]))
        seeds += row_seeds
        row = {**{c: head[c] for c in first}, **{c: head[c] for c in ROW_FIELDS}, **summarise(rec, ci),
               "seed": row_seeds[0] if len(row_seeds) == 1 else ",".join(map(str, row_seeds))}
        other = head[REFERENCE] if reference is None else ("" if label == reference else reference)
        if not other:
            rows.append({**row, **EMPTY_PAIRED})
        elif other not in groups:
            raise GFLError(f"row {label!r} is paired with {other!r}, which is no row of the records")
        else:
            rows.append({**row, REFERENCE: other, **paired(rec, groups[other][own].reset_index(drop=True), ci)})
    warn_units(rows, len(set(seeds)), str(records["dataset"].iloc[0]) if len(records) else "", stacklevel=3)
    table = result_table(rows, first, adjust)
    if reference is not None:  # the records of this table: each row paired as printed
        records = records.assign(**{REFERENCE: [("" if r == reference else reference) for r in records[ROW]]})
    table.attrs["records"] = records
    return table
