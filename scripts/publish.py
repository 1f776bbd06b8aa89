"""Rewrite every generated table and value of the README and docs/ from the command that makes it.

    python scripts/publish.py [FILE ...] [--check]
    python scripts/publish.py --typed [FILE ...]

A generated table sits between two marker comments in a Markdown page::

    <!-- table: python scripts/markdown_table.py Facebook=results/table2/facebook.csv -->
    | model | ... |
    <!-- end table -->

and a generated number inside a sentence between two inline ones::

    GFL <!-- value: python scripts/value.py x.csv --where model=gfl-mean --column accuracy -->71.3<!-- end value -->

The command (a ``python scripts/...`` line, run in this process from the
repository's root; it reads stored CSVs and trains nothing) prints the
text that belongs between the markers (a value's trailing newline is
dropped). Without FILEs, README.md and every page under docs/ are rewritten;
``--check`` rewrites nothing and exits 1 naming every table or value whose
text differs from its command's output.

``--typed`` prints, as CSV (``page,number,count``), every number written by
hand: a number with a decimal point or a percent sign outside the generated
blocks, code blocks and inline code, and not a software version, an
interval's level (``95% interval``) or the threshold of "shown" (``below
0.05``) (:func:`typed_numbers`). ``tests/typed_numbers.csv`` holds what is still
typed; the test fails when a page holds a typed number beyond that list.
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
VALUE = re.compile(r"(<!-- value: ([^\n]+?) -->)([^\n<`]*)(<!-- end value -->)")  # on one line, not in code
FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
#: A value marker that opens a line: Markdown reads such a line as raw HTML and ends the paragraph or list there.
VALUE_OPENS_LINE = re.compile(r"^[ \t]*<!-- value:", re.M)
#: Not results: a link target, an HTML comment or tag, a software version (``Python 3.10``, ``torch 2.13``),
#: the level of an interval (``95% interval``) and the threshold of "shown" (``below 0.05``): definitions.
NOT_PROSE = re.compile(r"\]\([^)]*\)|<!--.*?-->|<[^>]+>"
                       r"|\b(?:Python|PyTorch|torch|DGL|dgl|NumPy|numpy|SciPy|scipy|version|v)\s?\d+(?:\.\d+)+"
                       r"|\b95% (?:t )?(?:confidence )?interval|\bbelow 0\.05\b")
NUMBER = re.compile(r"(?<![\w.])\d*\.\d+%?|(?<![\w.])\d+%")


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
    """``(command, text between the markers)`` of every generated table and value in a page."""
    return [(m.group(2), m.group(3)) for pattern in (BLOCK, VALUE) for m in pattern.finditer(text)]


def output(command: str) -> str:
    """What belongs between a marker's comments: its command's output; a value (one line) without its newline."""
    text = run(command)
    return text if text.count("\n") > 1 else text.rstrip("\n")


def misplaced_values(text: str) -> list[int]:
    """Lines (1-based) of a page that open with a value marker; keep some words before it on its line."""
    return [text.count("\n", 0, m.start()) + 1 for m in VALUE_OPENS_LINE.finditer(text)]


def regenerate(text: str) -> str:
    """The page with every marked table and value replaced by its command's output."""
    text = BLOCK.sub(lambda m: m.group(1) + run(m.group(2)) + m.group(4), text)
    return VALUE.sub(lambda m: m.group(1) + run(m.group(2)).rstrip("\n") + m.group(4), text)


def typed_numbers(text: str) -> list[str]:
    """Numbers written by hand in a page: with a decimal point or a percent sign, in prose or a typed table.

    Generated tables and values, fenced code blocks, inline code (commands
    and settings such as ``--lr 0.01``), link targets, HTML comments and
    software versions, interval levels and the 0.05 threshold are left out; whatever else of that form is kept.
    """
    blank = lambda m: "\n" * m.group(0).count("\n")  # noqa: E731  (keeps line breaks, so fences pair up)
    for pattern in (BLOCK, VALUE, FENCE):
        text = pattern.sub(blank, text)
    found = []
    for line in text.splitlines():
        found += NUMBER.findall(NOT_PROSE.sub(" ", INLINE_CODE.sub(" ", line)))
    return found


def typed_inventory(paths: list[Path]) -> dict[tuple[str, str], int]:
    """``(page, number) -> count`` of the typed numbers of ``paths`` (pages named from the repository's root)."""
    counts: dict[tuple[str, str], int] = {}
    for path in paths:
        page = path.resolve().relative_to(REPO).as_posix()
        for number in typed_numbers(path.read_text(encoding="utf-8")):
            counts[page, number] = counts.get((page, number), 0) + 1
    return counts


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
    p.add_argument("--typed", action="store_true", help="print the numbers typed by hand (page,number,count)")
    a = p.parse_args(argv)
    if a.typed:
        print("page,number,count")
        for (page, number), n in sorted(typed_inventory(a.files or pages()).items()):
            print(f"{page},{number},{n}")
        return
    stale = []
    for path in a.files or pages():
        text = path.read_text(encoding="utf-8")
        if misplaced_values(text):
            raise SystemExit(f"{path}:{misplaced_values(text)[0]}: a value marker opens the line, which Markdown "
                             "reads as raw HTML; move a word of the sentence before it")
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
