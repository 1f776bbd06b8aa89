"""Options shared by several commands, defined once."""
from __future__ import annotations

import sys

import click

from gflkit.results import write_table


def data_root_option(f):
    return click.option(
        "--data-root",
        type=click.Path(file_okay=False),
        default=None,
        help="Data root folder (default: $GFLKIT_DATA, else ./data if present, else ~/.gflkit/data).",
    )(f)


def seed_option(default: int = 0):
    def deco(f):
        return click.option("--seed", type=int, default=default, show_default=True, help="Random seed.")(f)

    return deco


def output_options(f):
    f = click.option(
        "--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True,
        help="Format of the result table.",
    )(f)
    f = click.option(
        "-o", "--output", type=click.Path(dir_okay=False), default=None,
        help="Write the result table to this file instead of stdout.",
    )(f)
    return f


def emit(df, output: str | None, fmt: str) -> None:
    """Write a result DataFrame to ``output`` or stdout."""
    if output:
        write_table(df, output, fmt)
        click.echo(f"wrote {output}", err=True)
    else:
        sys.stdout.write(write_table(df, None, fmt))
        sys.stdout.flush()


def int_list(text: str | None) -> list[int] | None:
    """Parse ``"1,3,5"`` into ``[1, 3, 5]`` (for use in callbacks)."""
    if text is None:
        return None
    try:
        return [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {text!r}") from None
