"""Graphs as the models see them, meta-batches of episodes, and work shared among threads.

:func:`prepare_graph` adds self-loops and the data every step would otherwise
recompute; :class:`GraphCache` prepares each graph of a collection once;
:func:`batch_episodes` joins a meta-batch into one ``dgl.batch`` with the
episodes' node ids shifted into it; :func:`map_graphs` computes items (graphs
being scored) side by side, one torch thread each.
"""
from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Sequence

import dgl
import torch

from .data import GraphCollection
from .episodes import Episode
from .nn.conv import add_gcn_norm, graph_facts, is_symmetric, set_symmetric

__all__ = ["prepare_graph", "batch_episodes"]


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


def batch_episodes(graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode], *, features: bool = True):
    """One batched graph and the episodes' node ids shifted into it.

    Args:
        graphs: prepared graphs (:func:`prepare_graph`).
        episodes: one episode per graph.
        features: concatenate the graphs' ``ndata["feat"]`` into the batch's. ``False``
            leaves them out and notes each graph's own feature tensor beside the
            batch (:func:`~gflkit.nn.conv.member_features`), for a model that reads
            them graph by graph: no copy of the features (11.5 MB per meta-batch of
            5 graphs of 4,500 nodes and 128 features).

    Returns:
        ``(bg, support (B, C, K), queries)`` with ``queries`` a list of ``(Q_b,)``.
    """
    graphs = list(graphs)
    if features:
        bg = dgl.batch(graphs)
    else:
        bg = dgl.batch(graphs, ndata=[k for k in graphs[0].ndata.keys() if k != "feat"])
        graph_facts(bg)["member_features"] = [g.ndata["feat"] for g in graphs]
    set_symmetric(bg, all(is_symmetric(g) for g in graphs))  # each graph is checked once, then remembered
    offsets = _offsets(bg)
    queries = [(ep.query + off).to(bg.device) for ep, off in zip(episodes, offsets)]
    return bg, _shifted_support(bg, episodes, offsets), queries


def make_thread_safe(g: dgl.DGLGraph) -> None:
    """Create what DGL builds lazily on first use of a graph, so that threads
    may then read it together (a meta-batch drawn with replacement holds one
    graph several times; DGL's lazy set-up is not thread-safe)."""
    g.batch_num_nodes()
    g.batch_num_edges()
    g.create_formats_()


_PART_THREAD = "gflkit-part"
_POOL: dict[int, ThreadPoolExecutor] = {}
_POOL_LOCK = threading.Lock()
if hasattr(os, "register_at_fork"):  # a forked child has none of the parent's pool threads
    os.register_at_fork(after_in_child=_POOL.clear)


def worker_pool(workers: int) -> ThreadPoolExecutor:
    """The threads gflkit computes on side by side (graphs being scored, a step's parts),
    ``workers`` of them, made once per process."""
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
        others = [worker_pool(workers - 1).submit(work) for _ in range(workers - 1)]
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
                    make_thread_safe(g)
                    self._graphs[graph_id] = g
        return g
