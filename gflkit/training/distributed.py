"""One meta-training run over several processes and machines (torch.distributed).

Every rank builds the same model from the same seed, draws the same meta-batch
ids at each step and works on its own contiguous share of them; gradients are
averaged by :class:`~torch.nn.parallel.DistributedDataParallel`. Each rank's
loss is scaled by ``world_size * share / meta_batch``, so the averaged gradient
is the gradient of the whole meta-batch's loss (a mean over graphs), as in a
single process, also when ``meta_batch`` is not a multiple of the number of
ranks. Validation graphs are split the same way and the per-graph
accuracies gathered, so every rank selects the same step.

Rank 0 writes the run folder through :class:`gflkit.runs.folder.RunFolder`
(partial folder, lock, ``last.pt``); the other ranks write nothing. A resumed
run starts every rank from rank 0's ``last.pt``, which holds the random
generator states of all ranks (:meth:`DistContext.follow_main`).

Ranks come from :func:`gflkit.training.parallel.launch` (``gflkit train --nproc N``:
processes spawned on this machine) or from ``torchrun``, whose ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` are read by
:func:`env_context`. Spawned ranks meet through a file in their shared
temporary folder and talk over the loopback interface only
(:func:`loopback_env`), so they open no socket on the machine's network;
under ``torchrun``, which may span machines, its settings hold. On the CPU the backend is gloo; with ``device="cuda"``
each rank trains on the GPU of its local rank and DDP's gradients travel over
NCCL, while the small bookkeeping collectives (losses, val accuracies,
generator states) stay on a gloo group of CPU tensors (:func:`backend_for`).
"""
from __future__ import annotations

import datetime
import functools
import logging
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import torch
import torch.distributed as tdist

from .. import names
from ..config import EpisodeConfig, GFLConfig, TrainConfig
from ..data import GraphCollection
from ..devices import resolve_device
from ..errors import GFLError
from ..models.gfl import GFL
from .ddp import DistContext
from .parallel import default_threads, launch
from ..runs.folder import BEST_FILE, METRICS_FILE, clear_stale_lock, final_run_path, next_free_path, partial_path
from ..runs.states import load_state
from .meta import CHECKPOINT_EVERY, TrainResult, meta_train
from .validation import validation_plan
from ..io import remove_inside

__all__ = ["train"]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = names.DEFAULT_TIMEOUT
_ENV_KEYS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def env_context() -> DistContext | None:
    """The rank set by ``torchrun`` (``RANK``, ``WORLD_SIZE`` ...), or ``None`` outside a multi-rank launch."""
    if "RANK" not in os.environ or int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    missing = [k for k in _ENV_KEYS if k not in os.environ]
    if missing:
        raise GFLError(f"distributed run: environment variable(s) {', '.join(missing)} not set; start with torchrun")
    return DistContext(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]),
                       int(os.environ.get("LOCAL_RANK", "0")))


def backend_for(device: torch.device) -> str:
    """The backend of the gradient collectives: ``nccl`` for CUDA devices when torch has it, else ``gloo``."""
    if device.type == "cuda" and tdist.is_nccl_available():
        return "nccl"
    return "gloo"


def rank_device(device: torch.device, local_rank: int) -> torch.device:
    """This rank's device: the GPU numbered by its local rank when ``device`` is CUDA."""
    return torch.device("cuda", local_rank) if device.type == "cuda" else device


def init_process_group(ctx: DistContext, timeout: float = DEFAULT_TIMEOUT,
                       device: torch.device = torch.device("cpu"), init_method: str = "env://") -> DistContext:
    """Join the process group; a dead peer fails collectives after ``timeout`` s.

    The ranks meet at ``init_method``: by default ``MASTER_ADDR:MASTER_PORT``
    (``torchrun``), or ``file://PATH`` for ranks of this machine. Returns
    ``ctx`` with its device and, under NCCL, a gloo group for the CPU-side
    collectives (:func:`backend_for`).
    """
    ctx.device = rank_device(device, ctx.local_rank)
    backend = backend_for(ctx.device)
    if ctx.device.type == "cuda":
        torch.cuda.set_device(ctx.device)
    if not tdist.is_initialized():
        tdist.init_process_group(backend, init_method=init_method, rank=ctx.rank, world_size=ctx.world_size,
                                 timeout=datetime.timedelta(seconds=timeout))
    if backend != "gloo" and ctx.cpu_group is None:
        ctx.cpu_group = tdist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=timeout))
    return ctx


def loopback_interface() -> str:
    """The name of this machine's loopback network interface (``lo`` on Linux, ``lo0`` on macOS and BSD)."""
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        names = []
    for name in names:
        try:
            if int(Path("/sys/class/net", name, "flags").read_text(), 16) & 0x8:  # IFF_LOOPBACK
                return name
        except (OSError, ValueError):
            pass
    return next((name for name in ("lo", "lo0") if name in names), "lo")


def loopback_env() -> dict[str, str]:
    """Environment of ranks that all run on this machine: gloo and NCCL sockets on the loopback interface only.

    Without it gloo binds to the address the host name resolves to, which may
    be on the local network. It is the ranks' own environment
    (:func:`gflkit.training.parallel.launch`), never that of the launching process.
    """
    lo = loopback_interface()
    return {"GLOO_SOCKET_IFNAME": lo, "NCCL_SOCKET_IFNAME": lo}


def is_main_process() -> bool:
    """False in a ``torchrun`` rank other than 0 (which must not print results)."""
    return os.environ.get("RANK", "0") == "0" or int(os.environ.get("WORLD_SIZE", "1")) <= 1


# -- one GFL run over the ranks ----------------------------------------------------------


def train_rank(ctx: DistContext, collection: GraphCollection, model_cfg: GFLConfig, episode_cfg: EpisodeConfig,
               train_cfg: TrainConfig, **kwargs: Any) -> TrainResult:
    """This rank's part of a run: :func:`~gflkit.training.meta.meta_train` with ``dist=ctx``.

    Rank 0 writes the run folder through :class:`~gflkit.runs.folder.RunFolder`
    (hidden partial folder, lock, ``last.pt``); ``kwargs`` are those of
    ``meta_train`` (``run_dir``, ``force``, ``resume``, ``checkpoint_every`` ...).
    """
    kwargs["progress"] = kwargs.get("progress", True) and ctx.is_main
    kwargs["device"] = ctx.device
    return meta_train(collection, model_cfg, episode_cfg, train_cfg, dist=ctx, **kwargs)


def _thread_lock_for_bars() -> None:
    """Give tqdm a thread lock: its default multiprocessing lock would leak a semaphore when a rank is stopped."""
    import threading

    from tqdm.std import tqdm

    tqdm.set_lock(threading.RLock())


def _train_worker(rank: int, nproc: int, folder: str, timeout: float, device: str, data, log_level: int, *args,
                  **kwargs) -> None:
    """A spawned rank: join the group, load the collection, train, and (rank 0) leave the result in ``folder``."""
    ctx = init_process_group(DistContext(rank, nproc, rank), timeout, torch.device(device),
                             init_method=Path(folder, "rendezvous").resolve().as_uri())
    logging.basicConfig(level=log_level if ctx.is_main else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", force=True)
    _thread_lock_for_bars()
    collection = data if isinstance(data, GraphCollection) else GraphCollection.load(data)
    result = train_rank(ctx, collection, *args, **kwargs)
    if ctx.is_main:  # plain tensors and builtins, so the parent reads it with weights_only=True
        state = {k: v.detach().cpu().clone() for k, v in result.model.state_dict().items()}
        run_dir = None if result.run_dir is None else str(result.run_dir)
        torch.save({"state_dict": state, "history": result.history.to_dict("list"), "best_step": result.best_step,
                    "best_val": result.best_val, "run_dir": run_dir, "meta": result.meta},
                   Path(folder, "result.pt"))
    ctx.barrier()  # every rank leaves the group together (see train)
    tdist.destroy_process_group()


def _check_run_dir(run_dir: str | os.PathLike | None, force: bool, resume: bool) -> None:
    """Fail before starting processes when rank 0 could not write ``run_dir``."""
    if run_dir is None or force or resume:
        return
    path = final_run_path(run_dir)
    if path.exists() or path.is_symlink():
        raise GFLError(f"{path} exists: pass `force=True` to replace it, or `run_dir={next_free_path(path)}`")


def train(collection: GraphCollection, model_cfg: GFLConfig, episode_cfg: EpisodeConfig, train_cfg: TrainConfig,
          *, model_name: str = "gfl", run_dir: str | os.PathLike | None = None, force: bool = False,
          resume: bool = False, checkpoint_every: int = CHECKPOINT_EVERY, nproc: int = 1, threads: int | None = None,
          timeout: float = DEFAULT_TIMEOUT, progress: bool = True,
          device: str | torch.device | None = None) -> TrainResult:
    """Meta-train one GFL model over ``nproc`` local ranks, or as this ``torchrun`` rank.

    ``run_dir``, ``force``, ``resume`` and ``checkpoint_every`` work as in
    :func:`~gflkit.training.meta.meta_train`; rank 0 writes the run. A failed or
    interrupted run leaves its partial folder with ``last.pt``, which
    ``resume=True`` continues on every rank. With a CUDA ``device`` each rank
    trains on the GPU of its local rank, and gradients are averaged over NCCL.

    Returns:
        The training result: the model with the selected weights (every rank
        holds the same).
    """
    device = resolve_device(device)
    ctx = env_context()
    world = ctx.world_size if ctx is not None else nproc
    train_cfg = train_cfg.for_model(model_name)
    if train_cfg.meta_batch < world:
        raise GFLError(f"`meta_batch={train_cfg.meta_batch}` is smaller than the {world} processes: "
                       f"raise `meta_batch` or lower `nproc`")
    # a validation setting that cannot apply fails here, once, not in every rank
    validation_plan(collection, train_cfg.val_from_train, train_cfg.seed, episode_cfg.k_shot, warn=False)
    kwargs = dict(model_name=model_name, run_dir=run_dir, force=force, resume=resume,
                  checkpoint_every=checkpoint_every, progress=progress)
    if resume and run_dir is not None and _finished(run_dir):  # stopped just before the rename: nothing to train
        if ctx is not None:
            raise GFLError(f"{final_run_path(run_dir)}: training has finished; resume it without torchrun "
                           f"to put the run in place")
        return meta_train(collection, model_cfg, episode_cfg, train_cfg, device=device, **kwargs)
    if ctx is not None:  # started by torchrun: this process is one rank
        torch.set_num_threads(threads or default_threads(int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
        ctx = init_process_group(ctx, timeout, device)
        try:
            result = train_rank(ctx, collection, model_cfg, episode_cfg, train_cfg, **kwargs)
            ctx.barrier()  # leave together: a rank that tore down its connections while a peer still held
            return result  # them aborted at exit ("terminate called without an active exception")
        finally:
            tdist.destroy_process_group()
    _check_run_dir(run_dir, force, resume)
    data = collection.path if collection.path is not None else collection
    args = (timeout, str(device), data, logging.getLogger().getEffectiveLevel(), model_cfg, episode_cfg, train_cfg)
    try:
        folder = launch(functools.partial(_train_worker, **kwargs), args, nproc, threads=threads, env=loopback_env())
    except BaseException:
        if run_dir is not None:  # rank 0 may have been stopped holding the run's lock
            clear_stale_lock(run_dir)
        raise
    try:
        payload = torch.load(folder / "result.pt", weights_only=True)
    finally:
        remove_inside(folder, tempfile.gettempdir())
    model = GFL.from_config(model_cfg, collection.feat_size)
    load_state(model, payload["state_dict"], source=folder / "result.pt", advice="train again")
    model.to(device).eval()
    run = None if payload["run_dir"] is None else Path(payload["run_dir"])
    return TrainResult(model, pd.DataFrame(payload["history"]), payload["best_step"], payload["best_val"], run,
                       payload["meta"])


def _finished(run_dir: str | os.PathLike) -> bool:
    """Whether the partial folder of ``run_dir`` holds a finished run awaiting its rename."""
    work = partial_path(run_dir)
    return (work / METRICS_FILE).is_file() and (work / BEST_FILE).is_file()
