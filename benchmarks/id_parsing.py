"""Node-id parsing of the tables reader: exact int64 parsing against the float parse it replaced.

The tables reader used to parse ids with ``pd.to_numeric(..., errors="coerce")``
through float64 (ids above 2**53 lost their last digits). It now uses
:func:`gflkit.data.validate.int_ids`, which parses clean digit strings in one
``astype(int64)`` call and checks the rest exactly. This script times both on the
same column of random ids (strings, as the CSV reader yields them) and prints
one CSV row per run; run it with ``OMP_NUM_THREADS=1 python benchmarks/id_parsing.py``.
"""
from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

from gflkit.data.validate import int_ids


def float_parse(values: pd.Series) -> np.ndarray:
    """The previous parse, kept here for comparison."""
    num = pd.to_numeric(values.str.strip(), errors="coerce")
    arr = num.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(arr) | (arr != np.round(arr)) | (arr < 0)
    return np.where(bad, -1, np.nan_to_num(arr, nan=-1)).astype(np.int64)


def _best(fn, values, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(values)
        times.append(time.perf_counter() - start)
    return min(times)


def main(n: int = 2_000_000, repeats: int = 3) -> None:
    """Time both id parsings on ``n`` clean and ``n`` dirty ids; print CSV."""
    rng = np.random.default_rng(0)
    clean = pd.Series(rng.integers(0, 10**9, n).astype(str), dtype=object)
    dirty = clean.copy()
    dirty.iloc[:: 1000] = "x"  # one malformed id in a thousand: the exact slow path
    print("ids,case,float_parse_s,int_ids_s,ratio")
    for case, values in (("clean", clean), ("dirty", dirty)):
        assert (int_ids(values)[0] == float_parse(values)).all()
        old, new = _best(float_parse, values, repeats), _best(lambda v: int_ids(v), values, repeats)
        print(f"{n},{case},{old:.3f},{new:.3f},{new / old:.2f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
