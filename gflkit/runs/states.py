"""Loading saved states (a model's weights, an optimizer's state) with one-line errors.

Every state read from a file goes through :func:`load_state` (or is checked
by :func:`check_state` first): when it does not fit, the error names the file
and the first thing that does not fit (a missing or unexpected key, or a
parameter with both shapes), then what to do, instead of torch's multi-line
``Error(s) in loading state_dict`` text.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ..errors import GFLError

__all__ = []


def _shape(value: Any) -> str:
    return str(tuple(value.shape)) if isinstance(value, torch.Tensor) else f"a {type(value).__name__}"


def _first(keys: list[str]) -> str:
    return keys[0] + (f" (and {len(keys) - 1} more)" if len(keys) > 1 else "")


def _comparable(module: torch.nn.Module, state: Mapping) -> Mapping:
    """``state`` with the parameter names ``module`` renames while loading (older GFL checkpoints)."""
    from ..models.gfl import GFL, upgrade_state_dict

    return upgrade_state_dict(dict(state)) if isinstance(module, GFL) else state


def state_mismatch(module: torch.nn.Module, state: Any) -> str | None:
    """The first way ``state`` does not fit ``module``'s ``state_dict`` (keys, then shapes), or ``None``.

    Works on a model built on the ``meta`` device, so settings can be checked
    against weights without allocating them.
    """
    if not isinstance(state, Mapping):
        return f"it holds {type(state).__name__}, not a state dict"
    want = module.state_dict()
    state = _comparable(module, state)
    missing = [k for k in want if k not in state]
    if missing:
        return f"missing: {_first(missing)}"
    extra = [str(k) for k in state if k not in want]
    if extra:
        return f"unexpected: {_first(extra)}"
    wrong = [k for k in want if not isinstance(state[k], torch.Tensor) or state[k].shape != want[k].shape]
    if wrong:
        k = wrong[0]
        more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
        return f"wrong shape: {k} is {_shape(state[k])} in the file and {_shape(want[k])} in the model{more}"
    return None


def _message(source: object, what: str, model: str, detail: str, advice: str) -> str:
    return f"{source}: {what} {model} ({detail}); {advice}"


def check_state(module: torch.nn.Module, state: Any, *, source: object, advice: str,
                what: str = "the weights do not fit", model: str = "the model") -> None:
    """Raise a one-line :class:`GFLError` naming ``source`` when ``state`` does not fit ``module``."""
    detail = state_mismatch(module, state)
    if detail is not None:
        raise GFLError(_message(source, what, model, detail, advice))


def _first_line(err: BaseException) -> str:
    """The first informative line of an error (torch's begins with a header line)."""
    lines = [" ".join(line.split()) for line in str(err).splitlines()]
    lines = [line for line in lines if line and not line.startswith("Error(s) in loading")]
    return lines[0] if lines else type(err).__name__


def load_state(target: torch.nn.Module | Any, state: Any, *, source: object, advice: str,
               what: str | None = None, model: str = "the model") -> None:
    """``target.load_state_dict(state)`` for a module or an optimizer, with a one-line error naming ``source``.

    A module's state is checked first (:func:`state_mismatch`), so the error
    names the first missing or unexpected key or the first parameter of
    another shape, with both shapes. An optimizer checks its own state
    (``torch.optim.Optimizer.load_state_dict``); the first line of its message is kept.

    Args:
        target: a ``torch.nn.Module`` or an optimizer.
        state: what was read from ``source``.
        source: the file, as named in the error.
        advice: what to do, the end of the error.
        what: what ``state`` is, with its verb (default: ``the weights do not fit``, or
            ``the optimizer state does not fit``).
        model: what it should fit.

    Raises:
        GFLError: ``state`` does not fit ``target``.
    """
    is_module = isinstance(target, torch.nn.Module)
    what = what or ("the weights do not fit" if is_module else "the optimizer state does not fit")
    if is_module:
        check_state(target, state, source=source, advice=advice, what=what, model=model)
    try:
        target.load_state_dict(state)
    except (RuntimeError, ValueError, KeyError, TypeError) as err:
        raise GFLError(_message(source, what, model, _first_line(err), advice)) from None
