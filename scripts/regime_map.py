"""A regime map: :func:`gflkit.experiments.compare` on synthetic families over a grid of two properties.

    python scripts/regime_map.py --x homophily --x-values 0.2,0.5,0.8 --y snr --y-values 0.08,0.16,0.32 \
        -o results/regimes/homophily_snr.csv
    gflkit plot heatmap results/regimes/homophily_snr.csv --x homophily --y snr --model gfl-mean \
        -o results/regimes/homophily_snr.png

For every cell of the grid it builds a small synthetic family with
:func:`gflkit.data.pipelines.preprocess_synthetic` (the spec
:func:`gflkit.data.synthetic.varied` by ``--graphs``, ``--nodes`` and the cell's
two property values, as ``gflkit preprocess synthetic --graphs --nodes
--homophily ...`` would; every other property at its default, family seed
``--family-seed``), runs :func:`gflkit.experiments.compare` on it with
``--models``, ``--reference`` and ``--seeds`` and appends the rows, as
``gflkit compare`` prints them, each with the cell's property values as
columns named after the properties (``homophily``, ``snr``...), to one CSV.
``--compare-args`` gives more settings of compare as ``--NAME VALUE`` pairs
(``--similarity combined --steps 200``): a field of GFLConfig, EpisodeConfig,
TrainConfig or TableSettings, spelled as the command line spells it.
The CSV is rewritten after each cell (through a temporary file and a rename),
so an interrupted map keeps its finished cells; a second call with the same
output skips the cells it already holds.

Properties are the settings of a synthetic family that vary one property at a
time: homophily, snr, test-shift, nodes, degree, classes (a value, or a
range ``MIN,MAX`` for nodes, degree and homophily). The families go to
``--data-root`` (default: a temporary folder, removed at the end). Progress
goes to stderr; nothing is printed to stdout.

An example of the library's calls: read it beside ``docs/usage.md``.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from dataclasses import fields, replace
from io import StringIO
from pathlib import Path

import pandas as pd

from gflkit.errors import GFLError

#: Properties a map can vary: the keyword of :func:`gflkit.data.synthetic.varied` and the type of a value.
PROPERTIES = {"homophily": ("homophily", float), "snr": ("snr", float), "test-shift": ("test_shift", float),
              "nodes": ("nodes", int), "degree": ("degree", float), "classes": ("num_classes", int)}
#: Properties given as a (min, max) range per graph.
RANGES = ("homophily", "nodes", "degree")
MODELS = "gfl-mean,protonet,transfer-head,lp,majority"


def _names(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _property(name: str, text: str):
    """A property's value as :func:`gflkit.data.synthetic.varied` takes it: a number, or a (min, max) range."""
    parse = PROPERTIES[name][1]
    values = [parse(v) for v in _names(text)]
    if name in RANGES:
        return (values[0], values[-1])
    if len(values) != 1:
        raise ValueError(f"{name} takes one value, got {text!r}")
    return values[0]


def _number(text: str) -> int | float | str:
    """A value for a setting whose default is ``None`` (the model's own): an integer, else a number, else the text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _compare_settings(text: str) -> dict:
    """``--NAME VALUE`` pairs -> compare's keywords: ``model_overrides``, ``episode_cfg``, ``train_cfg`` and the
    fields of :class:`gflkit.experiments.TableSettings`, each value of its field's type."""
    from gflkit.config import EpisodeConfig, GFLConfig, TrainConfig
    from gflkit.experiments import TableSettings

    words = text.split()
    if len(words) % 2 or not all(w.startswith("--") for w in words[::2]):
        raise ValueError(f"--compare-args takes --NAME VALUE pairs, got {text!r}")
    given = {w[2:].replace("-", "_"): v for w, v in zip(words[::2], words[1::2])}
    settings: dict = {"model_overrides": {}, "episode_cfg": EpisodeConfig(), "train_cfg": TrainConfig()}
    targets = [("model_overrides", GFLConfig()), ("episode_cfg", None), ("train_cfg", None), ("", TableSettings())]
    for name, value in given.items():
        for key, instance in targets:
            instance = settings[key] if instance is None else instance
            if name in {f.name for f in fields(instance)} and name != "seed":
                default = getattr(instance, name)
                typed = value if isinstance(default, str) else type(default)(value) if default is not None \
                    else _number(value)
                if key == "model_overrides":
                    settings[key][name] = typed
                elif key:
                    settings[key] = replace(settings[key], **{name: typed})
                else:
                    settings[name] = typed
                break
        else:
            raise ValueError(f"--compare-args: --{name.replace('_', '-')} is no setting of compare")
    return settings


def _cell(root: Path, args, x: str, y: str) -> pd.DataFrame:
    """One cell: its family built, compared, and the rows as ``gflkit compare`` prints them (text, as written)."""
    from gflkit.data import SyntheticSpec
    from gflkit.data.pipelines import preprocess_synthetic
    from gflkit.data.synthetic import varied
    from gflkit.evaluation.tables import write_table
    from gflkit.experiments import compare

    cell = {"nodes": args.nodes, args.x: x, args.y: y}
    spec = varied(SyntheticSpec(), n_graphs=[int(n) for n in _names(args.graphs)],
                  **{PROPERTIES[name][0]: _property(name, value) for name, value in cell.items()})
    done = preprocess_synthetic(spec, name="regime-cell", seed=int(args.family_seed), root=root, progress=False)
    table = compare(done.path, _names(args.models), reference=args.reference,
                    seeds=[int(s) for s in _names(args.seeds)], progress=False, **_compare_settings(args.compare_args))
    return pd.read_csv(StringIO(write_table(table, None, "csv")), dtype=str, keep_default_na=False)


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
    parser.add_argument("--compare-args", default="", help="More compare settings, e.g. '--steps 200'.")
    parser.add_argument("--data-root", default=None, help="Where the families go (default: a temporary folder).")
    parser.add_argument("-o", "--output", required=True, help="The map's CSV (created, or completed).")
    args = parser.parse_args(argv)
    if args.x == args.y:
        parser.error("--x and --y must be two different properties")
    try:
        xs, ys = _values(args.x_values, "x"), _values(args.y_values, "y")
        for name, values in ((args.x, xs), (args.y, ys), ("nodes", [args.nodes])):
            for value in values:
                _property(name, value)
        _compare_settings(args.compare_args)
    except (argparse.ArgumentTypeError, ValueError) as err:
        parser.error(str(err))
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    done = pd.read_csv(output, dtype=str, keep_default_na=False) if output.is_file() else None
    from gflkit.progress import set_progress

    set_progress(False)  # the map says which cell it is at; the runs' bars would bury that
    root = Path(args.data_root) if args.data_root else Path(tempfile.mkdtemp(prefix="regime-map-"))
    try:
        for y in ys:
            for x in xs:
                if done is not None and ((done[_column(args.x)] == x) & (done[_column(args.y)] == y)).any():
                    print(f"regime_map: {args.x}={x}, {args.y}={y} already in {output}", file=sys.stderr)
                    continue
                print(f"regime_map: {args.x}={x}, {args.y}={y}", file=sys.stderr, flush=True)
                try:
                    rows = _cell(root, args, x, y)
                except GFLError as err:
                    sys.exit(f"regime_map: {args.x}={x}, {args.y}={y}: {err}")
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
