"""The meta-training loop (paper Algorithm 1), shared by GFL and the transfer baselines.

The loop's progress lives in one :class:`LoopState` (step, early-stopping
state, history). With the weights, the optimizer and the global random number
generators it makes a resume checkpoint (:meth:`LoopState.checkpoint`), from
which :func:`fit_loop` continues bit-for-bit as if it had never stopped. The
episodes and the meta-batches are drawn from generators seeded by ``(seed,
step)``; only dropout and other draws from the global generators need their
states saved.
"""
from __future__ import annotations

import copy
import logging
import math
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np
import torch

from ..graphs import GraphCache
from ..threads import one_thread
from ..devices import module_device
from ..config import EpisodeConfig, TrainConfig
from ..data import GraphCollection
from ..episodes import EpisodeSampler
from ..errors import GFLError
from ..progress import progress_bar, progress_enabled
from ..runs.states import check_state, load_state
from ..runs.folder import RESUME_FORMAT, RESUME_SOURCE

if TYPE_CHECKING:
    from .ddp import DistContext

__all__ = []

log = logging.getLogger(__name__)

StateDict = dict[str, torch.Tensor]
#: ``optimizer(parameters)``: the optimizer of a training run, made once its model exists.
OptimizerFactory = Callable[[Iterable[torch.nn.Parameter]], torch.optim.Optimizer]


def default_optimizer(train_cfg: TrainConfig) -> OptimizerFactory:
    """``torch.optim.Adam`` with the run's learning rate and weight decay (the paper's optimizer).

    ``foreach=True``: one call per operation for all parameters (0.34 against
    0.45 ms per update of GFL's parameters on one CPU thread; the same numbers
    to the last bit as the per-parameter loop torch takes by default on the CPU).
    """
    cfg = train_cfg.for_model("gfl")  # a setting left at None: the shared default
    return lambda params: torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay, foreach=True)


def rng_state() -> dict[str, Any]:
    """The states of Python's, NumPy's and torch's global generators as tensors and plain values.

    Loadable with ``torch.load(..., weights_only=True)``.
    """
    version, words, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": {"version": int(version), "state": torch.tensor(words, dtype=torch.int64), "gauss": gauss},
        "numpy": {"kind": str(kind), "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached": float(cached)},
        "torch": torch.get_rng_state(),
    }


def restore_rng_state(state: dict[str, Any]) -> None:
    """Put back the global generator states saved by :func:`rng_state`."""
    py, nps = state["python"], state["numpy"]
    random.setstate((py["version"], tuple(int(w) for w in py["state"].tolist()), py["gauss"]))
    keys = nps["keys"].numpy().astype(np.uint32)
    np.random.set_state((nps["kind"], keys, nps["pos"], nps["has_gauss"], nps["cached"]))
    torch.set_rng_state(state["torch"])


def _copy_state(module: torch.nn.Module) -> StateDict:
    return copy.deepcopy(module.state_dict())


@dataclass
class LoopState:
    """Where training stands after ``step`` steps.

    Attributes:
        step: steps taken so far.
        best_val: the best validation score so far (-1 before the first round;
            the step itself when there are no val graphs, so the latest wins).
        best_step: the step of the kept weights.
        best_state: the kept weights (``None`` until the first validation).
        stale: validation rounds since the last gain.
        rows: one metrics dict per step taken.
    """

    step: int = 0
    best_val: float = -1.0
    best_step: int = 0
    best_state: StateDict | None = None
    stale: int = 0
    rows: list[dict[str, float]] = field(default_factory=list)

    def record(self, module: torch.nn.Module, step: int, val: float) -> bool:
        """Count one validation round; keeps the weights and returns True on a gain."""
        if val > self.best_val:
            self.best_val, self.best_step, self.stale = val, step, 0
            self.best_state = _copy_state(module)
            return True
        self.stale += 1
        return False

    def checkpoint(self, module: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """Everything needed to continue: weights, optimizer, generators and this state."""
        return {
            "format": RESUME_FORMAT, "step": self.step, "model": _copy_state(module),
            "optimizer": copy.deepcopy(optimizer.state_dict()), "rng": rng_state(),
            "best_val": self.best_val, "best_step": self.best_step, "best_state": self.best_state,
            "stale": self.stale, "rows": [dict(r) for r in self.rows],
        }

    @classmethod
    def restore(cls, ckpt: dict[str, Any], module: torch.nn.Module, optimizer: torch.optim.Optimizer) -> "LoopState":
        """Load a :meth:`checkpoint` into ``module`` and ``optimizer`` and return its state.

        The checkpoint's :data:`RESUME_SOURCE` entry, when present, names its
        file in errors. The global generators are set last, so nothing drawn
        while building the model disturbs them.

        Raises:
            GFLError: one line naming the file and the first thing that does not
                fit the model (a key, or a parameter with both shapes).
        """
        source = ckpt.get(RESUME_SOURCE) or "the resume checkpoint"
        advice = ("the run's settings (config.json) or this checkpoint changed since the run started: put them "
                  "back, or start a fresh run in its place")
        model = "the model the run's settings describe"
        load_state(module, ckpt.get("model"), source=source, advice=advice, model=model)
        if ckpt.get("best_state") is not None:
            check_state(module, ckpt["best_state"], source=source, advice=advice,
                        what="the kept weights (best_state) do not fit", model=model)
        load_state(optimizer, ckpt.get("optimizer"), source=source, advice=advice, model=model)
        try:
            state = cls(int(ckpt["step"]), float(ckpt["best_val"]), int(ckpt["best_step"]), ckpt["best_state"],
                        int(ckpt["stale"]), [dict(r) for r in ckpt["rows"]])
            restore_rng_state(ckpt["rng"])
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as err:
            detail = f"no {err}" if isinstance(err, KeyError) else " ".join(str(err).split()) or type(err).__name__
            raise GFLError(f"{source}: not a complete resume checkpoint ({detail}); start a fresh run in its "
                           f"place") from None
        return state


def step_graph_ids(train_ids: Sequence[int], train_cfg: TrainConfig, step: int) -> list[int]:
    """The ``meta_batch`` training graphs of ``step``, drawn from ``(seed, step)`` alone
    (with replacement only when there are fewer graphs than that)."""
    rng = np.random.default_rng([train_cfg.seed, 2, step])
    ids = rng.choice(np.asarray(train_ids), size=train_cfg.meta_batch, replace=len(train_ids) < train_cfg.meta_batch)
    return [int(gid) for gid in ids]


def _train_step(module, optimizer, step_loss, cache, sampler, train_ids, train_cfg: TrainConfig,
                step: int) -> dict[str, float]:
    """One optimizer step on ``meta_batch`` graphs drawn from ``(seed, step)``; returns its metrics row."""
    start = time.perf_counter()
    loss, parts = step_loss(cache, sampler, step_graph_ids(train_ids, train_cfg, step), step)
    value = float(loss.detach())
    if not math.isfinite(value):
        raise GFLError(
            f"the training loss became {value} at step {step}; lower `lr`, set `grad_clip`, "
            f"or check the collection's features for extreme values"
        )
    optimizer.zero_grad()
    loss.backward()
    with one_thread():  # the parameters' small tensors: waking more threads costs more than it saves
        if train_cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(module.parameters(), train_cfg.grad_clip)
        optimizer.step()
    return {"step": step, "loss": value, **parts, "seconds": time.perf_counter() - start}


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
    resume: dict[str, Any] | None = None,
    save: Callable[[dict[str, Any]], None] | None = None,
    checkpoint_every: int = 50,
    dist: DistContext | None = None,
    optimizer: OptimizerFactory | None = None,
) -> tuple[list[dict[str, float]], int, float]:
    """The training loop of Algorithm 1, shared by GFL and the transfer baselines.

    Each step draws ``meta_batch`` train graphs (seeded from ``(seed, step)``),
    one episode each (seeded from ``(seed, graph_id, step)``), and takes an
    optimizer step (Adam by default) on ``step_loss(cache, sampler, graph_ids, step) -> (loss, parts)``.
    Every ``eval_every`` steps ``score(module, val_sampler, val_episodes,
    cache)`` rates the module on the val graphs; the best weights are kept
    (``on_best(step, val_accuracy)`` is called) and training stops after
    ``patience`` rounds without gain. The best weights are loaded at the end.

    Args:
        resume: a checkpoint from :meth:`LoopState.checkpoint` to continue from (its
            :data:`RESUME_SOURCE` entry names its file in errors).
        save: called with such a checkpoint every ``checkpoint_every`` steps.
        dist: one rank of a distributed run: each step works on this rank's
            share of the meta-batch, gradients are averaged across ranks and
            the val accuracies gathered (:meth:`gflkit.training.distributed.DistContext.wrap`);
            ``resume`` and ``save`` are those of rank 0, which every rank follows.
        optimizer: ``optimizer(parameters) -> torch.optim.Optimizer``, e.g.
            ``lambda ps: torch.optim.SGD(ps, lr=0.1)``; by default
            :func:`default_optimizer` (``torch.optim.Adam`` with ``train_cfg``'s
            ``lr`` and ``weight_decay``). Its ``state_dict`` goes into the
            resume checkpoints: resume a run with the optimizer it started with.

    Returns:
        Per-step metric rows, the step of the kept weights and their mean val
        accuracy (NaN without val graphs: then the latest weights are kept).

    Raises:
        GFLError: when the loss becomes NaN or infinite (naming the step).
    """
    if checkpoint_every < 1:
        raise GFLError(f"checkpoint_every={checkpoint_every} must be at least 1")
    train_cfg = train_cfg.for_model("gfl")  # settings left at None: the shared defaults (callers give the model's)
    sampler = EpisodeSampler(collection, "train", episode_cfg, train_cfg.seed).require_graphs()
    val_sampler = EpisodeSampler(collection, "val", episode_cfg, train_cfg.seed)
    if dist is not None:  # distributed: this rank's share of each meta-batch, DDP gradients, gathered scores
        step_loss, score = dist.wrap(module, step_loss, score)
        resume, save = dist.follow_main(resume, save)
    cache = GraphCache(collection, module_device(module))
    make_optimizer = optimizer if optimizer is not None else default_optimizer(train_cfg)
    optimizer = make_optimizer(module.parameters())
    train_ids = np.asarray(sampler.graph_ids)
    state = LoopState() if resume is None else LoopState.restore(resume, module, optimizer)
    if state.best_state is None:
        state.best_state = _copy_state(module)
    if resume is not None:
        log.info("resuming %s after step %d", name, state.step)
    steps = range(state.step + 1, train_cfg.steps + 1)
    bar = None
    if progress and progress_enabled():
        steps = bar = progress_bar(steps, desc=f"training {name}", unit="step", leave=False,
                                   initial=state.step, total=train_cfg.steps)
    module.train()
    stopped = state.stale >= train_cfg.patience
    for step in ([] if stopped else steps):
        row = _train_step(module, optimizer, step_loss, cache, sampler, train_ids, train_cfg, step)
        if step % train_cfg.eval_every == 0 or step == train_cfg.steps:
            if val_sampler.graph_ids:
                accs = score(module, val_sampler, train_cfg.val_episodes, cache)
                module.train()
                val = row["val_accuracy"] = float(np.mean(list(accs.values())))
            else:  # no validation graphs: keep the latest weights
                val, row["val_accuracy"] = float(step), float("nan")
            if state.record(module, step, val) and on_best is not None:
                on_best(step, row["val_accuracy"])
            if bar is not None:
                bar.set_postfix(loss=f"{row['loss']:.3f}", val=f"{row['val_accuracy']:.3f}")
        state.rows.append(row)
        state.step = step
        if state.stale >= train_cfg.patience:
            log.info("early stop at step %d (best validation at step %d)", step, state.best_step)
            break
        if save is not None and step % checkpoint_every == 0 and step < train_cfg.steps:
            save(state.checkpoint(module, optimizer))
    if bar is not None:
        bar.close()
    module.load_state_dict(state.best_state)
    module.eval()
    return state.rows, state.best_step, state.best_val if val_sampler.graph_ids else float("nan")
