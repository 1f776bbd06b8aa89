"""Locks and hidden folders never follow links: a link placed at a lock file, a run's ``.<name>.partial``
or a ``.<name>.old`` folder is refused in one line naming it, and nothing is created where it leads."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_helpers import invoke, one_line_error

from gflkit.errors import GFLError
from gflkit.io import FolderLock, lock_path

FAST = ["--steps", "3", "--eval-every", "3", "--k-shot", "5"]
PREPROCESS = ["preprocess", "synthetic", "--small", "--graphs", "2,1,1", "--nodes", "30,40"]


def _dangling(link: Path, outside: Path) -> Path:
    """A link at ``link`` to the path ``outside/target``, which does not exist."""
    target = outside / "target"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return target


def _refused_link(result, link: Path) -> str:
    return one_line_error(result, str(link), "a symbolic link", "remove the link")


def test_a_link_at_a_collections_lock_is_refused(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    link = lock_path(root / "processed" / "fam")
    target = _dangling(link, outside)
    _refused_link(invoke(*PREPROCESS, "--name", "fam", "--data-root", root), link)
    assert not target.exists() and os.listdir(outside) == []
    assert not (root / "processed" / "fam").exists()
    link.unlink()  # what the message says to do
    assert invoke(*PREPROCESS, "--name", "fam", "--data-root", root).exit_code == 0


def test_a_link_at_a_runs_lock_is_refused(root, tmp_path):
    run, outside = tmp_path / "runs" / "run", tmp_path / "outside"
    outside.mkdir()
    link = lock_path(run)
    target = _dangling(link, outside)
    _refused_link(invoke("train", *FAST, "--data-root", root, "tiny", "--run-dir", run), link)
    assert not target.exists() and not run.exists() and os.listdir(outside) == []


@pytest.mark.parametrize("resume", [False, True], ids=["new", "resume"])
def test_a_link_at_a_runs_partial_folder_is_refused(root, tmp_path, resume):
    run, outside = tmp_path / "runs" / "run", tmp_path / "outside"
    outside.mkdir()
    link = run.with_name(".run.partial")
    link.parent.mkdir(parents=True)
    link.symlink_to(outside, target_is_directory=True)  # a folder that exists: resume would write into it
    args = ["--resume", run] if resume else [*FAST, "tiny", "--run-dir", run]
    _refused_link(invoke("train", "--data-root", root, *args), link)
    assert os.listdir(outside) == [] and link.is_symlink()


def test_a_link_at_a_runs_old_folder_is_refused(root, tmp_path):
    run, outside = tmp_path / "runs" / "run", tmp_path / "outside"
    outside.mkdir()
    assert invoke("train", *FAST, "--data-root", root, "tiny", "--run-dir", run).exit_code == 0
    link = run.with_name(".run.old")
    link.symlink_to(outside, target_is_directory=True)
    _refused_link(invoke("train", *FAST, "--data-root", root, "tiny", "--run-dir", run, "--force"), link)
    assert os.listdir(outside) == [] and (run / "best.pt").is_file()


def test_a_link_at_a_collections_old_folder_is_refused(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    assert invoke(*PREPROCESS, "--name", "fam", "--data-root", root).exit_code == 0
    link = root / "processed" / ".fam.old"
    link.symlink_to(outside, target_is_directory=True)
    _refused_link(invoke(*PREPROCESS, "--name", "fam", "--data-root", root, "--seed", "1"), link)
    assert os.listdir(outside) == [] and (root / "processed" / "fam" / "manifest.json").is_file()


def test_a_lock_that_is_a_link_or_a_pipe_is_refused_and_never_opened(tmp_path):
    folder, outside = tmp_path / "run", tmp_path / "outside"
    outside.mkdir()
    (outside / "file").write_text("kept")
    lock_file = lock_path(folder)
    lock_file.symlink_to(outside / "file")  # a link to a file that exists
    with pytest.raises(GFLError, match="a symbolic link where gflkit keeps the run's lock file"):
        FolderLock(lock_file, folder).acquire()
    assert (outside / "file").read_text() == "kept"
    lock_file.unlink()
    os.mkfifo(lock_file)
    with pytest.raises(GFLError, match=r"not a regular file \(a named pipe\)"):
        FolderLock(lock_file, folder).acquire()
    lock_file.unlink()
    lock = FolderLock(lock_file, folder).acquire()  # a plain lock file still works
    lock.release()
    assert not lock_file.exists()
