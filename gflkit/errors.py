"""Errors raised for a user's mistakes, and the warnings gflkit gives about its results.

Anything a user can fix (a missing file, a malformed line, a class with too few
labelled nodes, an unknown option value) raises :class:`GFLError` with a one-line
message that names the culprit and says what to do. The command line shows the
message without a traceback and exits with status 1.

Messages name settings, never command-line flags. A reference to a parameter
of a gflkit function is its Python name in backticks, alone or with a value:
`k_shot`, `run_dir=runs/gfl-2`, `force=True`, `on_small=skip`
(:data:`PARAMETER` matches one). A Python caller reads the parameter to pass;
the command line rewrites each reference to the invoked command's option
(--k-shot, --run-dir runs/gfl-2, --force, --on-small skip). This holds for
errors, warnings and log messages alike.
"""
import re

#: A parameter reference in a message: a Python name in backticks, with an optional ``=value``.
PARAMETER = re.compile(r"`([a-z][a-z0-9_]*)(?:=([^`]*))?`")


def one_line(text: str) -> str:
    """``text`` with its control characters (newlines, NUL, ...) escaped, so it prints as one line.

    Messages quote what a user's files hold (a column name, a cell), which may
    contain anything.
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class GFLError(Exception):
    """A problem with the user's input, data or options; its message is always one line."""

    def __init__(self, message: object = "", *args: object) -> None:
        super().__init__(one_line(str(message)), *args)


class DataFormatError(GFLError):
    """A file or collection on disk does not have the expected format."""


class GFLWarning(UserWarning):
    """Something about a result that its reader should know; the command line shows it as one line."""


class OneSeedWarning(GFLWarning):
    """A result row's intervals come from one training seed, so they leave training randomness out.

    ``context`` is ``experiment`` (a table that takes several seeds) or
    ``run`` (one trained run scored); it picks the advice.
    """

    #: What one seed means, the start of every message.
    WHAT = ("one training seed: the intervals cover test graphs and support draws only, not training "
            "randomness (often the largest source of variance)")
    ADVICE = {
        "experiment": "give several seeds, e.g. seeds=(0, 1, 2)",
        "run": "train with several seeds and compare them (gflkit.experiments.compare(seeds=(0, 1, 2)))",
    }

    def __init__(self, context: str = "experiment") -> None:
        self.context = context
        super().__init__(f"{self.WHAT}; to include it, {self.ADVICE.get(context, self.ADVICE['experiment'])}")


class OneGraphWarning(GFLWarning):
    """A table's rows are scored on one test graph, so their intervals cover training randomness on that graph only.

    With one test graph (a leave-one-network-out table) the interval is over
    seeds (``ci_over`` is ``seeds``, or ``episodes`` with one seed too): it says
    how sure the table is about this graph, and nothing about another graph of
    the same kind.
    """

    def __init__(self, dataset: str = "") -> None:
        self.dataset = dataset
        on = f" of {dataset}" if dataset else ""
        super().__init__(f"one test graph{on}: the intervals cover training randomness and support draws on this "
                         "graph only, not other graphs; a claim about graphs of this kind needs several test graphs")


class NoSignalWarning(GFLWarning):
    """No compared model beats the majority-class row: the table cannot show that any model learned."""


class SettingError(GFLError):
    """A setting (a parameter of a gflkit function) that does not fit the data.

    The message is ``"<setting>=<value>: <reason>"``; ``setting``, ``value`` and
    ``reason`` are kept apart, so the command line can name its own option for
    the setting instead. ``reason`` may name other settings (see :data:`PARAMETER`).
    """

    def __init__(self, setting: str, value: object, reason: str) -> None:
        self.setting, self.value, self.reason = setting, value, one_line(str(reason))
        super().__init__(f"{setting}={value}: {reason}")

    def __reduce__(self):  # pickled between processes with its three parts
        return type(self), (self.setting, self.value, self.reason)


class SizeError(SettingError):
    """A count or size given by a setting that does not fit (the memory, the data); refused before the work.

    ``largest`` is the largest value of the setting that fits (``None`` when none
    does); the message says it. The command line shows it as a usage error of
    its option (exit status 2).
    """

    def __init__(self, setting: str, value: object, reason: str, largest: object = None) -> None:
        self.largest = largest
        super().__init__(setting, value, reason)

    def __reduce__(self):
        return type(self), (self.setting, self.value, self.reason, self.largest)
