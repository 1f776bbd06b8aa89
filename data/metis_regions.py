"""Split one graph's tables into METIS regions, written as multi-graph tables.

Builds a cross-network family from a single real graph: every node gets the
region (``r0``, ``r1``, ...) of a METIS partition of the whole graph, edges
between regions are dropped, and the node and edge tables are written with a
``region`` column, ready for ``gflkit preprocess tables --graph-col region``.
Node ids, labels and every other node column are kept as they are, so a
feature file keyed by node id (``--feature-key node``) still applies.

    python data/metis_regions.py EDGES NODES OUT_FOLDER [--parts 3] [--src-col id_1 --dst-col id_2 --id-col id]
"""
from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

import gflkit  # noqa: F401  (applies the DGL compat shim before dgl is imported)
import dgl  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from gflkit.io import atomic_write_text  # noqa: E402


def regions(src: np.ndarray, dst: np.ndarray, n: int, parts: int) -> np.ndarray:
    """METIS part of each of the nodes ``0..n-1`` of the undirected graph ``src``-``dst`` (self-loops dropped)."""
    keep = src != dst
    g = dgl.to_bidirected(dgl.graph((torch.from_numpy(src[keep]), torch.from_numpy(dst[keep])), num_nodes=n))
    with contextlib.redirect_stdout(sys.stderr):  # DGL prints METIS timings
        return dgl.metis_partition_assignment(g, parts).numpy()


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and write the regions."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("edges"), ap.add_argument("nodes"), ap.add_argument("out")
    ap.add_argument("--parts", type=int, default=3)
    ap.add_argument("--src-col", default="src"), ap.add_argument("--dst-col", default="dst")
    ap.add_argument("--id-col", default="id"), ap.add_argument("--region-col", default="region")
    args = ap.parse_args(argv)
    for path in (args.edges, args.nodes):
        if not Path(path).is_file():
            ap.error(f"{path}: no such file")
    edges, nodes = pd.read_csv(args.edges), pd.read_csv(args.nodes)
    ids = nodes[args.id_col].to_numpy(np.int64)
    position = pd.Index(ids)
    src, dst = (position.get_indexer(edges[c].to_numpy(np.int64)) for c in (args.src_col, args.dst_col))
    known = (src >= 0) & (dst >= 0)
    part = regions(src[known], dst[known], len(ids), args.parts)
    name = np.array([f"r{p}" for p in part], dtype=object)
    nodes.insert(0, args.region_col, name)
    inside = np.zeros(len(edges), dtype=bool)
    inside[np.flatnonzero(known)] = part[src[known]] == part[dst[known]]
    kept = edges[inside].copy()
    kept.insert(0, args.region_col, name[src[inside]])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "nodes.csv", nodes.to_csv(index=False))
    atomic_write_text(out / "edges.csv", kept.to_csv(index=False))
    sizes = nodes[args.region_col].value_counts().sort_index()
    print(f"{len(ids)} nodes in {args.parts} regions ({', '.join(f'{k}: {v}' for k, v in sizes.items())}); "
          f"{int(inside.sum())} of {len(edges)} edge rows kept inside a region; wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
