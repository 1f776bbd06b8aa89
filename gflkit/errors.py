"""Errors raised for a user's mistakes.

Anything a user can fix (a missing file, a malformed line, a class with too few
labelled nodes, an unknown option value) raises :class:`GFLError` with a one-line
message that names the culprit and says what to do. The command line shows the
message without a traceback and exits with status 1.
"""


class GFLError(Exception):
    """A problem with the user's input, data or options."""


class DataFormatError(GFLError):
    """A file or collection on disk does not have the expected format."""
