"""``gflkit runs``: the runs in a folder, as CSV."""
from __future__ import annotations

from pathlib import Path

import click

from gflkit.paths import runs_dir

from .options import emit, output_options

COLUMNS = ["name", "status", "model", "aggregator", "dataset", "seed", "step", "val_accuracy", "date", "verified",
           "reason"]


@click.command()
@click.argument("folder", required=False, type=click.Path(file_okay=False))
@click.option("--no-verify", is_flag=True,
              help="Do not check best.pt and metrics.csv against the SHA-256 config.json recorded (faster; "
                   "verified then reads skipped).")
@output_options
def runs(folder, no_verify, output, fmt):
    r"""List the runs in FOLDER (default: ./runs) as CSV, one row per folder.

    status is complete; interrupted for a run that 'gflkit train --resume
    FOLDER/NAME' continues (finished: it only awaits its rename); damaged when
    best.pt or metrics.csv differs from the SHA-256 its config.json recorded
    when the run finished (or last.pt of an interrupted run does not load), or
    a file of the run is not a regular file or is over its size limit;
    malformed for a folder that is not a run (config.json missing or not a
    run's, a file missing). reason names the file. A folder whose name is not
    UTF-8 is listed with its bytes escaped (as bad\xff). verified is yes, no,
    unrecorded (a run written before gflkit recorded digests: listed as it
    claims, not checked) or skipped (--no-verify). step and val_accuracy
    (percent) are those of the kept weights (of the checkpoint so far for an
    interrupted run); date is when the run ended (UTC), else when it started.
    Damaged and malformed folders are also named on stderr.
    """
    import pandas as pd

    from gflkit.runs.checkpoints import list_runs

    if folder is None and not runs_dir().is_dir():
        entries = []
    else:
        entries = list_runs(Path(folder) if folder is not None else runs_dir(), verify=not no_verify)
    emit(pd.DataFrame(entries, columns=COLUMNS), output, fmt)


COMMANDS = [runs]
