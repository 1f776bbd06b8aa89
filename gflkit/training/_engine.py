"""How a training step computes its meta-batch: in parts side by side on threads, the next step prepared ahead.

Private to gflkit: :func:`gflkit.training.meta.meta_train` builds a :class:`StepLoss`
(the loop's ``step_loss``), switched by ``TrainConfig.parallel_steps``, which the
run's settings record. The engine knows nothing of the model beyond three calls:
``model(batch)`` on an :class:`~gflkit.graphs.EpisodeBatch`, ``model.loss(out, labels)``
and, where the model declares ``needs_prepare`` (:class:`~gflkit.models.base.FewShotModel`),
``model.prepare(batch)``, which computes ahead (on any thread, before the
parameters are read) what a forward pass over that batch reads besides the
parameters; the forward pass then finds it. Where the model says it
reads a batch's features graph by graph (``model.takes_feature_parts``), the
batch is made without copying them (``batch_episodes(..., features=False)``).

A meta-batch is cut into :data:`STEP_PARTS` parts with about the same number of
nodes (:func:`split_by_nodes`), whatever the number of torch threads. Each part's
forward and backward pass runs on a thread of its own with a share of the torch
threads (one after another when there are fewer threads than parts):
independent work side by side instead of one kernel after another across all
cores. The parts' gradients, weighted by their share of the graphs, are summed
in a fixed order, so a seeded run gives the same numbers every time and on any
thread count (and, up to float rounding, the numbers of the single-part
computation). Meanwhile the next
step's meta-batch (its episodes, its parts' batched graphs and whatever
``model.prepare`` computes) is prepared by whichever thread is done with its
part first; the numbers do not change, the work is only done earlier.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from concurrent.futures import wait as wait_for
from typing import Any, Callable, Sequence

import dgl
import numpy as np
import torch
from torch import nn

from ..graphs import EpisodeBatch, GraphCache, batch_episodes, make_thread_safe
from ..threads import worker_pool
from ..episodes import Episode
from ..models.base import FewShotModel


#: torch's dropout layers: each draws its mask from the global generator.
_DROPOUT = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)


#: Parts a meta-batch is cut into, whatever the thread count: the parts' gradients are summed in a fixed
#: order, so a count that followed the threads would make the last digits follow them too.
STEP_PARTS = 2


def meta_batch_workers(model: nn.Module, batch_size: int) -> int:
    """How many parts :func:`meta_batch_loss` splits a meta-batch into.

    :data:`STEP_PARTS`, at most one per graph, on any number of torch threads
    (so a seeded run gives the same numbers on 1 thread and on 16); a single
    part (the plain computation) when gradients are off, when the model is not
    on the CPU, or when a dropout layer would draw random numbers (parts
    drawing from the global generator side by side would make runs
    irreproducible).
    """
    if batch_size < 2 or not torch.is_grad_enabled():
        return 1
    if any(p.device.type != "cpu" for p in model.parameters()):  # the parts share the CPU's cores
        return 1
    if model.training and any(isinstance(m, _DROPOUT) and m.p > 0 for m in model.modules()):
        return 1
    return min(STEP_PARTS, batch_size)


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


class PreparedMetaBatch:
    """A meta-batch made ready for :func:`meta_batch_loss` before any parameter is read.

    Made by :func:`prepare_meta_batch`. Attributes: ``graphs``, ``episodes``;
    ``groups``, the graph positions of each part (:func:`split_by_nodes`);
    ``batches``, each part's :class:`~gflkit.graphs.EpisodeBatch`,
    which ``model.prepare`` has seen.
    """

    __slots__ = ("graphs", "episodes", "groups", "batches")

    def __init__(self, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode], groups: list[np.ndarray],
                 batches: list[EpisodeBatch]) -> None:
        self.graphs, self.episodes, self.groups, self.batches = list(graphs), list(episodes), groups, batches


def _prepare_part(model: FewShotModel, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                  symmetric: Sequence[bool] | None = None) -> EpisodeBatch:
    """One part's :func:`~gflkit.graphs.batch_episodes`, with ``model.prepare`` run on it."""
    for g in {id(g): g for g in graphs}.values():
        make_thread_safe(g)
    # A model that reads the features graph by graph takes them from the graphs themselves.
    batch = batch_episodes(graphs, episodes, features=not model.takes_feature_parts, symmetric=symmetric)
    if model.needs_prepare:
        model.prepare(batch)
    return batch


def _picked(facts: Sequence[bool] | None, idx: Sequence[int]) -> list[bool] | None:
    return None if facts is None else [facts[i] for i in idx]


def prepare_meta_batch(model: nn.Module, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                       workers: int, symmetric: Sequence[bool] | None = None) -> PreparedMetaBatch:
    """What :func:`meta_batch_loss` reads of a meta-batch besides the model's parameters.

    The parts (:func:`split_by_nodes`), each part's batched graph with the
    episodes' ids shifted into it, and what ``model.prepare`` computes from
    them: all of it depends on the graphs and episodes alone, so it can be made
    on another thread while the model is busy with the previous meta-batch
    (:class:`StepLoss` does). The loss of a prepared meta-batch is the loss
    computed from scratch, to the last bit (tested).

    Args:
        model: the model the meta-batch is for.
        graphs, episodes: the meta-batch.
        workers: number of parts (:func:`meta_batch_workers`, taken on the thread that will compute the loss).
        symmetric: whether each graph is symmetric, when known (:meth:`~gflkit.graphs.GraphCache.symmetric`).
    """
    workers = max(1, min(workers, len(graphs)))
    groups = split_by_nodes([g.num_nodes() for g in graphs], workers)
    batches = [_prepare_part(model, [graphs[i] for i in idx], [episodes[i] for i in idx], _picked(symmetric, idx))
               for idx in groups]
    return PreparedMetaBatch(graphs, episodes, groups, batches)


def _prepare_ids(model: nn.Module, cache: GraphCache, sampler: Any, graph_ids: Sequence[int], step: int) -> tuple:
    """The part of graphs ``graph_ids`` at ``step``: ``(graphs, episodes, batch)``."""
    graphs = [cache[gid] for gid in graph_ids]
    episodes = [sampler.episode(gid, step) for gid in graph_ids]
    return graphs, episodes, _prepare_part(model, graphs, episodes, [cache.symmetric(gid) for gid in graph_ids])


def _batch_loss(model: nn.Module, batch: EpisodeBatch, episodes: Sequence[Episode]):
    return model.loss(model(batch), [ep.query_label.to(batch.graph.device) for ep in episodes])


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


def meta_batch_loss(model: nn.Module, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                    workers: int | None = None, *, prepared: PreparedMetaBatch | None = None,
                    then: Sequence[Callable[[], None]] = (),
                    symmetric: Sequence[bool] | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    """``model.loss(model(batch_episodes(graphs, episodes)), labels)``, in parts side by side.

    The loss of a meta-batch is the mean of its graphs' losses, so it splits
    into parts (:func:`split_by_nodes`), each weighted by its share of the
    graphs. The returned loss has the whole meta-batch's value; its
    ``backward()`` puts the summed gradients into the parameters' ``.grad``, as
    the plain loss's would.

    Args:
        model: ``model(batch)`` and ``model.loss(out, labels)``
            (:class:`~gflkit.models.gfl.GFL`); ``model.prepare(batch)`` where it declares ``needs_prepare``.
        graphs: prepared graphs of the meta-batch (:func:`~gflkit.graphs.prepare_graph`).
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
        symmetric: whether each graph is symmetric, when known (:meth:`~gflkit.graphs.GraphCache.symmetric`;
            by default each part's graphs are checked).

    Returns:
        ``(loss, parts)`` as ``model.loss`` returns them.
    """
    if prepared is not None:
        graphs, episodes, workers = prepared.graphs, prepared.episodes, len(prepared.groups)
    else:
        workers = meta_batch_workers(model, len(graphs)) if workers is None else min(workers, len(graphs))
    if workers <= 1:
        batch = prepared.batches[0] if prepared is not None else _prepare_part(model, graphs, episodes, symmetric)
        return _batch_loss(model, batch, episodes)
    if prepared is not None:
        groups = prepared.groups
    else:
        for g in {id(g): g for g in graphs}.values():
            make_thread_safe(g)
        groups = split_by_nodes([g.num_nodes() for g in graphs], workers)

    def part_loss(j: int) -> tuple[torch.Tensor, dict[str, float]]:
        idx = groups[j]
        part_episodes = [episodes[i] for i in idx]
        batch = prepared.batches[j] if prepared is not None else \
            _prepare_part(model, [graphs[i] for i in idx], part_episodes, _picked(symmetric, idx))
        return _batch_loss(model, batch, part_episodes)

    return _in_parts(model, groups, len(graphs), part_loss, then)


def _in_parts(model: nn.Module, groups: list[np.ndarray], count: int,
              part_loss: Callable[[int], tuple[torch.Tensor, dict[str, float]]],
              then: Sequence[Callable[[], None]] = ()) -> tuple[torch.Tensor, dict[str, float]]:
    """The mean loss over ``count`` graphs from the losses of their parts, computed side by side.

    ``part_loss(j)`` is the mean loss of the graphs ``groups[j]`` and its metrics; each part runs on a
    thread of its own with a share of the torch threads (the calling thread takes the first), its
    gradients weighted by its share of the graphs there, and the parts' gradients are summed in part
    order. ``then``: jobs run once the parts are done with, as :func:`meta_batch_loss` says. Returns
    the whole loss, whose ``backward()`` hands out the summed gradients, and the weighted metrics.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    workers = len(groups)
    threads = torch.get_num_threads()
    per_part = max(1, threads // workers)
    weights = [len(idx) / count for idx in groups]

    def part(j: int) -> tuple[Any, float, dict[str, float]]:
        torch.set_num_threads(per_part)  # this thread's share of the cores
        loss, parts = part_loss(j)
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
        if threads < workers:  # too few torch threads: the parts one after another, the same numbers
            results = [part(j) for j in range(workers)]
            if then:
                take_jobs()
        else:
            # The calling thread takes the first (largest) part itself: it is
            # running already, so only the other parts' threads have to be woken.
            pool = worker_pool(workers - 1)
            others = [pool.submit(part, j) for j in range(1, workers)]
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
    value = torch.tensor(value, dtype=params[0].dtype, device=params[0].device)
    loss = _GivenGradients.apply(value, tuple(grads), *params)
    return loss, parts


def graph_mean_loss(model: nn.Module, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                    labels: Sequence[Any], workers: int | None = None) -> torch.Tensor:
    """``model.step_loss(graphs, episodes, labels)`` of a model that declares ``steps_in_parts``, in parts
    side by side.

    Such a model's step loss is the mean of its graphs' losses and reads the
    parameters without rebinding them or drawing random numbers, so the meta-batch
    splits as :func:`meta_batch_loss` splits GFL's: parts with about the same nodes
    (:func:`split_by_nodes`), each on a thread of its own with a share of the torch
    threads, its loss weighted by its share of the graphs, the parts' gradients
    summed in a fixed order (the same numbers on any thread count). The returned
    loss has the meta-batch's value and its ``backward()`` puts the summed
    gradients into ``.grad``. ``workers``: number of parts (default
    :func:`meta_batch_workers`).
    """
    workers = meta_batch_workers(model, len(graphs)) if workers is None else min(workers, len(graphs))
    if workers <= 1:
        return model.step_loss(graphs, episodes, labels)
    for g in {id(g): g for g in graphs}.values():
        make_thread_safe(g)
    groups = split_by_nodes([g.num_nodes() for g in graphs], workers)

    def part_loss(j: int) -> tuple[torch.Tensor, dict[str, float]]:
        idx = groups[j]
        return model.step_loss([graphs[i] for i in idx], [episodes[i] for i in idx], [labels[i] for i in idx]), {}

    return _in_parts(model, groups, len(graphs), part_loss)[0]


class StepLoss:
    """The training loop's ``step_loss``: :func:`meta_batch_loss` of each step's
    meta-batch, with the next step's meta-batch prepared ahead.

    Everything a step reads besides the parameters (its episodes, its parts'
    batched graphs, what ``model.prepare`` computes: :func:`prepare_meta_batch`)
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
        parallel: split each meta-batch into parts side by side
            (:func:`meta_batch_workers`); ``False``: every step in one part, on
            all torch threads, nothing prepared ahead.

    Called as ``step_loss(cache, sampler, graph_ids, step) -> (loss, parts)``.
    A call for other ids or another step than the one prepared ignores it.
    """

    def __init__(self, model: nn.Module, next_ids: Callable[[Any, int], Sequence[int] | None] | None = None,
                 parallel: bool = True) -> None:
        self.model = model
        self.next_ids = next_ids
        self.parallel = parallel
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
        batches = []
        for idx, future in zip(groups, futures):
            part_graphs, part_episodes, batch = future.result()  # raises what the preparation raised
            for i, g, ep in zip(idx, part_graphs, part_episodes):
                graphs[i], episodes[i] = g, ep
            batches.append(batch)
        return PreparedMetaBatch(graphs, episodes, groups, batches)

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
        workers = meta_batch_workers(self.model, len(ids)) if self.parallel else 1
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
                              prepared=prepared, then=jobs, symmetric=[cache.symmetric(gid) for gid in ids])
        self._ahead = ahead  # every job has started by now
        return out

    def wait(self) -> None:
        """Return once the next meta-batch's preparation, if one was started, has ended
        (a benchmark timing one step at a time counts it in the step)."""
        if self._ahead is not None:
            wait_for(self._ahead[2])
