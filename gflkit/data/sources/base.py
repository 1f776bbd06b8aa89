"""What every raw-data reader returns, and how it reports bad input."""
from __future__ import annotations

import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import dgl

__all__ = ["BadInputReport", "SourceGraph"]

log = logging.getLogger(__name__)


class BadInputReport:
    """Counts malformed input by kind, keeping the first few locations of each.

    Readers call :meth:`add` for every record they skip or repair instead of
    crashing; :meth:`summary` gives one line per kind for the end of a run.
    """

    def __init__(self, file: str = "", keep: int = 5) -> None:
        self.file = file
        self.keep = keep
        self.counts: Counter[str] = Counter()
        self.examples: dict[str, list[Any]] = defaultdict(list)

    def add(self, kind: str, where: Any = None, n: int = 1) -> None:
        """Record ``n`` problems of ``kind`` at ``where`` (a line number, an id...)."""
        self.counts[kind] += n
        if where is not None and len(self.examples[kind]) < self.keep:
            self.examples[kind].append(where)

    def __bool__(self) -> bool:
        return bool(self.counts)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> list[str]:
        """One line per kind: how many, of what kind, first few locations."""
        lines = []
        for kind, count in sorted(self.counts.items()):
            at = self.examples.get(kind)
            where = f" (first at {', '.join(map(str, at))})" if at else ""
            prefix = f"{self.file}: " if self.file else ""
            lines.append(f"{prefix}{count} x {kind}{where}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {k: {"count": c, "first": self.examples.get(k, [])} for k, c in sorted(self.counts.items())}

    def log(self, logger: logging.Logger = log) -> None:
        for line in self.summary():
            logger.warning(line)


@dataclass
class SourceGraph:
    """One large graph read from raw files, before it is cut into a family.

    Attributes:
        g: simple undirected DGLGraph with ``ndata["feat"]`` (float32) and
            ``ndata["label"]`` (int64, -1 unlabelled); see
            :func:`gflkit.data.collection.build_graph`. Optional
            ``edata["weight"]`` (float32).
        classes: class names, ``classes[i]`` for label ``i``.
        name: default collection name (``collaboration``, ``reddit``, ...).
        source: the raw format it was read from.
        report: what was malformed in the raw files.
        meta: facts kept in the collection manifest (files read, counts...).
        transform: the fitted feature transform the features went through, if any
            (:class:`gflkit.data.transform.FeatureTransform`).
    """

    g: dgl.DGLGraph
    classes: list[str]
    name: str
    source: str
    report: BadInputReport = field(default_factory=BadInputReport)
    meta: dict[str, Any] = field(default_factory=dict)
    transform: Any = None
