"""The feature transform a collection was built with, saved beside it and reusable.

``preprocess`` may reduce raw node features (a randomized SVD of a sparse bag of
features, TF-IDF then SVD of text). The reduction is *fitted once*: its arrays
are saved with the collection as ``transform.npz`` (plain arrays, read with
``allow_pickle=False``), its description in the manifest
(``meta.feature_transform``, with ``fitted_on``: ``train`` when only the nodes
of the train graphs or networks were fitted on, never a test graph's, and the
names of those graphs in ``fitted_graphs``). New data for the same model, a second
``preprocess`` call (``--features-from``) or a user's graph given to
``gflkit predict``, goes through the same arrays, never a second fit.

A *feature fingerprint* ``{"transform": id, "feat_size": d}`` identifies what
the model input means: ``id`` is a hash of the transform's kind and arrays
(``"none"`` when features are kept as read). Collections and runs record it;
scoring a run on data with another fingerprint is an error unless forced.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from ..errors import DataFormatError, GFLError
from ..io import atomic_write_with
from .collection import TRANSFORM_FILE, read_manifest

__all__ = ["FeatureTransform", "feature_fingerprint", "load_transform"]

NO_TRANSFORM = "none"
KINDS = ("svd", "tfidf-svd")
#: Rows transformed at a time, so a dense input is never copied whole in float64.
CHUNK_ROWS = 65536


# TF-IDF, the first half of a ``tfidf-svd`` transform (also used by :mod:`gflkit.data.sources.text_features`).


def document_frequency_idf(counts: sp.spmatrix) -> np.ndarray:
    """Smoothed IDF of every column: ``1 + log((1 + n) / (1 + df))``, shape ``(m,)``."""
    x = sp.csr_matrix(counts)
    if not x.has_canonical_format:
        x = x.copy()
        x.sum_duplicates()
    df = np.bincount(x.indices, minlength=x.shape[1])
    return 1.0 + np.log((1.0 + x.shape[0]) / (1.0 + df))


def tfidf(counts: sp.spmatrix, idf: np.ndarray | None = None) -> sp.csr_matrix:
    """Sublinear TF-IDF with smoothed IDF and unit-length rows.

    Args:
        counts: term counts.
        idf: a fitted IDF per column (default: from ``counts`` itself).

    Shapes:
        counts: ``(n, m)``; returns ``(n, m)`` float64 CSR.
    """
    x = sp.csr_matrix(counts, dtype=np.float64, copy=True)
    x.sum_duplicates()
    x.data = 1.0 + np.log(np.maximum(x.data, 1.0))
    idf = document_frequency_idf(counts) if idf is None else idf
    x.data *= idf[x.indices]
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.csr_matrix(sp.diags(1.0 / norms) @ x)


@dataclass(frozen=True, eq=False)
class FeatureTransform:
    """A fitted linear reduction of raw features.

    ``svd``: ``x @ components``. ``tfidf-svd``: each row of term counts becomes
    sublinear TF-IDF with the fitted ``idf`` and unit length, then ``@ components``.

    Args:
        kind: ``"svd"`` or ``"tfidf-svd"``.
        components: ``(in_feats, out_feats)`` projection.
        idf: ``(in_feats,)`` inverse document frequencies (``tfidf-svd`` only).
        params: plain facts recorded in the manifest (seed, ...).
    """

    kind: str
    components: np.ndarray
    idf: np.ndarray | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise DataFormatError(f"unknown feature transform {self.kind!r}: expected one of {', '.join(KINDS)}")
        if self.components.ndim != 2:
            raise DataFormatError("feature transform: components must be a 2-D array")
        if self.kind == "tfidf-svd" and (self.idf is None or self.idf.shape != (self.in_feats,)):
            raise DataFormatError("feature transform: tfidf-svd needs one idf value per input feature")

    @property
    def in_feats(self) -> int:
        return int(self.components.shape[0])

    @property
    def out_feats(self) -> int:
        return int(self.components.shape[1])

    @property
    def id(self) -> str:
        """A short hash of the kind and the arrays: equal ids, equal outputs."""
        h = hashlib.sha256(self.kind.encode())
        for arr in (self.components, self.idf):
            if arr is not None:
                a = np.ascontiguousarray(arr)
                h.update(str((a.dtype.str, a.shape)).encode())
                h.update(a.tobytes())
        return h.hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        """What the manifest records (``meta.feature_transform``)."""
        return {"kind": self.kind, "id": self.id, "in_feats": self.in_feats, "out_feats": self.out_feats,
                "file": TRANSFORM_FILE, **self.params}

    def apply(self, x, what: str = "features") -> np.ndarray:
        """Transform raw features ``(n, in_feats)`` (dense or scipy sparse) into ``(n, out_feats)`` float32.

        Raises:
            GFLError: ``x`` has another number of columns than the transform was fitted on.
        """
        if x.ndim != 2 or x.shape[1] != self.in_feats:
            raise GFLError(f"{what}: {x.shape[1] if x.ndim == 2 else '?'} raw features per node, but the saved "
                           f"{self.kind} transform ({self.id}) was fitted on {self.in_feats}; give the raw features "
                           f"the collection was built from")
        comps = self.components.astype(np.float32, copy=False)
        parts = []
        for lo in range(0, max(x.shape[0], 1), CHUNK_ROWS):
            block = x[lo:lo + CHUNK_ROWS]
            if self.kind == "tfidf-svd":
                block = tfidf(block, self.idf)
            block = block.astype(np.float32) if sp.issparse(block) else np.asarray(block, dtype=np.float32)
            parts.append(np.asarray(block @ comps, dtype=np.float32))
        return np.concatenate(parts) if parts else np.zeros((0, self.out_feats), np.float32)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the arrays to an ``.npz`` file atomically."""
        arrays = {"kind": np.array(self.kind), "components": self.components,
                  "params": np.array(json.dumps(self.params, sort_keys=True))}
        if self.idf is not None:
            arrays["idf"] = self.idf

        def write(tmp: str) -> None:
            with open(tmp, "wb") as f:
                np.savez(f, **arrays)

        return atomic_write_with(path, write)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "FeatureTransform":
        """Read a transform written by :meth:`save` (no pickle)."""
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as z:
                kind, comps = str(z["kind"]), z["components"]
                idf = z["idf"] if "idf" in z.files else None
                params = json.loads(str(z["params"])) if "params" in z.files else {}
        except (OSError, KeyError, ValueError) as err:
            raise DataFormatError(f"{path}: not a gflkit feature transform ({err}); rebuild the collection") \
                from None
        return cls(kind, comps, idf, params)


def _manifest(data) -> tuple[dict, str]:
    """The manifest dict of a collection object, folder or manifest mapping, and a name for messages."""
    if isinstance(data, Mapping):
        return dict(data), str(data.get("name", "collection"))
    if hasattr(data, "manifest") and hasattr(data, "graphs"):
        return {"meta": data.meta, "feat_size": data.feat_size, "name": data.name}, repr(data.name)
    path = Path(data)
    path = path / "manifest.json" if path.is_dir() else path
    return read_manifest(path), str(path.parent)


def feature_fingerprint(data) -> dict[str, Any]:
    """``{"transform": id or "none", "feat_size": d}`` of a collection.

    Args:
        data: a :class:`~gflkit.data.GraphCollection`, its folder, or its manifest dict.
    """
    manifest, _ = _manifest(data)
    described = (manifest.get("meta") or {}).get("feature_transform") or {}
    return {"transform": described.get("id", NO_TRANSFORM), "feat_size": int(manifest.get("feat_size") or 0)}


def check_fingerprint(expected: Mapping[str, Any] | None, actual: Mapping[str, Any], what: str,
                      force: bool = False) -> None:
    """Raise a one-line :class:`GFLError` when two fingerprints differ (unless ``force``).

    A run that recorded no fingerprint (older runs) is not checked.
    """
    if not expected or force:
        return
    if expected.get("feat_size") != actual.get("feat_size"):
        raise GFLError(f"the run expects {expected.get('feat_size')} features per node; {what} has "
                       f"{actual.get('feat_size')}")
    if expected.get("transform") != actual.get("transform"):
        raise GFLError(
            f"{what} was built with feature transform {actual.get('transform')} but the run with "
            f"{expected.get('transform')}; rebuild it with `features_from=<the run's collection>`, or pass `force=True`"
        )


def collection_folder(data, root=None) -> Path:
    """The folder of a collection given by folder or by name under ``<root>/processed/``."""
    from ..paths import is_name, processed_dir

    path = Path(data)
    if (path / "manifest.json").is_file():
        return path
    named = processed_dir(str(data), root) if is_name(str(data)) else None
    if named is not None and (named / "manifest.json").is_file():
        return named
    nor = f" (nor {named})" if named is not None else ""
    raise GFLError(f"no collection at {data!r}{nor}; give a collection folder or name (`data_root`)")


def load_transform(data) -> FeatureTransform | None:
    """The saved transform of a collection (object or folder), or ``None`` when it kept its features."""
    transform = getattr(data, "transform", None)
    if transform is not None:
        return transform
    manifest, name = _manifest(data)
    described = (manifest.get("meta") or {}).get("feature_transform")
    if not described:
        return None
    folder = Path(getattr(data, "path", None) or data)
    path = folder / TRANSFORM_FILE  # the only file a manifest may name (read_manifest checks it)
    if not path.is_file():
        raise GFLError(f"{path}: collection {name} records a feature transform but its file is missing; "
                       f"rebuild the collection")
    transform = FeatureTransform.load(path)
    if transform.id != described.get("id"):
        raise GFLError(f"{path}: transform {transform.id} differs from {described.get('id')} in the manifest; "
                       f"rebuild the collection")
    return transform


#: What a reduction was fitted on (``params["fitted_on"]``): the nodes of the train graphs (or train
#: networks) only, or every node read (one large graph before it is cut; graphs none of which is a train graph).
FITTED_ON = ("train", "all")


def fitted_on(what: str, graphs: Sequence[str] | None = None) -> dict[str, Any]:
    """The params that record what a reduction was fitted on: ``{"fitted_on": what}`` (one of
    :data:`FITTED_ON`) and, when the tables name their graphs, ``"fitted_graphs"``: those fitted on."""
    if what not in FITTED_ON:
        raise ValueError(f"fitted_on must be one of {FITTED_ON}, not {what!r}")
    return {"fitted_on": what, **({"fitted_graphs": [str(g) for g in graphs]} if graphs is not None else {})}


def attach_transform(collection, transform: FeatureTransform | None) -> None:
    """Make ``transform`` part of ``collection`` (saved with it, described in its manifest)."""
    collection.transform = transform
    if transform is None:
        collection.meta.pop("feature_transform", None)
    else:
        collection.meta["feature_transform"] = transform.describe()
