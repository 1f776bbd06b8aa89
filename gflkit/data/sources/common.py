"""Helpers shared by the raw-data readers: missing files, class choice, progress."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ...errors import GFLError

__all__ = []

#: Where each source's raw files are published (nothing is downloaded at run time).
DOWNLOADS = {
    "aminer": "the AMiner citation dataset page https://www.aminer.org/citation "
              "(e.g. 'citation-network1' or DBLP-Citation-network V4..V14, text format)",
    "reddit": "GraphSAGE http://snap.stanford.edu/graphsage/ (reddit.zip) or DGL "
              "https://data.dgl.ai/dataset/reddit.zip",
    "planetoid": "https://github.com/kimiyoung/planetoid/tree/master/data",
    "linqs": "https://linqs-data.soe.ucsc.edu/public/Pubmed-Diabetes.tgz",
}


def missing_file(path: str | os.PathLike, source: str, folder: str | os.PathLike | None = None) -> GFLError:
    """A one-line error naming ``path`` and saying where to download it and put it."""
    where = folder if folder is not None else Path(path).parent
    return GFLError(f"{path}: no such file; download it from {DOWNLOADS[source]} and put it in {where}/")


def require_file(path: str | os.PathLike, source: str) -> Path:
    """``path`` as a :class:`Path`, or :func:`missing_file` raised when it is absent."""
    path = Path(path)
    if not path.is_file():
        raise missing_file(path, source)
    return path


def select_classes(
    label: np.ndarray,
    names: Sequence[str],
    classes: Sequence[str] | None = None,
    num_classes: int | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Keep some classes and renumber them; nodes of other classes become ``-1``.

    Args:
        label: class index into ``names`` per node, ``-1`` for unlabelled.
        names: every class name.
        classes: names to keep (their order in ``names`` is kept). Wins over
            ``num_classes``.
        num_classes: keep the most frequent classes (ties: smaller index first).

    Returns:
        The new labels and the kept names, in the order of ``names``.
    """
    label = np.asarray(label, dtype=np.int64)
    if classes:
        index = {str(n): i for i, n in enumerate(names)}
        unknown = [c for c in classes if str(c) not in index]
        if unknown:
            raise GFLError(f"unknown class(es) {', '.join(map(str, unknown))}: "
                           f"choose from {', '.join(map(str, names))}")
        keep = sorted({index[str(c)] for c in classes})
    else:
        counts = np.bincount(label[label >= 0], minlength=len(names))
        n = len(names) if num_classes is None else int(num_classes)
        if n > int((counts > 0).sum()):
            raise GFLError(
                f"asked for {n} classes but only {int((counts > 0).sum())} have labelled nodes; ask for fewer"
            )
        order = np.lexsort((np.arange(len(names)), -counts))  # most frequent first, then smaller index
        keep = sorted(order[:n].tolist())
    remap = np.full(len(names) + 1, -1, dtype=np.int64)  # slot -1 stays -1
    remap[keep] = np.arange(len(keep))
    return remap[label], [str(names[i]) for i in keep]


def byte_lines(path: Path, progress: bool = False, desc: str | None = None) -> Iterator[bytes]:
    """The lines of ``path`` as bytes, with a tqdm bar by bytes read on stderr."""
    from ...progress import progress_bar

    with open(path, "rb") as f, progress_bar(
        total=path.stat().st_size, enabled=progress, unit="B", unit_scale=True, desc=desc or path.name,
    ) as bar:
        done = 0
        for line in f:
            done += len(line)
            if done >= 1 << 20:  # update the bar every MiB, not every line
                bar.update(done)
                done = 0
            yield line
        bar.update(done)
