"""This process's place in a distributed run, and the DDP wrapping of the training loop's step.

:class:`DistContext` is all the training loop needs of a distributed run (its
share of each meta-batch, DDP gradients, gathered scores and generator states);
:mod:`gflkit.training.distributed` starts the ranks and builds it.
"""
from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.distributed as tdist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from ..errors import GFLError

__all__ = ["DistContext"]

log = logging.getLogger(__name__)


@dataclass
class DistContext:
    """This process's place in a distributed run.

    Attributes:
        rank: global rank, 0 writes the run folder and the results.
        world_size: number of ranks.
        local_rank: rank on this machine.
    """

    rank: int
    world_size: int
    local_rank: int = 0
    #: The process group of the CPU-side collectives (``None``: the default group, which is then gloo).
    cpu_group: Any = None
    #: This rank's training device.
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def share(self, n: int) -> slice:
        """This rank's contiguous block of ``n`` items; the first ``n % world_size`` ranks get one more."""
        base, extra = divmod(n, self.world_size)
        start = self.rank * base + min(self.rank, extra)
        return slice(start, start + base + (self.rank < extra))

    def all_sum(self, values: list[float]) -> list[float]:
        """Sum ``values`` elementwise over ranks (float64)."""
        t = torch.tensor(values, dtype=torch.float64)
        tdist.all_reduce(t, group=self.cpu_group)
        return t.tolist()

    def barrier(self) -> None:
        tdist.barrier(group=self.cpu_group)

    def broadcast(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank."""
        box = [value]
        tdist.broadcast_object_list(box, src=0, group=self.cpu_group)
        return box[0]

    def follow_main(self, resume: dict[str, Any] | None,
                    save: Callable[[dict[str, Any]], None] | None) -> tuple[dict[str, Any] | None, Callable | None]:
        """The training loop's ``resume`` and ``save`` for this rank, from those of rank 0.

        Every rank continues from rank 0's resume checkpoint, with its own
        random generator states when the checkpoint holds one per rank. When
        rank 0 saves checkpoints, every rank takes part: the generator states
        of all ranks are gathered into rank 0's checkpoint (``rank_rng``), so a
        resumed run draws what the uninterrupted one would have.
        """
        resume, saving = self.broadcast((resume, save is not None) if self.is_main else None)
        if resume is not None and "rank_rng" in resume:
            states = resume["rank_rng"]
            if len(states) == self.world_size:
                resume = {**resume, "rng": states[self.rank]}
            elif self.is_main:
                log.warning("the run was checkpointed with %d processes and resumes with %d: results may differ "
                            "from an uninterrupted run", len(states), self.world_size)
        if not saving:
            return resume, None

        def save_all(ckpt: dict[str, Any]) -> None:
            states: list[Any] = [None] * self.world_size
            tdist.all_gather_object(states, ckpt["rng"], group=self.cpu_group)
            if self.is_main:
                save({**ckpt, "rank_rng": states})

        return resume, save_all

    def wrap(self, module: nn.Module, step_loss: Callable, score: Callable) -> tuple[Callable, Callable]:
        """The training loop's ``step_loss`` and ``score`` for this rank.

        ``step_loss`` runs on this rank's share of the meta-batch inside
        DistributedDataParallel; the returned loss has the whole meta-batch's
        value and the gradient that makes DDP's average the single-process
        gradient. ``score`` rates this rank's share of the graphs and gathers
        the per-graph accuracies of all ranks.
        """
        on_gpu = self.device.type == "cuda"
        ddp = DistributedDataParallel(_StepModule(module, step_loss), device_ids=[self.device] if on_gpu else None)

        def dist_step_loss(cache, sampler, ids: list[int], step: int):
            if len(ids) < self.world_size:
                raise GFLError(f"`meta_batch={len(ids)}` is smaller than the {self.world_size} processes: "
                               f"raise `meta_batch` or lower `nproc`")
            mine = ids[self.share(len(ids))]
            loss, parts = ddp(cache, sampler, mine, step)
            weight = len(mine) / len(ids)
            keys = list(parts)
            totals = self.all_sum([weight * float(loss.detach())] + [weight * float(parts[k]) for k in keys])
            scaled = loss * (weight * self.world_size)
            # Value of the whole meta-batch's loss (for the log), gradient of this rank's scaled share.
            return scaled + (totals[0] - scaled.detach()), dict(zip(keys, totals[1:]))

        return dist_step_loss, self.gather_scores(score)

    def gather_scores(self, score: Callable[..., dict[int, float]]) -> Callable[..., dict[int, float]]:
        """``score(module, sampler, *args)`` on this rank's share of the sampler's graphs, gathered."""

        def scored(module, sampler, *args, **kwargs) -> dict[int, float]:
            mine = copy.copy(sampler)
            mine.graph_ids = list(sampler.graph_ids[self.share(len(sampler.graph_ids))])
            local = score(module, mine, *args, **kwargs) if mine.graph_ids else {}
            parts: list[Any] = [None] * self.world_size
            tdist.all_gather_object(parts, local, group=self.cpu_group)
            merged = {gid: acc for part in parts for gid, acc in part.items()}
            return {gid: merged[gid] for gid in sampler.graph_ids}

        return scored


class _StepModule(nn.Module):
    """Runs a step function as a module's forward, so DDP sees the model's parameters."""

    def __init__(self, module: nn.Module, step_loss: Callable) -> None:
        super().__init__()
        self.module = module
        self._step_loss = step_loss

    def forward(self, *args):
        return self._step_loss(*args)
