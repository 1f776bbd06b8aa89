"""The second part of a 2-part training step, computed in a process of its own.

On two cores a training step splits its meta-batch into two parts
(:func:`gflkit.batching.meta_batch_loss`). On two threads of one process the
parts hand the interpreter lock back and forth at every torch operation, and
the next step's preparation (drawing episodes, batching graphs: mostly Python)
holds it while the other part waits: about 3 ms of a 28 ms step at 5 graphs of
4,500 nodes (``benchmarks/interpreter_lock.py``). Here the second part runs
in a forked process with its own interpreter:

- the model's parameters live in shared memory, so the other process sees
  each update as soon as this one makes it;
- the other process computes its part's gradients, weighted as
  :func:`~gflkit.batching.meta_batch_loss` weights them, into a shared
  buffer; this process adds them to its own in the same order, so the numbers
  are those of the 2-thread step to the last bit;
- whichever process is done with its part first prepares this process's
  part of the next step (episodes, batched graph, relational structure); the
  other process hands it over through shared memory as arrays, from which
  this process rebuilds the batched graph (in the sparse format the model
  reads), then prepares its own next part.

Used by :class:`~gflkit.batching.StepLoss` for steps of two parts on Linux,
when the model takes its relational structure and its features as
:func:`~gflkit.batching.prepare_meta_batch` makes them (GFL's defaults) and
has no buffers; ``GFLKIT_PART_PROCESS=0`` keeps both parts on threads. The
training graphs are prepared before the fork, so both processes share them.
"""
from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import signal
import sys
import traceback
import weakref
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from .episodes import Episode

__all__ = ["PartProcess", "part_process_wanted"]

#: Set to ``0`` to keep both parts of a step on threads.
ENV = "GFLKIT_PART_PROCESS"
_PR_SET_PDEATHSIG = 1


def part_process_wanted(model: nn.Module) -> bool:
    """Whether a 2-part step of ``model`` may run its second part in a forked process."""
    from .batching import _feature_parts, _relations_ahead

    if os.environ.get(ENV, "1").strip() in ("0", "false", "no", "off"):
        return False
    if not sys.platform.startswith("linux") or "fork" not in mp.get_all_start_methods():
        return False
    if any(p.device.type != "cpu" for p in model.parameters()) or next(model.buffers(), None) is not None:
        return False
    return _relations_ahead(model) is not None and _feature_parts(model)


class _Handover:
    """Shared buffers for one part of a step: the batched graph as arrays, the episodes and
    the relation weights, sized once (before the fork) for the largest part a meta-batch can make."""

    def __init__(self, max_nodes: int, max_edges: int, max_support: int, max_relations: int) -> None:
        def shared(n: int, dtype=torch.int64) -> torch.Tensor:
            return torch.zeros(max(n, 1), dtype=dtype).share_memory_()

        # the batched graph's in-edges (CSC: what the model's sparse products read), edge ids kept
        self.indptr, self.indices, self.eids = shared(max_nodes + 1), shared(max_edges), shared(max_edges)
        self.norm_src, self.norm_dst = shared(max_nodes, torch.float32), shared(max_nodes, torch.float32)
        self.support, self.query, self.label = shared(max_support), shared(max_nodes), shared(max_nodes)
        self.relations = shared(max_relations, torch.float32)

    def put(self, graph_ids: Sequence[int], episodes: Sequence[Episode], batch: tuple,
            relations: torch.Tensor) -> dict[str, Any]:
        """Write one prepared part (``_prepare_part``'s batch and relations); returns what
        :meth:`take` needs besides the buffers."""
        from .nn.conv import NORM_DST, NORM_SRC, is_symmetric

        bg, support, _, _ = batch
        indptr, indices, eids = bg.adj_tensors("csc")
        n, e, total = bg.num_nodes(), bg.num_edges(), sum(len(ep.query) for ep in episodes)
        self.indptr[:n + 1], self.indices[:e], self.eids[:e] = indptr, indices, eids
        self.norm_src[:n], self.norm_dst[:n] = bg.ndata[NORM_SRC].view(-1), bg.ndata[NORM_DST].view(-1)
        self.support[:support.numel()] = torch.cat([ep.support.reshape(-1) for ep in episodes])
        self.query[:total] = torch.cat([ep.query for ep in episodes])
        self.label[:total] = torch.cat([ep.query_label for ep in episodes])
        self.relations[:relations.numel()] = relations.reshape(-1)
        return {"graph_ids": [int(g) for g in graph_ids], "nodes": bg.batch_num_nodes().tolist(),
                "edges": bg.batch_num_edges().tolist(), "symmetric": is_symmetric(bg),
                "support": tuple(support.shape), "queries": [len(ep.query) for ep in episodes],
                "relations": tuple(relations.shape), "norm_shape": tuple(bg.ndata[NORM_SRC].shape[1:])}

    def take(self, meta: dict[str, Any], cache) -> tuple[list[Episode], tuple, torch.Tensor]:
        """The part :meth:`put` wrote: its episodes, batch (as ``_prepare_part`` returns it) and relations."""
        import dgl

        from .nn.conv import NORM_DST, NORM_SRC, set_symmetric

        nodes, edges = meta["nodes"], meta["edges"]
        n, e = sum(nodes), sum(edges)
        csc = (self.indptr[:n + 1].clone(), self.indices[:e].clone(), self.eids[:e].clone())
        bg = dgl.graph(("csc", csc), num_nodes=n)
        bg.set_batch_num_nodes(torch.tensor(nodes, dtype=torch.int64))
        bg.set_batch_num_edges(torch.tensor(edges, dtype=torch.int64))
        bg.ndata[NORM_SRC] = self.norm_src[:n].clone().view(n, *meta["norm_shape"])
        bg.ndata[NORM_DST] = self.norm_dst[:n].clone().view(n, *meta["norm_shape"])
        set_symmetric(bg, meta["symmetric"])
        shape = meta["support"]
        per_graph = self.support[:int(np.prod(shape))].clone().view(shape)
        counts = meta["queries"]
        query = self.query[:sum(counts)].clone().split(counts)
        label = self.label[:sum(counts)].clone().split(counts)
        episodes = [Episode(graph_id=gid, support=s, query=q, query_label=y)
                    for gid, s, q, y in zip(meta["graph_ids"], per_graph, query, label)]
        offsets = [0, *np.cumsum(nodes)[:-1].tolist()]
        support = torch.stack([ep.support + off for ep, off in zip(episodes, offsets)])
        queries = [ep.query + off for ep, off in zip(episodes, offsets)]
        feats = [cache[gid].ndata["feat"] for gid in meta["graph_ids"]]
        relations = self.relations[:int(np.prod(meta["relations"]))].clone().view(meta["relations"])
        return episodes, (bg, support, queries, feats), relations


def _end(process, conn) -> None:
    """Ask the other process to end, then make sure it has."""
    try:
        conn.send(None)
    except (OSError, ValueError):
        pass
    process.join(timeout=10)
    if process.is_alive():
        process.kill()
        process.join(timeout=5)
    conn.close()


class PartProcess:
    """A forked process computing the second part of each 2-part step (see the module's text).

    Args:
        model: the model being trained; its parameters are moved to shared memory.
        cache: the training graphs' :class:`~gflkit.batching.GraphCache`.
        sampler: the training episodes' sampler.
        batch_size: graphs per meta-batch (sizes the buffers of a handed-over part).

    Call :meth:`step` once per training step, then :meth:`close`.
    """

    def __init__(self, model: nn.Module, cache, sampler, batch_size: int) -> None:
        from .batching import keep_freed_memory, map_graphs

        keep_freed_memory()  # as meta_batch_loss does; the other process inherits it
        self.model, self.cache, self.sampler = model, cache, sampler
        self.params = [p for p in model.parameters() if p.requires_grad]
        map_graphs(lambda gid: cache[gid], list(sampler.graph_ids))  # shared with the other process
        for p in model.parameters():
            p.share_memory_()
        # A part holds at most the whole meta-batch, the largest graph each time (drawn with replacement).
        nodes = max(cache.num_nodes(gid) for gid in sampler.graph_ids)
        edges = max(cache[gid].num_edges() for gid in sampler.graph_ids)
        support = sampler.num_classes * sampler.cfg.k_shot
        self._handover = _Handover(batch_size * nodes, batch_size * edges, batch_size * support,
                                   batch_size * support * sampler.cfg.k_shot)
        self._grads = torch.zeros(sum(p.numel() for p in self.params)).share_memory_()
        context = mp.get_context("fork")
        # The next step's part of this process is prepared by whichever process is free first:
        # the last step claimed, in shared memory with a lock of its own.
        self._claimed = context.Value("q", 0)
        self._conn, child = context.Pipe()
        self._process = context.Process(target=self._serve, args=(child,), daemon=True, name="gflkit-part")
        self._process.start()
        child.close()
        # Should the owner be dropped without close(): end the other process all the same.
        self._finalizer = weakref.finalize(self, _end, self._process, self._conn)
        self._ready: dict[str, Any] | None = None
        self._unread = self._idle = 0  # "ready" and "idle" messages on their way
        self._own: tuple | None = None  # (graph ids, step, episodes, batch, relations) prepared here
        self._error: str | None = None  # what the other process reported failing, for the next step

    # -- this process --------------------------------------------------------------------------

    def step(self, ids: Sequence[int], step: int, upcoming: Sequence[int] | None):
        """This step's loss over both parts: ``(loss, parts)`` as :func:`meta_batch_loss` returns it
        (``upcoming``: the next step's graph ids, if any)."""
        from .batching import one_thread

        ids = [int(g) for g in ids]
        upcoming = None if upcoming is None else [int(g) for g in upcoming]
        with one_thread():  # the other core is the other process's
            try:
                return self._step(ids, step, upcoming)
            except BaseException:
                # The two processes may now disagree on where they are: end the other one
                # (the next call of StepLoss starts a fresh one).
                self.close()
                raise

    def _step(self, ids: list[int], step: int, upcoming: list[int] | None):
        from .batching import _GivenGradients, _batch_loss, _scaled, _sums_in_order

        self._send(("step", ids, step, upcoming))
        mine, theirs = self._split(ids)
        weights = len(mine) / len(ids), len(theirs) / len(ids)
        meta = self._take_ready(mine, step)
        own_ahead, self._own = self._own, None
        if meta is not None:  # prepared by the other process
            episodes, batch, relations = self._handover.take(meta, self.cache)
        elif own_ahead is not None and own_ahead[0] == mine and own_ahead[1] == step:  # prepared here
            if isinstance(own_ahead[2], BaseException):  # the step that needs it raises what preparing raised
                raise own_ahead[2]
            episodes, batch, relations = own_ahead[2:]
        else:  # the first step, or one the processes did not see coming
            episodes, batch, relations = self._prepare(mine, step)
        loss, parts = _batch_loss(self.model, batch, episodes, relations)
        own = _scaled(torch.autograd.grad(loss, self.params, allow_unused=True), weights[0])
        value0 = float(loss.detach())
        if upcoming is not None and self._claim(step + 1):  # the other process is still at its part
            later = self._split(upcoming)[0]
            try:
                self._own = (later, step + 1, *self._prepare(later, step + 1))
            except Exception as err:  # noqa: BLE001  (raised by the step that needs it)
                self._own = (later, step + 1, err)
        present, value1, parts1 = self._receive("done")
        if upcoming is not None:  # then the next part is handed over, then the other's own is prepared
            self._unread += 1
            self._idle += 1
        theirs: list[torch.Tensor | None] = [None] * len(self.params)
        start = 0
        for i, p in enumerate(self.params):
            if i in present:
                theirs[i] = self._grads[start:start + p.numel()].view_as(p).clone()
                start += p.numel()
        grads = _sums_in_order([own, theirs])
        value = weights[0] * value0 + weights[1] * value1
        merged = {k: weights[0] * parts[k] + weights[1] * parts1[k] for k in parts}
        first = self.params[0]
        total = _GivenGradients.apply(torch.tensor(value, dtype=first.dtype, device=first.device),
                                      tuple(grads), *self.params)
        return total, merged

    def _split(self, ids: list[int]) -> tuple[list[int], list[int]]:
        """A meta-batch's graph ids in this process's part and the other's (``split_by_nodes``, as
        :func:`~gflkit.batching.meta_batch_loss` splits it)."""
        from .batching import split_by_nodes

        groups = split_by_nodes([self.cache.num_nodes(g) for g in ids], 2)
        return [ids[i] for i in groups[0]], [ids[i] for i in groups[1]]

    def _prepare(self, gids: list[int], step: int) -> tuple:
        """Episodes, batch and relation weights of the part of graphs ``gids`` at ``step``."""
        from .batching import _prepare_ids

        return _prepare_ids(self.model, self.cache, self.sampler, gids, step)[1:]

    def _claim(self, step: int) -> bool:
        """Take the job of preparing this process's part of ``step``, unless the other process has."""
        with self._claimed.get_lock():
            if self._claimed.value >= step:
                return False
            self._claimed.value = step
            return True

    def close(self) -> None:
        """End the other process (idempotent)."""
        self._process = None
        self._finalizer()

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def _send(self, message) -> None:
        if self._process is None:
            raise RuntimeError("the part process was closed")
        try:
            self._conn.send(message)
        except (OSError, ValueError) as err:
            raise RuntimeError(f"the part process ended unexpectedly ({err})") from None

    def _next(self) -> tuple:
        """The next message of the other process; raises what it reports, or its end."""
        try:
            kind, *payload = self._conn.recv()
        except (EOFError, OSError) as err:
            code = None if self._process is None else self._process.exitcode
            raise RuntimeError(f"the part process ended unexpectedly (exit code {code}; {err!r})") from None
        if kind == "error":  # raised by the step that needs what failed (see _check)
            self._unread = self._idle = 0
            self._error = payload[0]
        elif kind == "ready":
            self._unread -= 1
            self._ready = payload[0]
        elif kind == "idle":
            self._idle -= 1
        return kind, payload

    def _check(self) -> None:
        if self._error is not None:
            message, self._error = self._error, None
            raise RuntimeError(f"the part process failed: {message}")

    def _receive(self, kind: str) -> list:
        while True:
            got, payload = self._next()
            self._check()
            if got == kind:
                return payload

    def _take_ready(self, mine: list[int], step: int) -> dict[str, Any] | None:
        while self._unread > 0 and self._error is None:
            self._next()
        self._check()
        ready, self._ready = self._ready, None
        if ready is None or ready["step"] != step or ready["graph_ids"] != mine:
            return None
        return ready

    def wait(self) -> None:
        """Return once the other process has prepared the next step's parts (a benchmark
        timing one step at a time counts that work in the step)."""
        while (self._idle > 0 or self._unread > 0) and self._error is None:
            self._next()

    # -- the other process -----------------------------------------------------------------------

    def _serve(self, conn) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the training process's to handle
        try:  # end with the training process, however it ends
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
        torch.set_num_threads(1)
        own: tuple | None = None  # (graph ids, step, episodes, batch, relations) prepared ahead
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            if message is None:
                return
            try:
                own = self._serve_step(conn, *message[1:], own)
            except BaseException:  # handed to the training process, which raises it
                own = None
                conn.send(("error", traceback.format_exc(limit=8).strip().splitlines()[-1]))

    def _serve_step(self, conn, ids: list[int], step: int, upcoming: list[int] | None, own):
        from .batching import _batch_loss, _scaled

        theirs = self._split(ids)[1]
        if own is None or own[0] != theirs or own[1] != step:
            own = (theirs, step, *self._prepare(theirs, step))
        _, _, episodes, batch, relations = own
        loss, parts = _batch_loss(self.model, batch, episodes, relations)
        grads = _scaled(torch.autograd.grad(loss, self.params, allow_unused=True), len(theirs) / len(ids))
        present = [i for i, g in enumerate(grads) if g is not None]
        flat = [grads[i].reshape(-1) for i in present]
        if flat:
            torch.cat(flat, out=self._grads[:sum(g.numel() for g in flat)])
        conn.send(("done", present, float(loss.detach()), parts))
        if upcoming is None:
            return None
        mine, theirs = self._split(upcoming)
        meta = None
        if self._claim(step + 1):  # the training process is still at its part: hand its next part over
            meta = self._handover.put(mine, *self._prepare(mine, step + 1))
            meta["step"] = step + 1
        conn.send(("ready", meta))
        own = (theirs, step + 1, *self._prepare(theirs, step + 1))
        conn.send(("idle",))
        return own
