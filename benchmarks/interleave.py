"""Time several implementations step by step in turns, each in its own process.

On a shared machine the load changes from one second to the next, so timings
taken one configuration after another compare different conditions. Here every
configuration runs in a persistent worker process; the parent asks each worker
in turn for one timed call, so the k-th calls of all configurations happen side
by side in time, and only one worker computes at any moment. A worker started
with an earlier commit's source tree first on ``PYTHONPATH`` times that commit.

Worker side: :func:`serve` with a ``setup()`` returning the function to time.
Parent side: :func:`interleave` with one command and environment per configuration.
"""
from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent


def rss_mb() -> float:
    """Current resident set size (VmRSS) in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (Linux >= 4.0), so that setup does not count."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


def serve(setup: Callable[[], Callable[[int], None]], warmup: int, reset_peak: bool = True,
          settle: int = 0) -> None:
    """Worker loop: build the timed function, then time one call per ``step`` line on stdin.

    Writes one JSON line per request to stdout: ``{"ready": ...}`` after setup
    and warm-up, ``{"seconds": t}`` per step, and a summary with peak memory
    after ``stop``.

    ``settle``: untimed calls right before each timed one. A worker waits
    while the others take their turns; on a virtual machine whose cores sit
    idle for that long, the next call of a multi-threaded worker can run
    much slower than the same call made straight after another one (see
    ``benchmarks/README.md``), which is how a training loop makes its steps.
    With ``settle=1`` each timed call follows a call of its own, whatever the
    other workers took.
    """
    rss_start = rss_mb()
    fn = setup()
    loaded = rss_mb()
    exact = reset_peak_rss() if reset_peak else False
    for i in range(warmup):
        fn(i)
    _send({"ready": True})
    i = warmup
    for line in sys.stdin:
        if line.strip() != "step":
            break
        for _ in range(settle):
            fn(i)
            i += 1
        faults = resource.getrusage(resource.RUSAGE_SELF)
        start, cpu = time.perf_counter(), time.process_time() + children_cpu_seconds()
        fn(i)
        seconds = time.perf_counter() - start
        cpu_seconds = time.process_time() + children_cpu_seconds() - cpu
        after = resource.getrusage(resource.RUSAGE_SELF)
        _send({"seconds": seconds, "cpu_seconds": cpu_seconds,
               "system_seconds": after.ru_stime - faults.ru_stime, "page_faults": after.ru_minflt - faults.ru_minflt})
        i += 1
    peak = peak_rss_mb()
    _send({"peak_rss_mb": peak, "peak_step_mb": peak - loaded, "rss_loaded_mb": loaded,
           "rss_start_mb": rss_start, "peak_exact": exact, **children_memory_mb()})


def _children() -> list[int]:
    """Process ids of this process's live children, Linux only.

    Such as the forked part process of trees from c12ac78 to d63f082.
    """
    pids: list[int] = []
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return pids


def children_cpu_seconds() -> float:
    """CPU time (user and system) of this process's live children, so far."""
    total = 0.0
    for pid in _children():
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(") ", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


def children_memory_mb() -> dict[str, float]:
    """The live children's peak RSS and private memory now (pages shared with this process,
    such as the loaded graphs of a forked child, count only in this process's figures)."""
    peak = private = 0.0
    for pid in _children():
        try:
            with open(f"/proc/{pid}/status") as f:
                peak += next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
            with open(f"/proc/{pid}/smaps_rollup") as f:
                private += sum(int(line.split()[1]) for line in f
                               if line.startswith(("Private_Clean:", "Private_Dirty:"))) / 1024
        except (OSError, StopIteration, ValueError):
            pass
    return {"children_peak_rss_mb": peak, "children_private_mb": private}


def _send(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def worker_env(threads: int, source: str | None = None) -> dict[str, str]:
    """Environment of a worker: its thread count, passive OpenMP waiting, and the
    source tree to time first on the path (``None``: the installed gflkit)."""
    env = dict(os.environ)
    # With the default (active) wait policy, idle OpenMP threads spin between
    # parallel regions and take the cores from any other work, including the
    # other workers' turns.
    env.setdefault("OMP_WAIT_POLICY", "passive")
    env["OMP_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, str(HERE), env.get("PYTHONPATH")]))
    return env


def interleave(commands: list[tuple[list[str], dict[str, str], str]], steps: int,
               max_seconds: float = float("inf")) -> list[dict]:
    """Run the workers ``(argv, env, cwd)`` in turns; one summary per worker.

    Each summary has ``times`` (seconds of each step), ``seconds`` (their median),
    ``cpu_seconds`` (the median CPU time of the worker's threads and of its
    child processes per step: less sensitive to other processes than wall time), ``system_seconds`` (the
    median kernel part of it) and ``page_faults`` (the median minor page faults
    per step: memory the step had to map afresh), and the worker's memory figures.
    The order of the turns rotates every step, so no configuration always follows the same one. Timing stops after
    ``steps`` turns, or earlier once ``max_seconds`` of steps have been spent
    (after at least 3 turns).
    """
    procs = [subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for argv, env, cwd in commands]
    try:
        for p in procs:
            _receive(p)  # ready
        times: list[list[float]] = [[] for _ in procs]
        cpu: list[list[float]] = [[] for _ in procs]
        kernel: list[list[dict]] = [[] for _ in procs]
        spent = 0.0
        for k in range(steps):
            order = list(range(len(procs)))
            order = order[k % len(order):] + order[: k % len(order)]
            for i in order:
                procs[i].stdin.write("step\n")
                procs[i].stdin.flush()
                reply = _receive(procs[i])
                t = reply["seconds"]
                times[i].append(t)
                cpu[i].append(reply["cpu_seconds"])
                kernel[i].append(reply)
                spent += t
            if k >= 2 and spent > max_seconds:
                break
        summaries = []
        for p, ts, cs, ks in zip(procs, times, cpu, kernel):
            p.stdin.write("stop\n")
            p.stdin.flush()
            summary = _receive(p)
            summary.update(times=ts, seconds=statistics.median(ts), cpu_seconds=statistics.median(cs),
                           system_seconds=statistics.median(r.get("system_seconds", 0.0) for r in ks),
                           page_faults=statistics.median(r.get("page_faults", 0) for r in ks))
            summaries.append(summary)
        return summaries
    finally:
        for p in procs:
            if p.stdin and not p.stdin.closed:
                p.stdin.close()
            p.wait(timeout=60)


def _receive(proc: subprocess.Popen) -> dict:
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"a benchmark worker ended early (exit {proc.wait()})")
    return json.loads(line)
