"""``gflkit runs``: the runs in a folder, as CSV."""
from __future__ import annotations

from pathlib import Path

import click

from gflkit.paths import runs_dir

from .options import emit, output_options

COLUMNS = ["name", "status", "model", "aggregator", "dataset", "seed", "step", "val_accuracy", "date"]


@click.command()
@click.argument("folder", required=False, type=click.Path(file_okay=False))
@output_options
def runs(folder, output, fmt):
    """List the runs in FOLDER (default: ./runs) as CSV, one row per run.

    status is complete, or interrupted for a run that 'gflkit train --resume
    FOLDER/NAME' continues (finished: it only awaits its rename). step and
    val_accuracy (percent) are those of the kept weights (of the checkpoint so
    far for an interrupted run); date is when the run ended (UTC), else when
    it started.
    """
    import pandas as pd

    from gflkit.runs import list_runs

    if folder is None and not runs_dir().is_dir():
        entries = []
    else:
        entries = list_runs(Path(folder) if folder is not None else runs_dir())
    emit(pd.DataFrame(entries, columns=COLUMNS), output, fmt)


COMMANDS = [runs]
