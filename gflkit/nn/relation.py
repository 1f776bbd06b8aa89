"""Relational structure R_k among the support nodes of each class (paper 4.1).

For every graph of a batch and every class, the K support nodes of that class
get pairwise similarity scores from the graph's topology, turned into weights in
[0, 1]; a weight below ``mu`` becomes ``mu0``. The prototype GNN reads the
``(B, C, K, K)`` weights as dense matrices; :func:`relation_graph` gives the same
structure as one batched DGLGraph, for inspection and as a reference in tests.

All similarities are computed by message passing from the support nodes: an
``(N, C*K)`` indicator matrix is propagated over the (batched) graph, so memory
is linear in the number of nodes. Scores (paper Table 5):

* ``khop-cn``: ``|N_h(u) & N_h(v)|``, with ``N_h(u)`` the nodes within ``h`` hops
  of ``u`` (``u`` itself excluded); weight ``sigmoid(score)``.
* ``jaccard``: ``|N(u) & N(v)| / |N(u) | N(v)|`` on 1-hop neighbourhoods; weight = score.
* ``adamic-adar``: ``sum over common neighbours w of 1 / log(deg w)``; weight ``sigmoid(score)``.
* ``pagerank``: personalised PageRank (restart 0.15) from ``u`` evaluated at ``v``,
  symmetrised; weight = score divided by the largest score of the class.
* ``ppr``: personalised PageRank over the whole graph, converged (see
  :func:`ppr_matrix`), as a log ratio to what a walk that forgot where it
  started would give (:func:`ppr_log_ratio`); weight ``sigmoid(score)``, 0.5
  where the pair is as related as two nodes of their degrees at random.
* ``learned`` and ``combined`` score pairs from the node embeddings with a
  :class:`RelationScorer` (parameters, trained end to end); ``combined`` adds
  the ``ppr`` score as a second logit. :func:`support_similarity` gives their
  graph part: nothing for ``learned`` (zeros), the ``ppr`` score for ``combined``.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import dgl
import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from ..names import LEARNED_SIMILARITIES as LEARNED
from .conv import neighbour_sum

__all__ = ["support_similarity", "relation_weights", "relation_graph"]

#: Restart probability of the ``ppr`` similarity's walks.
PPR_RESTART = 0.15
#: The ``ppr`` power iteration stops once a step changes no column by more than this (L1); the
#: PageRank vectors are then within ``PPR_TOL * (1 - restart) / restart`` of the fixed point (L1).
PPR_TOL = 1e-6
#: Ratios to the stationary mass are floored here before the log (``log`` of it is about -13.8),
#: so that a pair no walk connects keeps a finite score and gradients through ``combined`` stay finite.
PPR_FLOOR = 1e-6


def _support_indicator(num_nodes: int, support: torch.Tensor) -> torch.Tensor:
    """``(N, C*K)`` matrix with a 1 at each graph's j-th support node in column j.

    The graphs of a batch are disjoint, so they can share columns.
    """
    b, c, k = support.shape
    x = torch.zeros(num_nodes, c * k, device=support.device)
    cols = torch.arange(c * k, device=support.device).repeat(b)
    x[support.reshape(-1), cols] = 1.0
    return x


def _neighbour_sum(g: dgl.DGLGraph, x: torch.Tensor) -> torch.Tensor:
    """``A x`` for the adjacency A without self-loops (g has one per node)."""
    return neighbour_sum(g, x) - x


def _per_graph_blocks(g: dgl.DGLGraph, left: torch.Tensor, right: torch.Tensor, c: int, k: int) -> torch.Tensor:
    """``left_b^T right_b`` restricted to same-class pairs, per graph.

    With few columns (``C*K <= 128``) one ``(C*K x n_b) @ (n_b x C*K)`` product
    per graph reads contiguous rows and its diagonal ``K x K`` blocks are kept:
    C times the arithmetic of the blocks alone, but one large product is much
    faster than ``C`` small ones on strided column slices. With more columns,
    each class's columns are copied out once and multiplied in one batched
    product per graph.

    Shapes:
        left, right: ``(N, C*K)``; returns ``(B, C, K, K)``.
    """
    sizes = g.batch_num_nodes().tolist()
    out = left.new_empty(len(sizes), c, k, k)
    for b, (lb, rb) in enumerate(zip(left.split(sizes), right.split(sizes))):
        if c * k <= 128:
            full = lb.t() @ rb  # (C*K, C*K)
            out[b] = full.view(c, k, c, k).diagonal(dim1=0, dim2=2).permute(2, 0, 1)
        else:
            lc = lb.view(-1, c, k).transpose(0, 1)  # (C, n_b, K)
            rc = lc if left is right else rb.view(-1, c, k).transpose(0, 1)
            torch.bmm(lc.transpose(1, 2), rc, out=out[b])
    return out


def _column_at_support(x: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """``x[u, col(v)]`` for same-class support pairs: ``(B, C, K, K)``."""
    b, c, k = support.shape
    cols = torch.arange(c * k, device=support.device).view(c, k)
    rows = x[support.reshape(b, c, k)]  # (B, C, K, C*K)
    return torch.stack([rows[:, i][:, :, cols[i]] for i in range(c)], dim=1)


@torch.no_grad()
def support_similarity(
    g: dgl.DGLGraph, support: torch.Tensor, method: str = "khop-cn", hops: int = 3
) -> torch.Tensor:
    """Raw similarity scores between same-class support nodes.

    Args:
        g: batched graph with one self-loop per node.
        support: support node ids in the batched graph, ``(B, C, K)``.
        method: one of ``khop-cn``, ``jaccard``, ``adamic-adar``, ``pagerank``, ``ppr``;
            ``combined`` gives its ``ppr`` part, ``learned`` (no graph part) zeros.
        hops: neighbourhood radius of ``khop-cn``.

    Shapes:
        returns ``(B, C, K, K)``, symmetric; the diagonal is meaningless.
    """
    b, c, k = support.shape
    if method == "khop-cn" and g.device.type == "cpu":
        scores = _khop_scores_sparse(g, support, hops)
        if scores is not None:
            return scores
    x = _support_indicator(g.num_nodes(), support)
    if method == "khop-cn":
        walks = x
        for _ in range(hops):  # walks of length `hops` (self-loops let them stay put)
            walks = neighbour_sum(g, walks)
        # Walk counts are whole numbers >= 0: capped at 1 they mark the nodes
        # within `hops` hops, self included (one pass, in place).
        reach = walks.clamp_(max=1.0)
        shared = _per_graph_blocks(g, reach, reach, c, k)
        close = _column_at_support(reach, support)  # 1 where v is within `hops` of u
        # |B(u) & B(v)| counts u and v themselves when they are within reach.
        return shared - close - close.transpose(-1, -2)
    if method in ("jaccard", "adamic-adar"):
        nbr = _neighbour_sum(g, x)  # (N, C*K): 1 where a node neighbours the support node
        if method == "jaccard":
            inter = _per_graph_blocks(g, nbr, nbr, c, k)
            deg = _neighbour_counts(g, nbr, c, k)  # (B, C, K)
            union = deg.unsqueeze(-1) + deg.unsqueeze(-2) - inter
            return torch.where(union > 0, inter / union.clamp(min=1), torch.zeros_like(inter))
        degree = (g.in_degrees() - 1).float().clamp(min=2)
        weight = 1.0 / torch.log(degree)
        return _per_graph_blocks(g, nbr * weight.unsqueeze(-1), nbr, c, k)
    if method == "ppr" or method == "combined":
        return ppr_log_ratio(g, support)
    if method == "learned":
        return torch.zeros(b, c, k, k, device=support.device)
    if method == "pagerank":
        restart, steps = 0.15, 30
        out_deg = (g.out_degrees() - 1).float().clamp(min=1).unsqueeze(-1)
        p = x.clone()
        for _ in range(steps):
            p = restart * x + (1 - restart) * _neighbour_sum(g, p / out_deg)
        score = _column_at_support(p, support)  # ppr_v(u) for column v at row u
        return 0.5 * (score + score.transpose(-1, -2))
    raise ValueError(f"unknown similarity {method!r}")


def _out_degrees(g: dgl.DGLGraph) -> torch.Tensor:
    """Out-degrees without the self-loop every node of a prepared graph has."""
    return (g.out_degrees() - 1).clamp(min=0)


def ppr_matrix(g: dgl.DGLGraph, sources: torch.Tensor, restart: float = PPR_RESTART, tol: float = PPR_TOL,
               max_steps: int = 10_000) -> torch.Tensor:
    """Personalised PageRank vectors of the ``sources``, column by column: ``(N, S)`` in float64.

    Column ``s`` is ``pi_s = restart (I - (1 - restart) W)^-1 e_s``, with ``W`` the random
    walk on ``g`` without its self-loops (``W[v, u] = 1 / outdeg(u)`` for each edge ``u -> v``):
    the distribution of where a walk from ``s`` that restarts at ``s`` with probability
    ``restart`` at each step is found. A walk that reaches a node without out-edges stops
    there, its mass lost (as the inverse says). Power iteration, one sparse product of the
    (batched) graph with the ``(N, S)`` matrix per step, until a step changes no column by
    more than ``tol`` in L1; the graph is never made dense.

    Args:
        g: graph (or batch of graphs) with one self-loop per node.
        sources: ``(S,)`` node ids; several may share a column in a batched graph's
            distinct graphs by passing an indicator instead (see :func:`ppr_log_ratio`).
    """
    x = torch.zeros(g.num_nodes(), len(sources), dtype=torch.float64, device=sources.device)
    x[sources, torch.arange(len(sources), device=sources.device)] = 1.0
    return _power_iteration(g, x, restart, tol, max_steps)


def _power_iteration(g: dgl.DGLGraph, x: torch.Tensor, restart: float, tol: float, max_steps: int) -> torch.Tensor:
    """``p <- restart x + (1 - restart) W p`` from ``p = restart x`` until a step changes no column by more
    than ``tol`` (L1). On the CPU ``W`` is one scipy CSR matrix (self-loops dropped, ``1 / outdeg`` folded
    in); elsewhere each step is DGL's sparse product."""
    inv_deg = 1.0 / _out_degrees(g).to(x.dtype).clamp(min=1)
    if x.device.type == "cpu":
        walk = _walk_matrix(g, inv_deg.numpy())
        xs = restart * x.numpy()
        p = xs.copy()
        for _ in range(max_steps):
            nxt = walk @ p
            nxt *= 1 - restart
            nxt += xs
            change = np.abs(nxt - p).sum(0).max(initial=0.0)
            p = nxt
            if change <= tol:
                break
        return torch.from_numpy(p)
    inv_deg = inv_deg.unsqueeze(-1)
    p = restart * x
    for _ in range(max_steps):
        walked = neighbour_sum(g, p * inv_deg) - p * inv_deg  # W p: the self-loops taken out
        nxt = restart * x + (1 - restart) * walked
        change = float((nxt - p).abs().sum(0).max()) if p.numel() else 0.0
        p = nxt
        if change <= tol:
            break
    return p


def _walk_matrix(g: dgl.DGLGraph, inv_deg: np.ndarray) -> sp.csr_matrix:
    """``W`` as a CSR matrix: row ``v`` holds ``1 / outdeg(u)`` for each edge ``u -> v`` other than a self-loop."""
    n = g.num_nodes()
    indptr, indices, _ = g.adj_tensors("csc")  # column v of the adjacency: v's in-edges, as row v of W
    indptr, indices = indptr.numpy(), indices.numpy()
    rows = np.repeat(np.arange(n), np.diff(indptr))
    data = inv_deg[indices] * (indices != rows)
    walk = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    walk.eliminate_zeros()
    return walk


def ppr_log_ratio(g: dgl.DGLGraph, support: torch.Tensor, restart: float = PPR_RESTART,
                  tol: float = PPR_TOL) -> torch.Tensor:
    """The ``ppr`` score of every same-class support pair: ``log r(u, v)``.

    ``r(u, v) = (pi_u(v) + pi_v(u)) / ((d_u + d_v) / 2m)``: the PageRank mass the two
    nodes' walks (:func:`ppr_matrix`, over the whole of each graph) put on each other,
    over what the walk's stationary distribution ``d / 2m`` (degree over twice the
    number of edges of the node's graph) puts on them. On an undirected graph
    ``pi_u(v) / d_v = pi_v(u) / d_u``, so ``r = 2m pi_u(v) / d_v``, symmetric. ``r = 1``:
    as related as two nodes of these degrees drawn at random, so the score is 0 and
    ``sigmoid`` (the weight of ``khop-cn``) gives 0.5 there, ``r / (1 + r)`` in general:
    0.91 at ten times the stationary mass, 0.09 at a tenth, which the threshold ``mu``
    (0.5 by default) turns into ``mu0``. ``r`` is floored at :data:`PPR_FLOOR` (pairs
    no walk connects, isolated nodes).

    The graphs of a batch are disjoint, so their support nodes share the ``C*K`` columns.

    Shapes:
        support ``(B, C, K)`` ids in ``g`` -> ``(B, C, K, K)`` float32, symmetric on an
        undirected graph; the diagonal is meaningless.
    """
    b, c, k = support.shape
    x = _support_indicator(g.num_nodes(), support).double()
    p = _power_iteration(g, x, restart, tol, 10_000)
    mass = _column_at_support(p, support)  # [.., i, j] = pi_{u_j}(u_i)
    mass = mass + mass.transpose(-1, -2)
    deg = _out_degrees(g).double()
    sizes = g.batch_num_nodes()
    two_m = torch.zeros(len(sizes), dtype=torch.float64, device=deg.device)
    two_m.index_add_(0, torch.repeat_interleave(torch.arange(len(sizes), device=deg.device), sizes), deg)
    d = deg[support]  # (B, C, K)
    expected = (d.unsqueeze(-1) + d.unsqueeze(-2)) / two_m.clamp(min=1).view(b, 1, 1, 1)
    ratio = torch.where(expected > 0, mass / expected.clamp(min=1e-300), torch.zeros_like(mass))
    return ratio.clamp(min=PPR_FLOOR).log().float()


class RelationScorer(nn.Module):
    """Relation weights of a class's support nodes learned from their embeddings.

    ``s_ij = e_i^T A e_j + b`` on the unit-length embeddings ``e`` of support nodes
    ``i, j``, with ``A`` symmetric (``(M + M^T) / 2``), so ``s`` is symmetric and
    bounded by ``A``'s spectral norm plus ``|b|``; with ``structure`` (``combined``), a
    graph score is added as a second logit with a learned weight ``lambda`` (starting
    at 1): ``s_ij + lambda t_ij``. The weight is ``mu0 + (1 - mu0) sigmoid(s)``: a
    floor of ``mu0`` that keeps a gradient everywhere (the hard threshold of
    :func:`relation_weights` has none below ``mu``, so ``mu`` does not apply here);
    the diagonal is 1 as in :func:`relation_weights`. ``M`` and ``b`` start at 0, so
    the weights start uniform (``learned``) or at the graph score's (``combined``).

    Args:
        in_feats: embedding size.
        structure: whether a graph score is added (``combined``).
        mu0: floor of the weights.

    Shapes:
        h ``(B, C, K, in_feats)``, structure ``(B, C, K, K)`` or ``None`` -> ``(B, C, K, K)``.
    """

    def __init__(self, in_feats: int, structure: bool = False, mu0: float = 0.1) -> None:
        super().__init__()
        self.in_feats, self.mu0 = in_feats, mu0
        self.bilinear = nn.Parameter(torch.zeros(in_feats, in_feats))
        self.bias = nn.Parameter(torch.zeros(()))
        self.mix = nn.Parameter(torch.ones(())) if structure else None

    def extra_repr(self) -> str:
        return f"in_feats={self.in_feats}, structure={self.mix is not None}, mu0={self.mu0}"

    def scores(self, h: torch.Tensor, structure: torch.Tensor | None = None) -> torch.Tensor:
        """The logits ``s`` (before the weight function)."""
        e = torch.nn.functional.normalize(h, dim=-1)
        a = 0.5 * (self.bilinear + self.bilinear.t())
        s = (e @ a) @ e.transpose(-1, -2) + self.bias
        if self.mix is not None:
            if structure is None:
                raise ValueError("this scorer adds a graph score: give structure")
            s = s + self.mix * structure
        return s

    def forward(self, h: torch.Tensor, structure: torch.Tensor | None = None) -> torch.Tensor:
        w = self.mu0 + (1 - self.mu0) * torch.sigmoid(self.scores(h, structure))
        eye = torch.eye(h.shape[-2], dtype=torch.bool, device=h.device)
        return w.masked_fill(eye, 1.0)


#: The sparse k-hop walk gives way to the dense one once it holds more than this
#: share of the dense ``(N, C*K)`` matrix's entries.
_SPARSE_SHARE = 0.25


def _khop_scores_sparse(g: dgl.DGLGraph, support: torch.Tensor, hops: int) -> torch.Tensor | None:
    """``khop-cn`` scores from sparse walks, or ``None`` where the dense walk is the cheaper.

    The nodes within ``hops`` hops of a support node are usually a small part
    of its graph, and their number does not grow with the graph. Here the
    walks are a sparse ``(B*C*K, N)`` matrix, one row per support node of each
    graph, and a hop visits only the edges leaving the nodes reached so far;
    the dense walk of :func:`support_similarity` visits every edge of the
    batch for each of its ``C*K`` columns, and fills ``(N, C*K)`` matrices. Once
    the reached nodes grow past ``_SPARSE_SHARE`` of that matrix (dense graphs,
    many hops), the dense walk takes over. The counts are whole numbers, so
    both give the same scores to the last bit (tested).
    """
    b, c, k = support.shape
    n, rows = g.num_nodes(), b * c * k
    # walks_next[j, v] = sum over the edges u -> v of walks[j, u]: the out-edges of each u as a row,
    # transposed from the in-edges (the format the model's sparse products use; for a symmetric graph
    # the same matrix).
    indptr, indices, _ = g.adj_tensors("csc")
    edges = sp.csr_matrix((np.ones(len(indices), np.float32), indices.numpy(), indptr.numpy()), shape=(n, n))
    edges = edges.T.tocsr()
    start = support.reshape(-1).numpy()
    starts = sp.csr_matrix((np.ones(rows, np.float32), start, np.arange(rows + 1)), shape=(rows, n))
    walks = starts
    for _ in range(hops):
        walks = walks @ edges
        if walks.nnz > _SPARSE_SHARE * n * c * k:
            return None
    walks.data[:] = 1.0  # walk counts -> reached (every stored count is > 0)
    shared = _diagonal_blocks((walks @ walks.T).tocsr(), b * c, k)  # |B(u) & B(v)|
    reached = _diagonal_blocks((walks @ starts.T).tocsr(), b * c, k)  # [i, j]: u_j within reach of u_i
    close = reached.transpose(-1, -2)  # as support_similarity's: 1 where v is within reach of u
    return (shared - close - close.transpose(-1, -2)).view(b, c, k, k)


def _diagonal_blocks(m: sp.csr_matrix, blocks: int, k: int) -> torch.Tensor:
    """The ``k x k`` diagonal blocks of a sparse ``(blocks*k, blocks*k)`` matrix: ``(blocks, k, k)``."""
    row = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr))
    col = m.indices
    keep = row // k == col // k
    out = np.zeros(blocks * k * k, np.float32)
    np.add.at(out, row[keep] * k + col[keep] % k, m.data[keep])
    return torch.from_numpy(out).view(blocks, k, k)


def _neighbour_counts(g: dgl.DGLGraph, nbr: torch.Tensor, c: int, k: int) -> torch.Tensor:
    """Neighbour counts of each support node, per graph: ``(B, C, K)``."""
    sizes = g.batch_num_nodes().tolist()
    return torch.stack([nb.sum(0).view(c, k) for nb in torch.split(nbr, sizes)])


@torch.no_grad()
def relation_weights(score: torch.Tensor, method: str, mu: float, mu0: float) -> torch.Tensor:
    """Scores -> edge weights of R_k: squash to [0, 1], threshold, unit diagonal.

    Shapes:
        score: ``(B, C, K, K)`` -> ``(B, C, K, K)``.
    """
    if method in ("khop-cn", "adamic-adar", "ppr"):
        w = torch.sigmoid(score)
    elif method == "jaccard":
        w = score.clamp(0, 1)
    elif method in LEARNED:
        raise ValueError(f"similarity {method!r} is learned: its weights come from a RelationScorer")
    elif method == "pagerank":
        k = score.shape[-1]
        off = score.masked_fill(torch.eye(k, dtype=torch.bool, device=score.device), 0)
        w = off / off.amax(dim=(-1, -2), keepdim=True).clamp(min=1e-12)
    else:
        raise ValueError(f"unknown similarity {method!r}")
    w = torch.where(w < mu, torch.full_like(w, mu0), w)
    eye = torch.eye(score.shape[-1], dtype=torch.bool, device=score.device)
    return w.masked_fill(eye, 1.0)


#: How many answers of :func:`class_relations` are remembered, at most (each ``(E, C, K, K)`` floats:
#: a few kilobytes).
REMEMBERED_RELATIONS = 256

_remembered: OrderedDict[tuple, tuple[weakref.ref, torch.Tensor]] = OrderedDict()
_remembered_lock = threading.Lock()


def class_relations(g: dgl.DGLGraph, support: torch.Tensor, similarity: str = "khop-cn", hops: int = 3,
                    mu: float = 0.5, mu0: float = 0.1, *, one_graph: bool = False,
                    scores_only: bool = False) -> torch.Tensor:
    """The relation weights among each class's support nodes (:func:`relation_weights` of
    :func:`support_similarity`), or with ``scores_only`` the scores alone (what a
    :class:`RelationScorer` reads as its graph part).

    They depend on the graph and the support ids only, and evaluation scores the
    same support sets of a graph in every validation round: the last
    :data:`REMEMBERED_RELATIONS` answers are remembered, least recently used
    first out, keyed by the graph object (the same live object: a weak
    reference is checked), the support ids and the settings. Nothing is kept
    on or beside the graph, and a graph that is gone is never matched.

    Args:
        g: a (batched) prepared graph.
        support: ``(E, C, K)`` support ids in ``g``: one set per graph of a batch, or with
            ``one_graph`` E episodes of one graph (scored as one episode with E * C classes:
            the scores of a class depend on its own support nodes only).

    Shapes:
        returns ``(E, C, K, K)``.
    """
    key = (id(g), similarity, hops, mu, mu0, one_graph, scores_only, tuple(support.shape), str(support.device),
           support.detach().cpu().numpy().tobytes())
    with _remembered_lock:
        found = _remembered.get(key)
        if found is not None and found[0]() is g:
            _remembered.move_to_end(key)
            return found[1]
    e, c, k = support.shape
    if one_graph:
        score = support_similarity(g, support.reshape(1, e * c, k), similarity, hops).view(e, c, k, k)
    else:
        score = support_similarity(g, support, similarity, hops)
    weights = score if scores_only else relation_weights(score, similarity, mu, mu0)
    with _remembered_lock:
        if len(_remembered) >= REMEMBERED_RELATIONS:  # first those of graphs gone, then the least recently used
            for gone in [k for k, (ref, _) in _remembered.items() if ref() is None]:
                del _remembered[gone]
            while len(_remembered) >= REMEMBERED_RELATIONS:
                _remembered.popitem(last=False)
        _remembered[key] = (weakref.ref(g), weights)
    return weights


_STRUCTURE_CACHE: dict[tuple[int, int, torch.device], tuple[torch.Tensor, torch.Tensor]] = {}


def relation_graph(weights: torch.Tensor) -> dgl.DGLGraph:
    """Batch the weighted K-node graphs of every (graph, class) into one DGLGraph.

    Node ``(b * C + c) * K + i`` is support node ``i`` of class ``c`` in graph
    ``b``; every ordered pair (self-loops included) is an edge whose weight
    ``edata["w"]`` comes from ``weights``.

    Shapes:
        weights: ``(B, C, K, K)``.
    """
    b, c, k, _ = weights.shape
    blocks = b * c
    key = (blocks, k, weights.device)
    if key not in _STRUCTURE_CACHE:
        ar = torch.arange(k, device=weights.device)
        i, j = torch.meshgrid(ar, ar, indexing="ij")
        offset = (torch.arange(blocks, device=weights.device) * k).view(-1, 1)
        _STRUCTURE_CACHE[key] = ((offset + i.reshape(1, -1)).reshape(-1), (offset + j.reshape(1, -1)).reshape(-1))
    src, dst = _STRUCTURE_CACHE[key]
    rg = dgl.graph((src, dst), num_nodes=blocks * k)
    rg.edata["w"] = weights.reshape(-1)
    return rg
