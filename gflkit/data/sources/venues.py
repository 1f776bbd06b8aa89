"""Research field of a publication venue, from a two-column CSV table.

The table shipped with gflkit (``gflkit/resources/venue_fields.csv``, columns
``venue,field``) covers the main venues of seven computer-science fields, each by
acronym and by full name. A venue string from a dump is matched leniently, in
this order, after normalising both sides (lower case, ``&`` -> ``and``, every run
of other characters -> one space):

1. the whole string equals a table entry (``"SIGMOD Conference"`` does not, but
   ``"VLDB"`` does);
2. an acronym in parentheses is a table entry (``"Proceedings of ... (KDD '08)"``);
3. a word of the string is a one-word table entry (``"SIGMOD Conference"``,
   ``"Proceedings of the ACM SIGKDD ..."``); the first such word wins;
4. a multi-word table entry occurs as whole words in the string; the longest wins
   (``"Proceedings of the 25th international conference on Machine learning"``).

Anything else is unmapped (``None``): such papers stay in the graph, unlabelled.
"""
from __future__ import annotations

import csv
import os
import re
from importlib import resources
from pathlib import Path

from ...errors import DataFormatError, GFLError

__all__ = []

_NON_WORD = re.compile(r"[^a-z0-9]+")
_PAREN = re.compile(r"\(([^()]*)\)")


def normalise_venue(text: str) -> str:
    """Lower case, ``&`` spelled out, runs of non-alphanumerics collapsed to a space."""
    return _NON_WORD.sub(" ", text.lower().replace("&", " and ")).strip()


class VenueMap:
    """Venue -> field lookups with the lenient matching of the module docstring.

    Args:
        table: ``{venue: field}`` as written in the CSV.
        origin: where the table came from (kept in collection metadata).
    """

    def __init__(self, table: dict[str, str], origin: str = "") -> None:
        self.origin = origin
        self._exact = {normalise_venue(v): f for v, f in table.items() if normalise_venue(v)}
        self._words = {k: f for k, f in self._exact.items() if " " not in k}
        self._phrases = sorted(((k, f) for k, f in self._exact.items() if " " in k), key=lambda kf: -len(kf[0]))
        self._cache: dict[str, str | None] = {}

    @property
    def fields(self) -> list[str]:
        """All fields of the table, sorted."""
        return sorted(set(self._exact.values()))

    @classmethod
    def load(cls, path: str | os.PathLike | None = None) -> "VenueMap":
        """Read a ``venue,field`` CSV; the shipped table when ``path`` is ``None``."""
        if path is None:
            ref = resources.files("gflkit") / "resources" / "venue_fields.csv"
            text, origin = ref.read_text(encoding="utf-8"), "gflkit/resources/venue_fields.csv"
        else:
            path = Path(path)
            if not path.is_file():
                raise GFLError(f"{path}: no such venue map; give a CSV file with columns venue,field")
            text, origin = path.read_text(encoding="utf-8-sig", errors="replace"), str(path)
        rows = list(csv.reader(text.splitlines()))
        if not rows or [c.strip().lower() for c in rows[0][:2]] != ["venue", "field"]:
            raise DataFormatError(f"{origin}: line 1 must be the header 'venue,field'")
        table = {}
        for line, row in enumerate(rows[1:], start=2):
            if not row or not "".join(row).strip():
                continue
            if len(row) != 2 or not row[0].strip() or not row[1].strip():
                raise DataFormatError(f"{origin}, line {line}: expected two non-empty columns venue,field")
            table[row[0].strip()] = row[1].strip()
        if not table:
            raise DataFormatError(f"{origin}: the venue map has no rows")
        return cls(table, origin)

    def field(self, venue: str) -> str | None:
        """The field of ``venue``, or ``None`` when no rule matches."""
        if venue in self._cache:
            return self._cache[venue]
        found = self._match(venue)
        if len(self._cache) < 1 << 18:
            self._cache[venue] = found
        return found

    def _match(self, venue: str) -> str | None:
        norm = normalise_venue(venue)
        if not norm:
            return None
        if norm in self._exact:
            return self._exact[norm]
        for inner in _PAREN.findall(venue.lower()):
            for word in normalise_venue(inner).split():
                if word in self._words:
                    return self._words[word]
        for word in norm.split():
            if word in self._words:
                return self._words[word]
        padded = f" {norm} "
        for key, value in self._phrases:
            if f" {key} " in padded:
                return value
        return None
