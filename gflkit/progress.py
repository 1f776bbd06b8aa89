"""One switch for every progress bar gflkit draws on stderr.

Library functions take ``progress=True`` to ask for a bar; the bar is drawn only
when :func:`progress_enabled` also says yes. The command line turns bars off for
``--no-progress`` and ``-q`` through :func:`set_progress`; from Python, call
``gflkit.progress.set_progress(False)``.
"""
from __future__ import annotations

import sys
from typing import Any, Iterable

__all__ = ["progress_bar", "progress_enabled", "set_progress"]

_state = {"enabled": True}


def progress_enabled() -> bool:
    """Whether progress bars may be drawn (default yes)."""
    return bool(_state["enabled"])


def set_progress(enabled: bool) -> None:
    """Allow (``True``) or forbid (``False``) progress bars for this process."""
    _state["enabled"] = bool(enabled)


def progress_bar(iterable: Iterable | None = None, *, enabled: bool = True, **kwargs: Any):
    """A tqdm bar on stderr, drawn only when ``enabled`` and :func:`progress_enabled`.

    Args:
        iterable: what to iterate over (``None`` for a manual ``update()`` bar).
        enabled: the caller's own wish (e.g. a function's ``progress`` argument).
        **kwargs: passed to ``tqdm`` (``desc``, ``total``, ``unit``, ``leave``...).
    """
    from tqdm.auto import tqdm

    kwargs.setdefault("file", sys.stderr)
    return tqdm(iterable, disable=not (enabled and progress_enabled()), **kwargs)
