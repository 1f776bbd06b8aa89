"""How much the second thread of a 2-thread step slows the first through the interpreter lock.

The parts of a meta-batch run on two threads of one process. Their kernels
run side by side, but every operation is called from Python, and a thread
needs the interpreter lock between two operations: while the other thread
runs Python (or a library that keeps the lock), it waits. This measures

1. how many tiny torch operations per second one thread gets alone, and beside
   a thread that keeps drawing episodes, batching graphs (``dgl.batch``) or
   computing the k-hop relational structure (scipy), the three pieces of
   preparing the next step;
2. the calling thread's 3-graph part of a step (5 x 4.5k nodes, one thread),
   while the other thread does nothing, while it computes its 2-graph part and
   then stops, and while it computes its part and then prepares the next
   step's two parts, as in training;
3. the same 3-graph part while the other core keeps computing 2-graph parts
   on a thread of this process, or in another process (which shares the
   cores' caches and memory but not the interpreter lock), or keeps running
   a matrix product that never takes the lock: what the lock costs, apart
   from what two busy cores cost each other.

It prints Markdown tables::

    python benchmarks/interpreter_lock.py [--switch-interval 0.0002]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _setup(nodes: int):
    import gflkit  # noqa: F401  (before dgl)
    import torch

    from gflkit import batching
    from gflkit.config import EpisodeConfig, GFLConfig
    from gflkit.data import GraphCollection
    from gflkit.episodes import EpisodeSampler
    from gflkit.models.gfl import GFL
    from step_benchmark import K_SHOT, build_collection

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="gflkit-lock-") as tmp:
        collection = GraphCollection.load(build_collection(nodes, Path(tmp) / "graphs"))
    sampler = EpisodeSampler(collection, "train", EpisodeConfig(k_shot=K_SHOT))
    cache = batching.GraphCache(collection)
    model = GFL(collection.feat_size, GFLConfig())
    return torch, batching, sampler, cache, model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=4500, help="Nodes per graph.")
    parser.add_argument("--rounds", type=int, default=4, help="Rounds of each measurement (medians printed).")
    parser.add_argument("--switch-interval", type=float, default=None,
                        help="sys.setswitchinterval in seconds (Python's default: 0.005).")
    parser.add_argument("--loop-part", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.loop_part:  # the other process of table 3: 2-graph parts until killed
        _loop_part(args.nodes)
        return
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    torch, batching, sampler, cache, model = _setup(args.nodes)
    torch.set_num_threads(1)
    batching.keep_freed_memory()  # as a training step does
    ids = sampler.graph_ids[:5]
    first, second = ids[:3], ids[3:]
    params = list(model.parameters())

    def prepare(gids, step):  # (graphs, episodes, batch, relations)
        return batching._prepare_ids(model, cache, sampler, gids, step)

    def part(prepared) -> None:
        _part(torch, batching, model, params, prepared)

    firsts = [prepare(first, step) for step in range(10)]
    seconds = [prepare(second, step) for step in range(10)]
    relations_of = batching._relations_ahead(model)
    pieces = {
        "nothing (alone)": lambda step: time.sleep(0.001),
        "drawing episodes": lambda step: [sampler.episode(g, step) for g in first],
        "batching graphs (`dgl.batch`)": lambda step: batching._model_batch(model, firsts[step % 10][0],
                                                                            firsts[step % 10][1]),
        "k-hop relational structure (scipy)": lambda step: relations_of(*firsts[step % 10][2][:2]),
    }

    def tiny_ops(seconds_: float) -> float:
        a, count, end = torch.randn(64, 32), 0, time.perf_counter() + seconds_
        while time.perf_counter() < end:
            a.add_(1.0)
            count += 1
        return count / seconds_

    print("| the other thread keeps | tiny torch operations per second on this thread |\n|---|---:|")
    for label, piece in pieces.items():
        rates = []
        for _ in range(args.rounds):
            stop = threading.Event()

            def loop() -> None:
                torch.set_num_threads(1)
                step = 0
                while not stop.is_set():
                    piece(step)
                    step += 1

            other = threading.Thread(target=loop)
            other.start()
            time.sleep(0.05)
            rates.append(tiny_ops(0.5))
            stop.set()
            other.join()
        print(f"| {label} | {statistics.median(rates) / 1e3:,.0f}k |")

    def helper(work: str, step: int, go: threading.Event) -> None:
        torch.set_num_threads(1)
        go.wait()
        if work == "none":
            return
        part(seconds[step])
        if work == "prepare":
            prepare(first, step + 1)
            prepare(second, step + 1)

    for step in range(3):  # warm-up
        part(firsts[step])
    print("\n| the other thread | the calling thread's 3-graph part (ms, median) |\n|---|---:|")
    times: dict[str, list[float]] = {"does nothing": [], "computes its 2-graph part, then stops": [],
                                     "computes its 2-graph part, then prepares the next step": []}
    for _ in range(args.rounds):
        for label, work in zip(times, ("none", "part", "prepare")):
            took = []
            for step in range(9):
                go = threading.Event()
                other = threading.Thread(target=helper, args=(work, step, go))
                other.start()
                go.set()
                start = time.perf_counter()
                part(firsts[step])
                took.append((time.perf_counter() - start) * 1e3)
                other.join()
            times[label].append(statistics.median(took))
    for label, values in times.items():
        print(f"| {label} | {statistics.median(values):.1f} ({', '.join(f'{v:.1f}' for v in values)}) |")

    def timed_parts() -> float:
        took = []
        for step in range(9):
            start = time.perf_counter()
            part(firsts[step])
            took.append((time.perf_counter() - start) * 1e3)
        return statistics.median(took)

    def beside_thread(work: Callable[[], None]) -> float:
        stop = threading.Event()

        def loop() -> None:
            torch.set_num_threads(1)
            while not stop.is_set():
                work()

        other = threading.Thread(target=loop)
        other.start()
        time.sleep(0.05)
        try:
            return timed_parts()
        finally:
            stop.set()
            other.join()

    def beside_process() -> float:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--loop-part", "--nodes", str(args.nodes)]
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env) as other:
            try:
                if other.stdout.readline().strip() != "ready":
                    raise SystemExit("the other process did not start")
                time.sleep(0.05)
                return timed_parts()
            finally:
                other.kill()

    product = (torch.randn(args.nodes * 2, 128), torch.randn(128, 64))
    steady: dict[str, list[float]] = {"does nothing": [], "computes 2-graph parts on a thread of this process": [],
                                      "computes 2-graph parts in another process": [],
                                      "multiplies matrices on a thread (no interpreter lock)": []}
    counter = iter(range(1 << 30))
    for _ in range(args.rounds):
        steady["does nothing"].append(timed_parts())
        steady["computes 2-graph parts on a thread of this process"].append(
            beside_thread(lambda: part(seconds[next(counter) % 10])))
        steady["computes 2-graph parts in another process"].append(beside_process())
        steady["multiplies matrices on a thread (no interpreter lock)"].append(
            beside_thread(lambda: torch.mm(*product)))
    print("\n| the other core, all along | the calling thread's 3-graph part (ms, median) |\n|---|---:|")
    for label, values in steady.items():
        print(f"| {label} | {statistics.median(values):.1f} ({', '.join(f'{v:.1f}' for v in values)}) |")


def _loop_part(nodes: int) -> None:
    """2-graph parts (forward and gradient) one after another, for ever: the other process of table 3."""
    torch, batching, sampler, cache, model = _setup(nodes)
    torch.set_num_threads(1)
    batching.keep_freed_memory()
    gids = sampler.graph_ids[3:5]
    params = list(model.parameters())
    prepared = [batching._prepare_ids(model, cache, sampler, gids, step) for step in range(10)]
    print("ready", flush=True)
    step = 0
    while True:
        _part(torch, batching, model, params, prepared[step % 10])
        step += 1


def _part(torch, batching, model, params, prepared) -> None:
    """Forward and gradient of one prepared part ``(graphs, episodes, batch, relations)``."""
    _, episodes, batch, relations = prepared
    loss, _ = batching._batch_loss(model, batch, episodes, relations)
    torch.autograd.grad(loss, params, allow_unused=True)


if __name__ == "__main__":
    main()
