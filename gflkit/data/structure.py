"""Node features computed from a graph's edges alone, for graphs that come without any.

Two blocks, both from sparse products only (memory linear in nodes + edges):

* **local degree profile** (5 columns; Cai and Wang, 2018): ``log(1 + degree)``
  of the node, and the mean, minimum, maximum and standard deviation of it over
  the node's neighbours (0 for an isolated node). These mean the same on every
  graph, so a model trained on one graph's can read another's.
* **spectral coordinates** (``dims`` columns): the leading eigenvectors of
  ``M = (I + D^-1/2 (A + I) D^-1/2) / 2`` after its first, ``sqrt(degree + 1)``
  (which says nothing the degree profile does not) (the GCN propagation shifted to
  eigenvalues in ``[0, 1]``; its leading eigenvectors are the smoothest
  functions on the graph, which separate its communities, as in spectral
  clustering), each scaled to unit standard deviation and weighted by its
  eigenvalue to the power :data:`DIFFUSION_TIME` (diffusion-map coordinates: a
  rougher eigenvector counts less). They are found by ``iterations`` rounds of
  orthonormalised subspace iteration from a seeded random start followed by a
  Rayleigh-Ritz rotation, so the cost is bounded (``iterations x edges x
  (dims + 8)``) whatever the spectrum. Their signs and order are arbitrary on
  each graph, so they serve methods fitted on the same graph's labels; a model
  meant to transfer between graphs should read the degree profile only
  (``dims=0``).

Each block is scaled to a total variance of 1 over its columns, so neither
outweighs the other in a distance.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

__all__ = ["structural_features"]

#: Spectral columns given by default.
SPECTRAL_DIMS = 16
#: Rounds of subspace iteration.
ITERATIONS = 40
#: The power of each eigenvalue that weighs its eigenvector.
DIFFUSION_TIME = 8
#: Extra vectors iterated beside the ``dims`` kept (they speed up the convergence of the kept ones).
OVERSAMPLING = 8


def _adjacency(src: np.ndarray, dst: np.ndarray, n: int) -> sp.csr_matrix:
    """The simple undirected 0/1 adjacency (no self-loops) of an edge list."""
    keep = src != dst
    a = sp.coo_matrix((np.ones(int(keep.sum()) * 2), (np.r_[src[keep], dst[keep]], np.r_[dst[keep], src[keep]])),
                      shape=(n, n)).tocsr()
    a.data[:] = 1.0  # duplicates summed by tocsr count once
    return a


def degree_profile(a: sp.csr_matrix) -> np.ndarray:
    """The local degree profile of every node: ``(N, 5)`` (see the module docstring)."""
    n = a.shape[0]
    deg = np.asarray(a.sum(1)).ravel()
    x = np.log1p(deg)
    count = np.maximum(deg, 1)
    mean = (a @ x) / count
    sq = (a @ (x * x)) / count
    std = np.sqrt(np.maximum(sq - mean * mean, 0.0))
    coo = a.tocoo()
    lo = np.full(n, np.inf)
    hi = np.full(n, -np.inf)
    np.minimum.at(lo, coo.row, x[coo.col])
    np.maximum.at(hi, coo.row, x[coo.col])
    lo[deg == 0] = 0.0
    hi[deg == 0] = 0.0
    return np.stack([x, mean, lo, hi, std], axis=1)


def spectral_coordinates(a: sp.csr_matrix, dims: int, iterations: int = ITERATIONS, seed: int = 0) -> np.ndarray:
    """The ``dims`` leading eigenvectors of ``(I + D^-1/2 (A + I) D^-1/2) / 2`` and their eigenvalues:
    ``(N, dims)`` weighted by eigenvalue ** :data:`DIFFUSION_TIME` (see the module docstring)."""
    n = a.shape[0]
    block = min(n, dims + OVERSAMPLING)
    if dims <= 0 or n == 0:
        return np.zeros((n, 0))
    a_loop = a + sp.identity(n, format="csr")
    d = 1.0 / np.sqrt(np.asarray(a_loop.sum(1)).ravel())
    m = 0.5 * (sp.identity(n, format="csr") + sp.diags(d) @ a_loop @ sp.diags(d))
    top = 1.0 / d  # M's leading eigenvector (eigenvalue 1), sqrt(degree + 1): degree, which the profile holds
    top /= np.linalg.norm(top)
    q = np.random.default_rng([int(seed), n]).standard_normal((n, block))
    for _ in range(iterations + 1):
        q -= np.outer(top, top @ q)  # deflated: the iteration finds the next ones
        q, _ = np.linalg.qr(q)
        q = m @ q
    q -= np.outer(top, top @ q)
    q, _ = np.linalg.qr(q)
    values, vectors = np.linalg.eigh(q.T @ (m @ q))  # Rayleigh-Ritz: ascending
    order = np.argsort(-values, kind="stable")[:min(dims, block)]
    coords = q @ vectors[:, order]  # (N, dims)
    coords *= np.sign(coords.sum(0) + 1e-12)  # a fixed sign per column: the same graph gives the same features
    weight = np.clip(values[order], 0.0, 1.0) ** DIFFUSION_TIME
    coords = coords / np.maximum(coords.std(0), 1e-12) * weight
    if coords.shape[1] < dims:
        coords = np.hstack([coords, np.zeros((n, dims - coords.shape[1]))])
    return coords


def _unit_block(x: np.ndarray) -> np.ndarray:
    """Columns centred, the block scaled to a total variance of 1."""
    x = x - x.mean(0)
    total = float((x * x).sum(1).mean()) if len(x) else 0.0
    return x / np.sqrt(total) if total > 0 else x


def structural_features(src, dst, num_nodes: int, dims: int = SPECTRAL_DIMS, iterations: int = ITERATIONS,
                        seed: int = 0) -> torch.Tensor:
    """Node features from the edges alone: the degree profile and ``dims`` spectral coordinates.

    Args:
        src, dst: the edges (either direction, duplicates and self-loops allowed).
        num_nodes: nodes of the graph.
        dims: spectral columns (0: the degree profile only, which transfers between graphs).
        iterations: rounds of subspace iteration for the spectral columns.
        seed: seed of the subspace iteration's start.

    Shapes:
        src, dst ``(E,)`` -> ``(num_nodes, 5 + dims)`` float32.
    """
    src = np.asarray(torch.as_tensor(src).cpu().numpy(), dtype=np.int64)
    dst = np.asarray(torch.as_tensor(dst).cpu().numpy(), dtype=np.int64)
    a = _adjacency(src, dst, int(num_nodes))
    blocks = [_unit_block(degree_profile(a))]
    if dims > 0:
        blocks.append(_unit_block(spectral_coordinates(a, dims, iterations, seed)))
    return torch.from_numpy(np.hstack(blocks).astype(np.float32))


#: Where a collection records that its features are structural (``meta``), and how they were computed.
STRUCTURE_KEY = "structural_features"


def give_structural_features(collection, dims: int = 0, seed: int = 0):
    """Replace every graph's features of ``collection`` by :func:`structural_features` (``dims=0``: the degree
    profile alone, which means the same on every graph, so a model trained on them transfers), and record it
    in ``collection.meta`` (:data:`STRUCTURE_KEY`), so a run trained on it computes them for a graph that has
    no features (:meth:`gflkit.prediction.predictor.Predictor.prepare`). Returns ``collection``."""
    for g in collection.graphs:
        src, dst = g.edges()
        g.ndata["feat"] = structural_features(src, dst, g.num_nodes(), dims, seed=seed)
    collection.meta[STRUCTURE_KEY] = {"dims": int(dims), "seed": int(seed)}
    return collection
