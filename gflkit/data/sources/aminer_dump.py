"""Streaming parser of the AMiner paper dump (format: see :mod:`.aminer`).

Records are read line by line from bytes; a line that is not valid UTF-8 is
decoded with replacement characters and counted. Per accepted paper only
integers and one hashed term-count row are kept. Paper ids are numbers, or the
24-digit hexadecimal ids of newer releases; anything else is a malformed id.
"""
from __future__ import annotations

import re
from array import array
from collections import Counter
from itertools import combinations
from pathlib import Path

from .base import BadInputReport
from .common import byte_lines
from .text_features import HashedText
from .venues import VenueMap

__all__ = []

_ID = re.compile(r"[0-9]+|[0-9a-fA-F]{24}")
_TAGS = ("#index", "#*", "#@", "#t", "#c", "#%", "#!")
_KEYS = {"#index": "index", "#*": "title", "#@": "authors", "#c": "venue", "#!": "abstract"}


def _paper_id(text: str) -> int | None:
    return int(text, 16 if len(text) == 24 and not text.isdigit() else 10) if _ID.fullmatch(text) else None


class DumpParser:
    """Streams records into compact arrays (one row per accepted paper).

    Only what ``task`` needs is kept: author lists and co-author pairs for
    ``collaboration``, references for ``citation``.
    """

    def __init__(self, task: str, venues: VenueMap, report: BadInputReport, n_buckets: int) -> None:
        self.task, self.venues, self.report = task, venues, report
        self.field_index = {f: i for i, f in enumerate(venues.fields)}
        self.ids: dict[int, int] = {}  # paper id -> internal number (papers and referenced ids)
        self.row_of = array("q")  # internal number -> row, -1 until its record is read
        self.field = array("h")  # row -> field index, -1 unmapped
        self.text = HashedText(n_buckets)
        self.authors: dict[str, int] = {}
        self.paper_author = (array("q"), array("q"))  # (row, author)
        self.pairs = (array("q"), array("q"))  # co-author pairs, lo < hi
        self.refs = (array("q"), array("q"), array("q"))  # (row, internal target, line)
        self.unmapped: Counter[str] = Counter()

    def _internal(self, pid: int) -> int:
        k = self.ids.get(pid)
        if k is None:
            k = self.ids[pid] = len(self.row_of)
            self.row_of.append(-1)
        return k

    def flush(self, rec: dict) -> None:
        bad, line = self.report.add, rec["line"]
        if rec.get("index") is None:
            return bad("record without #index", line)
        pid = _paper_id(rec["index"])
        if pid is None:
            return bad("non-numeric #index", line)
        k = self._internal(pid)
        if self.row_of[k] >= 0:
            return bad("duplicate #index", line)
        row = self.row_of[k] = len(self.field)
        venue = rec.get("venue", "")
        field = self.venues.field(venue)
        self.field.append(self.field_index[field] if field is not None else -1)
        if field is None and len(self.unmapped) < 100_000:
            self.unmapped[venue] += 1
        if not rec.get("title"):
            bad("record without title (#*)", line)
        self.text.add(f"{rec.get('title', '')} {rec.get('abstract', '')}")
        if self.task == "collaboration":
            sep = ";" if ";" in rec.get("authors", "") else ","
            names = list(dict.fromkeys(a.strip() for a in rec.get("authors", "").split(sep) if a.strip()))
            if not names:
                return bad("paper without authors (#@)", line)
            ids = sorted(self.authors.setdefault(a, len(self.authors)) for a in names)
            for a in ids:
                self.paper_author[0].append(row)
                self.paper_author[1].append(a)
            for lo, hi in combinations(ids, 2):
                self.pairs[0].append(lo)
                self.pairs[1].append(hi)
        else:
            for ref, ref_line in rec.get("refs", ()):
                target = _paper_id(ref)
                if target is None:
                    bad("non-numeric reference (#%)", ref_line)
                    continue
                self.refs[0].append(row)
                self.refs[1].append(self._internal(target))
                self.refs[2].append(ref_line)

    def parse(self, path: Path, progress: bool) -> None:
        rec: dict = {}
        lineno = 0
        for lineno, raw in enumerate(byte_lines(path, progress, desc=f"reading {path.name}"), start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                line = raw.decode("utf-8", errors="replace")
                self.report.add("bad encoding (bytes replaced)", lineno)
            if lineno == 1:
                line = line.lstrip("\ufeff")  # a byte-order mark
            line = line.strip()
            if not line:
                if rec:
                    self.flush(rec)
                rec = {}
                continue
            tag = next((t for t in _TAGS if line.startswith(t)), None)
            value = line[len(tag):].strip() if tag else ""
            key = _KEYS.get(tag)
            if key in ("index", "title") and key in rec:  # a new record began without a blank line
                self.report.add("record not ended by a blank line", lineno)
                self.flush(rec)
                rec = {}
            rec.setdefault("line", lineno)
            if key:
                rec[key] = value
            elif tag == "#%":
                if self.task == "citation" and value:
                    rec.setdefault("refs", []).append((value, lineno))
            elif tag == "#t":
                if value and not value.isdigit():
                    self.report.add("non-numeric year (#t)", lineno)
            elif not line.startswith("#"):
                self.report.add("unrecognised line", lineno)
        if rec:
            self.flush(rec)
        self.lines = lineno
