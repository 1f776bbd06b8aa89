"""A family of graphs on disk: DGLGraphs plus a readable manifest.

A collection is a folder with two files:

* ``graphs.bin``: every graph, written with :func:`dgl.save_graphs`. Each graph is
  simple and undirected (each edge stored in both directions, no self-loops,
  no duplicates) with ``ndata["feat"]`` (float32, ``(n, feat_size)``) and
  ``ndata["label"]`` (int64, ``-1`` for unlabelled nodes).
* ``manifest.json``: the shared class names, the split of each graph
  (``train``/``val``/``test``), per-graph counts, and where the family came from
  (source, sampler, seed, gflkit version), and the feature fingerprint.
* ``transform.npz`` (optional): the feature transform the features went through
  (:mod:`gflkit.data.transform`).

:meth:`GraphCollection.load` checks the manifest against the graphs and raises
:class:`~gflkit.errors.DataFormatError` naming the graph and field on any mismatch.
:meth:`GraphCollection.save` writes into a temporary folder and renames it into
place, so an interrupted run never leaves a half-written collection; the next
save to the same place removes the temporaries a killed writer left. While a
process writes a collection it holds an exclusive lock on ``.<name>.lock``
beside it (:func:`~gflkit.data.folder.lock_collection`), so a second writer
stops at once with one line. An existing folder is moved aside or deleted only
after a check that it lies inside the folder the collection is written to
(:mod:`gflkit.data.folder`).

The manifest records two SHA-256 digests, and :meth:`GraphCollection.load`
checks both. ``stored_sha256`` covers what the collection stores (classes,
splits and every graph's node count, edges and node and edge tensors,
:meth:`GraphCollection.stored_sha256`): the same for the same collection
whenever it is written, so it identifies a collection. ``graphs_sha256`` covers
the bytes of ``graphs.bin`` and is checked before DGL parses the file (a
damaged file can make DGL's reader abort the process); it differs between
writes of the same collection, since DGL's header holds bytes that are not
set. Collections without them (from earlier versions) still load. Every
manifest field a load reads is checked first (:func:`~gflkit.data.manifest.read_manifest`).
Graphs are built from edge lists by :func:`~gflkit.data.edges.build_graph`.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import dgl
import torch

from ..errors import DataFormatError, GFLError
from ..io import apply_umask, make_temp, remove_inside, unwritable
from ..paths import check_name
from .edges import build_graph, undirected_edges  # noqa: F401 - importable here, as before
from .folder import check_replaceable, lock_collection, replace_dir, restore_previous
from .manifest import (CHECKSUM_KEY, CONTENT_KEY, FORMAT, FORMAT_VERSION, GRAPHS_FILE, MANIFEST_FILE,  # noqa: F401
                       SPLITS, TRANSFORM_FILE, file_sha256, read_manifest)
from .validate import reading

__all__ = ["GraphCollection", "read_manifest"]


def _quietly(fn, *args) -> None:
    """``fn(*args)`` on a helper thread whose result is a shortcut only: a failure is left to the direct call."""
    try:
        fn(*args)
    except Exception:  # noqa: BLE001  (recomputed, and then raised, where it is needed)
        pass


def _class_counts(label: torch.Tensor, num_classes: int) -> list[int]:
    labelled = label[label >= 0]
    return torch.bincount(labelled, minlength=num_classes).tolist()


@dataclass
class GraphCollection:
    """Graphs that share a label set, each assigned to a meta-learning split.

    Args:
        graphs: the graphs (see module docstring for the required node data).
        splits: ``"train"``, ``"val"`` or ``"test"`` for each graph.
        classes: class names; label ``i`` means ``classes[i]``.
        name: short name of the collection (used in result tables).
        source: where the graphs came from (``synthetic``, ``aminer``, ...).
        sampler: how graphs were cut from a larger graph, if they were.
        seed: the seed the collection was built with, if any.
        graph_extra: per-graph facts kept in the manifest (e.g. ``walk_steps``).
        meta: further collection-level facts kept in the manifest.
    """

    graphs: list[dgl.DGLGraph]
    splits: list[str]
    classes: list[str]
    name: str = "collection"
    source: str = "unknown"
    sampler: dict[str, Any] | None = None
    seed: int | None = None
    graph_extra: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    #: Folder the collection was loaded from or saved to (``None`` if in memory only).
    path: str | None = field(default=None, compare=False, repr=False)
    #: The fitted feature transform (:mod:`gflkit.data.transform`), saved as ``transform.npz``.
    transform: Any = field(default=None, compare=False, repr=False)
    #: :meth:`content_sha256` and :meth:`stored_sha256` with what they were computed from, while that is unchanged.
    _content_memo: Any = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.graph_extra:
            self.graph_extra = [{} for _ in self.graphs]
        self.validate()

    # -- basic facts -------------------------------------------------------------
    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def feat_size(self) -> int:
        return int(self.graphs[0].ndata["feat"].shape[1]) if self.graphs else 0

    def __len__(self) -> int:
        return len(self.graphs)

    def __repr__(self) -> str:
        counts = {s: self.splits.count(s) for s in SPLITS}
        return (
            f"GraphCollection(name={self.name!r}, source={self.source!r}, graphs={len(self)}, "
            f"splits={counts}, classes={self.num_classes}, feat_size={self.feat_size})"
        )

    def graph_ids(self, split: str | None = None) -> list[int]:
        """Ids (positions) of the graphs in ``split``, or of all graphs."""
        if split is not None and split not in SPLITS:
            raise GFLError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)}")
        return [i for i, s in enumerate(self.splits) if split is None or s == split]

    def items(self, split: str | None = None) -> Iterator[tuple[int, dgl.DGLGraph]]:
        """``(graph_id, graph)`` pairs of ``split`` (all graphs when ``None``)."""
        for i in self.graph_ids(split):
            yield i, self.graphs[i]

    # -- checks ------------------------------------------------------------------
    def validate(self) -> None:
        """Raise :class:`DataFormatError` unless every graph follows the format."""
        if len(self.splits) != len(self.graphs):
            raise DataFormatError(
                f"collection {self.name!r}: {len(self.graphs)} graphs but {len(self.splits)} splits"
            )
        if len(self.graph_extra) != len(self.graphs):
            raise DataFormatError(f"collection {self.name!r}: graph_extra must have one dict per graph")
        if not self.classes:
            raise DataFormatError(f"collection {self.name!r}: the class list is empty")
        feat_size = None
        for i, (g, split) in enumerate(zip(self.graphs, self.splits)):
            where = f"collection {self.name!r}, graph {i}"
            if split not in SPLITS:
                raise DataFormatError(f"{where}: split {split!r} is not one of {', '.join(SPLITS)}")
            for key in ("feat", "label"):
                if key not in g.ndata:
                    raise DataFormatError(f"{where}: missing ndata[{key!r}]")
            feat, label = g.ndata["feat"], g.ndata["label"]
            if feat.dtype != torch.float32 or feat.dim() != 2:
                raise DataFormatError(f"{where}: ndata['feat'] must be a 2-D float32 tensor")
            if feat_size is None:
                feat_size = feat.shape[1]
            elif feat.shape[1] != feat_size:
                raise DataFormatError(
                    f"{where}: {feat.shape[1]} features per node, expected {feat_size} like graph 0"
                )
            if label.dtype != torch.int64 or label.dim() != 1:
                raise DataFormatError(f"{where}: ndata['label'] must be a 1-D int64 tensor")
            if label.numel() and (label.min() < -1 or label.max() >= self.num_classes):
                raise DataFormatError(
                    f"{where}: labels must lie in -1..{self.num_classes - 1} "
                    f"(found {int(label.min())}..{int(label.max())})"
                )

    # -- manifest ----------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        """The readable description written beside the graphs."""
        from .. import __version__

        graphs = []
        for i, (g, split, extra) in enumerate(zip(self.graphs, self.splits, self.graph_extra)):
            label = g.ndata["label"]
            graphs.append(
                {
                    "graph_id": i,
                    "split": split,
                    "num_nodes": g.num_nodes(),
                    "num_edges": g.num_edges(),
                    "class_counts": _class_counts(label, self.num_classes),
                    "unlabelled": int((label < 0).sum()),
                    **extra,
                }
            )
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "name": self.name,
            "source": self.source,
            "feat_size": self.feat_size,
            "num_classes": self.num_classes,
            "classes": list(self.classes),
            "splits": {s: self.splits.count(s) for s in SPLITS},
            "sampler": self.sampler,
            "seed": self.seed,
            "gflkit_version": __version__,
            "meta": self.meta,
            "feature_fingerprint": {
                "transform": (self.meta.get("feature_transform") or {}).get("id", "none"), "feat_size": self.feat_size,
            },
            "graphs": graphs,
        }

    # -- content hash ------------------------------------------------------------
    def content_sha256(self) -> str:
        """sha256 over the classes, the splits and each graph's edges, features and labels.

        The same for a collection in memory and after a save and load. It is
        remembered while the collection holds the same graphs, features and
        labels, unchanged in place (torch counts in-place changes of a tensor),
        so a run does not hash the data :meth:`save` has just hashed.
        """
        return self._hashes()[0]

    def stored_sha256(self) -> str:
        """sha256 over everything a save stores of the graphs: what :meth:`content_sha256`
        covers, plus each graph's node count and every other node and edge tensor, by name.

        The same whenever the same collection is saved (``graphs.bin``'s bytes
        are not: DGL's header holds bytes that differ between writes); the
        manifest records it and :meth:`load` checks it. Computed with
        :meth:`content_sha256`, in one pass.
        """
        return self._hashes()[1]

    def _hashes(self) -> tuple[str, str]:
        memo = self._content_memo
        state = self._content_state()
        if memo is not None and memo[2] == state:
            return memo[0], memo[1]
        return self._hash_content(self._content_parts(), state)

    def _content_parts(self) -> tuple[bytes, list]:
        """The JSON of classes and splits, then each graph's tensors as ``(label, tensor, in content_sha256)``.

        Per graph: its edges, then its node tensors and its edge tensors by
        name; ``content_sha256`` covers the edges, ``feat`` and ``label`` (in
        that order, as it always has).
        """
        head = json.dumps({"classes": list(map(str, self.classes)), "splits": list(self.splits)}).encode()
        items = []
        for i, g in enumerate(self.graphs):
            src, dst = g.edges()
            items += [(f"graph {i} nodes {g.num_nodes()} src", src, True), (f"graph {i} dst", dst, True)]
            items += [(f"graph {i} ndata {k}", g.ndata[k], k in ("feat", "label")) for k in sorted(g.ndata.keys())]
            items += [(f"graph {i} edata {k}", g.edata[k], False) for k in sorted(g.edata.keys())]
        return head, items

    def _hash_content(self, parts: tuple[bytes, list], state: tuple) -> tuple[str, str]:
        head, items = parts
        content, stored = hashlib.sha256(head), hashlib.sha256(head)
        for label, t, in_content in items:
            t = t.detach().contiguous()
            shape, data = f"{t.dtype}{tuple(t.shape)}".encode(), memoryview(t.numpy()).cast("B")
            if in_content:
                content.update(shape)
                content.update(data)
            stored.update(label.encode())
            stored.update(shape)
            stored.update(data)
        self._content_memo = (content.hexdigest(), stored.hexdigest(), state)
        return self._content_memo[0], self._content_memo[1]

    def _content_state(self) -> tuple:
        """What the hashes read, by identity and version: equal while none of it changed."""
        def tensor(t: torch.Tensor) -> tuple:
            return id(t), t.data_ptr(), t._version, tuple(t.shape)

        def tensors(frame) -> tuple:
            return tuple((k, tensor(frame[k])) for k in sorted(frame.keys()))

        return (tuple(map(str, self.classes)), tuple(self.splits),
                tuple((id(g), g.num_nodes(), g.num_edges(), tensors(g.ndata), tensors(g.edata)) for g in self.graphs))

    # -- disk --------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        """Write the collection to the folder ``path`` atomically, under its lock; returns it.

        Raises:
            GFLError: another process writes ``path`` (:func:`lock_collection`),
                ``path`` does not lie inside its parent folder (``..``, a link
                elsewhere), it is a folder but not a collection (nor empty),
                or it cannot be written.
        """
        path = Path(path)
        with lock_collection(path):
            return self._save(path)

    def _save(self, path: Path) -> Path:
        restore_previous(path)
        check_replaceable(path)
        try:
            tmp = make_temp(path, directory=True)
        except OSError as err:
            raise unwritable(path, err) from None
        # Both content hashes are taken meanwhile, from tensors read here (the graphs are not
        # touched by two threads at once); hashing releases the interpreter lock.
        parts, state = self._content_parts(), self._content_state()
        hashing = threading.Thread(target=_quietly, args=(self._hash_content, parts, state), name="gflkit-content-hash")
        hashing.start()
        try:
            dgl.save_graphs(str(tmp / GRAPHS_FILE), self.graphs)
            if self.transform is not None:
                self.transform.save(tmp / TRANSFORM_FILE)
            elif self.path and (Path(self.path) / TRANSFORM_FILE).is_file():
                shutil.copy2(Path(self.path) / TRANSFORM_FILE, tmp / TRANSFORM_FILE)
            hashing.join()
            manifest = {**self.manifest(), CHECKSUM_KEY: file_sha256(tmp / GRAPHS_FILE),
                        CONTENT_KEY: self.stored_sha256()}  # the second remembered by the thread
            with open(tmp / MANIFEST_FILE, "w", encoding="utf-8") as f:
                json.dump(manifest, f, indent=1)
                f.write("\n")
            for name in (GRAPHS_FILE, MANIFEST_FILE, TRANSFORM_FILE):
                if (tmp / name).exists():
                    apply_umask(tmp / name)
            apply_umask(tmp, directory=True)
            replace_dir(tmp, path)
        except BaseException as err:
            hashing.join()
            remove_inside(tmp, path.parent)
            if isinstance(err, OSError):
                raise unwritable(path, err) from None
            raise
        self.path = str(path.resolve())
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> "GraphCollection":
        """Read a collection written by :meth:`save`, checking it on the way."""
        path = Path(path)
        restore_previous(path)
        manifest_path = path / MANIFEST_FILE
        graphs_path = path / GRAPHS_FILE
        if not manifest_path.is_file():
            raise DataFormatError(f"{manifest_path}: no such file; is {path} a gflkit collection?")
        if not graphs_path.is_file():
            raise DataFormatError(f"{graphs_path}: no such file; rebuild the collection with gflkit preprocess")
        manifest = read_manifest(manifest_path)
        want = manifest.get(CHECKSUM_KEY)
        if want is not None:
            with reading(graphs_path):
                have = file_sha256(graphs_path)
            if have != want:
                raise DataFormatError(
                    f"{graphs_path}: content does not match the SHA-256 in {MANIFEST_FILE} (changed or damaged); "
                    "rebuild the collection with gflkit preprocess"
                )
        try:
            graphs, _ = dgl.load_graphs(str(graphs_path))
        except Exception as err:  # DGL raises DGLError with no common base; keep its first line, not its C++ trace
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            first = re.sub(r"^\[[\d:]+\] \S+:\d+: ", "", first)[:200]  # DGL's "[time] file.cc:line: " prefix
            raise DataFormatError(f"{graphs_path}: cannot be read ({first}); rebuild the collection") from None
        entries = manifest["graphs"]
        if len(entries) != len(graphs):
            raise DataFormatError(
                f"{manifest_path}: lists {len(entries)} graphs but {graphs_path.name} holds {len(graphs)}"
            )
        name = manifest.get("name")
        if name is None:  # a manifest without a name: the folder's, when that is a plain name
            name = check_name(path.resolve().name, what="the folder name",
                              origin=f"{manifest_path} (no field 'name')",
                              advice="add a field 'name' with a plain name such as 'my-family', or rebuild it")
        known = {"graph_id", "split", "num_nodes", "num_edges", "class_counts", "unlabelled"}
        collection = cls(
            graphs=graphs,
            splits=[e.get("split") for e in entries],
            classes=list(manifest.get("classes", [])),
            name=name,
            source=manifest.get("source") or "unknown",
            sampler=manifest.get("sampler"),
            seed=manifest.get("seed"),
            graph_extra=[{k: v for k, v in e.items() if k not in known} for e in entries],
            meta=manifest.get("meta") or {},
            path=str(path.resolve()),
        )
        want = manifest.get(CONTENT_KEY)
        if want is not None and collection.stored_sha256() != want:
            raise DataFormatError(
                f"{graphs_path}: its graphs, with the classes and splits in {MANIFEST_FILE}, do not match the "
                f"SHA-256 recorded there (changed or damaged); rebuild the collection with gflkit preprocess"
            )
        if manifest.get("feat_size") != collection.feat_size:
            raise DataFormatError(
                f"{manifest_path}: feat_size {manifest.get('feat_size')} but the graphs have "
                f"{collection.feat_size} features per node"
            )
        actual = collection.manifest()["graphs"]
        for i, (want, have) in enumerate(zip(entries, actual)):
            for key in ("graph_id", "num_nodes", "num_edges", "class_counts"):
                if want.get(key) != have[key]:
                    raise DataFormatError(
                        f"{manifest_path}: graph {i} {key} is {want.get(key)} in the manifest but "
                        f"{have[key]} in {graphs_path.name}; the files do not belong together, rebuild"
                    )
        return collection
