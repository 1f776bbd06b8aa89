"""The meta-training loop (paper Algorithm 1), shared by GFL and the transfer baselines."""
from __future__ import annotations

import copy
import logging
import time
from typing import TYPE_CHECKING, Callable

import numpy as np
import torch

from .batching import GraphCache
from .config import EpisodeConfig, TrainConfig
from .data import GraphCollection
from .episodes import EpisodeSampler

if TYPE_CHECKING:
    from .distributed import DistContext

__all__ = ["fit_loop"]

log = logging.getLogger(__name__)


def fit_loop(
    module: torch.nn.Module,
    collection: GraphCollection,
    episode_cfg: EpisodeConfig,
    train_cfg: TrainConfig,
    *,
    step_loss: Callable[[GraphCache, EpisodeSampler, list[int], int], tuple[torch.Tensor, dict[str, float]]],
    score: Callable[..., dict[int, float]],
    name: str,
    progress: bool = True,
    on_best: Callable[[int, float], None] | None = None,
    dist: DistContext | None = None,
) -> tuple[list[dict[str, float]], int, float]:
    """The training loop of Algorithm 1, shared by GFL and the transfer baselines.

    Each step draws ``meta_batch`` train graphs (seeded from ``(seed, step)``),
    one episode each (seeded from ``(seed, graph_id, step)``), and takes an Adam
    step on ``step_loss(cache, sampler, graph_ids, step) -> (loss, parts)``.
    Every ``eval_every`` steps ``score(module, val_sampler, val_episodes,
    cache)`` rates the module on the val graphs; the best weights are kept
    (``on_best(step, val_accuracy)`` is called) and training stops after
    ``patience`` rounds without gain. The best weights are loaded at the end.

    With ``dist`` (one rank of a distributed run), each step works on this
    rank's share of the meta-batch, gradients are averaged across ranks and the
    val accuracies gathered (:meth:`gflkit.distributed.DistContext.wrap`).

    Returns:
        Per-step metric rows, the step of the kept weights and their mean val
        accuracy (NaN without val graphs: then the latest weights are kept).
    """
    seed = train_cfg.seed
    if dist is not None:  # distributed: this rank's share of each meta-batch, DDP gradients, gathered scores
        step_loss, score = dist.wrap(module, step_loss, score)
    sampler = EpisodeSampler(collection, "train", episode_cfg, seed).require_graphs()
    val_sampler = EpisodeSampler(collection, "val", episode_cfg, seed)
    cache = GraphCache(collection)
    optimizer = torch.optim.Adam(module.parameters(), lr=train_cfg.lr, weight_decay=train_cfg.weight_decay)
    train_ids = np.asarray(sampler.graph_ids)
    best_val, best_step, best_state, stale = -1.0, 0, copy.deepcopy(module.state_dict()), 0
    rows: list[dict[str, float]] = []
    steps = range(1, train_cfg.steps + 1)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        steps = bar = tqdm(steps, desc=f"training {name}", unit="step", leave=False)
    module.train()
    for step in steps:
        start = time.perf_counter()
        rng = np.random.default_rng([seed, 2, step])
        ids = rng.choice(train_ids, size=train_cfg.meta_batch, replace=len(train_ids) < train_cfg.meta_batch)
        loss, parts = step_loss(cache, sampler, [int(gid) for gid in ids], step)
        optimizer.zero_grad()
        loss.backward()
        if train_cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(module.parameters(), train_cfg.grad_clip)
        optimizer.step()
        row = {"step": step, "loss": float(loss.detach()), **parts, "seconds": time.perf_counter() - start}
        if step % train_cfg.eval_every == 0 or step == train_cfg.steps:
            if val_sampler.graph_ids:
                accs = score(module, val_sampler, train_cfg.val_episodes, cache)
                module.train()
                val = row["val_accuracy"] = float(np.mean(list(accs.values())))
            else:  # no validation graphs: keep the latest weights
                val, row["val_accuracy"] = float(step), float("nan")
            if val > best_val:
                best_val, best_step, stale = val, step, 0
                best_state = copy.deepcopy(module.state_dict())
                if on_best is not None:
                    on_best(step, row["val_accuracy"])
            else:
                stale += 1
            if bar is not None:
                bar.set_postfix(loss=f"{row['loss']:.3f}", val=f"{row['val_accuracy']:.3f}")
        rows.append(row)
        if stale >= train_cfg.patience:
            log.info("early stop at step %d (best validation at step %d)", step, best_step)
            break
    if bar is not None:
        bar.close()
    module.load_state_dict(best_state)
    module.eval()
    return rows, best_step, best_val if val_sampler.graph_ids else float("nan")
