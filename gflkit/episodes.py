"""Support and query sets drawn from a graph (the paper's protocol).

An episode is one graph with K labelled support nodes per class and, as query,
every other labelled node (optionally capped). The draw is seeded from the
integers ``(seed, graph_id, episode)``, so an episode is the same whatever order
episodes are visited in.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch

from .config import EpisodeConfig
from .errors import GFLError
from .sizes import require_at_most

__all__ = ["Episode", "EpisodeSampler", "sample_episode"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Episode:
    """One graph's support and query nodes.

    Shapes:
        support: ``(C, K)`` node ids, row ``c`` holding class ``c``.
        query: ``(Q,)`` node ids; query_label: ``(Q,)`` classes in ``0..C-1``.
    """

    graph_id: int
    support: torch.Tensor
    query: torch.Tensor
    query_label: torch.Tensor

    @property
    def k_shot(self) -> int:
        return self.support.shape[1]

    @property
    def num_classes(self) -> int:
        return self.support.shape[0]


def _class_members(label: np.ndarray, num_classes: int) -> list[np.ndarray]:
    return [np.flatnonzero(label == c) for c in range(num_classes)]


def _small_classes(members: list[np.ndarray], k_shot: int) -> list[int]:
    """The classes with fewer than ``k_shot + 1`` labelled nodes: a graph with one gives no episode."""
    return [c for c, m in enumerate(members) if m.size < k_shot + 1]


def usable_graph_ids(collection, split: str, k_shot: int) -> list[int]:
    """The graphs of ``split`` that give episodes of ``k_shot`` shots (those :class:`EpisodeSampler`
    keeps), found without a warning."""
    return [gid for gid, g in collection.items(split)
            if not _small_classes(_class_members(g.ndata["label"].numpy(), collection.num_classes), k_shot)]


def sample_episode(
    label: torch.Tensor | np.ndarray,
    num_classes: int,
    cfg: EpisodeConfig,
    *,
    seed: int,
    graph_id: int,
    episode: int,
    members: list[np.ndarray] | None = None,
) -> Episode:
    """Draw the support and query sets of one graph.

    Args:
        label: node labels of the graph (``-1`` unlabelled).
        num_classes: size of the shared label set.
        cfg: k_shot and n_query.
        seed, graph_id, episode: the integers the draw is seeded from.
        members: labelled node ids per class, if already computed.

    Raises:
        GFLError: a class has fewer than ``k_shot + 1`` labelled nodes.
    """
    label = np.asarray(label)
    members = members if members is not None else _class_members(label, num_classes)
    k = cfg.k_shot
    small = [c for c, m in enumerate(members) if m.size < k + 1]
    if small:
        raise GFLError(
            f"graph {graph_id}: classes {small} have fewer than k_shot + 1 = {k + 1} labelled nodes; "
            f"lower `k_shot` or skip such graphs"
        )
    rng = np.random.default_rng([seed, graph_id, episode])
    support = np.stack([np.sort(rng.choice(m, size=k, replace=False)) for m in members])  # (C, K)
    queried = label >= 0  # every labelled node outside the support set, in id order
    queried[support.ravel()] = False
    query = np.flatnonzero(queried)
    if cfg.n_query is not None and query.size > cfg.n_query:
        query = np.sort(rng.choice(query, size=cfg.n_query, replace=False))
    return Episode(
        graph_id=graph_id,
        support=torch.from_numpy(support).long(),
        query=torch.from_numpy(query).long(),
        query_label=torch.from_numpy(label[query]).long(),
    )


class EpisodeSampler:
    """Episodes of the graphs of one split of a collection.

    Graphs with a class of fewer than ``k_shot + 1`` labelled nodes are skipped
    (and listed in :attr:`skipped`) or rejected, as ``cfg.on_small`` says.
    """

    def __init__(self, collection, split: str, cfg: EpisodeConfig, seed: int = 0) -> None:
        self.collection = collection
        self.split = split
        self.cfg = cfg
        self.seed = seed
        self.num_classes = collection.num_classes
        self._members: dict[int, list[np.ndarray]] = {}
        self._labels: dict[int, np.ndarray] = {}
        self.graph_ids: list[int] = []
        self.skipped: dict[int, list[int]] = {}
        for gid, g in collection.items(split):
            label = g.ndata["label"].numpy()
            members = _class_members(label, self.num_classes)
            small = _small_classes(members, cfg.k_shot)
            if small:
                self.skipped[gid] = small
                continue
            self._labels[gid] = label
            self._members[gid] = members
            self.graph_ids.append(gid)
        if self.skipped:
            ids = ", ".join(map(str, sorted(self.skipped)))
            message = (
                f"{collection.name}/{split}: graphs {ids} have a class with fewer than "
                f"k_shot + 1 = {cfg.k_shot + 1} labelled nodes"
            )
            if cfg.on_small == "error":
                raise GFLError(message + "; lower `k_shot` or use `on_small=skip`")
            log.warning("%s; skipping them", message)

    def __len__(self) -> int:
        return len(self.graph_ids)

    def require_graphs(self) -> "EpisodeSampler":
        """Raise :class:`GFLError` when no graph of the split is usable; returns self."""
        if not self.graph_ids:
            sizes = [min((m.size for m in _class_members(self.collection.graphs[gid].ndata["label"].numpy(),
                                                         self.num_classes)), default=0) for gid in self.skipped]
            largest = max(sizes, default=0) - 1
            if largest >= 1:
                require_at_most("k_shot", self.cfg.k_shot, largest,
                                f"no {self.split} graph of {self.collection.name!r} has k_shot + 1 labelled nodes "
                                "in every class")
            raise GFLError(
                f"collection {self.collection.name!r} has no usable {self.split} graphs "
                f"for k_shot={self.cfg.k_shot}"
            )
        return self

    def episode(self, graph_id: int, index: int) -> Episode:
        """Episode number ``index`` of graph ``graph_id``."""
        return sample_episode(
            self._labels[graph_id], self.num_classes, self.cfg, seed=self.seed,
            graph_id=graph_id, episode=index, members=self._members[graph_id],
        )
