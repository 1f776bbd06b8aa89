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
beside it (:func:`lock_collection`), so a second writer stops at once with one
line. An existing folder is moved aside or deleted only after a check that it
lies inside the folder the collection is written to.

The manifest records two SHA-256 digests, and :meth:`GraphCollection.load`
checks both. ``stored_sha256`` covers what the collection stores (classes,
splits and every graph's node count, edges and node and edge tensors,
:meth:`GraphCollection.stored_sha256`): the same for the same collection
whenever it is written, so it identifies a collection. ``graphs_sha256`` covers
the bytes of ``graphs.bin`` and is checked before DGL parses the file (a
damaged file can make DGL's reader abort the process); it differs between
writes of the same collection, since DGL's header holds bytes that are not
set. Collections without them (from earlier versions) still load. Every
manifest field a load reads is checked first
(:func:`read_manifest`): the name is a plain name (:func:`gflkit.paths.check_name`),
counts and sizes are non-negative integers, the transform file is
``transform.npz``; anything else is a one-line error naming the file and field.
A checksum in the manifest could not vouch for the manifest itself (whoever
edits it can rewrite the checksum), so its fields are validated instead.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import dgl
import torch

from ..errors import DataFormatError, GFLError
from ..io import FolderLock, lock_path
from ..paths import check_inside, check_name
from ..io import apply_umask, make_temp, remove_inside, replace_inside, unwritable
from .validate import reading

__all__ = ["GraphCollection", "read_manifest"]

SPLITS = ("train", "val", "test")
FORMAT = "gflkit.collection"
FORMAT_VERSION = 1
GRAPHS_FILE = "graphs.bin"
MANIFEST_FILE = "manifest.json"
TRANSFORM_FILE = "transform.npz"
#: The SHA-256 of what the collection stores (:meth:`GraphCollection.stored_sha256`): the same for the same collection.
CONTENT_KEY = "stored_sha256"
#: The SHA-256 of ``graphs.bin``'s bytes, checked before DGL parses the file (differs between writes).
CHECKSUM_KEY = "graphs_sha256"


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


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
        _restore_previous(path)
        _check_replaceable(path)
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
            _replace_dir(tmp, path)
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
        _restore_previous(path)
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


def read_manifest(path: str | os.PathLike) -> dict[str, Any]:
    """The manifest at ``path`` (``manifest.json``), with every field a load reads checked.

    Raises:
        DataFormatError: naming ``path`` (and the field) when the file is not
            valid JSON, not a gflkit manifest of this format version, or a
            field has the wrong type or value (see the module docstring).
    """
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError, ValueError) as err:
        reason = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        raise DataFormatError(f"{path}: not valid JSON ({reason}); rebuild the collection") from None
    except OSError as err:
        raise DataFormatError(f"{path}: cannot be read ({err.strerror})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DataFormatError(f"{path}: not a gflkit collection manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise DataFormatError(
            f"{path}: format version {manifest.get('format_version')} is not supported "
            f"(this gflkit reads {FORMAT_VERSION}); rebuild the collection"
        )
    _check_fields(manifest, path)
    return manifest


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_sha256(value: Any) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None


def _check_fields(manifest: dict, path: Path) -> None:
    """Raise :class:`DataFormatError` naming ``path`` and the field unless every field a load reads is sound."""
    def bad(key: str, want: str) -> DataFormatError:
        return DataFormatError(f"{path}: field {key!r} {want}; rebuild the collection")

    kinds = {"graphs": list, "classes": list, "meta": (dict, type(None)), "sampler": (dict, type(None)),
             "source": (str, type(None)), "splits": (dict, type(None))}
    if "graphs" not in manifest:
        raise bad("graphs", "is missing")
    for key, kind in kinds.items():
        if key in manifest and not isinstance(manifest[key], kind):
            raise bad(key, "has the wrong type")
    if manifest.get("name") is not None:
        check_name(manifest["name"], origin=f"{path}: field 'name'",
                   advice="give it a plain name such as 'my-family' there, or rebuild the collection")
    seed = manifest.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise bad("seed", "must be an integer or null")
    for key in ("feat_size", "num_classes"):
        if key in manifest and not _is_count(manifest[key]):
            raise bad(key, "must be a non-negative integer")
    for split, count in (manifest.get("splits") or {}).items():
        if split not in SPLITS or not _is_count(count):
            raise bad(f"splits.{split}", "must be a non-negative count of one of train, val, test")
    for key in (CONTENT_KEY, CHECKSUM_KEY):
        if manifest.get(key) is not None and not _is_sha256(manifest[key]):
            raise bad(key, "must be a SHA-256 (64 lowercase hex digits)")
    if not all(isinstance(c, str) for c in manifest.get("classes", [])):
        raise bad("classes", "must be a list of names")
    for i, entry in enumerate(manifest["graphs"]):
        if not isinstance(entry, dict):
            raise DataFormatError(f"{path}: every entry of 'graphs' must be an object; rebuild the collection")
        for key in ("graph_id", "num_nodes", "num_edges", "unlabelled"):
            if key in entry and not _is_count(entry[key]):
                raise bad(f"graphs[{i}].{key}", "must be a non-negative integer")
        counts = entry.get("class_counts", [])
        if not isinstance(counts, list) or not all(_is_count(c) for c in counts):
            raise bad(f"graphs[{i}].class_counts", "must be a list of non-negative integers")
        if entry.get("split") not in SPLITS:
            raise bad(f"graphs[{i}].split", f"must be one of {', '.join(SPLITS)}")
        if entry.get("walk_steps") is not None and not _is_count(entry["walk_steps"]):
            raise bad(f"graphs[{i}].walk_steps", "must be a non-negative integer or null")
    meta = manifest.get("meta") or {}
    for key in ("node_overlap", "pairwise_jaccard"):
        if not isinstance(meta.get(key) or {}, dict):
            raise bad(f"meta.{key}", "must be an object")
        for split in ("val", "test"):
            value = (meta.get(key) or {}).get(split)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise bad(f"meta.{key}.{split}", "must be a number or null")
    described = meta.get("feature_transform")
    if described is not None:
        if not isinstance(described, dict) or not isinstance(described.get("id", ""), str):
            raise bad("meta.feature_transform", "must be an object with a text 'id'")
        if described.get("file", TRANSFORM_FILE) != TRANSFORM_FILE:
            raise bad("meta.feature_transform.file", f"must be {TRANSFORM_FILE!r} (the file beside the manifest)")


def _previous(path: Path) -> Path:
    return path.with_name(f".{path.name}.old")


_held: dict[tuple[str, int], int] = {}  # (lock file, thread) -> depth, for the locks this process holds


@contextmanager
def lock_collection(path: str | os.PathLike) -> Iterator[Path]:
    """Hold the lock ``.<name>.lock`` beside the collection folder ``path`` while the block runs.

    A second process (or thread) that wants to write the same folder is
    refused at once with a one-line :class:`GFLError`. Taken again by the same
    thread (a :meth:`GraphCollection.save` inside the block) it is held once.
    The folder must lie inside its parent folder (no ``..``, no link elsewhere:
    :func:`gflkit.paths.check_inside`) and be a collection, an empty folder or
    nothing yet; the parent is created.
    """
    path = Path(path)
    file = lock_path(path)
    key = (os.path.realpath(file), threading.get_ident())
    if key in _held:
        _held[key] += 1
        try:
            yield path
        finally:
            _held[key] -= 1
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise unwritable(path, err) from None
    _check_replaceable(path)
    lock = FolderLock(file, path, "collection", "wait for it to end, or write the collection under another name "
                                                "or folder").acquire()
    _held[key] = 1
    try:
        yield path
    finally:
        del _held[key]
        lock.release()


def _check_replaceable(path: Path) -> None:
    """Refuse ``path`` unless it lies inside its parent and is a collection, an empty folder or nothing.

    So a save never moves aside and deletes a folder that is not a collection
    (a mistyped ``~`` or ``.``), nor anything a link leads to elsewhere.
    """
    check_inside(path, path.parent)
    if not path.exists() or (path.is_dir() and ((path / MANIFEST_FILE).is_file() or not any(path.iterdir()))):
        return
    raise GFLError(f"{path}: exists and is not a gflkit collection (no {MANIFEST_FILE}); a collection replaces only "
                   f"a collection or an empty folder: choose a new folder, or remove this one yourself")


def _restore_previous(path: Path) -> None:
    """Put back the collection that a save killed between its two renames had moved aside."""
    path = Path(os.path.abspath(path))  # "." and "x/.." have no name of their own
    old = _previous(path)
    if not path.exists() and (old / MANIFEST_FILE).is_file() and (old / GRAPHS_FILE).is_file():
        try:
            replace_inside(old, path, path.parent)
        except (OSError, GFLError):
            pass  # read-only place, a concurrent writer, or not inside its folder: load reports what it finds


def _replace_dir(src: Path, dst: Path) -> None:
    """Move the finished folder ``src`` to ``dst``, replacing what was there.

    The previous folder is first renamed to ``.<name>.old``; a process killed
    before the second rename leaves it there, and the next load or save of
    ``dst`` puts it back (:func:`_restore_previous`). Every folder moved or
    deleted is first checked to lie inside ``dst``'s parent.
    """
    root = dst.parent
    if dst.exists() or dst.is_symlink():
        old = _previous(dst)
        remove_inside(old, root)
        replace_inside(dst, old, root)
        replace_inside(src, dst, root)
        remove_inside(old, root)
    else:
        replace_inside(src, dst, root)


def undirected_edges(src: Sequence[int] | torch.Tensor, dst: Sequence[int] | torch.Tensor,
                     num_nodes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The edges of the simple undirected graph an edge list describes: each edge in both directions.

    Self-loops and duplicate edges are dropped, and ``u -> v`` and ``v -> u``
    are the same edge. The result is sorted (edge ``lo -> hi`` by ``lo * n + hi``,
    then the reversed edges in the same order), so it depends only on the set
    of edges, not on their order or direction: an edge table read from a file
    (:func:`build_graph`) and a DGLGraph given to
    :meth:`gflkit.prediction.predictor.Predictor.predict` with the same edges in one
    direction only give the same graph. Memory is linear in the number of edges.

    Shapes:
        src, dst: ``(E,)`` -> two ``(2 E',)`` tensors, ``E'`` the distinct non-loop edges.
    """
    src = torch.as_tensor(src, dtype=torch.int64)
    dst = torch.as_tensor(dst, dtype=torch.int64)
    keep = src != dst
    lo = torch.minimum(src[keep], dst[keep])
    hi = torch.maximum(src[keep], dst[keep])
    key = torch.unique(lo * num_nodes + hi)  # sorted, so the result is deterministic
    lo, hi = key // num_nodes, key % num_nodes
    return torch.cat([lo, hi]), torch.cat([hi, lo])


def build_graph(
    src: Sequence[int] | torch.Tensor,
    dst: Sequence[int] | torch.Tensor,
    num_nodes: int,
    feat: torch.Tensor,
    label: torch.Tensor,
) -> dgl.DGLGraph:
    """A simple undirected graph in collection format from an edge list.

    Self-loops and duplicate edges are dropped; every edge is stored in both
    directions (:func:`undirected_edges`). Memory is linear in the number of edges.

    Shapes:
        src, dst: ``(E,)``; feat: ``(num_nodes, d)``; label: ``(num_nodes,)``.
    """
    g = dgl.graph(undirected_edges(src, dst, num_nodes), num_nodes=num_nodes)
    g.ndata["feat"] = torch.as_tensor(feat, dtype=torch.float32)
    g.ndata["label"] = torch.as_tensor(label, dtype=torch.int64)
    return g
