"""Entry point: the ``gflkit`` Click group.

Commands parse options, call the :mod:`gflkit` library and write results to
stdout (CSV by default); logs and progress go to stderr. A user error
(:class:`gflkit.errors.GFLError`) ends the command with one line on stderr and
exit status 1; usage errors exit with 2.
"""
from __future__ import annotations

import logging
import os

# OpenMP worker threads (torch's and DGL's kernels share one libgomp) busy-wait
# between parallel regions; when the cores are shared with other work, the
# spinning threads steal them and small-graph steps get 10-20x slower. Passive
# waiting avoids that for ~13% on an idle machine; set OMP_WAIT_POLICY to override.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import click  # noqa: E402

import gflkit  # noqa: E402
from gflkit.errors import GFLError  # noqa: E402


class GFLGroup(click.Group):
    """A group that turns gflkit's user errors into one-line Click errors."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except GFLError as err:
            raise click.ClickException(str(err)) from None


@click.group(cls=GFLGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(gflkit.__version__, prog_name="gflkit")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
@click.option("-q", "--quiet", is_flag=True, help="Only warnings and errors on stderr (no progress bars).")
@click.option("--no-progress", is_flag=True, help="No progress bars on stderr (logs stay).")
def cli(verbose: int, quiet: bool, no_progress: bool) -> None:
    """Graph few-shot learning (GFL, Yao et al., AAAI 2020) on DGL.

    Data lives under the data root: --data-root, else $GFLKIT_DATA, else ./data
    when it exists, else ~/.gflkit/data. Raw files go in <root>/raw/<source>/,
    collections are written to <root>/processed/<name>/, runs to ./runs/.
    """
    from gflkit.progress import set_progress

    set_progress(not (quiet or no_progress))
    level = logging.WARNING if quiet else (logging.DEBUG if verbose > 1 else logging.INFO)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", force=True)
    # DGL logs METIS timings on import paths we use; keep stderr readable.
    logging.getLogger("dgl").setLevel(max(level, logging.WARNING))


def _register() -> None:
    from . import doctor, experiments, plot, preprocess, run, stats

    cli.add_command(doctor.doctor)
    cli.add_command(plot.plot)
    cli.add_command(preprocess.preprocess)
    cli.add_command(stats.stats)
    for command in run.COMMANDS + experiments.COMMANDS:
        cli.add_command(command)


_register()

if __name__ == "__main__":  # pragma: no cover
    cli()
