"""The library names parameters, never command-line flags; the command line maps them to its options.

gflkit's messages refer to a setting as its Python name in backticks
(`k_shot`, `force=True`, see :mod:`gflkit.errors`); the CLI spells each as the
invoked command's option.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import click
import pytest

import gflkit
from gflkit.errors import PARAMETER, GFLError, SettingError

FLAG = re.compile(r"(?<![\w-])--[a-z]")
SOURCE = Path(gflkit.__file__).parent

#: Strings in gflkit/ that may hold a flag, with why. Empty: none needs to.
ALLOWED: dict[tuple[str, str], str] = {}


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _strings() -> list[tuple[str, int, str]]:
    """Every string literal of gflkit/ but docstrings, as (file, line, text); an f-string's fields read ``X``."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        inner = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) in docs or id(node) in inner:
                    continue
                text = node.value
            else:
                continue
            found.append((str(path.relative_to(SOURCE)), node.lineno, text))
    return found


def test_library_strings_name_no_flags():
    named = [f"{f}:{line}: {text!r}" for f, line, text in _strings()
             if FLAG.search(text) and (f, text) not in ALLOWED]
    assert not named, "gflkit names parameters (`k_shot`), not flags:\n" + "\n".join(named)


def _cli():
    from gflkit_cli.main import _register, cli

    if not cli.commands:
        _register()
    return cli


def _option_names(command: click.Command) -> set[str]:
    names = {p.name for p in command.params if isinstance(p, click.Option)}
    for sub in getattr(command, "commands", {}).values():
        names |= _option_names(sub)
    return names


def test_every_named_parameter_has_an_option():
    """Each parameter a message names is some command's option, so the CLI can spell it as a flag."""
    options = _option_names(_cli())
    unknown = sorted({f"{f}:{line}: `{m.group(1)}`" for f, line, text in _strings()
                      for m in PARAMETER.finditer(text) if m.group(1) not in options})
    assert not unknown, "\n".join(unknown)


@pytest.mark.parametrize("text, expected", [
    ("pass `force=True` to replace it, or `run_dir=runs/gfl-2`", "pass --force to replace it, or --run-dir runs/gfl-2"),
    ("lower `k_shot` or use `on_small=skip`", "lower --k-shot or use --on-small skip"),
    ("choose `fmt`; `no_such_setting=3` stays", "choose --format; `no_such_setting=3` stays"),
    ("plain text", "plain text"),
])
def test_flag_names_spells_options(text, expected):
    from gflkit_cli.options import flag_names

    cli = _cli()
    ctx = click.Context(cli)
    assert flag_names(text, ctx, cli.get_command(ctx, "train") if "fmt" not in text else None) == expected


def test_setting_error_keeps_its_parts():
    err = SettingError("val_from_train", 3, "lower `k_shot` first")
    assert str(err) == "val_from_train=3: lower `k_shot` first"
    assert isinstance(err, GFLError)
