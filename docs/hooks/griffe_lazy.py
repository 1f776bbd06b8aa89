"""Griffe extension: the names ``gflkit`` exports lazily, documented where they are defined.

``gflkit/__init__.py`` imports its public functions and classes on first use
(PEP 562 ``__getattr__`` over the table ``_LAZY``: name -> defining module), so
a static reader sees none of them. This extension reads that table and adds
each name to the ``gflkit`` package as an alias of its definition, so
``::: gflkit`` documents the same names ``import gflkit`` gives, wherever they
are defined.
"""
from __future__ import annotations

import ast

import griffe


class LazyExports(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:  # griffe >= 1.x
        if pkg.path != "gflkit" or "_LAZY" not in pkg.members:
            return
        table = ast.literal_eval(str(pkg.members["_LAZY"].value))
        for name, module in table.items():
            if name not in pkg.members:
                target = "gflkit" + module if module.startswith(".") else module
                pkg.set_member(name, griffe.Alias(name, f"{target}.{name}", parent=pkg))
