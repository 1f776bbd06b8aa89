"""The gflkit functions the benchmarks call, in the current layout or an earlier one.

Before ``gflkit.batching`` and ``gflkit.metrics`` existed, ``prepare_graph`` and
``batch_episodes`` lived in ``gflkit.models.gfl`` and ``GraphCache`` and
``graph_accuracies`` in ``gflkit.evaluate``; since the package layout, they live in
``gflkit.graphs``, ``gflkit.evaluation.scoring`` and ``gflkit.training._engine``. The layout is read from the files
of the gflkit that ``import gflkit`` loaded, not from whether an import
succeeds: an editable install can supply a module of the installed tree to a
package loaded from another tree, which would mix two commits in one process.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace


def gflkit_layout() -> SimpleNamespace:
    """``GraphCache``, ``batch_episodes``, ``prepare_graph``, ``graph_accuracies``, ``GFL``,
    ``meta_batch_loss`` and ``StepLoss`` (``None`` before they existed), the training loop's optimizer
    ``Adam(params, lr=)`` (``gflkit.loop.default_optimizer`` where it exists) and the context its
    update runs in (``update_threads``), and
    the source folder, all from the tree of the loaded ``gflkit``."""
    import contextlib
    import importlib

    import torch

    import gflkit

    root = Path(gflkit.__file__).resolve().parent
    batching = None
    if (root / "graphs.py").exists():
        batching, metrics, gfl, engine = (importlib.import_module(f"gflkit.{m}") for m in (
            "graphs", "evaluation.scoring", "models.gfl", "training._engine"))
        parts = SimpleNamespace(GraphCache=batching.GraphCache, batch_episodes=batching.batch_episodes,
                                prepare_graph=batching.prepare_graph, graph_accuracies=metrics.graph_accuracies,
                                GFL=gfl.GFL, meta_batch_loss=engine.meta_batch_loss, StepLoss=engine.StepLoss)
        modules = [batching, metrics, gfl, engine]
    elif (root / "batching.py").exists():
        batching, metrics = (importlib.import_module(f"gflkit.{m}") for m in ("batching", "metrics"))
        gfl = importlib.import_module("gflkit.models.gfl")

        # The step's machinery: in gflkit._step_engine, before that in gflkit.batching (from d41f8f2).
        engine = importlib.import_module("gflkit._step_engine") if (root / "_step_engine.py").exists() else batching
        parts = SimpleNamespace(GraphCache=batching.GraphCache, batch_episodes=batching.batch_episodes,
                                prepare_graph=batching.prepare_graph, graph_accuracies=metrics.graph_accuracies,
                                GFL=gfl.GFL, meta_batch_loss=getattr(engine, "meta_batch_loss", None),
                                StepLoss=getattr(engine, "StepLoss", None))
        modules = [batching, metrics, gfl, engine]
    else:
        # The module, not the function of the same name that gflkit exported then.
        evaluate = importlib.import_module("gflkit.evaluate")
        gfl = importlib.import_module("gflkit.models.gfl")

        parts = SimpleNamespace(GraphCache=evaluate.GraphCache, batch_episodes=gfl.batch_episodes,
                                prepare_graph=gfl.prepare_graph, graph_accuracies=evaluate.graph_accuracies,
                                GFL=gfl.GFL, meta_batch_loss=None, StepLoss=None)
        modules = [evaluate, gfl]
    loop_file = next((f for f in (root / "training" / "loop.py", root / "loop.py") if f.exists()), None)
    loop = importlib.import_module("gflkit.training.loop" if loop_file and loop_file.parent.name == "training"
                                   else "gflkit.loop") if loop_file else None
    if loop is not None and hasattr(loop, "default_optimizer"):  # the loop's own choice of Adam
        config = importlib.import_module("gflkit.config")
        parts.Adam = lambda params, lr: loop.default_optimizer(config.TrainConfig(lr=lr))(params)
        modules.append(loop)
    elif (root / "optim.py").exists():  # gflkit's own Adam (from 1e8a329 to d63f082)
        parts.Adam = importlib.import_module("gflkit.optim").Adam
        modules.append(importlib.import_module("gflkit.optim"))
    else:
        parts.Adam = torch.optim.Adam
    # The loop's update on one thread, where it has one_thread (since 2275ac6).
    parts.update_threads = getattr(batching, "one_thread", None) if batching is not None else None
    if (root / "threads.py").exists():  # its own module since the thread pool left gflkit.graphs
        parts.update_threads = importlib.import_module("gflkit.threads").one_thread
    parts.update_threads = parts.update_threads or contextlib.nullcontext
    for module in modules:
        if root not in Path(module.__file__).resolve().parents:
            raise SystemExit(f"{module.__name__} comes from {module.__file__}, not from {root}")
    parts.root = root
    return parts


def training_step(parts: SimpleNamespace, model, cache, sampler, ids_of):
    """A closure ``step(i)`` taking meta-training step ``i`` on the graphs ``ids_of(i)`` (one
    episode each) as that tree's ``meta_train`` takes it: its loss (through its
    ``StepLoss``, which prepares the next step ahead, where that exists; in parts where
    ``meta_batch_loss`` exists), backward, and its optimizer's update (learning rate 0.01)."""
    optimizer = parts.Adam(model.parameters(), lr=0.01)
    step_loss = None
    if getattr(parts, "StepLoss", None) is not None:
        step_loss = parts.StepLoss(model, lambda sampler, i: ids_of(i))

    def step(i: int) -> None:
        ids = ids_of(i)
        if step_loss is not None:
            loss, _ = step_loss(cache, sampler, ids, i)
        else:
            graphs, episodes = [cache[gid] for gid in ids], [sampler.episode(gid, i) for gid in ids]
            if parts.meta_batch_loss is not None:  # the meta-batch in parts side by side
                loss, _ = parts.meta_batch_loss(model, graphs, episodes)
            else:
                bg, support, queries = parts.batch_episodes(graphs, episodes)
                loss, _ = model.loss(model(bg, support, queries), [e.query_label for e in episodes])
        optimizer.zero_grad()
        loss.backward()
        with parts.update_threads():
            optimizer.step()
        if step_loss is not None:  # the next step's preparation counts in this step's time
            step_loss.wait()

    return step
