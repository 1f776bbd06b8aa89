"""A collection's ``manifest.json``: its format, its fields, and the check of every field a load reads.

Every manifest field :meth:`~gflkit.data.GraphCollection.load` reads is
checked first (:func:`read_manifest`): the name is a plain name
(:func:`gflkit.paths.check_name`), counts and sizes are non-negative integers,
the checksums are SHA-256 hex digests, the transform file is
``transform.npz``; anything else is a one-line error naming the file and
field. A checksum in the manifest could not vouch for the manifest itself
(whoever edits it can rewrite the checksum), so its fields are validated instead.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from ..errors import DataFormatError
from ..paths import check_name

__all__ = []

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
