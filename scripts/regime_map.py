"""A regime map: ``gflkit compare`` on synthetic families over a grid of two properties.

    python scripts/regime_map.py --x homophily --x-values 0.2,0.5,0.8 --y snr --y-values 0.08,0.16,0.32 \
        -o results/regimes/homophily_snr.csv
    gflkit plot heatmap results/regimes/homophily_snr.csv --x homophily --y snr --model gfl-mean \
        -o results/regimes/homophily_snr.png

For every cell of the grid it builds a small synthetic family with
``gflkit preprocess synthetic`` (``--graphs``, ``--nodes`` and the cell's two
property values; every other property at its default, family seed
``--family-seed``), runs ``gflkit compare --model MODELS --reference REF --seed
SEEDS`` on it and appends the compare rows, each with the cell's property values
as columns named after the properties (``homophily``, ``snr``...), to one CSV.
The CSV is rewritten after each cell (through a temporary file and a rename),
so an interrupted map keeps its finished cells; a second call with the same
output skips the cells it already holds.

Properties are the options of ``gflkit preprocess synthetic`` that vary one
property at a time: homophily, snr, test-shift, nodes, degree, classes. The
families go to ``--data-root`` (default: a temporary folder, removed at the end).
Progress goes to stderr; nothing is printed to stdout.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from io import StringIO
from pathlib import Path

import pandas as pd

#: Properties a map can vary: the ``preprocess synthetic`` option of each.
PROPERTIES = {"homophily": "--homophily", "snr": "--snr", "test-shift": "--test-shift", "nodes": "--nodes",
              "degree": "--degree", "classes": "--classes"}
MODELS = "gfl-mean,protonet,transfer-head,lp,majority"


def _gflkit(*args: str, env: dict) -> str:
    """Run ``gflkit ARGS`` (this interpreter's), return its stdout; exit with its stderr's last line on failure."""
    command = [sys.executable, "-c", "from gflkit_cli.main import cli; cli(prog_name='gflkit')", "--no-progress",
               *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        sys.exit(f"regime_map: gflkit {' '.join(args[:2])} failed (exit {done.returncode}): {last}")
    return done.stdout


def _column(name: str) -> str:
    return name.replace("-", "_")


def _values(text: str, name: str) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"--{name}-values: give comma-separated values")
    return values


def _write(df: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    """Build and compare every cell of the grid (see the module docstring); returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--x", required=True, choices=list(PROPERTIES), help="First property (columns of the map).")
    parser.add_argument("--x-values", required=True, help="Its values, comma-separated.")
    parser.add_argument("--y", required=True, choices=list(PROPERTIES), help="Second property (rows of the map).")
    parser.add_argument("--y-values", required=True, help="Its values, comma-separated.")
    parser.add_argument("--models", default=MODELS, help=f"compare --model (default {MODELS}).")
    parser.add_argument("--reference", default="protonet", help="compare --reference (default protonet).")
    parser.add_argument("--seeds", default="0,1,2", help="compare --seed (default 0,1,2).")
    parser.add_argument("--graphs", default="20,5,10", help="Graphs per split of each family (default 20,5,10).")
    parser.add_argument("--nodes", default="300,600", help="Nodes per graph (default 300,600) unless a property.")
    parser.add_argument("--family-seed", default="0", help="Seed of every family (default 0).")
    parser.add_argument("--compare-args", default="", help="More compare options, e.g. '--steps 200'.")
    parser.add_argument("--data-root", default=None, help="Where the families go (default: a temporary folder).")
    parser.add_argument("-o", "--output", required=True, help="The map's CSV (created, or completed).")
    args = parser.parse_args(argv)
    if args.x == args.y:
        parser.error("--x and --y must be two different properties")
    try:
        xs, ys = _values(args.x_values, "x"), _values(args.y_values, "y")
    except argparse.ArgumentTypeError as err:
        parser.error(str(err))
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    done = pd.read_csv(output, dtype=str, keep_default_na=False) if output.is_file() else None
    root = Path(args.data_root) if args.data_root else Path(tempfile.mkdtemp(prefix="regime-map-"))
    env = {**os.environ, "GFLKIT_DATA": str(root)}
    try:
        for y in ys:
            for x in xs:
                if done is not None and ((done[_column(args.x)] == x) & (done[_column(args.y)] == y)).any():
                    print(f"regime_map: {args.x}={x}, {args.y}={y} already in {output}", file=sys.stderr)
                    continue
                print(f"regime_map: {args.x}={x}, {args.y}={y}", file=sys.stderr, flush=True)
                name = "regime-cell"
                cell = {PROPERTIES["nodes"]: args.nodes, PROPERTIES[args.x]: x, PROPERTIES[args.y]: y}
                _gflkit("preprocess", "synthetic", "--name", name, "--graphs", args.graphs, "--seed", args.family_seed,
                        *[a for option, value in cell.items() for a in (option, value)], env=env)
                table = _gflkit("compare", name, "--model", args.models, "--reference", args.reference,
                                "--seed", args.seeds, *args.compare_args.split(), env=env)
                rows = pd.read_csv(StringIO(table), dtype=str, keep_default_na=False)  # compare's text, as written
                rows.insert(0, _column(args.y), y)
                rows.insert(0, _column(args.x), x)
                done = rows if done is None else pd.concat([done, rows], ignore_index=True).fillna("")
                _write(done, output)
    finally:
        if not args.data_root:
            shutil.rmtree(root, ignore_errors=True)
    print(f"regime_map: wrote {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
