"""What commands write for people: result tables on stdout, info lines and warnings on stderr, and gflkit's
messages with the command line's option names (:func:`flag_names`)."""
from __future__ import annotations

import sys
from typing import Iterator

import click


def quiet() -> bool:
    """Whether the command runs under ``gflkit -q`` (warnings and errors only on stderr)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.find_root().params.get("quiet"))


def info(message: str) -> None:
    """A line for people on stderr (what was written, which seed was used); ``-q`` leaves it out.

    Warnings and errors do not go through here: ``-q`` keeps them.
    """
    if not quiet():
        click.echo(message, err=True)


def emit(df, output: str | None, fmt: str) -> None:
    """Write a result DataFrame to ``output`` or stdout."""
    from gflkit.evaluation.tables import write_table

    if output:
        write_table(df, output, fmt)
        info(f"wrote {output}")
    else:
        sys.stdout.write(write_table(df, None, fmt))
        sys.stdout.flush()


#: What the command line advises for a one-seed result, by the warning's context.
_ONE_SEED_ADVICE = {
    "experiment": "run with several seeds: --seed 0,1,2 (the default)",
    "run": "train several seeds and compare them: gflkit compare --seed 0,1,2",
}


def _options(command: click.Command) -> Iterator[click.Option]:
    """The options of ``command`` and of the commands under it (a group's)."""
    todo = [command]
    while todo:
        command = todo.pop()
        yield from (param for param in command.params if isinstance(param, click.Option))
        if isinstance(command, click.Group):
            todo.extend(command.commands.values())


def _flag(option: click.Option, value: str | None) -> str:
    """How the command line spells the setting ``option.name=value``."""
    if option.is_flag and not option.count:
        if value in (None, "True"):
            return max(option.opts, key=len)
        if value == "False" and option.secondary_opts:
            return max(option.secondary_opts, key=len)
        return f"no {max(option.opts, key=len)}" if value == "False" else f"{max(option.opts, key=len)} {value}"
    return max(option.opts, key=len) if value is None else f"{max(option.opts, key=len)} {value}"


def flag_names(text: str, ctx: click.Context | None = None, invoked: click.Command | None = None) -> str:
    """``text`` (a gflkit message) with each parameter reference (:data:`gflkit.errors.PARAMETER`,
    e.g. ```run_dir=runs/x```) spelled as the command line's option (``--run-dir runs/x``).

    The option is the invoked command's of that name (``invoked``, else the
    command of ``ctx``, by default the current context), else any command's; a
    name no command takes is left as it is.
    """
    from gflkit.errors import PARAMETER

    ctx = ctx or click.get_current_context(silent=True)
    if ctx is None or "`" not in text:
        return text
    commands = [invoked] if invoked is not None else []
    while ctx is not None:
        commands.append(ctx.command)
        ctx = ctx.parent
    options: dict[str, click.Option] = {}
    for command in reversed(commands):  # the invoked command's own options win
        options.update((option.name, option) for option in _options(command) if not option.hidden)

    def spell(match) -> str:
        option = options.get(match.group(1))
        return match.group(0) if option is None else _flag(option, match.group(2))

    return PARAMETER.sub(spell, text)


def warning_line(message: Warning) -> str:
    """The one stderr line of a gflkit warning, with command-line advice where the library names parameters."""
    from gflkit.errors import OneSeedWarning

    if isinstance(message, OneSeedWarning):
        advice = _ONE_SEED_ADVICE.get(message.context, _ONE_SEED_ADVICE["experiment"])
        return f"warning: {OneSeedWarning.WHAT}; to include it, {advice}"
    return "warning: " + " ".join(flag_names(str(message)).split())


def deprecation_warning(old: str, new: str) -> None:
    """One line on stderr: ``old`` still works for this release, ``new`` is the spelling to use."""
    click.echo(f"warning: {old} is deprecated and will be removed in the next release; use {new}", err=True)
