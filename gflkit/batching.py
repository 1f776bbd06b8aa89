"""Graphs as the models see them, and meta-batches of episodes.

:func:`prepare_graph` adds self-loops and the data every step would otherwise
recompute; :class:`GraphCache` prepares each graph of a collection once;
:func:`batch_episodes` joins a meta-batch into one ``dgl.batch`` with the
episodes' node ids shifted into it; :func:`meta_batch_loss` is the loss of a
meta-batch, computed in parts side by side on several threads.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from typing import Any, Callable, Iterator, Sequence

import dgl
import numpy as np
import torch
from torch import nn

from .data import GraphCollection
from .episodes import Episode
from .nn.conv import NORM_DST, NORM_SRC, add_gcn_norm, is_symmetric, set_symmetric

log = logging.getLogger(__name__)

__all__ = ["prepare_graph", "batch_episodes", "meta_batch_loss", "prepare_meta_batch", "PreparedMetaBatch",
           "StepLoss", "split_by_nodes", "map_graphs", "one_thread", "GraphCache"]


def prepare_graph(g: dgl.DGLGraph) -> dgl.DGLGraph:
    """The graph as the model sees it: one self-loop per node, its features, and
    what every step would otherwise recompute.

    ``ndata``: ``feat`` (the same tensor as ``g``'s, not a copy) and the GCN
    degree normalisation (:func:`~gflkit.nn.conv.add_gcn_norm`).
    """
    h = dgl.graph(g.edges(), num_nodes=g.num_nodes())
    h = add_gcn_norm(dgl.add_self_loop(dgl.remove_self_loop(h)))
    h.ndata["feat"] = g.ndata["feat"]
    return h


def _offsets(bg: dgl.DGLGraph) -> list[int]:
    sizes = bg.batch_num_nodes()
    return torch.cumsum(torch.cat([sizes.new_zeros(1), sizes[:-1]]), 0).tolist()


def _shifted_support(bg: dgl.DGLGraph, episodes: Sequence[Episode], offsets: list[int] | None = None) -> torch.Tensor:
    """The episodes' support ids in the batched graph ``bg``: ``(B, C, K)`` (``offsets``: :func:`_offsets`
    of ``bg``, when known)."""
    offsets = _offsets(bg) if offsets is None else offsets
    return torch.stack([ep.support + off for ep, off in zip(episodes, offsets)]).to(bg.device)


def batch_episodes(graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode], features: bool = True):
    """One batched graph and the episodes' node ids shifted into it.

    Args:
        graphs: prepared graphs (:func:`prepare_graph`).
        episodes: one episode per graph.
        features: batch ``ndata["feat"]`` too; ``False`` leaves it out (the
            model then takes each graph's features as they are, see
            ``GFL.forward(..., feat=)``) and keeps the GCN normalisation.

    Returns:
        ``(bg, support (B, C, K), queries)`` with ``queries`` a list of ``(Q_b,)``.
    """
    bg = dgl.batch(list(graphs)) if features else dgl.batch(list(graphs), ndata=[NORM_SRC, NORM_DST])
    set_symmetric(bg, all(is_symmetric(g) for g in graphs))  # each graph is checked once, then remembered
    offsets = _offsets(bg)
    queries = [(ep.query + off).to(bg.device) for ep, off in zip(episodes, offsets)]
    return bg, _shifted_support(bg, episodes, offsets), queries


def _feature_parts(model: nn.Module) -> bool:
    """Whether ``model`` takes a batch's features as one tensor per graph (``GFL.forward(..., feat=)``)."""
    return bool(getattr(getattr(model, "encoder", None), "takes_feature_parts", False))


def _model_batch(model: nn.Module, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode]) -> tuple:
    """:func:`batch_episodes` plus the features: ``None`` when batched in ``ndata``, or one tensor
    per graph when the model takes them so (no concatenated copy of the meta-batch's features)."""
    if not _feature_parts(model):
        return (*batch_episodes(graphs, episodes), None)
    return (*batch_episodes(graphs, episodes, features=False), [g.ndata["feat"] for g in graphs])


def _plain_loss(model: nn.Module, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                relations: Callable[[], torch.Tensor] | None = None):
    return _batch_loss(model, _model_batch(model, graphs, episodes), episodes, relations)


def _batch_loss(model: nn.Module, batch: tuple, episodes: Sequence[Episode],
                relations: torch.Tensor | Callable[[], torch.Tensor] | None = None):
    bg, support, queries, feat = batch
    extra = {} if feat is None else {"feat": feat}
    if relations is not None:
        extra["relations"] = relations
    out = model(bg, support, queries, **extra)
    return model.loss(out, [ep.query_label.to(bg.device) for ep in episodes])


def _relations_ahead(model: nn.Module) -> Callable | None:
    """``model.prototype.relations`` when the model takes relation weights computed ahead, else ``None``."""
    from .models.gfl import GFL
    from .nn.prototype import GraphPrototype

    if isinstance(model, GFL) and isinstance(model.prototype, GraphPrototype):
        return model.prototype.relations
    return None


#: torch's dropout layers: each draws its mask from the global generator.
_DROPOUT = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)


def meta_batch_workers(model: nn.Module, batch_size: int) -> int:
    """How many parts :func:`meta_batch_loss` splits a meta-batch into.

    One per torch thread, at most one per graph; a single part (the plain
    computation) when gradients are off, when the model is not on the CPU, or
    when a dropout layer would draw random numbers (parts drawing from the
    global generator side by side would make runs irreproducible).
    """
    threads = torch.get_num_threads()
    if threads < 2 or batch_size < 2 or not torch.is_grad_enabled():
        return 1
    if any(p.device.type != "cpu" for p in model.parameters()):  # the parts share the CPU's cores
        return 1
    if model.training and any(isinstance(m, _DROPOUT) and m.p > 0 for m in model.modules()):
        return 1
    return min(threads, batch_size)


def _settle(g: dgl.DGLGraph) -> None:
    """Create what DGL builds lazily on first use of a graph, so that threads
    may then read it together (a meta-batch drawn with replacement holds one
    graph several times; DGL's lazy set-up is not thread-safe)."""
    g.batch_num_nodes()
    g.batch_num_edges()
    g.create_formats_()


class _GivenGradients(torch.autograd.Function):
    """A loss value whose backward pass hands out gradients computed before."""

    @staticmethod
    def forward(ctx, value: torch.Tensor, grads: tuple, *params: torch.Tensor) -> torch.Tensor:
        ctx.grads = grads
        return value.clone()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        if grad.numel() == 1 and float(grad) == 1.0:  # loss.backward(): the gradients as they are
            return (None, None, *ctx.grads)
        return (None, None, *(None if g is None else g * grad for g in ctx.grads))


_PART_THREAD = "gflkit-part"
_POOL: dict[int, ThreadPoolExecutor] = {}
_POOL_LOCK = threading.Lock()
if hasattr(os, "register_at_fork"):  # a forked child has none of the parent's pool threads
    os.register_at_fork(after_in_child=_POOL.clear)


def _pool(workers: int) -> ThreadPoolExecutor:
    with _POOL_LOCK:
        if workers not in _POOL:
            _POOL[workers] = ThreadPoolExecutor(workers, thread_name_prefix=_PART_THREAD)
        return _POOL[workers]


def map_graphs(fn: Callable[[Any], Any], items: Sequence[Any], workers: int | None = None) -> list[Any]:
    """``[fn(x) for x in items]`` with the items shared among threads, one torch thread each.

    Scoring a graph is a chain of small kernels: spreading each of them over
    all cores costs more in waking threads than it saves (two threads took
    1.4 times as long as one to score the default family's validation graphs).
    Here each thread takes the next item and computes it alone, so the cores
    work on different graphs. With two workers or more, each item's result is
    what one thread computes, whatever their number; results come back in the
    order of ``items``.

    Args:
        fn: called once per item; it must not depend on the other items' calls.
        items: e.g. graph ids.
        workers: threads; by default one per torch thread. With one worker
            (or one item) the items are computed in the calling thread as usual.

    Returns:
        the results, in the order of ``items``.
    """
    threads = torch.get_num_threads()
    workers = threads if workers is None else workers
    workers = max(1, min(workers, len(items)))
    if threading.current_thread().name.startswith(_PART_THREAD):  # already on a pool thread: no nesting
        workers = 1
    if workers == 1:  # one item (or one worker asked for): computed here, on the caller's threads
        return [fn(x) for x in items]
    grad = torch.is_grad_enabled()  # grad mode is per thread: the workers take the caller's
    results: list[Any] = [None] * len(items)
    errors: list[BaseException] = []
    queue = iter(range(len(items)))
    lock = threading.Lock()

    def work() -> None:
        torch.set_num_threads(1)  # a pool thread's own setting (the caller's is set by one_thread)
        with torch.set_grad_enabled(grad):
            while not errors:  # after an error, each thread stops at its next item
                with lock:
                    i = next(queue, None)
                if i is None:
                    return
                try:
                    results[i] = fn(items[i])
                except BaseException as err:  # raised in the caller once every thread has stopped
                    errors.append(err)

    with one_thread():  # the caller's setting comes back afterwards, whatever happens
        others = [_pool(workers - 1).submit(work) for _ in range(workers - 1)]
        work()
        for f in others:
            f.result()
    if errors:
        raise errors[0]
    return results


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch computes on one thread in this block.

    For the small tensors between the parallel parts of a step (gradient sums,
    the optimizer's update): an operation on a few thousand numbers is split
    over the threads all the same, and waking a sleeping thread for it costs
    more than the work (Adam's update of GFL's parameters took 1.2 ms on 2
    threads and 0.2 ms on one).
    """
    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class PreparedMetaBatch:
    """A meta-batch made ready for :func:`meta_batch_loss` before any parameter is read.

    Made by :func:`prepare_meta_batch`. Attributes: ``graphs``, ``episodes``;
    ``groups``, the graph positions of each part (:func:`split_by_nodes`);
    ``batches``, each part's :func:`batch_episodes` result and its features (``None``
    when batched, else one tensor per graph); ``relations``, each
    part's relation weights (``None`` for a model that takes none ahead).
    """

    __slots__ = ("graphs", "episodes", "groups", "batches", "relations")

    def __init__(self, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode], groups: list[np.ndarray],
                 batches: list[tuple], relations: list[torch.Tensor | None]) -> None:
        self.graphs, self.episodes, self.groups = list(graphs), list(episodes), groups
        self.batches, self.relations = batches, relations


def prepare_meta_batch(model: nn.Module, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                       workers: int) -> PreparedMetaBatch:
    """What :func:`meta_batch_loss` reads of a meta-batch besides the model's parameters.

    The parts (:func:`split_by_nodes`), each part's batched graph with the
    episodes' ids shifted into it, and, for a model with graph-structured
    prototypes, the relational structure of each part's support sets: all of it
    depends on the graphs and episodes alone, so it can be made on another
    thread while the model is busy with the previous meta-batch
    (:class:`StepLoss` does). The loss of a prepared meta-batch is the loss
    computed from scratch, to the last bit (tested).

    Args:
        model: the model the meta-batch is for.
        graphs, episodes: the meta-batch.
        workers: number of parts (:func:`meta_batch_workers`, taken on the thread that will compute the loss).
    """
    workers = max(1, min(workers, len(graphs)))
    groups = split_by_nodes([g.num_nodes() for g in graphs], workers) if workers > 1 \
        else [np.arange(len(graphs), dtype=np.int64)]
    made = [_prepare_part(model, [graphs[i] for i in idx], [episodes[i] for i in idx]) for idx in groups]
    return PreparedMetaBatch(graphs, episodes, groups, [m[0] for m in made], [m[1] for m in made])


def _prepare_part(model: nn.Module, graphs: Sequence[dgl.DGLGraph],
                  episodes: Sequence[Episode]) -> tuple[tuple, torch.Tensor | None]:
    """One part's batch and relation weights (``None`` for a model that takes none ahead)."""
    for g in {id(g): g for g in graphs}.values():
        _settle(g)
    batch = _model_batch(model, graphs, episodes)
    relations_of = _relations_ahead(model)
    return batch, None if relations_of is None else relations_of(batch[0], batch[1])


def _prepare_ids(model: nn.Module, cache: "GraphCache", sampler: Any, graph_ids: Sequence[int],
                 step: int) -> tuple:
    """The part of graphs ``graph_ids`` at ``step``: ``(graphs, episodes, batch, relations)``."""
    graphs = [cache[gid] for gid in graph_ids]
    episodes = [sampler.episode(gid, step) for gid in graph_ids]
    return (graphs, episodes, *_prepare_part(model, graphs, episodes))


def meta_batch_loss(model: nn.Module, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                    workers: int | None = None, *, prepared: PreparedMetaBatch | None = None,
                    then: Sequence[Callable[[], None]] = ()) -> tuple[torch.Tensor, dict[str, float]]:
    """``model.loss(model(*batch_episodes(graphs, episodes)), labels)``, in parts side by side.

    The loss of a meta-batch is the mean of its graphs' losses, so it splits
    into parts with about the same number of nodes (:func:`split_by_nodes`),
    each weighted by its share of the graphs. With several parts (:func:`meta_batch_workers`), each part's
    forward and backward pass runs on a thread of its own with a share of the
    torch threads: independent work side by side instead of one kernel after
    another across all cores, each of which would make the cores wait for
    each other. The parts' gradients are summed in a fixed order, so a seeded
    run gives the same numbers every time (and, up to float rounding, the
    numbers of the single-part computation). The returned loss has the whole
    meta-batch's value; its ``backward()`` puts the summed gradients into the
    parameters' ``.grad``, as the plain loss's would.

    Args:
        model: a model with ``forward(bg, support, queries)`` and ``loss(out, labels)`` (:class:`~gflkit.models.gfl.GFL`).
        graphs: prepared graphs of the meta-batch (:func:`prepare_graph`).
        episodes: one episode per graph.
        workers: number of parts; by default :func:`meta_batch_workers`.
        prepared: the meta-batch made ready ahead (:func:`prepare_meta_batch`);
            then ``graphs``, ``episodes`` and ``workers`` are taken from it.
        then: jobs that do not touch the parameters (the next meta-batch's
            preparation), run once the parts are done with: a helper thread
            takes them when its own part is finished, the calling thread
            takes those left when its part is, so the jobs fill whichever
            thread would otherwise wait. Every job has started when this
            function returns; not all have ended. None runs when the
            meta-batch runs in one part. Each job handles its own errors.

    Returns:
        ``(loss, parts)`` as ``model.loss`` returns them.
    """
    if prepared is not None:
        graphs, episodes, workers = prepared.graphs, prepared.episodes, len(prepared.groups)
    else:
        workers = meta_batch_workers(model, len(graphs)) if workers is None else min(workers, len(graphs))
    if workers <= 1:
        if prepared is not None:
            return _batch_loss(model, prepared.batches[0], episodes, prepared.relations[0])
        return _plain_loss(model, graphs, episodes)
    params = [p for p in model.parameters() if p.requires_grad]
    threads = torch.get_num_threads()
    per_part = max(1, threads // workers)
    ahead: Future | None = None
    if prepared is not None:
        groups = prepared.groups
    else:
        for g in {id(g): g for g in graphs}.values():
            _settle(g)
        groups = split_by_nodes([g.num_nodes() for g in graphs], workers)
        # The relational structure of a support set depends on the graph alone.
        # The first part is the largest; the second part's thread computes the
        # first part's structure before its own work, and the first part picks it
        # up when its prototypes need it, after its encoder and gate.
        relations_of = _relations_ahead(model)
        ahead = Future() if relations_of is not None else None

        def first_part_relations() -> None:
            try:  # the structure alone: no features are batched
                bg = dgl.batch([graphs[i] for i in groups[0]], ndata=None, edata=None)
                ahead.set_result(relations_of(bg, _shifted_support(bg, [episodes[i] for i in groups[0]])))
            except BaseException as err:  # handed to the first part, which raises it
                ahead.set_exception(err)

    weights = [len(idx) / len(graphs) for idx in groups]

    def part(j: int, before: Callable | None = None) -> tuple[Any, float, dict[str, float]]:
        torch.set_num_threads(per_part)  # this thread's share of the cores
        if before is not None:
            before()
        idx = groups[j]
        part_episodes = [episodes[i] for i in idx]
        if prepared is not None:
            loss, parts = _batch_loss(model, prepared.batches[j], part_episodes, prepared.relations[j])
        else:
            relations = ahead.result if j == 0 and ahead is not None else None
            loss, parts = _plain_loss(model, [graphs[i] for i in idx], part_episodes, relations)
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        return _scaled(grads, weights[j]), float(loss.detach()), parts  # weighted here, on this part's thread

    jobs, jobs_lock = iter(then), threading.Lock()

    def take_jobs() -> None:  # each job runs once, on whichever thread takes it first
        torch.set_num_threads(per_part)
        while True:
            with jobs_lock:
                job = next(jobs, None)
            if job is None:
                return
            job()

    try:
        # The calling thread takes the first (largest) part itself: it is
        # running already, so only the other parts' threads have to be woken.
        pool = _pool(workers - 1)
        others = [pool.submit(part, j, first_part_relations if j == 1 and ahead is not None else None)
                  for j in range(1, workers)]
        if then:
            for _ in others:
                pool.submit(take_jobs)
        results = [part(0)]
        if then:
            take_jobs()
        results += [f.result() for f in others]
        grads = _sums_in_order([r[0] for r in results])  # small tensors: on this thread's share
    finally:
        torch.set_num_threads(threads)
    value = sum(w * r[1] for w, r in zip(weights, results))
    parts = {k: sum(w * r[2][k] for w, r in zip(weights, results)) for k in results[0][2]}
    loss = _GivenGradients.apply(torch.tensor(value, dtype=params[0].dtype, device=params[0].device), tuple(grads), *params)
    return loss, parts


class StepLoss:
    """The training loop's ``step_loss`` for GFL: :func:`meta_batch_loss` of each
    step's meta-batch, with the next step's meta-batch prepared ahead.

    Everything a step reads besides the parameters (its episodes, its parts'
    batched graphs, their relational structure: :func:`prepare_meta_batch`)
    depends on the graph ids and the step number alone. With ``next_ids``,
    step ``t + 1`` is prepared during step ``t``, one job per part, by the
    threads of step ``t`` as they finish their own parts (``then`` of
    :func:`meta_batch_loss`), so the next step starts on a ready meta-batch.
    The numbers are those of the plain computation, to the last bit: the same
    work, done earlier.

    Args:
        model: the model being trained.
        next_ids: ``next_ids(sampler, step)``, the graph ids the loop will draw
            for ``step`` (``None`` when there is none). Without it, or when a
            step runs in one part, nothing is prepared ahead.

    Called as ``step_loss(cache, sampler, graph_ids, step) -> (loss, parts)``.
    A call for other ids or another step than the one prepared ignores it.
    """

    def __init__(self, model: nn.Module, next_ids: Callable[[Any, int], Sequence[int] | None] | None = None) -> None:
        self.model = model
        self.next_ids = next_ids
        self._ahead: tuple[tuple, list[np.ndarray], list[Future]] | None = None

    def _take(self, ids: Sequence[int], step: int) -> PreparedMetaBatch | None:
        ahead, self._ahead = self._ahead, None
        if ahead is None or ahead[0] != (tuple(ids), step):  # nothing, or another meta-batch
            return None
        _, groups, futures = ahead
        if any(f.cancel() for f in futures):  # a job that never started (the step ran in one part)
            return None
        graphs: list[Any] = [None] * len(ids)
        episodes: list[Any] = [None] * len(ids)
        batches, relations = [], []
        for idx, future in zip(groups, futures):
            part_graphs, part_episodes, batch, weights = future.result()  # raises what the preparation raised
            for i, g, ep in zip(idx, part_graphs, part_episodes):
                graphs[i], episodes[i] = g, ep
            batches.append(batch)
            relations.append(weights)
        return PreparedMetaBatch(graphs, episodes, groups, batches, relations)

    def _jobs(self, cache: GraphCache, sampler: Any, ids: list[int], step: int,
              workers: int) -> tuple[list[np.ndarray], list[Future], list[Callable[[], None]]]:
        """The next meta-batch's parts and one preparation job (and its future) per part."""
        groups = split_by_nodes([cache.num_nodes(gid) for gid in ids], workers)
        futures = [Future() for _ in groups]

        def job(idx: np.ndarray, future: Future) -> Callable[[], None]:
            def run() -> None:
                future.set_running_or_notify_cancel()
                try:
                    future.set_result(_prepare_ids(self.model, cache, sampler, [ids[i] for i in idx], step))
                except BaseException as err:  # raised by the step that takes it
                    future.set_exception(err)
            return run

        return groups, futures, [job(idx, f) for idx, f in zip(groups, futures)]

    def __call__(self, cache: GraphCache, sampler: Any, ids: Sequence[int], step: int):
        workers = meta_batch_workers(self.model, len(ids))
        upcoming = self.next_ids(sampler, step + 1) if self.next_ids is not None else None
        prepared = self._take(ids, step)
        if prepared is None:
            graphs, episodes = [cache[gid] for gid in ids], [sampler.episode(gid, step) for gid in ids]
        else:
            graphs, episodes = prepared.graphs, prepared.episodes
        ahead, jobs = None, []
        if upcoming is not None and workers > 1:
            upcoming = [int(gid) for gid in upcoming]
            groups, futures, jobs = self._jobs(cache, sampler, upcoming, step + 1, min(workers, len(upcoming)))
            ahead = ((tuple(upcoming), step + 1), groups, futures)
        # The parts follow the decision the jobs were made for (a prepared meta-batch carries its own).
        out = meta_batch_loss(self.model, graphs, episodes, None if prepared is not None else workers,
                              prepared=prepared, then=jobs)
        self._ahead = ahead  # every job has started by now
        return out

    def wait(self) -> None:
        """Return once the next meta-batch's preparation, if one was started, has ended
        (a benchmark timing one step at a time counts it in the step)."""
        if self._ahead is not None:
            wait_for(self._ahead[2])


def split_by_nodes(sizes: Sequence[int], parts: int) -> list[np.ndarray]:
    """Share a meta-batch's graphs among ``parts`` parts with nodes as even as may be.

    A step's cost grows with the nodes of each graph, and the parts of
    :func:`meta_batch_loss` finish when the largest does: graphs of 3,000 to
    6,000 nodes cut by count alone can leave one part with twice the nodes of
    another. Graphs go, largest first, to the part with the fewest nodes so far
    (ties: the earlier graph, the earlier part); each part keeps its graphs in
    meta-batch order. Deterministic, so seeded runs stay reproducible.

    Args:
        sizes: nodes of each graph, in meta-batch order.
        parts: number of parts, from 1 to ``len(sizes)``; each gets one graph or more.

    Returns:
        the graph positions of each part, the part with the most nodes first.
    """
    if not 1 <= parts <= len(sizes):
        raise ValueError(f"cannot share {len(sizes)} graphs among {parts} non-empty parts")
    loads, members = [0] * parts, [[] for _ in range(parts)]
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):  # stable: ties keep meta-batch order
        j = min(range(parts), key=lambda j: loads[j])
        loads[j] += sizes[i]
        members[j].append(i)
    order = sorted(range(parts), key=lambda j: -loads[j])
    return [np.array(sorted(members[j]), dtype=np.int64) for j in order]


def _scaled(grads: Sequence[torch.Tensor | None], weight: float) -> list[torch.Tensor | None]:
    """``g * weight`` for each gradient (``None`` stays ``None``)."""
    return [None if g is None else g * weight for g in grads]


def _sums_in_order(part_grads: list[list[torch.Tensor | None]]) -> list[torch.Tensor | None]:
    """Per parameter, the parts' (weighted) gradients summed in part order (``None``
    where no part reaches the parameter)."""
    sums = list(part_grads[0])
    for grads in part_grads[1:]:
        sums = [g if t is None else t if g is None else t + g for t, g in zip(sums, grads)]
    return sums


class GraphCache:
    """Model-ready graphs (:func:`prepare_graph`) of a collection, made once each.

    Threads may ask for graphs together (the training step prepares the next
    meta-batch on two threads, scoring shares graphs among threads): a graph is
    made by one thread, under a lock, with what DGL builds lazily built at once
    (reading a graph while DGL builds one of its formats is not safe).

    Args:
        collection: the graphs.
        device: where the prepared graphs are kept (the model's device).
    """

    def __init__(self, collection: GraphCollection, device: torch.device | str | None = None) -> None:
        self.collection = collection
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self._graphs: dict[int, object] = {}
        self._lock = threading.Lock()

    def num_nodes(self, graph_id: int) -> int:
        """Nodes of graph ``graph_id`` (without preparing it)."""
        return self.collection.graphs[graph_id].num_nodes()

    def __getitem__(self, graph_id: int):
        g = self._graphs.get(graph_id)
        if g is None:
            with self._lock:
                g = self._graphs.get(graph_id)
                if g is None:  # not made by another thread meanwhile
                    g = prepare_graph(self.collection.graphs[graph_id])
                    g = g if self.device.type == "cpu" else g.to(self.device)
                    _settle(g)
                    self._graphs[graph_id] = g
        return g
