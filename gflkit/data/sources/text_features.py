"""Deterministic text embeddings: hashed TF-IDF reduced by a truncated SVD.

The GFL paper embeds paper titles into 100 features (Citation) and authors into
128 features (Collaboration) without saying how. gflkit computes them offline and
reproducibly, with no fitted vocabulary:

1. tokens are lower-cased runs of letters and digits (pure numbers, one-letter
   tokens and a few English stop words dropped), hashed into ``n_buckets`` columns
   with :func:`zlib.crc32` (stable across runs, unlike Python's ``hash``);
2. TF-IDF: ``(1 + log tf) * (1 + log((1 + n) / (1 + df)))``, rows scaled to unit
   length (as scikit-learn's ``TfidfVectorizer(sublinear_tf=True)``);
3. a truncated SVD (:func:`scipy.sparse.linalg.svds`, ARPACK from a seeded start
   vector); each component's sign is fixed so its largest entry in ``U`` is positive. Row ``i`` of the
   result is ``U[i] * S``. When fewer components exist than asked for (tiny
   inputs) the remaining columns are zero.
"""
from __future__ import annotations

import re
import zlib
from array import array

import numpy as np
import scipy.sparse as sp

from ..transform import FeatureTransform, document_frequency_idf, tfidf

__all__ = []

_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are as at be by for from in into is it its of on or the to with via using we our this that".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` (see the module docstring)."""
    return [t for t in _TOKEN.findall(text.lower()) if len(t) > 1 and not t.isdigit() and t not in _STOP]


class HashedText:
    """Term counts of documents, hashed into ``n_buckets`` columns, kept as CSR arrays.

    Memory grows with the number of distinct tokens per document, never with a
    vocabulary: rows are appended to flat typed arrays as documents stream by.
    """

    def __init__(self, n_buckets: int = 1 << 16) -> None:
        self.n_buckets = int(n_buckets)
        self.indptr = array("q", [0])
        self.indices = array("i")
        self.data = array("f")
        self._cache: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.indptr) - 1

    def _bucket(self, token: str) -> int:
        b = self._cache.get(token)
        if b is None:
            b = zlib.crc32(token.encode("utf-8")) % self.n_buckets
            if len(self._cache) < 1 << 20:  # bounded: frequent words are met early
                self._cache[token] = b
        return b

    def add(self, text: str) -> int:
        """Append one document; returns its row index."""
        counts: dict[int, int] = {}
        for token in tokenize(text):
            b = self._bucket(token)
            counts[b] = counts.get(b, 0) + 1
        for b in sorted(counts):
            self.indices.append(b)
            self.data.append(counts[b])
        self.indptr.append(len(self.indices))
        return len(self) - 1

    def matrix(self) -> sp.csr_matrix:
        """The counts as a ``(documents, n_buckets)`` float32 CSR matrix."""
        return sp.csr_matrix(
            (np.frombuffer(self.data, dtype=np.float32), np.frombuffer(self.indices, dtype=np.int32),
             np.frombuffer(self.indptr, dtype=np.int64)),
            shape=(len(self), self.n_buckets),
        )


def truncated_svd(x: sp.spmatrix | np.ndarray, dim: int, seed: int = 0, components: bool = False):
    """Row embeddings ``U * S`` of the top ``dim`` singular triplets of ``x``.

    Computed by :func:`scipy.sparse.linalg.svds` (ARPACK, started from a seeded
    vector, so the result is reproducible), which takes the singular values from
    an SVD of ``X V`` rather than from the eigenvalues of ``X^T X``: the condition
    number is not squared and small components stay accurate. Inputs with at most
    ``dim + 1`` rows or columns take a dense SVD. Each component's sign is fixed
    so that its largest entry in ``U`` is positive; components beyond the rank of
    ``x`` are zero columns.

    With ``components`` also the ``(m, dim)`` matrix ``V`` (signs fixed like
    ``U``) that maps rows of ``x`` to the embedding: ``x @ V == U * S``.

    Shapes:
        x: ``(n, m)``; returns ``(n, dim)`` float32 (and ``(m, dim)`` float32).
    """
    from scipy.sparse.linalg import svds

    n, m = x.shape
    out = np.zeros((n, dim), dtype=np.float32)
    v = np.zeros((m, dim), dtype=np.float32)
    if min(n, m, dim) == 0 or (x.nnz if sp.issparse(x) else np.count_nonzero(x)) == 0:
        return (out, v) if components else out
    if min(n, m) <= dim + 1:  # ARPACK needs k < min(n, m)
        dense = x.toarray() if sp.issparse(x) else np.asarray(x)
        u, s, vt = np.linalg.svd(dense.astype(np.float64), full_matrices=False)
    else:
        v0 = np.random.default_rng([seed, dim]).standard_normal(min(n, m))
        u, s, vt = svds(sp.csr_matrix(x, dtype=np.float64), k=dim, v0=v0, solver="arpack")
        order = np.argsort(s)[::-1]  # svds returns ascending singular values
        u, s, vt = u[:, order], s[order], vt[order]
    r = min(dim, int((s > s[0] * max(n, m) * np.finfo(np.float64).eps).sum()))  # numerical rank
    u = u[:, :r]
    signs = np.sign(u[np.abs(u).argmax(axis=0), np.arange(r)])
    signs[signs == 0] = 1.0
    out[:, :r] = u * (s[:r] * signs)
    if not components:
        return out
    v[:, :r] = vt[:r].T * signs
    return out, v


#: The former name, kept for callers (the SVD is no longer randomized).
randomized_svd = truncated_svd


def embed_counts(counts: sp.spmatrix, dim: int, seed: int = 0) -> np.ndarray:
    """TF-IDF then truncated SVD of hashed term counts: ``(n, dim)`` float32."""
    return truncated_svd(tfidf(counts), dim, seed=seed)


def fit_text_transform(counts: sp.spmatrix, dim: int, seed: int = 0):
    """Fit TF-IDF + SVD once on ``counts``; the rows' embedding and the reusable transform.

    The returned rows are the transform applied to ``counts``, so new documents
    land in the same space as the fitted ones. They match :func:`embed_counts`
    up to rounding.

    Returns:
        ``(n, dim)`` float32 and a :class:`~gflkit.data.transform.FeatureTransform` (kind ``tfidf-svd``).
    """
    idf = document_frequency_idf(counts)
    _, v = truncated_svd(tfidf(counts, idf), dim, seed=seed, components=True)
    transform = FeatureTransform("tfidf-svd", v, idf, params={"seed": int(seed), "n_buckets": int(counts.shape[1])})
    return transform.apply(counts), transform
