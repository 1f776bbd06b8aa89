"""A run's files, whatever state they are in: verified before any load, opened only as regular files of a
checked size, listed whatever their names.

Every loading path (``evaluate``, ``predict``, ``embed``, ``train --resume``, ``gflkit.load``) is tried
on a run whose ``best.pt`` was swapped for another valid checkpoint while its ``config.json`` cannot
vouch for it: each must stop with one line naming ``config.json`` and what is wrong.
"""
from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from cli_helpers import cli_bounded, invoke, invoke_until_first_checkpoint, one_line_error

import gflkit
from gflkit.errors import GFLError
from gflkit.io import FileRefused, read_regular
from gflkit.runs.folder import CHECKPOINT_LIMIT, CONFIG_LIMIT, partial_path

FAST = ["--steps", "6", "--eval-every", "3", "--k-shot", "5"]


@pytest.fixture(scope="module")
def runs(root, tmp_path_factory) -> tuple[Path, Path]:
    """Two finished runs of ``tiny`` (seeds 0 and 1): the second's ``best.pt`` is the swap."""
    folder = tmp_path_factory.mktemp("runs")
    for seed in (0, 1):
        result = invoke("train", *FAST, "--data-root", root, "tiny", "--seed", seed, "--run-dir", folder / f"s{seed}")
        assert result.exit_code == 0, result.output
    return folder / "s0", folder / "s1"


def _swapped(runs, tmp_path: Path) -> Path:
    """A copy of the first run with the second run's ``best.pt``."""
    run = Path(shutil.copytree(runs[0], tmp_path / "runs" / "run"))
    shutil.copy(runs[1] / "best.pt", run / "best.pt")
    return run


def _edit_config(edit):
    def apply(run: Path) -> None:
        config = json.loads((run / "config.json").read_text())
        edit(config)
        (run / "config.json").write_text(json.dumps(config))
    return apply


def _replace_config(make):
    def apply(run: Path) -> None:
        (run / "config.json").unlink()
        make(run / "config.json")
    return apply


# What config.json is, and what the one error line says of it.
CONFIG_STATES = {
    "random-bytes": (_replace_config(lambda p: p.write_bytes(os.urandom(4096))), "not JSON"),
    "a-folder": (_replace_config(lambda p: p.mkdir()), "not a regular file (a folder)"),
    "missing": (_replace_config(lambda p: None), "missing"),
    "not-an-object": (_replace_config(lambda p: p.write_text("[1, 2]")), "not the configuration of a gflkit run"),
    "sha256-a-list": (_edit_config(lambda c: c.update(sha256=list(c["sha256"].values()))), "'sha256' is list"),
    "sha256-a-string": (_edit_config(lambda c: c.update(sha256="0" * 64)), "'sha256' is str"),
    "sha256-null": (_edit_config(lambda c: c.update(sha256=None)), "'sha256' is NoneType"),
    "sha256-no-best": (_edit_config(lambda c: c["sha256"].pop("best.pt")), "records no digest for best.pt"),
    "sha256-not-hex": (_edit_config(lambda c: c["sha256"].update({"best.pt": "z" * 64})), "not a SHA-256 digest"),
    "sha256-a-number": (_edit_config(lambda c: c["sha256"].update({"best.pt": 7})), "not a SHA-256 digest"),
    "sha256-removed": (_edit_config(lambda c: c.pop("sha256")), "no 'sha256' entry"),
}


def _loads(run: Path, root: Path, tmp_path: Path) -> dict[str, object]:
    """Every way a run is loaded, each as a thunk returning a click Result (or raising, for Python)."""
    labels = tmp_path / "labels.csv"
    labels.write_text("node,label\n0,c0\n")
    return {
        "evaluate": lambda: invoke("evaluate", run, "--data-root", root),
        "predict": lambda: invoke("predict", run, "--graph", "tiny:6", "--labels", labels, "--data-root", root),
        "embed": lambda: invoke("embed", run, "--graph", "tiny:6", "-o", tmp_path / "z.npy", "--data-root", root),
        "resume": lambda: invoke("train", "--resume", run, "--data-root", root),
    }


@pytest.mark.parametrize("state", list(CONFIG_STATES))
def test_a_swapped_best_pt_is_never_loaded_when_config_json_cannot_vouch_for_it(runs, root, tmp_path, state):
    damage, expected = CONFIG_STATES[state]
    run = _swapped(runs, tmp_path)
    damage(run)
    for name, load in _loads(run, root, tmp_path).items():
        line = one_line_error(load(), str(run / "config.json"), expected)
        assert "train the run again" in line, (name, line)
    with pytest.raises(GFLError, match="config.json") as err:
        gflkit.load(run)
    assert expected in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "z.npy").exists()
    listed = _listing(run.parent)
    assert listed.loc[0, "status"] in ("malformed", "damaged") and listed.loc[0, "reason"].startswith("config.json")


def test_a_swapped_best_pt_with_a_sound_config_json_is_named(runs, root, tmp_path):
    run = _swapped(runs, tmp_path)
    for load in _loads(run, root, tmp_path).values():
        one_line_error(load(), str(run / "best.pt"), "SHA-256 differs")
    with pytest.raises(GFLError, match="SHA-256 differs"):
        gflkit.load(run / "best.pt")


def test_a_run_of_gflkit_0_1_without_digests_loads_with_a_warning(runs, root, tmp_path):
    run = Path(shutil.copytree(runs[0], tmp_path / "run"))
    _edit_config(lambda c: (c.pop("sha256"), c.update(gflkit_version="0.1.0")))(run)
    result = invoke("evaluate", run, "--data-root", root)
    assert result.exit_code == 0, result.output
    assert "recorded no SHA-256" in result.stderr and "unverified" in result.stderr


def test_a_checkpoint_by_itself_loads_without_a_config_json(runs, tmp_path):
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(runs[1] / "best.pt", alone / "best.pt")
    assert gflkit.load(alone / "best.pt") is not None  # the file named by itself: weights only, no digest
    with pytest.raises(GFLError, match="config.json: missing"):
        gflkit.load(alone)  # a folder is a run: it needs its config.json


# -- every file is a regular file of a checked size ---------------------------------------------


def _listing(folder: Path) -> pd.DataFrame:
    result = invoke("runs", folder)
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    return pd.read_csv(io.StringIO(result.stdout), keep_default_na=False)


def _bounded_error(done, *needles: str) -> str:
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and all(n in errors[0] for n in needles), done.stderr
    return errors[0]


@pytest.mark.slow
def test_a_fifo_config_json_neither_hangs_nor_loads(runs, root, tmp_path):
    run = Path(shutil.copytree(runs[0], tmp_path / "runs" / "run"))
    shutil.copytree(runs[0], tmp_path / "runs" / "good")
    (run / "config.json").unlink()
    os.mkfifo(run / "config.json")
    for command in (["evaluate", run, "--data-root", root], ["train", "--resume", run, "--data-root", root]):
        _bounded_error(cli_bounded(*command, timeout=90), str(run / "config.json"), "not a regular file (a named pipe)")
    listed = cli_bounded("runs", run.parent, timeout=90)
    assert listed.returncode == 0, listed.stderr
    table = pd.read_csv(io.StringIO(listed.stdout), keep_default_na=False)
    assert list(table["status"]) == ["complete", "damaged"]  # good, run
    assert table.loc[1, "reason"] == "config.json: not a regular file (a named pipe)"


@pytest.mark.slow
def test_a_fifo_config_json_of_an_interrupted_run_does_not_hang_resume(root, tmp_path, monkeypatch):
    run = tmp_path / "run"
    stopped = invoke_until_first_checkpoint(monkeypatch, "train", *FAST, "--data-root", root, "tiny", "--run-dir", run,
                                            "--checkpoint-every", "3")
    assert stopped.exit_code == 130
    config = partial_path(run) / "config.json"
    config.unlink()
    os.mkfifo(config)
    _bounded_error(cli_bounded("train", "--resume", run, "--data-root", root, timeout=90), str(config), "named pipe")
    listed = cli_bounded("runs", tmp_path, timeout=90)
    assert listed.returncode == 0 and ",damaged," in listed.stdout, listed.stderr


@pytest.mark.slow
def test_config_json_linked_to_dev_zero_is_not_read(runs, root, tmp_path):
    run = Path(shutil.copytree(runs[0], tmp_path / "runs" / "run"))
    (run / "config.json").unlink()
    (run / "config.json").symlink_to("/dev/zero")
    _bounded_error(cli_bounded("evaluate", run, "--data-root", root, timeout=90), "character device")
    listed = cli_bounded("runs", run.parent, timeout=90)
    assert listed.returncode == 0 and "config.json: not a regular file (a character device)" in listed.stdout


def _sparse(path: Path, size: int) -> None:
    path.unlink()
    with open(path, "wb") as f:
        f.truncate(size)  # nothing written: the file holds no blocks


@pytest.mark.slow
def test_a_sparse_20_gb_best_pt_is_refused_before_it_is_read(runs, root, tmp_path):
    run = Path(shutil.copytree(runs[0], tmp_path / "runs" / "run"))
    _sparse(run / "best.pt", 20 * 2**30)
    _bounded_error(cli_bounded("evaluate", run, "--data-root", root, timeout=90), str(run / "best.pt"),
                   "20.0 GiB, over the 4.0 GiB limit")
    listed = cli_bounded("runs", run.parent, timeout=90)
    assert listed.returncode == 0 and "best.pt: 20.0 GiB, over the 4.0 GiB limit" in listed.stdout, listed.stderr


@pytest.mark.slow
def test_a_sparse_last_pt_of_an_interrupted_run_is_refused(root, tmp_path, monkeypatch):
    run = tmp_path / "run"
    invoke_until_first_checkpoint(monkeypatch, "train", *FAST, "--data-root", root, "tiny", "--run-dir", run,
                                  "--checkpoint-every", "3")
    _sparse(partial_path(run) / "last.pt", 20 * 2**30)
    _bounded_error(cli_bounded("train", "--resume", run, "--data-root", root, timeout=90), "last.pt", "limit")
    listed = cli_bounded("runs", tmp_path, timeout=90)
    assert listed.returncode == 0 and "last.pt: 20.0 GiB, over the 4.0 GiB limit" in listed.stdout


def test_an_oversized_config_json_is_refused_naming_it(runs, root, tmp_path):
    run = Path(shutil.copytree(runs[0], tmp_path / "runs" / "run"))
    _sparse(run / "config.json", CONFIG_LIMIT + 1)
    one_line_error(invoke("evaluate", run, "--data-root", root), str(run / "config.json"), "over the 32.0 MiB limit")
    assert _listing(run.parent).loc[0, "status"] == "damaged"


def test_read_regular_checks_the_opened_file(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused, match="named pipe"):
        read_regular(fifo, 10, "x")  # returns at once: opened without blocking
    with pytest.raises(FileRefused, match="character device"):
        read_regular("/dev/zero", CHECKPOINT_LIMIT, "x")
    (tmp_path / "small").write_bytes(b"12345")
    assert read_regular(tmp_path / "small", 5, "x") == b"12345"
    with pytest.raises(FileRefused, match="5 bytes, over the 4 bytes limit") as err:
        read_regular(tmp_path / "small", 4, "give a smaller one")
    assert str(err.value).endswith("; give a smaller one") and not err.value.missing
    assert read_regular.__module__ == "gflkit.io"
    with pytest.raises(FileRefused) as err:
        read_regular(tmp_path / "none", 4, "x")
    assert err.value.missing


# -- names that are not UTF-8 -----------------------------------------------------------------------


def test_runs_lists_a_folder_whose_name_is_not_utf8(runs, tmp_path):
    folder = tmp_path / "runs"
    shutil.copytree(runs[0], folder / "good")
    os.mkdir(os.fsencode(folder) + b"/bad\xff")
    shutil.copytree(runs[0], os.fsdecode(os.fsencode(folder) + b"/run\xfe"))
    odd = Path(shutil.copytree(runs[0], folder / "odd"))  # a lone surrogate in a text field of config.json
    (odd / "config.json").write_text((odd / "config.json").read_text().replace('"model": "gfl', '"model": "\\ud800gfl'))
    listed = cli_bounded("runs", folder, timeout=90)  # real stdout and stderr, as a user sees them
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    table = pd.read_csv(io.StringIO(listed.stdout), keep_default_na=False)
    assert list(table["name"]) == ["bad\\xff", "good", "odd", "run\\xfe"]
    assert list(table["status"]) == ["malformed", "complete", "complete", "complete"]
    assert table.loc[2, "model"].startswith("\\ud800gfl")
    assert "bad\\xff" in listed.stderr  # the malformed folder, named on stderr too
    in_process = _listing(folder)  # and through the Python API's strings
    assert list(in_process["name"]) == ["bad\\xff", "good", "odd", "run\\xfe"]
