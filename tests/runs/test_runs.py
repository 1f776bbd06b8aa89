"""Run folders a user can trust: no overwrite, locks, resume after kill -9, provenance, listing."""
from __future__ import annotations

import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from cli_helpers import invoke, invoke_until_first_checkpoint, one_line_error

import gflkit
from gflkit.config import EpisodeConfig, TrainConfig
from gflkit.errors import GFLError
from gflkit.training.loop import LoopState, fit_loop, restore_rng_state, rng_state
from gflkit.runs.folder import RunFolder, partial_path
from gflkit.runs.checkpoints import collection_hash, load_checkpoint

FAST = ["--steps", "6", "--eval-every", "3", "--k-shot", "5"]
# Long enough to be killed in the middle; dropout makes the global torch generator matter.
KILLABLE = ["--steps", "40", "--eval-every", "4", "--patience", "100", "--k-shot", "5", "--dropout", "0.5",
            "--checkpoint-every", "3"]


def train(root: Path, *args):
    return invoke("train", *FAST, "--data-root", root, "tiny", *args)


# -- the run folder -------------------------------------------------------------------


def test_default_name_hashes_the_settings(root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert train(root).exit_code == 0
    assert train(root, "--lr", "0.02").exit_code == 0
    assert train(root, "--model", "protonet").exit_code == 0
    names = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(names) == 3 and not any(n.startswith(".") for n in names)  # no partial folder or lock left
    mean = [n for n in names if n.startswith("tiny-gfl-mean-s0-")]
    assert len(mean) == 2 and all(len(n.rsplit("-", 1)[1]) == 6 for n in mean)
    assert [n for n in names if n.startswith("tiny-protonet-s0-")]


def test_existing_run_is_never_overwritten_without_force(root, tmp_path):
    run = tmp_path / "run"
    first = train(root, "--run-dir", run)
    assert first.exit_code == 0
    before = (run / "best.pt").read_bytes()
    line = one_line_error(train(root, "--run-dir", run, "--seed", "1"))
    assert "--force" in line and str(tmp_path / "run-2") in line
    assert (run / "best.pt").read_bytes() == before and not partial_path(run).exists()
    forced = train(root, "--run-dir", run, "--seed", "1", "--force")
    assert forced.exit_code == 0, forced.output
    assert json.loads((run / "config.json").read_text())["seed"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_second_writer_gets_a_one_line_error(root, tmp_path):
    run = tmp_path / "run"
    with RunFolder(run):  # another process writing this run holds the lock
        line = one_line_error(train(root, "--run-dir", run))
        assert "another gflkit process is writing" in line
    assert train(root, "--run-dir", run).exit_code == 0


def test_config_records_provenance(root, tmp_path):
    run = tmp_path / "run"
    assert train(root, "--run-dir", run).exit_code == 0
    config = json.loads((run / "config.json").read_text())
    prov = config["provenance"]
    assert prov["gflkit"] == gflkit.__version__ and prov["torch"] == str(torch.__version__)
    assert {"dgl", "python", "threads", "command", "started", "finished"} <= set(prov)
    assert prov["started"] <= prov["finished"]
    collection = gflkit.load_collection("tiny", root)
    assert config["data_sha256"] == collection_hash(collection)
    assert config["step"] >= 1 and 0 <= config["val_accuracy"] <= 1


def test_collection_hash_is_the_content(small_family, tmp_path):
    saved = small_family.save(tmp_path / "c")
    loaded = gflkit.load_collection(saved)
    assert collection_hash(loaded) == collection_hash(small_family)
    loaded.graphs[0].ndata["feat"][0, 0] += 1
    assert collection_hash(loaded) != collection_hash(small_family)


def test_the_remembered_content_hash_follows_every_change(small_family, tmp_path):
    """save() hashes the content on the side; the remembered hash is the hash computed afresh,
    and any change to what it covers (in place or by replacement) is noticed."""
    collection = gflkit.load_collection(small_family.save(tmp_path / "a"))
    collection.save(tmp_path / "b")
    assert collection._content_memo is not None
    fresh = lambda: gflkit.load_collection(collection.save(tmp_path / "c")).content_sha256()  # noqa: E731
    assert collection.content_sha256() == fresh() == collection_hash(small_family)
    before = collection.content_sha256()
    collection.graphs[1].ndata["label"][0] = (collection.graphs[1].ndata["label"][0] + 1) % 4
    assert collection.content_sha256() != before
    assert collection.content_sha256() == fresh()
    before = collection.content_sha256()
    collection.graphs[0].ndata["feat"] = collection.graphs[0].ndata["feat"] + 1  # a new tensor
    assert collection.content_sha256() != before
    before = collection.content_sha256()
    collection.splits[0], collection.splits[-1] = collection.splits[-1], collection.splits[0]
    assert collection.content_sha256() != before
    assert collection.content_sha256() == fresh()


def test_runs_lists_complete_and_interrupted_runs(root, tmp_path):
    assert train(root, "--run-dir", tmp_path / "a").exit_code == 0
    assert train(root, "--run-dir", tmp_path / "b", "--model", "protonet").exit_code == 0
    shutil.copytree(tmp_path / "b", partial_path(tmp_path / "c"))  # a run interrupted before last.pt
    (partial_path(tmp_path / "c") / "metrics.csv").unlink()
    result = invoke("runs", tmp_path)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(io.StringIO(result.stdout), keep_default_na=False)
    assert list(table["name"]) == ["a", "b", "c"]
    assert list(table["status"]) == ["complete", "complete", "interrupted"]
    assert list(table["model"]) == ["gfl", "protonet", "protonet"]
    assert set(table.columns) >= {"dataset", "step", "val_accuracy", "date"}
    assert 0 <= float(table.loc[0, "val_accuracy"]) <= 100 and table.loc[0, "date"].endswith("Z")


# -- refusing what is not a finished run ----------------------------------------------


def test_evaluate_refuses_unfinished_runs(root, tmp_path):
    run = tmp_path / "run"
    assert train(root, "--run-dir", run).exit_code == 0
    half = tmp_path / "half"
    shutil.copytree(run, half)
    (half / "metrics.csv").unlink()
    assert "did not finish" in one_line_error(invoke("evaluate", half, "--data-root", root))
    shutil.move(str(half), partial_path(tmp_path / "other"))
    for target in (partial_path(tmp_path / "other"), tmp_path / "other"):
        line = one_line_error(invoke("evaluate", target, "--data-root", root))
        assert "--resume" in line and str(tmp_path / "other") in line


def _edit_checkpoint(path: Path, edit) -> None:
    """Edit a run's best.pt and record its new SHA-256, so the checks behind the digest are reached."""
    import hashlib

    ckpt = torch.load(path, weights_only=True)
    edit(ckpt)
    torch.save(ckpt, path)
    config = json.loads((path.parent / "config.json").read_text())
    config["sha256"]["best.pt"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (path.parent / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("edit, expected", [
    (lambda c: c["state_dict"].pop(next(iter(c["state_dict"]))), "missing"),
    (lambda c: c["state_dict"].update({k: torch.zeros(3, 3) for k in list(c["state_dict"])[:1]}), "wrong shape"),
    (lambda c: c["state_dict"].update(extra=torch.zeros(1)), "unexpected"),
    (lambda c: c["model_config"].update(levels="three"), "settings"),
    (lambda c: c["model_config"].update(colour=1), "unknown GFLConfig fields"),
    (lambda c: c.pop("in_feats"), "in_feats"),
])
def test_damaged_checkpoint_is_a_one_line_error_naming_it(root, tmp_path, edit, expected):
    run = tmp_path / "run"
    assert train(root, "--run-dir", run).exit_code == 0
    _edit_checkpoint(run / "best.pt", edit)
    line = one_line_error(invoke("evaluate", run, "--data-root", root))
    assert str(run / "best.pt") in line and expected in line


def test_missing_collection_names_the_recorded_path_and_data_root(root, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(root, data)
    run = tmp_path / "run"
    assert invoke("train", *FAST, "--data-root", data, "tiny", "--run-dir", run).exit_code == 0
    shutil.rmtree(data)
    line = one_line_error(invoke("evaluate", run, "--data-root", tmp_path / "elsewhere"))
    assert str(data / "processed" / "tiny") in line and "--data-root" in line
    assert invoke("evaluate", run, "--data-root", root).exit_code == 0  # found by name under that root


def test_evaluate_reuses_the_runs_seed(root, tmp_path):
    run = tmp_path / "run"
    trained = train(root, "--run-dir", run, "--seed", "3")
    again = invoke("evaluate", run, "--data-root", root)
    assert again.exit_code == 0, again.output
    assert "seed 3" in again.stderr
    assert again.stdout == trained.stdout
    other = invoke("evaluate", run, "--data-root", root, "--seed", "4")
    assert pd.read_csv(io.StringIO(other.stdout)).loc[0, "seed"] == 4


# -- failures during training -----------------------------------------------------------


def test_non_finite_loss_stops_the_run_naming_the_step(small_family):
    def step_loss(cache, sampler, ids, step):
        value = float("nan") if step == 3 else 1.0
        return module.weight.sum() * 0 + value, {}

    module = torch.nn.Linear(2, 2)
    with pytest.raises(GFLError, match="at step 3"):
        fit_loop(module, small_family, EpisodeConfig(k_shot=2), TrainConfig(steps=5), step_loss=step_loss,
                 score=lambda *a: {}, name="x", progress=False)


def test_failed_run_leaves_nothing(root, tmp_path, monkeypatch):
    from gflkit.training import meta as training

    def nan_step(model, train_cfg=None):
        def step_loss(cache, sampler, ids, step):
            return next(model.parameters()).sum() * float("inf"), {}
        return step_loss

    monkeypatch.setattr(training, "_gfl_step", nan_step)
    line = one_line_error(train(root, "--run-dir", tmp_path / "run"))
    assert "at step 1" in line
    assert list(tmp_path.iterdir()) == []


# -- resume ----------------------------------------------------------------------------


def test_rng_state_round_trip(tmp_path):
    state = rng_state()
    first = (random.random(), np.random.rand(), torch.rand(2))
    torch.save(state, tmp_path / "rng.pt")
    restore_rng_state(torch.load(tmp_path / "rng.pt", weights_only=True))
    second = (random.random(), np.random.rand(), torch.rand(2))
    assert first[:2] == second[:2] and torch.equal(first[2], second[2])


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def _gflkit(*args, timeout: float = 300) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "gflkit_cli.main", "-q", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())


def _kill_when(run: Path, ready, root: Path, sig: int = signal.SIGKILL) -> tuple[int, str]:
    """Start ``gflkit train`` into ``run``, send ``sig`` as soon as ``ready(partial)`` holds.

    Returns the exit status and stderr.
    """
    cmd = [sys.executable, "-m", "gflkit_cli.main", "-q", "train", *KILLABLE, "--data-root", str(root), "tiny",
           "--run-dir", str(run)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        deadline = time.monotonic() + 240
        while not ready(partial_path(run)):
            assert proc.poll() is None, "training ended before it could be killed"
            assert time.monotonic() < deadline, "training did not reach the kill point in time"
            time.sleep(0.005)
        assert proc.poll() is None
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=120)
        return proc.returncode, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _state(run: Path) -> tuple[dict[str, torch.Tensor], dict]:
    ckpt = torch.load(run / "best.pt", weights_only=True)
    return ckpt.pop("state_dict"), {k: ckpt[k] for k in ("step", "val_accuracy", "model_config", "train_config")}


@pytest.fixture(scope="module")
def uninterrupted(root, tmp_path_factory):
    run = tmp_path_factory.mktemp("whole") / "run"
    done = _gflkit("train", *KILLABLE, "--data-root", root, "tiny", "--run-dir", run)
    assert done.returncode == 0, done.stderr
    return run, done.stdout


@pytest.mark.parametrize("moment, sig", [
    ("after the first last.pt", signal.SIGKILL),
    ("before any last.pt", signal.SIGKILL),
    ("after the first last.pt", signal.SIGINT),  # Ctrl-C
])
@pytest.mark.slow
def test_kill_then_resume_is_bit_identical(root, tmp_path, uninterrupted, moment, sig):
    reference, row = uninterrupted
    run = tmp_path / "run"
    if moment == "after the first last.pt":
        marker = "last.pt"
    else:
        marker = "config.json"

    def ready(partial):
        return (partial / marker).is_file()

    code, stderr = _kill_when(run, ready, root, sig)
    if sig == signal.SIGINT:
        assert code == 130 and "Traceback" not in stderr
        assert stderr.strip().splitlines()[-1] == f"interrupted; continue with: gflkit train --resume {run}"
    assert not run.exists() and partial_path(run).is_dir()  # only the hidden partial folder
    line = one_line_error(invoke("evaluate", run, "--data-root", root))
    assert "--resume" in line
    resumed = _gflkit("train", "--resume", run, "--data-root", root)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == row and row.count("\n") == 2
    assert not partial_path(run).exists() and not (run / "last.pt").exists()
    weights, meta = _state(run)
    want_weights, want_meta = _state(reference)
    assert meta == want_meta
    assert weights.keys() == want_weights.keys()
    assert all(torch.equal(weights[k], want_weights[k]) for k in weights)
    history, want = pd.read_csv(run / "metrics.csv"), pd.read_csv(reference / "metrics.csv")
    pd.testing.assert_frame_equal(history.drop(columns="seconds"), want.drop(columns="seconds"))


def test_resume_continues_from_last_checkpoint_in_process(small_family):
    """The resume checkpoint restores the loop exactly (without a subprocess)."""
    ep, tr = EpisodeConfig(k_shot=3), TrainConfig(steps=8, eval_every=2, seed=1)
    cfg = gflkit.model_config("gfl", dropout=0.3, levels=2, clusters=(4,))
    whole = gflkit.training.meta.meta_train(small_family, cfg, ep, tr, progress=False)
    saved = []
    gflkit.seeding.seed_everything(tr.seed)
    model = gflkit.models.gfl.GFL(small_family.feat_size, cfg)
    from gflkit.evaluation.scoring import graph_accuracies
    from gflkit.training.meta import _gfl_step

    fit_loop(model, small_family, ep, TrainConfig(steps=5, eval_every=2, seed=1), step_loss=_gfl_step(model),
             score=graph_accuracies, name="x", progress=False, save=saved.append, checkpoint_every=4)
    assert [c["step"] for c in saved] == [4]
    state = LoopState.restore(saved[0], model, torch.optim.Adam(model.parameters()))
    assert state.step == 4 and len(state.rows) == 4
    resumed = gflkit.models.gfl.GFL(small_family.feat_size, cfg)
    rows, best_step, best_val = fit_loop(resumed, small_family, ep, tr, step_loss=_gfl_step(resumed),
                                         score=graph_accuracies, name="x", progress=False, resume=saved[0])
    assert [r["loss"] for r in rows] == list(whole.history["loss"])
    assert (best_step, best_val) == (whole.best_step, whole.best_val)
    assert all(torch.equal(a, b) for a, b in zip(resumed.state_dict().values(), whole.model.state_dict().values()))


def test_resume_of_finished_run_scores_it(root, tmp_path):
    run = tmp_path / "run"
    trained = train(root, "--run-dir", run)
    assert trained.exit_code == 0
    again = invoke("train", "--resume", run, "--data-root", root)
    assert again.exit_code == 0, again.output
    assert again.stdout == trained.stdout
    # stopped after finishing, before the rename: the resume only renames
    shutil.move(str(run), partial_path(run))
    again = invoke("train", "--resume", run, "--data-root", root)
    assert again.exit_code == 0, again.output
    assert again.stdout == trained.stdout and run.is_dir() and not partial_path(run).exists()


def test_resume_removes_stale_temp_files_and_refuses_settings(root, tmp_path):
    run = tmp_path / "run"
    assert train(root, "--run-dir", run).exit_code == 0
    shutil.move(str(run), partial_path(run))
    (partial_path(run) / "metrics.csv").unlink()
    (partial_path(run) / ".last.pt.abc123.tmp").write_bytes(b"half a checkpoint")
    usage = invoke("train", "--resume", run, "--lr", "0.5", "--data-root", root)
    assert usage.exit_code == 2 and "--lr" in usage.stderr
    resumed = invoke("train", "--resume", run, "--data-root", root)
    assert resumed.exit_code == 0, resumed.output
    assert sorted(p.name for p in run.iterdir()) == ["best.pt", "config.json", "metrics.csv"]
    assert "resumed" in json.loads((run / "config.json").read_text())["provenance"]
    line = one_line_error(invoke("train", "--resume", tmp_path / "nothing", "--data-root", root))
    assert "nothing to resume" in line


def test_new_run_of_the_same_name_removes_an_interrupted_one(root, tmp_path):
    run = tmp_path / "run"
    partial_path(run).mkdir()
    (partial_path(run) / "config.json").write_text("{}")
    assert train(root, "--run-dir", run).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_python_api_mirrors_the_cli(root, tmp_path):
    ep, tr = EpisodeConfig(k_shot=5), TrainConfig(steps=6, eval_every=3)
    run = tmp_path / "run"
    result, table = gflkit.train("tiny", episode_cfg=ep, train_cfg=tr, run_dir=run, root=root, progress=False,
                                 return_result=True)
    assert result.run_dir == run and (run / "metrics.csv").is_file()
    with pytest.raises(GFLError, match="`force=True`"):
        gflkit.train("tiny", episode_cfg=ep, train_cfg=tr, run_dir=run, root=root, progress=False)
    forced = gflkit.train("tiny", episode_cfg=ep, train_cfg=tr, run_dir=run, force=True, root=root, progress=False)
    pd.testing.assert_frame_equal(forced, table)
    resumed = gflkit.train(resume=run, root=root, progress=False)
    pd.testing.assert_frame_equal(resumed, table)
    with pytest.raises(GFLError, match="own settings"):
        gflkit.train(resume=run, train_cfg=TrainConfig(steps=3), root=root)
    _, meta = load_checkpoint(run)
    assert meta["step"] == result.best_step


def test_python_train_keeps_its_run_under_runs_as_the_cli_does(root, tmp_path, monkeypatch):
    ep, tr = EpisodeConfig(k_shot=5), TrainConfig(steps=6, eval_every=3)
    (tmp_path / "py").mkdir()
    monkeypatch.chdir(tmp_path / "py")
    result, _ = gflkit.train("tiny", episode_cfg=ep, train_cfg=tr, root=root, progress=False, return_result=True)
    kept = list((tmp_path / "py" / "runs").iterdir())
    assert [p.name for p in kept] == [result.run_dir.name] and (kept[0] / "best.pt").is_file()
    assert result.run_dir.name.startswith("tiny-gfl-mean-s0-")
    (tmp_path / "cli").mkdir()
    monkeypatch.chdir(tmp_path / "cli")
    assert train(root).exit_code == 0  # the same settings on the command line: the same name
    assert [p.name for p in (tmp_path / "cli" / "runs").iterdir()] == [result.run_dir.name]


def test_python_train_run_dir_false_keeps_nothing(root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ep, tr = EpisodeConfig(k_shot=5), TrainConfig(steps=3, eval_every=3)
    result, table = gflkit.train("tiny", episode_cfg=ep, train_cfg=tr, root=root, progress=False,
                                 return_result=True, run_dir=False)
    assert result.run_dir is None and len(table) == 1
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(GFLError, match="run_dir=True"):
        gflkit.train("tiny", root=root, run_dir=True)
    with pytest.raises(GFLError, match="give run_dir only"):
        gflkit.train("tiny", root=root, run_dir=tmp_path / "a", out=tmp_path / "b")
    assert list(tmp_path.iterdir()) == []


def test_python_train_old_out_still_works_with_a_deprecation_warning(root, tmp_path):
    run = tmp_path / "run"
    with pytest.warns(DeprecationWarning, match="use run_dir"):
        gflkit.train("tiny", episode_cfg=EpisodeConfig(k_shot=5), train_cfg=TrainConfig(steps=3, eval_every=3),
                     out=run, root=root, progress=False, eval_split=None)
    assert (run / "best.pt").is_file()


def test_runs_without_a_runs_folder_prints_the_header(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("runs")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "name,status,model,aggregator,dataset,seed,step,val_accuracy,date,verified,reason"
    assert "no such folder" in one_line_error(invoke("runs", tmp_path / "missing"))


# -- runs that are what they claim ---------------------------------------------------------


@pytest.fixture(scope="module")
def finished(root, tmp_path_factory) -> Path:
    """One finished run of ``tiny``; tests copy it before changing it."""
    run = tmp_path_factory.mktemp("finished") / "run"
    assert train(root, "--run-dir", run).exit_code == 0
    return run


def _copy(run: Path, tmp_path: Path, name: str = "run") -> Path:
    return Path(shutil.copytree(run, tmp_path / "runs" / name))


def _random_bytes(path: Path) -> None:
    path.write_bytes(np.random.default_rng(0).bytes(4096))


def _listing(folder: Path, *args) -> tuple[pd.DataFrame, list[str]]:
    """``gflkit runs FOLDER``: its table and its stderr lines; exit 0, no traceback."""
    result = invoke("runs", folder, *args)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "\\n\\t" not in result.output
    return pd.read_csv(io.StringIO(result.stdout), keep_default_na=False), result.stderr.splitlines()


def _no_escaped_text(line: str) -> None:
    assert "\\n" not in line and "\\t" not in line and "Error(s) in loading" not in line, line


def test_finished_run_records_the_sha256_of_its_files(finished):
    import hashlib

    config = json.loads((finished / "config.json").read_text())
    assert config["sha256"] == {name: hashlib.sha256((finished / name).read_bytes()).hexdigest()
                                for name in ("best.pt", "metrics.csv")}
    assert torch.load(finished / "best.pt", weights_only=True)["format"] == "gflkit.checkpoint"
    table, errors = _listing(finished.parent)
    assert list(table["status"]) == ["complete"] and list(table["verified"]) == ["yes"] and errors == []


def _listed_damaged(run: Path, name: str) -> None:
    """Random bytes in ``run/name``: ``gflkit runs`` lists the run as damaged, naming the file, in one stderr line."""
    _random_bytes(run / name)
    table, stderr = _listing(run.parent)
    row = table.iloc[0]
    assert (row["status"], row["verified"]) == ("damaged", "no") and row["reason"].startswith(f"{name}: SHA-256")
    assert len(stderr) == 1 and str(run) in stderr[0] and name in stderr[0]


def test_random_bytes_best_pt_is_listed_damaged_and_not_loaded(finished, root, tmp_path):
    run = _copy(finished, tmp_path)
    _listed_damaged(run, "best.pt")
    for command in (["evaluate", run, "--data-root", root],
                    ["predict", run / "best.pt", "--graph", "tiny:6", "--labels", tmp_path / "l.csv"],
                    ["embed", run, "--graph", "tiny:6", "-o", tmp_path / "z.npy"]):
        line = one_line_error(invoke(*command), str(run / "best.pt"), "SHA-256")
        _no_escaped_text(line)
    assert not (tmp_path / "z.npy").exists()


def test_random_bytes_metrics_csv_is_listed_damaged(finished, root, tmp_path):
    run = _copy(finished, tmp_path)
    _listed_damaged(run, "metrics.csv")
    line = one_line_error(invoke("train", "--resume", run, "--data-root", root), str(run / "metrics.csv"), "SHA-256")
    _no_escaped_text(line)
    assert invoke("evaluate", run, "--data-root", root).exit_code == 0  # best.pt itself is intact


@pytest.mark.parametrize("damage, reason", [
    (lambda run: (run / "config.json").write_text("{not json"), "config.json: not JSON"),
    (lambda run: (run / "config.json").unlink(), "config.json: missing"),
    (lambda run: (run / "config.json").write_text("[1, 2]"), "config.json: not the configuration of a gflkit run"),
    (lambda run: (run / "best.pt").unlink(), "best.pt: missing"),
    (lambda run: (run / "metrics.csv").unlink(), "metrics.csv: missing"),
    (lambda run: [p.unlink() for p in run.iterdir()], "config.json: missing"),
], ids=["config-not-json", "config-missing", "config-not-a-run", "best-missing", "metrics-missing", "empty"])
def test_malformed_folder_is_listed_not_skipped(finished, tmp_path, damage, reason):
    run = _copy(finished, tmp_path, "bad")
    _copy(finished, tmp_path, "good")
    damage(run)
    table, stderr = _listing(run.parent)
    assert list(table["name"]) == ["bad", "good"] and list(table["status"]) == ["malformed", "complete"]
    assert table.loc[0, "reason"].startswith(reason)
    assert len(stderr) == 1 and str(run) in stderr[0] and "malformed" in stderr[0]


def test_no_verify_hashes_nothing(finished, tmp_path, monkeypatch):
    import gflkit.runs.checkpoints

    run = _copy(finished, tmp_path)
    _random_bytes(run / "best.pt")

    def hashing(path):
        raise AssertionError(f"{path} was hashed")

    monkeypatch.setattr(gflkit.runs.checkpoints, "file_sha256", hashing)
    table, stderr = _listing(run.parent, "--no-verify")
    assert (table.loc[0, "status"], table.loc[0, "verified"]) == ("complete", "skipped") and stderr == []
    (run / "metrics.csv").unlink()  # what needs no hashing is still checked
    table, stderr = _listing(run.parent, "--no-verify")
    assert table.loc[0, "status"] == "malformed" and len(stderr) == 1


def test_run_without_recorded_hashes_is_complete_but_unverified(finished, root, tmp_path):
    run = _copy(finished, tmp_path)
    config = json.loads((run / "config.json").read_text())
    del config["sha256"]  # as gflkit 0.1 wrote it, before digests were recorded
    config["gflkit_version"] = "0.1.0"
    (run / "config.json").write_text(json.dumps(config))
    table, stderr = _listing(run.parent)
    assert (table.loc[0, "status"], table.loc[0, "verified"]) == ("complete", "unrecorded") and stderr == []
    assert "not verified" in table.loc[0, "reason"]
    assert invoke("evaluate", run, "--data-root", root).exit_code == 0
    assert invoke("train", "--resume", run, "--data-root", root).exit_code == 0


@pytest.fixture
def interrupted(root, tmp_path, monkeypatch):
    """A run stopped by Ctrl-C right after its first resume checkpoint (step 3 of 6)."""
    run = tmp_path / "run"
    stopped = invoke_until_first_checkpoint(monkeypatch, "train", *FAST, "--data-root", root, "tiny", "--run-dir", run,
                                            "--checkpoint-every", "3")
    assert stopped.exit_code == 130 and "--resume" in stopped.stderr
    assert (partial_path(run) / "last.pt").is_file()
    return run


def test_resume_after_config_json_changed_a_shape_is_one_line(interrupted, root):
    config_path = partial_path(interrupted) / "config.json"
    config = json.loads(config_path.read_text())
    assert config["model_config"]["hidden_feats"] == 32
    config["model_config"]["hidden_feats"] = 8
    config_path.write_text(json.dumps(config))
    line = one_line_error(invoke("train", "--resume", interrupted, "--data-root", root),
                          str(partial_path(interrupted) / "last.pt"), "config.json", "start a fresh run")
    assert "encoder.conv1.weight is (32, 32) in the file and (32, 8) in the model" in line
    _no_escaped_text(line)
    table, _ = _listing(interrupted.parent)
    assert table.loc[0, "status"] == "interrupted"  # the files themselves are intact


def test_resume_after_last_pt_was_replaced_by_another_shape_is_one_line(interrupted, root):
    from gflkit.models.gfl import GFL

    other = GFL(32, gflkit.model_config("gfl", hidden_feats=8))
    torch.save(LoopState(step=3).checkpoint(other, torch.optim.Adam(other.parameters())),
               partial_path(interrupted) / "last.pt")
    line = one_line_error(invoke("train", "--resume", interrupted, "--data-root", root),
                          str(partial_path(interrupted) / "last.pt"), "start a fresh run")
    assert "encoder.conv1.weight is (32, 8) in the file and (32, 32) in the model" in line
    _no_escaped_text(line)


def test_random_bytes_last_pt_is_listed_damaged(interrupted, root):
    _random_bytes(partial_path(interrupted) / "last.pt")
    table, stderr = _listing(interrupted.parent)
    assert table.loc[0, "status"] == "damaged" and table.loc[0, "reason"].startswith("last.pt: not a loadable")
    assert len(stderr) == 1 and "last.pt" in stderr[0]
    line = one_line_error(invoke("train", "--resume", interrupted, "--data-root", root),
                          str(partial_path(interrupted) / "last.pt"))
    _no_escaped_text(line)


def test_an_option_default_from_the_environment_does_not_block_resume(finished, root, tmp_path, monkeypatch):
    run = _copy(finished, tmp_path)
    monkeypatch.setenv("GFLKIT_TRAIN_STEPS", "6")  # a default, not a setting typed with --resume
    assert invoke("train", "--resume", run, "--data-root", root).exit_code == 0
    one_line_error(invoke("train", "--resume", run, "--steps", "6", "--data-root", root), "drop --steps", code=2)
