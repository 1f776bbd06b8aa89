"""Label Propagation (Zhu & Ghahramani 2002) on a test graph's structure.

Label scores ``F`` (N, C) start at the one-hot support labels and zero
elsewhere; each iteration spreads them one hop, ``F <- P F``, and clamps the
support rows back to their labels. With ``P = D^-1 A`` (``norm="rw"``, the
original) the fixed point is the harmonic solution
``F_U = (I - P_UU)^-1 P_UL Y_L``; ``norm="sym"`` uses ``D^-1/2 A D^-1/2``.
"""
from __future__ import annotations

import dgl
import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F

from ...episodes import Episode
from .common import support_targets, undirected

__all__ = ["fit_predict_lp"]


def propagation_matrix(g: dgl.DGLGraph, norm: str = "rw") -> sp.csr_matrix:
    """The normalised adjacency ``P`` of the undirected, loop-free graph.

    Isolated nodes get an all-zero row (they receive nothing).

    Shapes:
        returns a sparse ``(N, N)`` float64 matrix.
    """
    if norm not in ("rw", "sym"):
        raise ValueError(f"norm={norm!r}: choose rw (D^-1 A) or sym (D^-1/2 A D^-1/2)")
    h = undirected(g)
    src, dst = (t.numpy() for t in h.edges())
    n = h.num_nodes()
    adj = sp.csr_matrix((np.ones(src.size), (dst, src)), shape=(n, n))
    deg = np.asarray(adj.sum(1)).ravel()
    inv = np.divide(1.0, deg, out=np.zeros(n), where=deg > 0)
    if norm == "rw":
        return sp.diags(inv) @ adj
    half = np.sqrt(inv)
    return (sp.diags(half) @ adj @ sp.diags(half)).tocsr()


def propagate_labels(p: sp.csr_matrix, seeds: np.ndarray, labels: np.ndarray, num_classes: int, *,
                     max_iter: int = 1000, tol: float = 1e-6) -> np.ndarray:
    """Iterate ``F <- P F`` with the seed rows clamped, until the largest change is below ``tol``.

    Shapes:
        p ``(N, N)``; seeds, labels ``(S,)`` -> scores ``(N, C)``.
    """
    clamp = np.eye(num_classes)[labels]  # (S, C)
    f = np.zeros((p.shape[0], num_classes))
    f[seeds] = clamp
    for _ in range(max_iter):
        nxt = p @ f
        nxt[seeds] = clamp
        change = np.abs(nxt - f).max()
        f = nxt
        if change < tol:
            break
    return f


def fit_predict_lp(
    g: dgl.DGLGraph,
    episode: Episode,
    *,
    num_classes: int,
    seed: int = 0,
    norm: str = "rw",
    class_mass: bool = True,
    max_iter: int = 1000,
    tol: float = 1e-6,
) -> torch.Tensor:
    """Propagate the support labels over ``g`` and predict the queries.

    A query that no label reaches (its component holds no support node)
    takes the class of the nearest support-class mean of the node features
    (cosine), so every prediction is deterministic; ties go to the lowest
    class. LP draws nothing at random, so ``seed`` is unused.

    With ``class_mass`` (Zhu, Ghahramani & Lafferty 2003, class mass
    normalisation), each class's scores are divided by that class's total mass
    over the non-support nodes before the argmax. With few labels on a graph
    of uneven degrees, the plain harmonic solution tends to hand almost every
    node to the class whose support nodes have the largest degrees.

    Shapes:
        returns ``(Q,)`` predicted classes of ``episode.query``.
    """
    support, target = support_targets(episode)
    scores = propagate_labels(propagation_matrix(g, norm), support.numpy(), target.numpy(), num_classes,
                              max_iter=max_iter, tol=tol)
    q = episode.query.numpy()
    if class_mass:
        free = np.ones(scores.shape[0], dtype=bool)
        free[support.numpy()] = False
        mass = scores[free].sum(0, keepdims=True)
        scores = np.divide(scores, mass, out=np.zeros_like(scores), where=mass > 0)
    pred = torch.from_numpy(scores[q].argmax(1))
    unreached = torch.from_numpy(scores[q].sum(1) <= 0)
    if unreached.any():
        feat = F.normalize(g.ndata["feat"].double(), dim=1)
        means = F.normalize(feat[episode.support].mean(1), dim=1)  # (C, F)
        pred[unreached] = (feat[episode.query[unreached]] @ means.T).argmax(1)
    return pred.long()
