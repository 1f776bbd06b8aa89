"""Checks of a model's settings before it is built: option names and types, and the memory of its weights.

A model is first built on PyTorch's ``meta`` device, which records shapes and
allocates nothing, so its parameter count is known before any memory is
taken. Training keeps four numbers per parameter (the weight, its gradient and
Adam's two moments): a width that would not fit is refused with the largest
value that fits (:func:`gflkit.sizes.require_fit`).
"""
from __future__ import annotations

import inspect
import math
from typing import Any, Callable, Mapping

import torch

from ..errors import GFLError, SettingError, SizeError
from ..sizes import require_fit

__all__: list[str] = []  # used inside gflkit; not part of the public API

#: The settings of a model's layer widths, the ones the memory check lowers.
WIDTHS = ("hidden_feats", "out_feats", "graph_feats")
#: Bytes per parameter while training: float32 weight, gradient and Adam's two moments.
TRAINING_BYTES_PER_PARAMETER = 4 * 4


def _option_defaults(cls) -> dict[str, Any]:
    """Keyword options the constructors of a baseline class (and its bases) take, with their defaults."""
    found: dict[str, Any] = {}
    for klass in cls.__mro__:
        if "__init__" in vars(klass) and klass is not torch.nn.Module:
            for p in inspect.signature(klass.__init__).parameters.values():
                if (p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
                        and p.name not in ("self", "in_feats", "num_classes")):
                    found.setdefault(p.name, p.default)
    names = cls.option_names() if hasattr(cls, "option_names") else set(found)  # the class's own rule
    return {k: v for k, v in found.items() if k in names}


def _kind(default: Any) -> str | None:
    """What an option with this default takes: ``integer``, ``number``, ``true or false``, ``text``, or any."""
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return "integer"
    if isinstance(default, float):
        return "number"
    if isinstance(default, str):
        return "text"
    return None


def _fits(kind: str | None, value: Any) -> bool:
    if kind == "true or false":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind == "text":
        return isinstance(value, str)
    return not (isinstance(value, float) and not math.isfinite(value))


def check_options(name: str, cls, options: Mapping[str, Any] | None) -> None:
    """Refuse options of the baseline ``name`` (class ``cls``) that it does not take or of the wrong type.

    An option's type is its default's: an integer option refuses 1.5 and
    ``true``, a number option NaN and infinity.

    Raises:
        SettingError: one line naming the option (``options``, the command line's ``--option``).
    """
    defaults = _option_defaults(cls)
    for key, value in (options or {}).items():
        if key not in defaults:
            raise GFLError(f"{name} has no option {key}: choose from {', '.join(sorted(defaults))}")
        kind = _kind(defaults[key])
        if not _fits(kind, value):
            want = f"expected {'an' if kind == 'integer' else 'a'} {kind}" if kind else "expected a finite value"
            raise SettingError("options", f"{key}={value}", f"{name}'s option {key}: {want}, got {value!r}")


def _parameter_count(build: Callable[[], torch.nn.Module]) -> int:
    with torch.device("meta"):  # shapes only: nothing is allocated
        model = build()
    return sum(p.numel() for p in model.parameters())


def require_model_memory(build: Callable[[Mapping[str, int]], torch.nn.Module], widths: Mapping[str, int],
                         setting: Callable[[str], str], what: str) -> None:
    """Refuse a model whose training would not fit in the available memory, before it is built.

    Args:
        build: ``build(changes)`` builds the model with the widths in ``changes`` changed.
        widths: the model's integer size settings (``hidden_feats``...) and their values.
        setting: how a message names the setting of a width (``hidden_feats``, or ``options``).
        what: the model, for the message.

    Raises:
        SizeError: naming the largest width and its largest value that fits with the others.
    """
    if not widths:
        return
    key = max(widths, key=lambda k: widths[k])  # the widest setting is the one to lower

    def need(value: int) -> int:
        return TRAINING_BYTES_PER_PARAMETER * _parameter_count(lambda: build({key: int(value)}))

    try:
        require_fit(key, widths[key], need, f"training {what}")
    except SizeError as err:  # named as the caller names it (``--option hidden_feats=...``)
        if setting(key) == key:
            raise
        raise SizeError(setting(key), f"{key}={err.value}", err.reason, err.largest) from None
