"""What the commands do, as Python functions returning DataFrames.

Every ``gflkit`` command is a thin layer over one of these, so a notebook gets
the same numbers as the command line::

    import gflkit
    result, table = gflkit.train(aggregator="att")       # gflkit train --aggregator att
    table = gflkit.evaluate("runs/gfl-att", episodes=5)  # gflkit evaluate runs/gfl-att --episodes 5
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from . import distributed
from .config import PRESETS, EpisodeConfig, GFLConfig, TrainConfig, config_from_dict
from .data import GraphCollection, load_collection
from .episodes import EpisodeSampler
from .errors import GFLError
from .metrics import baseline_accuracies, graph_accuracies, summarise, transfer_accuracies
from .models.baselines import PER_GRAPH, TRANSFER
from .models.gfl import GFL
from .results import to_frame
from .runs import load_checkpoint, training_collection
from .training import TrainResult, fit_transfer, meta_train

__all__ = [
    "train", "evaluate", "evaluate_baseline", "model_config", "result_row", "model_names", "trainable_names",
]


def trainable_names() -> tuple[str, ...]:
    """Models that learn from the meta-training graphs (``train --model``)."""
    return tuple(PRESETS) + tuple(TRANSFER)


def model_names() -> tuple[str, ...]:
    """Every model name: trainable ones and per-graph baselines."""
    return trainable_names() + tuple(PER_GRAPH)


def model_config(model: str = "gfl", **overrides: Any) -> GFLConfig:
    """The preset ``model`` with keyword overrides (``None`` values ignored)."""
    if model not in PRESETS:
        raise GFLError(f"model {model!r} is not meta-trained: choose one of {', '.join(PRESETS)}")
    changes = {k: v for k, v in overrides.items() if v is not None}
    return replace(PRESETS[model], **changes)


def _aggregator(cfg: GFLConfig) -> str:
    return cfg.aggregator if cfg.uses_hierarchy else ""


def result_row(model: str, aggregator: str, collection: GraphCollection, split: str,
               per_graph: dict[int, float], episode_cfg: EpisodeConfig, episodes: int, seed: int) -> dict:
    """One result table row (accuracy and CI in percent)."""
    return {
        "model": model, "aggregator": aggregator, "dataset": collection.name, "split": split,
        "k_shot": episode_cfg.k_shot, "episodes": episodes, **summarise(per_graph), "seed": seed,
    }


def train(
    data: str | os.PathLike | GraphCollection | None = None,
    model_cfg: GFLConfig | None = None,
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    train_cfg: TrainConfig = TrainConfig(),
    *,
    model: str = "gfl",
    options: dict[str, Any] | None = None,
    out: str | os.PathLike | None = None,
    root: str | os.PathLike | None = None,
    eval_split: str | None = "test",
    episodes: int = 1,
    progress: bool = True,
    nproc: int = 1,
    threads_per_proc: int | None = None,
    timeout: float = distributed.DEFAULT_TIMEOUT,
) -> tuple[TrainResult, pd.DataFrame]:
    """Train ``model`` on the train graphs of a collection and score the result.

    Args:
        data: collection folder, name, object, or ``None`` for the built-in family.
        model_cfg: GFL settings (default: the preset ``model``); GFL presets only.
        episode_cfg, train_cfg: episode and training settings.
        model: a GFL preset (``gfl``, ``protonet``) or a transfer baseline name.
        options: keyword options of a transfer baseline.
        out: run folder (``None``: nothing written).
        root: data root for names and the default family.
        eval_split: split to evaluate after training (``None`` to skip).
        episodes: support draws per graph in that evaluation.
        nproc: processes to train one GFL model with (:mod:`gflkit.distributed`);
            under ``torchrun`` the launch decides and ``nproc`` is ignored. The
            processes are spawned: in a script, call this under
            ``if __name__ == "__main__":``.
        threads_per_proc: threads of each process (default: cores / nproc).
        timeout: seconds after which a rank waiting for a dead peer gives up.

    Returns:
        The training result and a one-row DataFrame (empty when not evaluated).
    """
    collection = load_collection(data, root)
    if nproc > 1 or distributed.env_context() is not None:  # one run over several processes
        if model in TRANSFER:
            raise GFLError(f"--nproc trains GFL models ({', '.join(PRESETS)}), not the transfer baseline {model}")
        cfg = model_cfg or model_config(model)
        result, per_graph = distributed.train(
            collection, cfg, episode_cfg, train_cfg, model_name=model, out=out, eval_split=eval_split,
            episodes=episodes, nproc=nproc, threads=threads_per_proc, timeout=timeout, progress=progress)
        rows = [] if per_graph is None else [
            result_row(model, _aggregator(cfg), collection, eval_split, per_graph, episode_cfg, episodes, train_cfg.seed)]
        return result, to_frame(rows)
    if model in TRANSFER:
        result = fit_transfer(model, collection, episode_cfg, train_cfg, options=options, run_dir=out,
                              progress=progress)
    else:
        cfg = model_cfg or model_config(model)
        result = meta_train(collection, cfg, episode_cfg, train_cfg, model_name=model, run_dir=out,
                            progress=progress)
    if eval_split is None:
        return result, to_frame([])
    row = _score(result.model, model, collection, eval_split, episode_cfg, episodes, train_cfg.seed)
    return result, to_frame([row])


def _score(module, name: str, collection: GraphCollection, split: str, episode_cfg: EpisodeConfig,
           episodes: int, seed: int) -> dict:
    sampler = EpisodeSampler(collection, split, episode_cfg, seed).require_graphs()
    if isinstance(module, GFL):
        per_graph, aggregator = graph_accuracies(module, sampler, episodes), _aggregator(module.cfg)
    else:
        per_graph, aggregator = transfer_accuracies(module, sampler, episodes), ""
    return result_row(name, aggregator, collection, split, per_graph, episode_cfg, episodes, seed)


def evaluate(
    run: str | os.PathLike | torch.nn.Module,
    data: str | os.PathLike | GraphCollection | None = None,
    *,
    split: str = "test",
    episodes: int = 1,
    episode_cfg: EpisodeConfig | None = None,
    seed: int = 0,
    root: str | os.PathLike | None = None,
    model_name: str | None = None,
) -> pd.DataFrame:
    """Score a trained model (run folder, checkpoint or module) on ``split``.

    Without ``data`` the collection the run was trained on is used when it can
    be found by name, else the built-in family. Without ``episode_cfg`` the
    run's own k_shot and n_query are used.
    """
    if isinstance(run, torch.nn.Module):
        module, meta = run, {"model": model_name or getattr(run, "name", "gfl"), "episode_config": {}}
    else:
        module, meta = load_checkpoint(run)
    if data is None:
        data = training_collection(meta, root)
    collection = load_collection(data, root)
    if collection.feat_size != module.in_feats:
        raise GFLError(
            f"the model expects {module.in_feats} features per node but collection {collection.name!r} has "
            f"{collection.feat_size}; evaluate on a collection of the same source"
        )
    ep_cfg = episode_cfg or config_from_dict(EpisodeConfig, meta.get("episode_config") or {})
    name = model_name or meta.get("model", "gfl")
    return to_frame([_score(module, name, collection, split, ep_cfg, episodes, seed)])


def evaluate_baseline(
    model: str,
    data: str | os.PathLike | GraphCollection | None = None,
    *,
    split: str = "test",
    episodes: int = 1,
    episode_cfg: EpisodeConfig = EpisodeConfig(),
    seed: int = 0,
    root: str | os.PathLike | None = None,
) -> pd.DataFrame:
    """Score a baseline that is fitted on each graph's support set alone."""
    if model not in PER_GRAPH:
        raise GFLError(f"{model!r} is not a per-graph baseline: choose one of {', '.join(PER_GRAPH)}")
    collection = load_collection(data, root)
    sampler = EpisodeSampler(collection, split, episode_cfg, seed).require_graphs()
    per_graph = baseline_accuracies(PER_GRAPH[model], sampler, episodes, seed)
    return to_frame([result_row(model, "", collection, split, per_graph, episode_cfg, episodes, seed)])
