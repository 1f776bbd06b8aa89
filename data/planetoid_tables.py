"""Write a Planetoid graph (Cora, Citeseer, Pubmed) as plain tables.

The tables are what ``gflkit preprocess tables`` and ``data/metis_regions.py``
read: ``edges.csv`` (``src,dst``, one row per undirected edge), ``nodes.csv``
(``id,label``; unlabelled rows have an empty label) and ``features.npy`` (row i
is the node table's i-th row). With ``metis_regions.py`` this gives a
cross-network family cut from one citation graph:

    python data/planetoid_tables.py PLANETOID_FOLDER OUT_FOLDER [--dataset cora]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import gflkit  # noqa: F401  (applies the DGL compat shim before dgl is imported)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from gflkit.data.sources.planetoid import read_planetoid  # noqa: E402
from gflkit.io import atomic_write_text, atomic_write_with  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and write the tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder"), ap.add_argument("out")
    ap.add_argument("--dataset", default="cora", choices=("cora", "citeseer", "pubmed"))
    args = ap.parse_args(argv)
    source = read_planetoid(args.folder, args.dataset)
    g = source.g
    src, dst = (t.numpy() for t in g.edges())
    keep = src < dst  # one row per undirected edge, self-loops dropped
    label = g.ndata["label"].numpy()
    names = np.array(source.classes + [""], dtype=object)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "edges.csv", pd.DataFrame({"src": src[keep], "dst": dst[keep]}).to_csv(index=False))
    atomic_write_text(out / "nodes.csv", pd.DataFrame({"id": np.arange(g.num_nodes()),
                                                       "label": names[label]}).to_csv(index=False))
    feat = g.ndata["feat"].numpy()

    def save(tmp: str) -> None:
        with open(tmp, "wb") as f:  # a file object: np.save would add ".npy" to a name
            np.save(f, feat)

    atomic_write_with(out / "features.npy", save)
    print(f"{g.num_nodes()} nodes, {int(keep.sum())} edges, {len(source.classes)} classes; wrote {out}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
