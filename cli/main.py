"""Entry point: the ``gflkit`` Click group.

Commands parse options, call the :mod:`gflkit` library and write results to
stdout (CSV by default); logs and progress go to stderr. A user error
(:class:`gflkit.errors.GFLError`) ends the command with one line on stderr and
exit status 1; usage errors exit with 2. Any other exception (a parser of a
third-party library failing on a strange file, say) is also shown as one line,
with exit status 1; ``-vv`` or ``GFLKIT_DEBUG=1`` shows its traceback instead.
Ctrl-C ends the command with exit status 130 and one line, "interrupted" or
the command's own (``train``: how to continue the run), also while torch and
DGL are still being imported.
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import warnings

from gflkit.interrupts import on_sigint as _on_sigint
from gflkit.interrupts import pending as _pending
from gflkit.interrupts import received as _signalled
from gflkit.interrupts import set_sigint as _set_sigint

# OpenMP worker threads (torch's and DGL's kernels share one libgomp) busy-wait
# between parallel regions; when the cores are shared with other work, the
# spinning threads steal them and small-graph steps get 10-20x slower. Passive
# waiting avoids that for ~13% on an idle machine; set OMP_WAIT_POLICY to override.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

INTERRUPTED = 130  # the shell's status for a process ended by SIGINT


def _interrupted(err: BaseException | None = None) -> SystemExit:
    """How every Ctrl-C ends the command: one line on stderr and exit status 130.

    The line is ``interrupted``, or what the command said with the interrupt
    (:class:`gflkit_cli.options.Interrupted`, e.g. how to continue the run).
    """
    sys.stderr.write(f"{getattr(err, 'message', None) or 'interrupted'}\n")
    return SystemExit(INTERRUPTED)


# Importing torch and DGL takes seconds: a Ctrl-C then must not print a traceback or abort the process
# (gflkit.interrupts delivers it once the import is over).
_set_sigint(_on_sigint)
try:
    import click

    import gflkit
    from gflkit.errors import GFLError, GFLWarning, SizeError
except BaseException:
    if _signalled:
        _pending.clear()
        raise _interrupted() from None
    raise
finally:
    _set_sigint(signal.default_int_handler)
if _pending.is_set():  # a Ctrl-C during the imports above, not delivered yet
    _pending.clear()
    raise _interrupted()


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _debug() -> bool:
    return os.environ.get("GFLKIT_DEBUG", "") not in ("", "0") or logging.getLogger().level <= logging.DEBUG


def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
    """gflkit's warnings as one line on stderr (:func:`gflkit_cli.options.warning_line`), others as Python does."""
    if isinstance(message, GFLWarning):
        from .options import warning_line

        click.echo(warning_line(message), err=True)
    else:
        _default(message, category, filename, lineno, file, line)


def _with_flags(group: click.Group, ctx: click.Context, err: GFLError) -> str:
    """The message of ``err`` with the invoked command's options for the settings it names
    (:func:`gflkit_cli.options.flag_names`): ``--val-from-train 3: ...`` for a
    :class:`~gflkit.errors.SettingError` ``val_from_train=3: ...``, ``--force`` for ```force=True```."""
    from gflkit.errors import SettingError

    from .options import flag_names

    invoked = group.get_command(ctx, ctx.invoked_subcommand) if ctx.invoked_subcommand else None
    text = f"`{err.setting}={err.value}`: {err.reason}" if isinstance(err, SettingError) else str(err)
    text = flag_names(text, ctx, invoked)
    if isinstance(err, SettingError) and text.startswith("`"):  # no option for the setting
        text = text.replace(f"`{err.setting}={err.value}`", f"{err.setting}={err.value}", 1)
    return text


class _FlagNames(logging.Filter):
    """Log records of gflkit with the command line's options for the settings they name."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("gflkit"):
            from .options import flag_names

            message = record.getMessage()
            if "`" in message:
                record.msg, record.args = flag_names(message), ()
        return True


class GFLGroup(click.Group):
    """A group that turns gflkit's user errors, and any unexpected error, into one-line Click errors.

    gflkit's warnings (:class:`gflkit.errors.GFLWarning`) show as one line on
    stderr each time the library gives one.
    """

    def make_context(self, *args, **kwargs) -> click.Context:
        try:  # Click would print "Aborted!" and exit 1
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt as err:
            raise _interrupted(err) from None

    def invoke(self, ctx: click.Context):
        # Commands import torch and DGL when they start: a Ctrl-C then is recorded, as at start-up.
        _set_sigint(_on_sigint)
        try:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("always", GFLWarning)
                    warnings.showwarning = _show_warning
                    result = super().invoke(ctx)
            except Exception:
                if _pending.is_set():  # a Ctrl-C deferred during an import: that is how the command ended
                    raise KeyboardInterrupt from None
                raise
            if _pending.is_set():
                raise KeyboardInterrupt
            return result
        except SizeError as err:  # a setting's value does not fit: a usage error of its option
            raise click.UsageError(_one_line(_with_flags(self, ctx, err))) from None
        except GFLError as err:
            raise click.ClickException(_one_line(_with_flags(self, ctx, err))) from None
        except KeyboardInterrupt as err:
            _pending.clear()
            raise _interrupted(err) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except MemoryError:
            raise click.ClickException("not enough memory; use smaller data or options") from None
        except Exception as err:  # noqa: BLE001 - last resort: one line instead of a traceback
            if _signalled:  # an import cut short by Ctrl-C can surface as another error
                raise _interrupted() from None
            if _debug():
                raise
            detail = _one_line(str(err).strip().splitlines()[0]) if str(err).strip() else ""
            raise click.ClickException(
                f"unexpected {type(err).__name__}{': ' + detail[:300] if detail else ''} "
                "(rerun with -vv to see the traceback)"
            ) from None
        finally:
            _set_sigint(signal.default_int_handler)


@click.group(cls=GFLGroup, context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "GFLKIT"})
@click.version_option(gflkit.__version__, prog_name="gflkit")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
@click.option("-q", "--quiet", is_flag=True,
              help="Only warnings and errors on stderr: no progress, run counters or 'wrote ...' lines.")
@click.option("--no-progress", is_flag=True,
              help="No progress bars on stderr; logs and the run counters of compare, ablate and sweep stay.")
def cli(verbose: int, quiet: bool, no_progress: bool) -> None:
    """Graph few-shot learning (GFL, Yao et al., AAAI 2020) on DGL.

    Data lives under the data root: --data-root, else $GFLKIT_DATA, else ./data
    when it exists, else ~/.gflkit/data. Raw files go in <root>/raw/<source>/,
    collections are written to <root>/processed/<name>/, runs to ./runs/.

    Every option's default can be set in the environment as
    GFLKIT_<COMMAND>_<OPTION> (GFLKIT_TRAIN_STEPS=50, GFLKIT_COMPARE_SEED=0);
    an option on the command line wins over it, and it over --config.

    Progress goes to stderr: bars on a terminal; in a log file or pipe a line
    every 10% of a task (at most one per 30 s) and one when it ends.
    """
    from gflkit.progress import set_progress

    set_progress(not (quiet or no_progress), counters=not quiet)
    level = logging.WARNING if quiet else (logging.DEBUG if verbose > 1 else logging.INFO)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", force=True)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_FlagNames())
    # DGL logs METIS timings on import paths we use; keep stderr readable.
    logging.getLogger("dgl").setLevel(max(level, logging.WARNING))


def _register() -> None:
    try:
        from . import doctor, experiments, plot, predict, preprocess, run, runs, stats
    except KeyboardInterrupt:
        raise _interrupted() from None

    cli.add_command(doctor.doctor)
    cli.add_command(plot.plot)
    cli.add_command(preprocess.preprocess)
    cli.add_command(stats.stats)
    for command in run.COMMANDS + runs.COMMANDS + experiments.COMMANDS + predict.COMMANDS:
        cli.add_command(command)


_register()


def main() -> None:
    """The ``gflkit`` command: the process set up (:func:`gflkit_cli.process.configure_process`), then :func:`cli`."""
    from .process import configure_process

    configure_process()
    cli(prog_name="gflkit")


if __name__ == "__main__":  # pragma: no cover
    main()
