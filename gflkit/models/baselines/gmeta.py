"""G-Meta (Huang & Zitnik, NeurIPS 2020): local subgraphs, prototypes and MAML.

Each node is represented by its *local subgraph*, the nodes within ``hops``
hops of it (G-Meta: 2), at most ``max_nodes`` of them: the centre, then the
nodes one hop away, then two hops away, a layer that does not fit whole being
sampled (seeded by the node id, so a hub's subgraph stays bounded and is the
same in every chunk and every run). A two-layer GNN runs on the batch of
subgraphs and a node's embedding is its centre's output in its own subgraph.
Class prototypes are the means of the support embeddings and a node scores each
class by the negative squared Euclidean distance to its prototype (the
prototypical loss). The GNN's weights are meta-learned with MAML: for each
graph of a meta-batch they take ``inner_steps`` SGD steps on the support set's
prototypical loss; the outer loss is the query loss under the adapted weights,
with prototypes of the adapted support embeddings, minimised by the training
loop's Adam.

Choices of this implementation, against the paper's code:

* the GNN is gflkit's two-layer GCN (:func:`gflkit.nn.make_encoder`, ``encoder="gcn"``:
  ``dgl.nn.GraphConv(norm="both")`` with the normalisation stored once), 32 units like the
  other baselines, for a fair comparison; G-Meta used SGC and GIN (``encoder="gin"``);
* the outer learning rate is G-Meta's, 1e-3, unless ``lr`` is given
  (:func:`gflkit.config.optimizer_defaults`); at that rate its validation accuracy
  still rises after the shared budget of 400 steps, so G-Meta has its own, at most
  3000 steps with a patience of 20 validation rounds, unless ``steps`` or ``patience``
  are given (:func:`gflkit.config.budget_defaults`; the curves behind it are in results/gmeta/);
* ``inner_steps=10`` in training and ``test_steps=20`` at test time, as G-Meta's,
  first-order by default (MAML's option here), to keep a CPU run within minutes;
* each training step's query loss reads at most ``train_queries`` query nodes per class,
  drawn from the episode (G-Meta's episodes are as small); evaluation scores every query.

The subgraphs of a chunk of centres are built in one pass (vectorised induced
edges, then one ``dgl.graph`` marked as a batch), not one ``dgl.node_subgraph``
per node: that costs about half a millisecond a node. Whole graphs are scored
:data:`CENTRES` centres at a time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import dgl
import numpy as np
import torch
import torch.nn.functional as F
from torch.func import functional_call

from ...episodes import Episode
from ...names import ENCODERS
from ...nn import GCNEncoder, NodeEncoder, make_encoder
from ...nn.encoder import gcn_blocks
from ...nn.conv import add_gcn_norm, is_symmetric, propagate
from ..support_sets import chunked, flat_support
from .base import TransferBaseline
from .common import support_targets

__all__ = []  # reached through the registry: gflkit.models.baselines.TRANSFER["gmeta"]

Params = dict[str, torch.Tensor]

#: Centre nodes whose subgraphs are embedded at a time.
CENTRES = 512


def neighbourhood(indptr: np.ndarray, indices: np.ndarray, centre: int, hops: int, max_nodes: int) -> np.ndarray:
    """The nodes of ``centre``'s local subgraph: ``centre`` first, then each hop's new nodes (in-neighbours).

    A hop whose new nodes do not all fit in ``max_nodes`` is sampled without
    replacement by a generator seeded with ``centre``; later hops are left out.

    Args:
        indptr, indices: the graph's CSC arrays (in-neighbours of node ``v`` are
            ``indices[indptr[v]:indptr[v + 1]]``).
        centre: the node.
        hops: radius of the neighbourhood.
        max_nodes: cap on the subgraph's nodes (>= 1).

    Shapes:
        returns ``(n,)`` node ids, ``1 <= n <= max_nodes``, no repeats.
    """
    kept = [np.array([centre], dtype=np.int64)]
    seen = kept[0]
    room = max_nodes - 1
    frontier = kept[0]
    for _ in range(hops):
        if room <= 0 or frontier.size == 0:
            break
        reached = np.concatenate([indices[indptr[u]:indptr[u + 1]] for u in frontier])
        new = np.setdiff1d(reached, seen)  # sorted, unique
        if new.size > room:
            new = np.sort(np.random.default_rng(centre).choice(new, size=room, replace=False))
        kept.append(new)
        seen = np.union1d(seen, new)
        room -= new.size
        frontier = new
    return np.concatenate(kept)


def neighbourhoods(indptr: np.ndarray, indices: np.ndarray, centres: np.ndarray, hops: int,
                   max_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`neighbourhood` of every node of ``centres`` at once: the same nodes in the same order.

    Each hop is taken for all centres together on ``(centre, node)`` keys; only a
    hop that does not fit under a centre's cap goes through the per-centre
    seeded draw of :func:`neighbourhood` (the same generator on the same
    sorted candidates), so the result does not depend on which centres are
    asked together.

    Shapes:
        centres ``(B,)``; returns the size of each neighbourhood ``(B,)`` and
        their nodes one after another ``(sum of sizes,)``.
    """
    centres = np.asarray(centres, dtype=np.int64)
    b = centres.size
    n = max(int(indptr.size) - 1, 1)
    owner = np.arange(b, dtype=np.int64)  # (centre, node) pairs of the nodes kept so far
    node = centres.copy()
    seen = owner * n + node  # sorted keys of the kept pairs
    room = np.full(b, max_nodes - 1, dtype=np.int64)
    frontier_owner, frontier = owner, node
    for _ in range(hops):
        active = room[frontier_owner] > 0
        frontier_owner, frontier = frontier_owner[active], frontier[active]
        if frontier.size == 0:
            break
        deg = indptr[frontier + 1] - indptr[frontier]
        start = np.repeat(indptr[frontier] - (np.cumsum(deg) - deg), deg)
        reached = indices[start + np.arange(int(deg.sum()))]
        keys = np.sort(np.repeat(frontier_owner, deg) * n + reached)  # by centre, then node
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.size else keys
        at = np.searchsorted(seen, keys).clip(max=seen.size - 1)
        keys = keys[seen[at] != keys]  # not kept yet
        new_owner, new = keys // n, keys % n
        count = np.bincount(new_owner, minlength=b)
        over = np.flatnonzero(count > room)
        if over.size:  # a hop that does not fit: the per-centre draw of `neighbourhood`
            keep = np.ones(keys.size, dtype=bool)
            first = np.cumsum(count) - count
            for c in over.tolist():
                block = new[first[c]:first[c] + count[c]]  # sorted, unique: as setdiff1d gives them
                drawn = np.random.default_rng(int(centres[c])).choice(block, size=int(room[c]), replace=False)
                keep[first[c]:first[c] + count[c]] = False
                keep[first[c] + np.searchsorted(block, drawn)] = True
            keys, new_owner, new = keys[keep], new_owner[keep], new[keep]
        room -= np.bincount(new_owner, minlength=b)
        owner, node = np.concatenate([owner, new_owner]), np.concatenate([node, new])
        seen = np.sort(np.concatenate([seen, keys]))
        frontier_owner, frontier = new_owner, new
    order = np.argsort(owner, kind="stable")  # per centre: the centre, then each hop's nodes in order
    return np.bincount(owner, minlength=b), node[order]


@dataclass(frozen=True)
class SubgraphBatch:
    """The local subgraphs of some centre nodes, batched.

    Attributes:
        graph: one graph holding the subgraphs as a ``dgl.batch`` would (``batch_num_nodes``
            set), with self-loops, features ``feat`` and its own GCN normalisation.
        centres: ``(B,)`` position of each subgraph's centre in ``graph`` (its first node).
        nodes: ``(M,)`` id in the parent graph of each node of ``graph``.
        symmetric: whether ``graph`` is symmetric (as it is when the parent graph is).
    """

    graph: dgl.DGLGraph
    centres: torch.Tensor
    nodes: torch.Tensor
    symmetric: bool


def local_subgraphs(g: dgl.DGLGraph, centres: torch.Tensor, hops: int = 2, max_nodes: int = 64, *,
                   symmetric: bool | None = None, features: bool = True) -> SubgraphBatch:
    """The local subgraph (:func:`neighbourhood`) of each node of ``centres`` in ``g``, batched.

    Each subgraph holds every edge of ``g`` between its nodes (self-loops included, so a prepared
    ``g`` gives prepared subgraphs); the same node in two subgraphs is two nodes of the batch.

    Args:
        g: a graph with ``ndata["feat"]``, usually prepared (:func:`gflkit.graphs.prepare_graph`).
        centres: ``(B,)`` node ids.
        hops, max_nodes: as :func:`neighbourhood`.
        symmetric: whether ``g`` is symmetric, when the caller knows (its induced subgraphs then
            are); ``None``: the batch is checked.
        features: copy each batch node's features into ``graph.ndata["feat"]``; ``False`` leaves
            them out, for a caller that reads ``g``'s features through :attr:`SubgraphBatch.nodes`.
    """
    indptr, indices, _ = g.adj_tensors("csc")
    indptr, indices = indptr.numpy(), indices.numpy()
    sizes, nodes = neighbourhoods(indptr, indices, centres.numpy(), hops, max_nodes)
    src, dst = _induced_edges(indptr, indices, sizes, nodes, g.num_nodes())
    m, count = int(nodes.size), sizes.size
    bg = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=m)
    bg.set_batch_num_nodes(torch.from_numpy(sizes))
    bg.set_batch_num_edges(torch.from_numpy(np.bincount(np.repeat(np.arange(count), sizes)[dst], minlength=count)))
    add_gcn_norm(bg, torch.from_numpy(np.bincount(src, minlength=m)), torch.from_numpy(np.bincount(dst, minlength=m)))
    ids = torch.from_numpy(nodes)
    if features:
        bg.ndata["feat"] = g.ndata["feat"][ids]
    return SubgraphBatch(bg, torch.from_numpy(np.cumsum(sizes) - sizes), ids,
                         is_symmetric(bg) if symmetric is None else symmetric)


#: Entries of the (subgraphs x nodes) table of positions :func:`_induced_edges` fills at a time (8 MiB).
TABLE_ENTRIES = 1 << 21


def _induced_edges(indptr: np.ndarray, indices: np.ndarray, sizes: np.ndarray, nodes: np.ndarray,
                   n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every edge of the graph (CSC ``indptr``, ``indices`` of ``n`` nodes) between two nodes of the same
    subgraph, as ``(src, dst)`` positions in the batch ``nodes`` (subgraphs of ``sizes`` one after another).

    Edges come in the order of their destinations, then of the graph's in-edges. A node's position
    in its subgraph is read from a table of (subgraph, node) entries, filled for as many subgraphs
    at a time as :data:`TABLE_ENTRIES` allows (memory linear in ``n``) and cleared after.
    """
    count = sizes.size
    start = np.cumsum(sizes) - sizes  # each subgraph's first position in the batch
    member = np.repeat(np.arange(count), sizes)
    local = (np.arange(nodes.size) - start[member]).astype(np.int32)
    deg = indptr[nodes + 1] - indptr[nodes]
    edge_end = np.cumsum(deg)
    dst = np.repeat(np.arange(nodes.size), deg)
    total = int(edge_end[-1]) if deg.size else 0
    src_parent = indices[np.repeat(indptr[nodes] - (edge_end - deg), deg) + np.arange(total)]
    found = np.empty(dst.size, dtype=np.int32)
    per = max(1, TABLE_ENTRIES // max(n, 1))
    table = np.full((min(per, max(count, 1)), n), -1, dtype=np.int32)
    for lo in range(0, count, per):
        hi = min(lo + per, count)
        a, b = int(start[lo]), int(start[hi - 1] + sizes[hi - 1])  # batch positions of these subgraphs
        ea, eb = int(edge_end[a] - deg[a]) if a < b else 0, int(edge_end[b - 1]) if a < b else 0
        rows = member[a:b] - lo
        table[rows, nodes[a:b]] = local[a:b]
        found[ea:eb] = table[member[dst[ea:eb]] - lo, src_parent[ea:eb]]
        table[rows, nodes[a:b]] = -1
    keep = found >= 0
    return start[member[dst[keep]]] + found[keep], dst[keep]


def prototypes(z: torch.Tensor, target: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Mean embedding per class. Shapes: z ``(S, d)``, target ``(S,)`` -> ``(C, d)``."""
    total = z.new_zeros(num_classes, z.shape[1]).index_add(0, target, z)
    return total / torch.bincount(target, minlength=num_classes).clamp_min(1).unsqueeze(1).to(z.dtype)


def neg_sq_distances(z: torch.Tensor, protos: torch.Tensor) -> torch.Tensor:
    """``-||z_i - p_c||^2``. Shapes: z ``(Q, d)``, protos ``(C, d)`` -> ``(Q, C)``."""
    return -(z.unsqueeze(1) - protos.unsqueeze(0)).pow(2).sum(2)


class GMeta(TransferBaseline):
    """G-Meta: a MAML-trained GNN on local subgraphs, with prototypes of the support subgraphs.

    Args:
        in_feats: node feature size.
        num_classes: size of the shared label set (no head: it scores any classes).
        hidden_feats, out_feats: GNN widths (32, 32 as the other baselines).
        encoder: the two-layer GNN, one of :data:`gflkit.names.ENCODERS` (``gcn``; G-Meta: SGC, GIN).
        hops: radius of the local subgraphs (G-Meta: 2).
        max_nodes: cap on a subgraph's nodes.
        inner_lr: SGD step of the inner loop (G-Meta: 0.01).
        inner_steps: inner steps during meta-training (G-Meta: 10).
        test_steps: inner steps when adapting to a new support set (G-Meta: 20).
        first_order: drop the second derivatives of the meta-gradient (default, as MAML here).
        train_queries: query nodes per class in a training step's loss (``None``: all).

    Shapes:
        ``embed(g)`` -> ``(N, out_feats)``; ``class_scores(g, support)`` -> ``(N, C)``.
    """

    name = "gmeta"
    embeds = True
    adapts = True

    def __init__(self, in_feats: int, num_classes: int, *, hidden_feats: int = 32, out_feats: int = 32,
                 encoder: str = "gcn", hops: int = 2, max_nodes: int = 64, inner_lr: float = 0.01,
                 inner_steps: int = 10, test_steps: int = 20, first_order: bool = True,
                 train_queries: int | None = 10) -> None:
        if encoder not in ENCODERS:
            raise ValueError(f"encoder={encoder!r}: choose one of {', '.join(ENCODERS)}")
        if hops < 1 or max_nodes < 1:
            raise ValueError(f"hops={hops} and max_nodes={max_nodes} must be at least 1")
        if inner_lr <= 0 or inner_steps < 1 or test_steps < 0:
            raise ValueError("G-Meta needs inner_lr > 0, inner_steps >= 1 and test_steps >= 0")
        if train_queries is not None and train_queries < 1:
            raise ValueError(f"train_queries={train_queries} must be at least 1 (or None for all)")
        super().__init__(in_feats, num_classes, hidden_feats=hidden_feats, out_feats=out_feats, encoder=encoder,
                         hops=hops, max_nodes=max_nodes, inner_lr=inner_lr, inner_steps=inner_steps,
                         test_steps=test_steps, first_order=first_order, train_queries=train_queries)
        self.encoder = make_encoder(encoder, in_feats, hidden_feats, out_feats)

    def subgraphs(self, g: dgl.DGLGraph, centres: torch.Tensor) -> SubgraphBatch:
        """The local subgraphs of ``centres`` in ``g`` under this model's ``hops`` and ``max_nodes``."""
        return local_subgraphs(g, centres, self.options["hops"], self.options["max_nodes"])

    def _centres(self, params: Params | None, batch: SubgraphBatch) -> torch.Tensor:
        """Embedding of each centre in its subgraph, under ``params`` (default: the model's).

        With the GCN encoder the weights are read as given (:func:`_blocked_gcn`); other encoders go
        through ``functional_call``, which swaps the module's parameters while it runs, so another
        thread would see the swapped ones."""
        if params is not None and self._blocks_gcn():
            return _blocked_gcn([params], (batch.graph, batch.symmetric), [batch])[0]
        told = {"symmetric": batch.symmetric} if isinstance(self.encoder, NodeEncoder) else {}
        z = (self.encoder(batch.graph, **told) if params is None
             else functional_call(self.encoder, params, (batch.graph,), told))
        return z[batch.centres]

    def _adapt(self, support: SubgraphBatch, target: torch.Tensor, num_classes: int, steps: int,
               create_graph: bool = False) -> tuple[Params, list[float]]:
        """Inner loop: ``steps`` SGD steps from the model's weights on the support prototypical loss.

        Returns:
            The adapted weights (differentiable with respect to the model's) and the support loss
            before each step.
        """
        params: Params = dict(self.encoder.named_parameters())
        losses = []
        with torch.enable_grad():
            for _ in range(steps):
                z = self._centres(params, support)
                loss = F.cross_entropy(neg_sq_distances(z, prototypes(z, target, num_classes)), target)
                grads = torch.autograd.grad(loss, list(params.values()), create_graph=create_graph)
                params = {name: p - self.options["inner_lr"] * d for (name, p), d in zip(params.items(), grads)}
                losses.append(float(loss.detach()))
        return params, losses

    def adapt(self, g: dgl.DGLGraph, episode: Episode, steps: int | None = None) -> tuple[Params, list[float]]:
        """:meth:`_adapt` on ``episode``'s support set (``test_steps`` steps by default)."""
        ids, target = support_targets(episode)
        steps = self.options["test_steps"] if steps is None else steps
        return self._adapt(self.subgraphs(g, ids), target, episode.num_classes, steps)

    def _train_queries(self, episode: Episode) -> tuple[torch.Tensor, torch.Tensor]:
        """At most ``train_queries`` queries per class, drawn from the episode (seeded by its graph and support)."""
        cap = self.options["train_queries"]
        if cap is None:
            return episode.query, episode.query_label
        rng = np.random.default_rng([episode.graph_id, *episode.support.flatten().tolist()])
        label = episode.query_label.numpy()
        picked = [rng.permutation(np.flatnonzero(label == c))[:cap] for c in range(episode.num_classes)]
        keep = torch.from_numpy(np.sort(np.concatenate(picked)))
        return episode.query[keep], episode.query_label[keep]

    def step_loss(self, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                  labels: Sequence[torch.Tensor]) -> torch.Tensor:
        """Mean over graphs of the query prototypical loss after the inner loop (the meta-objective).

        With the GCN encoder (no dropout) the graphs of the meta-batch adapt side
        by side: each inner step runs every graph's subgraphs, under that graph's
        own weights, through one sparse product per layer and one gradient call
        (:func:`_blocked_gcn`), with the numbers of one graph at a time.
        """
        second_order = not self.options["first_order"]
        plans = []
        for g, ep in zip(graphs, episodes):
            ids, target = support_targets(ep)
            query, query_label = self._train_queries(ep)
            plans.append((self.subgraphs(g, ids), target, self.subgraphs(g, query), query_label, ep.num_classes))
        if not self._blocks_gcn():
            losses = []
            for support, target, queries, query_label, classes in plans:
                params, _ = self._adapt(support, target, classes, self.options["inner_steps"], second_order)
                protos = prototypes(self._centres(params, support), target, classes)
                zq = self._centres(params, queries)
                losses.append(F.cross_entropy(neg_sq_distances(zq, protos), query_label))
            return torch.stack(losses).mean()
        supports = [plan[0] for plan in plans]
        union = _union(supports)
        with torch.enable_grad():
            # one view per graph of each weight: the graphs' gradients stay apart in one gradient call
            params = [{name: p.view_as(p) for name, p in self.encoder.named_parameters()} for _ in plans]
            for _ in range(self.options["inner_steps"]):
                zs = _blocked_gcn(params, union, supports)
                loss = sum(F.cross_entropy(neg_sq_distances(z, prototypes(z, plan[1], plan[4])), plan[1])
                           for z, plan in zip(zs, plans))
                flat = [p for own in params for p in own.values()]
                grads = iter(torch.autograd.grad(loss, flat, create_graph=second_order))
                params = [{name: p - self.options["inner_lr"] * next(grads) for name, p in own.items()}
                          for own in params]
        queries = [plan[2] for plan in plans]
        both = supports + queries
        zs = _blocked_gcn(params + params, _union(both), both)
        losses = [F.cross_entropy(neg_sq_distances(zq, prototypes(zs_, plan[1], plan[4])), plan[3])
                  for zs_, zq, plan in zip(zs[:len(plans)], zs[len(plans):], plans)]
        return torch.stack(losses).mean()

    @property
    def steps_in_parts(self) -> bool:
        """With the GCN encoder the meta-batch may go in parts side by side, and graphs be scored side
        by side (the other encoders go through ``functional_call``, which rebinds the parameters)."""
        return self._blocks_gcn()

    adapts_in_threads = steps_in_parts

    def _blocks_gcn(self) -> bool:
        """Whether the encoder is the plain two-layer GCN that :func:`_blocked_gcn` computes."""
        enc = self.encoder
        return (type(enc) is GCNEncoder and enc.dropout.p == 0 and enc.conv1.relu and not enc.conv2.relu
                and enc.conv1.in_feats >= enc.conv1.out_feats and enc.conv2.in_feats >= enc.conv2.out_feats)

    @torch.no_grad()
    def _scores(self, g: dgl.DGLGraph, ids: torch.Tensor, target: torch.Tensor, num_classes: int,
                nodes: torch.Tensor | None) -> torch.Tensor:
        """Adapt on the support ``ids`` of classes ``target``; scores of ``nodes`` (default every node),
        :data:`CENTRES` at a time."""
        support = self.subgraphs(g, ids)
        params, _ = self._adapt(support, target, num_classes, self.options["test_steps"])
        params = {name: p.detach() for name, p in params.items()}
        protos = prototypes(self._centres(params, support), target, num_classes)
        nodes = torch.arange(g.num_nodes()) if nodes is None else nodes
        embed = self._embedder(g, params)
        return chunked(len(nodes), lambda part: neg_sq_distances(embed(nodes[part]), protos), CENTRES)

    def _embedder(self, g: dgl.DGLGraph, params: Params) -> Callable[[torch.Tensor], torch.Tensor]:
        """``embed(centres)``: the centres' embeddings in their subgraphs under ``params``, for the many
        chunks of one graph. ``g``'s symmetry is checked once (its subgraphs share it); with the GCN encoder
        ``g``'s features are multiplied by the first weight once and each subgraph node takes its row, instead
        of multiplying every copy of a node (a node is in about as many subgraphs as it has nodes near it)."""
        hops, cap, symmetric = self.options["hops"], self.options["max_nodes"], is_symmetric(g)
        if not self._blocks_gcn():
            return lambda centres: self._centres(params, local_subgraphs(g, centres, hops, cap, symmetric=symmetric))
        first = g.ndata["feat"] @ params["conv1.weight"]

        def embed(centres: torch.Tensor) -> torch.Tensor:
            batch = local_subgraphs(g, centres, hops, cap, symmetric=symmetric, features=False)
            h = torch.relu(propagate(batch.graph, first[batch.nodes], symmetric) + params["conv1.bias"])
            h = propagate(batch.graph, h @ params["conv2.weight"], symmetric) + params["conv2.bias"]
            return h[batch.centres]

        return embed

    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z: torch.Tensor | None = None, *,
                     nodes: torch.Tensor | None = None) -> torch.Tensor:
        """Adapt on a graph's support set (any classes, any sizes); ``-||z_v - p_c||^2`` of every
        node ``v`` (or of ``nodes``), scored :data:`CENTRES` nodes at a time. ``z`` is ignored: the GNN
        adapts to each support set.

        Shapes:
            support: ``C`` tensors of ``(K_c,)`` ids; returns ``(N, C)`` (``(Q, C)`` with ``nodes``).
        """
        ids, target = flat_support(support)
        return self._scores(g, ids, target, len(support), nodes)

    @torch.no_grad()
    def embed(self, g: dgl.DGLGraph) -> torch.Tensor:
        """Each node's embedding in its local subgraph under the meta-learned (unadapted) weights,
        :data:`CENTRES` nodes at a time. Shapes: returns ``(N, out_feats)``."""
        every = torch.arange(g.num_nodes())
        embed = self._embedder(g, {name: p.detach() for name, p in self.encoder.named_parameters()})
        return chunked(len(every), lambda part: embed(every[part]), CENTRES)


def _union(batches: Sequence[SubgraphBatch]) -> tuple[dgl.DGLGraph, bool]:
    """The subgraph batches as one graph (their nodes one batch after another) and whether it is symmetric."""
    return dgl.batch([b.graph for b in batches]), all(b.symmetric for b in batches)


def _blocked_gcn(params: Sequence[Params], union: tuple[dgl.DGLGraph, bool],
                 batches: Sequence[SubgraphBatch]) -> list[torch.Tensor]:
    """The centre embeddings of each batch under its own weights of :class:`~gflkit.nn.GCNEncoder`
    (:func:`~gflkit.nn.encoder.gcn_blocks` over ``union``, :func:`_union` of ``batches``: they share no
    edge, so each batch gets the numbers of the encoder run on it alone)."""
    graph, symmetric = union
    sizes = [b.graph.num_nodes() for b in batches]
    h = gcn_blocks(params, graph, graph.ndata["feat"], sizes, symmetric=symmetric)
    return [z[b.centres] for z, b in zip(h.split(sizes), batches)]
