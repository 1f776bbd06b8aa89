"""The benchmark machinery: workers taking their turns, and the recorded reference outputs."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

from interleave import interleave, worker_env  # noqa: E402
from reference_outputs import CONFIGS  # noqa: E402

WORKER = textwrap.dedent("""
    import sys, time
    from interleave import serve
    log, pause = sys.argv[1], float(sys.argv[2])
    def setup():
        def step(i):
            with open(log, "a") as f:
                f.write(f"{sys.argv[3]} {i}\\n")
            time.sleep(pause)
        return step
    serve(setup, warmup=1)
""")


def test_workers_take_their_steps_in_turns(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    log = tmp_path / "log.txt"
    commands = [([sys.executable, str(script), str(log), str(pause), name], worker_env(1), str(tmp_path))
                for name, pause in (("a", 0.0), ("b", 0.05))]
    fast, slow = interleave(commands, steps=4)
    assert len(fast["times"]) == len(slow["times"]) == 4
    assert slow["seconds"] > fast["seconds"] and slow["seconds"] >= 0.05
    assert fast["peak_rss_mb"] > 0 and "cpu_seconds" in fast
    assert fast["page_faults"] >= 0 and fast["system_seconds"] >= 0
    lines = log.read_text().split()
    timed = [name for name, _ in zip(lines[::2], lines[1::2])][2:]  # after one warm-up step each
    # Each round runs both workers once, starting with a different one in turn.
    assert [sorted(timed[i : i + 2]) for i in range(0, 8, 2)] == [["a", "b"]] * 4
    assert timed[0::2] == ["a", "b", "a", "b"]


SETTLING_WORKER = textwrap.dedent("""
    import sys, time
    from interleave import serve
    log = sys.argv[1]
    def setup():
        def step(i):
            with open(log, "a") as f:
                f.write(f"{i}\\n")
            time.sleep(0.05 if i % 2 else 0.0)  # the settling calls are the slow ones
        return step
    serve(setup, warmup=1, settle=1)
""")


def test_settle_takes_untimed_steps_right_before_each_timed_one(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(SETTLING_WORKER)
    log = tmp_path / "log.txt"
    (summary,) = interleave([([sys.executable, str(script), str(log)], worker_env(1), str(tmp_path))], steps=3)
    # warm-up 0, then (settle 1, timed 2), (settle 3, timed 4), (settle 5, timed 6)
    assert log.read_text().split() == [str(i) for i in range(7)]
    assert len(summary["times"]) == 3 and max(summary["times"]) < 0.05


def test_interleave_stops_on_a_failing_worker(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("raise SystemExit(3)\n")
    with pytest.raises(SystemExit, match="ended early"):
        interleave([([sys.executable, str(bad)], worker_env(1), str(tmp_path))], steps=2)


def test_reference_outputs_cover_every_recorded_configuration():
    recorded = torch.load(Path(__file__).parent / "fixtures" / "gfl_outputs_2a76192.pt", weights_only=True)
    assert set(recorded) == set(CONFIGS)
    assert all(row["grads"] and row["logits"] for row in recorded.values())


def test_step_benchmark_copy_features_times_the_same_model_on_copied_features():
    """``--copy-features`` times the same model, seeded alike, declaring that it does not take the
    batch's features graph by graph (so the step copies them into the batch)."""
    import gflkit  # noqa: F401  (before dgl)
    from gflkit.data import SyntheticSpec, make_synthetic_family
    from step_benchmark import _sparse_step

    spec = SyntheticSpec(n_train=2, n_val=0, n_test=0, num_classes=4, feat_size=6, min_nodes=200, max_nodes=200)
    collection = make_synthetic_family(spec, seed=0, name="tiny")
    torch.manual_seed(0)
    plain, _ = _sparse_step(collection)
    torch.manual_seed(0)
    copied, step = _sparse_step(collection, copy_features=True)
    assert plain.takes_feature_parts and not copied.takes_feature_parts
    assert all(torch.equal(a, b) for a, b in zip(plain.parameters(), copied.parameters()))
    before = [p.detach().clone() for p in copied.parameters()]
    step(0)
    assert any(not torch.equal(a, b) for a, b in zip(before, copied.parameters()))  # it trained
