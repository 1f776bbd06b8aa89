"""Atomic writes: permissions under the umask, stale temporaries, unwritable targets."""
from __future__ import annotations

import os
import subprocess

import pytest

from gflkit.errors import GFLError
from gflkit.io import atomic_torch_save, atomic_write_text, atomic_write_with, make_temp, remove_stale_temps


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_written_files_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        paths = [atomic_write_text(tmp_path / "a.csv", "x\n"), atomic_torch_save({"a": 1}, tmp_path / "b.pt"),
                 atomic_write_with(tmp_path / "c.bin", lambda p: open(p, "wb").write(b"c"))]
    finally:
        os.umask(old)
    assert [p.stat().st_mode & 0o777 for p in paths] == [0o666 & ~umask] * 3


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_next_write_removes_temporaries_of_dead_writers(tmp_path):
    dead = _dead_pid()
    stale_file = tmp_path / f".out.csv.{dead}.k2j3.tmp"
    stale_file.write_text("half")
    stale_dir = tmp_path / f".out.csv.{dead}.zz91.tmp"
    stale_dir.mkdir()
    live = tmp_path / f".out.csv.{os.getpid()}.abcd.tmp"  # this process: a write in progress
    live.write_text("mine")
    other = tmp_path / f".other.csv.{dead}.k2j3.tmp"  # another target's: not ours to remove
    other.write_text("x")
    atomic_write_text(tmp_path / "out.csv", "done\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out.csv", live.name, other.name])


def test_make_temp_carries_the_pid(tmp_path):
    tmp = make_temp(tmp_path / "x.csv")
    assert tmp.name.startswith(f".x.csv.{os.getpid()}.") and tmp.name.endswith(".tmp")
    assert remove_stale_temps(tmp_path / "x.csv") == [] and tmp.exists()


def test_unwritable_target_is_named(tmp_path):
    (tmp_path / "afile").write_text("x")
    target = tmp_path / "afile" / "out.csv"
    with pytest.raises(GFLError) as err:
        atomic_write_text(target, "x")
    assert str(err.value).startswith(f"cannot write {target}:") and ".tmp" not in str(err.value)


def test_failing_writer_leaves_nothing(tmp_path):
    def broken(path: str) -> None:
        open(path, "w").write("half")
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        atomic_write_with(tmp_path / "x.png", broken)
    assert list(tmp_path.iterdir()) == []


def test_errors_are_one_line_whatever_they_quote():
    """A message quoting a user's file (a column named with a newline or NUL) still prints as one line."""
    import pickle

    from gflkit.errors import DataFormatError, GFLError

    err = DataFormatError("nodes.csv: no column 'id' (columns: \x00\n\x00, ü); set --id-col")
    assert str(err) == "nodes.csv: no column 'id' (columns: \\x00\\n\\x00, ü); set --id-col"
    assert str(pickle.loads(pickle.dumps(GFLError("a\nb")))) == "a\\nb"  # crosses process pools unchanged
