"""``--config FILE``: settings from a run's ``config.json`` or a TOML file, checked as the options are.

The file is read strictly (:func:`read_settings`): a regular file of bounded
size and depth, every section and key known, no key given twice; each value
is then converted by the command's own option of that name
(:func:`settings_defaults`), so it is refused exactly as the option would be.
"""
from __future__ import annotations

import os
from typing import Any

import click

from .output import flag_names
from .params import IntList


#: Sections of a run's config.json (and of a TOML settings file), by config dataclass name.
CONFIG_SECTIONS = {"model_config": "GFLConfig", "episode_config": "EpisodeConfig", "train_config": "TrainConfig"}
#: Settings outside the sections: ``model`` (``train --model``) and ``options`` (``train --option``).
RUN_SETTINGS = ("model", "options")
#: The largest settings file ``--config`` reads (a run's config.json is a few KB).
SETTINGS_MAX_BYTES = 4 * 2**20
#: The deepest nesting of tables and lists a settings file may have (a run's config.json has 4).
SETTINGS_MAX_DEPTH = 32


def _shown(key: Any) -> str:
    """A key of a settings file as a message shows it: plain when it looks like a name, else quoted and cut."""
    import re

    text = str(key)
    return text if re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", text) else repr(text[:64] + ("..." if len(text) > 64 else ""))


def _closest(key: str, known: list[str], listed: list[str]) -> str:
    """`` (did you mean X?)`` for the known name closest to ``key``, else the names in ``listed``."""
    import difflib

    match = difflib.get_close_matches(str(key)[:200], known, n=1)
    return f" (did you mean {match[0]}?)" if match else f" (choose from {', '.join(listed)})"


def _read_text(path: str) -> str:
    """The text of a regular file of at most :data:`SETTINGS_MAX_BYTES`, without blocking on a pipe or device."""
    import stat

    from gflkit.errors import GFLError

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    limit = f"{SETTINGS_MAX_BYTES // 2**20} MiB"
    try:
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise GFLError(f"{path}: not a regular file; give a run's config.json or a .toml settings file")
            if info.st_size > SETTINGS_MAX_BYTES:
                raise GFLError(f"{path}: larger than {limit}; a settings file is a few KB")
            data = f.read(SETTINGS_MAX_BYTES + 1)
    except OSError as err:
        raise GFLError(f"{path}: cannot read it ({err.strerror or err})") from None
    if len(data) > SETTINGS_MAX_BYTES:  # it grew while being read
        raise GFLError(f"{path}: larger than {limit}; a settings file is a few KB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise GFLError(f"{path}: not UTF-8 text (byte {err.start})") from None


class _RepeatedKey(Exception):
    """A key given twice in one JSON object (JSON parsers keep the last silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members, refusing a key given twice (``json.loads``' ``object_pairs_hook``)."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _RepeatedKey(key)
        data[key] = value
    return data


def _too_deep(data: Any) -> bool:
    """Whether tables and lists nest deeper than :data:`SETTINGS_MAX_DEPTH` (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > SETTINGS_MAX_DEPTH:
                return True
            stack.extend((item, depth + 1) for item in (value.values() if isinstance(value, dict) else value))
    return False


def read_settings(path: str) -> dict[str, Any]:
    """The sections of a settings file: a run's ``config.json`` or a ``.toml`` file with the same keys.

    The file must be a regular file of at most :data:`SETTINGS_MAX_BYTES`
    whose tables and lists nest at most :data:`SETTINGS_MAX_DEPTH` deep. Its
    keys are the sections of :data:`CONFIG_SECTIONS`, :data:`RUN_SETTINGS` and
    what a run's ``config.json`` records besides
    (:data:`gflkit.runs.checkpoints.RUN_RECORD_KEYS`, read and not used); a section holds
    fields of its config. The values are checked by :func:`settings_defaults`.

    Raises:
        GFLError: one line naming ``path``: it cannot be read, is not a
            regular file, is too large, too deeply nested or not valid JSON /
            TOML, holds a section or key that does not exist (with the
            closest valid name), or a ``model`` that is not a name or
            ``options`` that are not a table of option names.
    """
    import json
    import tomllib
    from dataclasses import fields

    from gflkit import config as configs
    from gflkit.errors import GFLError
    from gflkit.runs.checkpoints import RUN_RECORD_KEYS

    text = _read_text(path)
    kind = "TOML" if str(path).lower().endswith(".toml") else "JSON"
    deep = f"{path}: tables or lists nested more than {SETTINGS_MAX_DEPTH} deep; a settings file has a few levels"
    try:
        data = tomllib.loads(text) if kind == "TOML" else json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:  # the parsers recurse once per level: deeper than the interpreter allows
        raise GFLError(deep) from None
    except _RepeatedKey as err:
        raise GFLError(f"{path}: the key {_shown(err.args[0])} appears twice in one object; keep one") from None
    except ValueError as err:  # JSONDecodeError, TOMLDecodeError, numbers beyond int's digit limit
        raise GFLError(f"{path}: not valid {kind} ({' '.join(str(err).split())[:200]})") from None
    if not isinstance(data, dict):
        raise GFLError(f"{path}: expected a {'table' if kind == 'TOML' else 'JSON object'} with the sections "
                       f"{', '.join(CONFIG_SECTIONS)}")
    if _too_deep(data):
        raise GFLError(deep)
    top = [*CONFIG_SECTIONS, *RUN_SETTINGS, *RUN_RECORD_KEYS]
    for key in data:
        if key not in top:
            raise GFLError(f"{path}: no section {_shown(key)}{_closest(key, top, list(CONFIG_SECTIONS))}")
    for section, cls_name in CONFIG_SECTIONS.items():
        values = data.get(section)
        if values is None:
            continue
        if not isinstance(values, dict):
            raise GFLError(f"{path}: {section} must be a table/object of settings")
        known = [f.name for f in fields(getattr(configs, cls_name))]
        for key in values:
            if key not in known:
                raise GFLError(f"{path}: {section} has no setting {_shown(key)}{_closest(key, known, known)}")
    if data.get("model") is not None and not isinstance(data["model"], str):
        raise GFLError(f"{path}: model: expected a model name")
    options = data.get("options")
    if options is not None:
        if not isinstance(options, dict):
            raise GFLError(f"{path}: options: expected a table/object of baseline options")
        bad = [k for k in options if not k.strip() or "=" in k]
        if bad:
            raise GFLError(f"{path}: options: {_shown(bad[0])} is not an option name")
    return data


class _NotAValue(Exception):
    """A settings value of a kind the command line cannot give (a table, a list for one value ...)."""


def _scalar_text(value: Any) -> str:
    """A number, text or true/false as it is typed on the command line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    raise _NotAValue(f"expected a number, text or true/false, got a {type(value).__name__}")


def _command_line(value: Any, param: click.Parameter) -> str | tuple[str, ...]:
    """``value`` of a settings file as the command line gives it to ``param``: the text its type converts.

    ``options`` (a table, as :func:`read_settings` checked) become ``KEY=VALUE`` texts with JSON values.
    """
    import json

    if param.name == "options":  # --option KEY=VALUE, repeated; the value is read as JSON
        return tuple(f"{k}={json.dumps(v)}" for k, v in value.items())
    if isinstance(value, dict):
        raise _NotAValue("expected a value, got a table/object")
    if isinstance(param.type, click.types.BoolParamType):  # a --flag/--no-flag pair
        if not isinstance(value, bool):
            raise _NotAValue(f"expected true or false, got {_shown(_scalar_text(value))}")
        return _scalar_text(value)
    if isinstance(value, list):
        if not isinstance(param.type, IntList):
            raise _NotAValue("expected one value, got a list")
        if any(isinstance(v, (list, dict)) for v in value):
            raise _NotAValue("expected a list of numbers, got a nested list")
        return ",".join(_scalar_text(v) for v in value)
    return _scalar_text(value)


def settings_defaults(ctx: click.Context, path: str, data: dict[str, Any]) -> dict[str, Any]:
    """The command-line values of the settings in ``data`` (from :func:`read_settings`), by parameter name.

    Each value is turned into the text the command line would give (numbers
    as typed, lists comma-separated, true/false only for flags) and converted
    by the type and callback of the command's option of the same name, so it
    is checked exactly as the option is. A ``null`` leaves a setting whose
    default is none at its default.

    Raises:
        click.BadParameter: one line naming ``path``, the key and the option.
    """
    from dataclasses import fields

    from gflkit import config as configs

    params = {p.name: p for p in ctx.command.params if p.name}
    entries: list[tuple[str, str, Any, bool]] = []  # (where, name, value, null allowed)
    for section, cls_name in CONFIG_SECTIONS.items():
        optional = {f.name for f in fields(getattr(configs, cls_name)) if f.default is None}
        entries += [(f"{section}.{key}", key, value, key in optional)
                    for key, value in (data.get(section) or {}).items()]
    entries += [(name, name, data[name], True) for name in RUN_SETTINGS if name in data]

    def fail(where: str, param: click.Parameter | None, message: str) -> click.BadParameter:
        flag = f" ({param.opts[0]})" if param is not None and param.opts else ""
        return click.BadParameter(" ".join(f"{path}: {where}{flag}: {message}".split()))

    # A run's model and options select what train runs, not what compare runs (read_settings checked their form).
    used = {name for name in params if ctx.command.name == "train" or name not in RUN_SETTINGS}
    defaults: dict[str, Any] = {}
    for where, name, value, nullable in entries:
        param = params.get(name)
        if value is None:
            if not nullable:
                raise fail(where, param, "null is not a value here; leave the key out to keep the default")
            continue
        if param is None or name not in used:  # a setting this command takes no option for
            continue
        try:
            text = _command_line(value, param)
            converted = param.type_cast_value(ctx, text)
            if param.callback is not None:
                param.callback(ctx, param, converted)
        except _NotAValue as err:
            raise fail(where, param, str(err)) from None
        except click.BadParameter as err:
            raise fail(where, param, err.message) from None
        defaults[name] = text
    return defaults


def _apply_settings(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from gflkit.errors import GFLError

    try:
        defaults = settings_defaults(ctx, value, read_settings(value))
    except GFLError as err:
        raise click.BadParameter(" ".join(flag_names(str(err), ctx).split()), ctx=ctx, param=param) from None
    except click.BadParameter as err:
        raise click.BadParameter(err.message, ctx=ctx, param=param) from None
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


def config_option(f):
    """``--config FILE``: defaults from a run's ``config.json`` or a TOML file; flags given override them."""
    return click.option(
        "--config", "config_file", type=click.Path(dir_okay=False, exists=True), default=None, is_eager=True,
        expose_value=False, callback=_apply_settings,
        help="Take settings from a run's config.json or a TOML file with the same tables (model_config, "
             "episode_config, train_config); options given on the command line override them.",
    )(f)
