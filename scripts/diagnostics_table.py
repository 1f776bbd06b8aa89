"""The stored output of diagnose.py as one Markdown table: one column per run, one row per figure.

    python scripts/diagnostics_table.py results/study/diagnostics.txt --rows "encoder=grad_encoder:init;..."

``diagnose.py`` prints, per run, a ``== FAMILY [SETTINGS]`` line and then one
``figure,init,trained(...)`` line per figure; the stored file is those blocks
one after the other. ``--rows`` picks the figures, ``LABEL=FIGURE:MOMENT``
separated by semicolons (``MOMENT`` is ``init`` or ``trained``); every run of
the file is a column, named by its header line. Numbers to three significant
digits.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from markdown_table import markdown


def read_runs(path: str) -> dict[str, dict[str, tuple[str, str]]]:
    """``run header -> figure -> (at init, after training)`` from a stored diagnose.py output."""
    runs: dict[str, dict[str, tuple[str, str]]] = {}
    current: dict[str, tuple[str, str]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("== "):
            current = runs.setdefault(line[3:].strip(), {})
        elif "," in line and not line.startswith("when,"):
            name, init, trained = (line.split(",") + ["", ""])[:3]
            current[name] = (init, trained)
    return runs


def cell(text: str) -> str:
    """A stored figure to three significant digits (empty when not measured)."""
    return f"{float(text):.3g}" if text else ""


def main(argv=None) -> None:
    """Print the table of the figures asked for."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("path")
    p.add_argument("--rows", required=True, help="LABEL=FIGURE:MOMENT, separated by semicolons")
    a = p.parse_args(argv)
    runs = read_runs(a.path)
    body = []
    for item in a.rows.split(";"):
        label, _, spec = item.rpartition("=")
        figure, _, moment = spec.partition(":")
        body.append([label or figure] + [cell(r[figure][moment == "trained"]) for r in runs.values()])
    sys.stdout.write(markdown([""] + list(runs), body))


if __name__ == "__main__":
    main()
