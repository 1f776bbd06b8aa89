"""Rewrite every generated table of the README and docs/ from the command that makes it.

    python scripts/publish.py [FILE ...] [--check]

A generated table sits between two marker comments in a Markdown page::

    <!-- table: python scripts/markdown_table.py Facebook=results/table2/facebook.csv -->
    | model | ... |
    <!-- end table -->

The command (a ``python scripts/...`` line, run in this process from the
repository's root; it reads stored CSVs and trains nothing) prints the
text that belongs between the markers. Without FILEs, README.md and every page
under docs/ are rewritten; ``--check`` rewrites nothing and exits 1 naming
every table whose text differs from its command's output.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import runpy
import shlex
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- table: (.+?) -->\n)(.*?)(<!-- end table -->)", re.S)


def pages() -> list[Path]:
    """README.md and the Markdown pages under docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def run(command: str) -> str:
    """The output of one marker's command, run as ``__main__`` in this process from the repository's root."""
    argv = shlex.split(command)
    if argv[:1] != ["python"] or not argv[1:2] or not argv[1].startswith("scripts/"):
        raise SystemExit(f"table marker {command!r}: the command must be 'python scripts/...'")
    out, saved = io.StringIO(), (sys.argv, os.getcwd(), list(sys.path))
    try:
        os.chdir(REPO)
        sys.argv = argv[1:]
        sys.path.insert(0, str(REPO / "scripts"))
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(REPO / argv[1]), run_name="__main__")
    except SystemExit as stop:
        if stop.code not in (None, 0):
            raise SystemExit(f"table marker {command!r} failed: {stop.code}") from None
    finally:
        sys.argv, cwd, sys.path[:] = saved[0], saved[1], saved[2]
        os.chdir(cwd)
    return out.getvalue()


def tables(text: str) -> list[tuple[str, str]]:
    """``(command, text between the markers)`` of every generated table in a page."""
    return [(m.group(2), m.group(3)) for m in BLOCK.finditer(text)]


def regenerate(text: str) -> str:
    """The page with every marked table replaced by its command's output."""
    return BLOCK.sub(lambda m: m.group(1) + run(m.group(2)) + m.group(4), text)


def write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)


def main(argv=None) -> None:
    """Rewrite (or check) the marked tables of the pages given, or of all pages."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="*", type=Path)
    p.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 when a table is out of date")
    a = p.parse_args(argv)
    stale = []
    for path in a.files or pages():
        text = path.read_text(encoding="utf-8")
        new = regenerate(text)
        if new == text:
            continue
        if a.check:
            stale += [f"{path}: {cmd}" for (cmd, old), (_, fresh) in zip(tables(text), tables(new)) if old != fresh]
        else:
            write(path, new)
            print(f"wrote {path}", file=sys.stderr)
    if stale:
        print("out of date (run python scripts/publish.py):\n" + "\n".join(stale), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
