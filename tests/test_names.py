"""A name is a name, never a path; nothing outside the folder gflkit writes is moved or deleted.

Names that become folder names come from options (``--name``, ``--prefix``),
from data (a GraphSAGE file prefix, a manifest's ``name``) and from gflkit
itself (run names); all pass :func:`gflkit.paths.check_name`. Each command
case checks the exit status (2 for an option, 1 for data), the one ``Error``
line naming the option or file, no traceback, and that nothing was written or
deleted: the whole temporary tree (a sentinel folder beside the data root
included) is unchanged. Also: the folder checks before a replace or delete,
the collection lock, and the reproducible checksum of a collection.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import invoke, one_line_error
from hypothesis import given, settings
from hypothesis import strategies as st

from gflkit.errors import GFLError
from gflkit.paths import NAME_LIMIT, check_inside, check_name, is_name

SMALL = ["--small", "--graphs", "2,1,1", "--nodes", "30,40"]
TRAIN_FAST = ["--steps", "1", "--eval-every", "1", "--k-shot", "2", "--n-query", "2", "--no-eval"]


def _tree(folder: Path) -> dict[str, bytes | str | None]:
    """Every entry under ``folder``: file bytes, link targets, ``None`` for folders."""
    out: dict[str, bytes | str | None] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            key = str(path.relative_to(folder))
            out[key] = os.readlink(path) if path.is_symlink() else (None if path.is_dir() else path.read_bytes())
    return out


@pytest.fixture
def place(tmp_path) -> Path:
    """``tmp/root`` (data root with the collection folder ``other``) and the sentinel ``tmp/victim`` beside it."""
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "keep.txt").write_text("sentinel")
    other = tmp_path / "root" / "processed" / "other"
    other.mkdir(parents=True)
    (other / "keep.txt").write_text("another folder under processed/")
    (tmp_path / "work").mkdir()
    return tmp_path


def _graphsage(folder: Path, prefix: str, n: int = 6) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{prefix}-G.json").write_text(json.dumps({"nodes": [{"id": i} for i in range(n)],
                                                         "links": [{"source": i, "target": (i + 1) % n}
                                                                   for i in range(n)]}))
    (folder / f"{prefix}-id_map.json").write_text(json.dumps({str(i): i for i in range(n)}))
    (folder / f"{prefix}-class_map.json").write_text(json.dumps({str(i): i % 2 for i in range(n)}))
    np.save(folder / f"{prefix}-feats.npy", np.ones((n, 3), dtype=np.float32))
    return folder


# --------------------------------------------------------------------------- names from options: exit 2

BAD_NAMES = ["../../victim", "../../../x", "..", ".", "a/b", ".hidden", "~home", "line\nbreak", "nul\x00byte",
             "tab\tname", " padded", "x" * (NAME_LIMIT + 1), "é" * (NAME_LIMIT // 2 + 1), ""]


@pytest.mark.parametrize("name", BAD_NAMES + ["ABSOLUTE"], ids=repr)
def test_a_collection_name_option_is_a_name(place, name):
    name = str(place / "victim") if name == "ABSOLUTE" else name
    before = _tree(place)
    line = one_line_error(invoke("preprocess", "synthetic", *SMALL, "--data-root", place / "root", "--name", name),
                          "--name", code=2)
    assert "collection name" in line
    assert _tree(place) == before


@pytest.mark.parametrize("command", [
    lambda p: ["preprocess", "gfl-release", p / "nowhere", "--name", "../../victim"],
    lambda p: ["preprocess", "tables", p / "nowhere", "--name", "../../victim"],
    lambda p: ["preprocess", "aminer", p / "nowhere", "--name", "../../victim"],
    lambda p: ["preprocess", "reddit", _graphsage(p / "sage", "toy"), "--name", "../../victim"],
    lambda p: ["preprocess", "reddit", _graphsage(p / "sage", "toy"), "--prefix", "../toy"],
], ids=["gfl-release", "tables", "aminer", "reddit-name", "reddit-prefix"])
def test_every_preprocess_command_checks_its_name(place, command):
    args = command(place)
    option = "--prefix" if "--prefix" in args else "--name"
    before = _tree(place)
    one_line_error(invoke(*args, "--data-root", place / "root"), option, code=2)
    assert _tree(place) == before


# --------------------------------------------------------------------------- names from data: exit 1


@pytest.mark.parametrize("prefix", [".", ".."])
def test_a_graphsage_prefix_that_is_no_name_is_refused(place, prefix):
    folder = _graphsage(place / "sage", prefix)
    before = _tree(place)
    line = one_line_error(invoke("preprocess", "reddit", folder, "--data-root", place / "root", "--graphs", "1,0,1",
                                 "--walk-length", "2,3", "--min-degree", "0", "--num-classes", "2"))
    assert str(folder / f"{prefix}-G.json") in line and "prefix" in line
    assert _tree(place) == before  # <root>/processed and the collection 'other' are untouched


@pytest.fixture
def collection_root(place) -> Path:
    result = invoke("preprocess", "synthetic", *SMALL, "--name", "coll", "--data-root", place / "root")
    assert result.exit_code == 0, result.output
    return place / "root"


def _edit(folder: Path, edit) -> Path:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))
    return path


def test_a_manifest_name_that_is_a_path_never_names_a_run(place, collection_root, monkeypatch):
    manifest = _edit(collection_root / "processed" / "coll", lambda m: m.update(name="../../escaped"))
    monkeypatch.chdir(place / "work")
    before = _tree(place)
    line = one_line_error(invoke("train", "coll", "--data-root", collection_root, *TRAIN_FAST))
    assert str(manifest) in line and "'name'" in line and "../../escaped" in line
    assert _tree(place) == before  # no runs/ folder, nothing beside it


@pytest.mark.parametrize("field, edit", [
    ("'name'", lambda m: m.update(name="../../escaped")),
    ("'name'", lambda m: m.update(name=".")),
    ("'meta.feature_transform.file'", lambda m: m.update(meta={"feature_transform": {"id": "x",
                                                                                    "file": "../../victim/keep.txt"}})),
    ("'feat_size'", lambda m: m.update(feat_size=-1)),
    ("'feat_size'", lambda m: m.update(feat_size="32")),
    ("'graphs[0].num_nodes'", lambda m: m["graphs"][0].update(num_nodes=1e30)),
    ("'graphs[1].class_counts'", lambda m: m["graphs"][1].update(class_counts=[-3])),
    ("'graphs[0].split'", lambda m: m["graphs"][0].update(split="../x")),
    ("'splits.train'", lambda m: m.update(splits={"train": "many"})),
    ("'stored_sha256'", lambda m: m.update(stored_sha256="../x")),
    ("'seed'", lambda m: m.update(seed=True)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_every_manifest_field_read_is_checked(place, collection_root, field, edit):
    manifest = _edit(collection_root / "processed" / "coll", edit)
    before = _tree(place)
    line = one_line_error(invoke("stats", "coll", "--data-root", collection_root))
    assert str(manifest) in line and field in line
    assert _tree(place) == before


def test_the_transform_file_of_a_manifest_is_checked_where_it_is_read(collection_root):
    from gflkit.data.transform import load_transform

    folder = collection_root / "processed" / "coll"
    _edit(folder, lambda m: m.update(meta={"feature_transform": {"id": "svd", "file": "/etc/passwd"}}))
    with pytest.raises(GFLError, match="meta.feature_transform.file") as err:
        load_transform(folder)
    assert str(folder / "manifest.json") in str(err.value)


def test_a_run_name_is_checked_for_collections_in_memory(small_family):
    import copy

    from gflkit.api import default_run_dir
    from gflkit.config import EpisodeConfig, GFLConfig, TrainConfig

    family = copy.copy(small_family)
    family.name = "../../escaped"
    with pytest.raises(GFLError, match="collection name '../../escaped' contains '/'"):
        default_run_dir(family, "gfl", GFLConfig(), EpisodeConfig(), TrainConfig())


def test_a_collection_given_as_the_working_folder_loads(collection_root, monkeypatch):
    monkeypatch.chdir(collection_root / "processed" / "coll")
    result = invoke("stats", ".")
    assert result.exit_code == 0, result.output
    assert "coll" in result.stdout


def test_hidden_folders_are_not_listed_as_collections(collection_root):
    hidden = collection_root / "processed" / ".coll.123.abc.tmp"
    hidden.mkdir()
    (hidden / "manifest.json").write_text("{}")
    result = invoke("stats", "--data-root", collection_root)
    assert result.exit_code == 0, result.output
    assert "coll" in result.stdout and ".tmp" not in result.stdout


# --------------------------------------------------------------------------- replace and delete only inside


def test_check_inside(tmp_path):
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "in-link").symlink_to(root / "a")
    (root / "out-link").symlink_to(tmp_path / "outside")
    assert check_inside(root / "a", root) == root / "a"
    assert check_inside(root / "new", root) == root / "new"
    assert check_inside(root / "in-link", root) == root / "in-link"
    for bad in (root, root / "..", root / "." , root / "a" / ".." / "..", root / "out-link", tmp_path / "outside"):
        with pytest.raises(GFLError, match="not a folder inside") as err:
            check_inside(bad, root)
        assert "\n" not in str(err.value)


def test_a_collection_link_to_elsewhere_is_not_replaced(place):
    (place / "root" / "processed" / "victim").symlink_to(place / "victim", target_is_directory=True)
    before = _tree(place)
    line = one_line_error(invoke("preprocess", "synthetic", *SMALL, "--name", "victim",
                                 "--data-root", place / "root"))
    assert str(place / "root" / "processed" / "victim") in line and "not a folder inside" in line
    assert _tree(place) == before


@pytest.mark.parametrize("out, problem", [("processed/..", "not a folder inside"),
                                          ("processed/other/..", "not a folder inside"),
                                          ("processed/.", "not a gflkit collection"),
                                          ("processed/other", "not a gflkit collection"),
                                          ("../victim", "not a gflkit collection")])
def test_an_out_dir_is_replaced_only_when_it_is_a_collection(place, out, problem):
    before = _tree(place)
    line = one_line_error(invoke("preprocess", "synthetic", *SMALL, "--out-dir", place / "root" / out))
    assert problem in line
    assert _tree(place) == before


@pytest.mark.parametrize("run, problem", [("work/runs/link", "not a folder inside"),
                                          ("work/runs/..", "not a folder inside"),
                                          ("victim", "not a gflkit run")])
def test_a_run_folder_is_replaced_only_when_it_is_a_run(place, collection_root, run, problem):
    (place / "work" / "runs").mkdir()
    (place / "work" / "runs" / "link").symlink_to(place / "victim", target_is_directory=True)
    before = _tree(place)
    line = one_line_error(invoke("train", "coll", "--data-root", collection_root, *TRAIN_FAST,
                                 "--run-dir", place / run, "--force"))
    assert str(place / run) in line and problem in line
    assert _tree(place) == before


def test_remove_inside_refuses_outside(tmp_path):
    from gflkit.io import remove_inside, replace_inside

    (tmp_path / "root").mkdir()
    (tmp_path / "victim").mkdir()
    (tmp_path / "root" / "link").symlink_to(tmp_path / "victim")
    for path in (tmp_path / "root" / "..", tmp_path / "root" / "link", tmp_path / "victim"):
        with pytest.raises(GFLError):
            remove_inside(path, tmp_path / "root")
    with pytest.raises(GFLError):
        replace_inside(tmp_path / "root" / "link", tmp_path / "root" / "x", tmp_path / "root")
    assert (tmp_path / "victim").is_dir() and (tmp_path / "root" / "link").is_symlink()


# --------------------------------------------------------------------------- one writer per collection

# Another process writing the collection: it holds the lock (the same FolderLock; no torch to import).
_HOLD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from gflkit.io import FolderLock, lock_path
    lock = FolderLock(lock_path(sys.argv[1]), Path(sys.argv[1]), "collection").acquire()
    print("locked", flush=True)
    sys.stdin.read()
    lock.release()
""")


def test_a_second_writer_of_a_collection_is_refused(place):
    target = place / "root" / "processed" / "synthetic-small"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(target)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = _tree(place)
        line = one_line_error(invoke("preprocess", "synthetic", *SMALL, "--data-root", place / "root"))
        assert str(target) in line and "another gflkit process is writing this collection" in line
        assert _tree(place) == before
    finally:
        holder.communicate("", timeout=60)
    result = invoke("preprocess", "synthetic", *SMALL, "--data-root", place / "root")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in target.parent.iterdir()) == ["other", "synthetic-small"]  # no lock file left


def test_the_lock_is_taken_once_per_thread(tmp_path):
    from gflkit.data.collection import lock_collection

    with lock_collection(tmp_path / "c"):
        with lock_collection(tmp_path / "c"):  # a save inside a command that holds the lock
            assert (tmp_path / ".c.lock").exists()
        assert (tmp_path / ".c.lock").exists()
    assert not (tmp_path / ".c.lock").exists()


# --------------------------------------------------------------------------- the same collection, the same checksum


def test_identical_runs_record_the_same_checksum(tmp_path):
    manifests = []
    for root in ("one", "two"):
        result = invoke("preprocess", "synthetic", *SMALL, "--data-root", tmp_path / root)
        assert result.exit_code == 0, result.output
        manifests.append(json.loads((tmp_path / root / "processed" / "synthetic-small" / "manifest.json").read_text()))
    one, two = manifests
    assert len(one["stored_sha256"]) == 64 and one["stored_sha256"] == two["stored_sha256"]
    assert {k: v for k, v in one.items() if k != "graphs_sha256"} == {k: v for k, v in two.items()
                                                                      if k != "graphs_sha256"}


# --------------------------------------------------------------------------- the validator

PATHLIKE = st.sampled_from(["", ".", "..", "/", "\\", "~", "a/b", "../x", "./x", "x/..", "\x00", "\n", " ", "é"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=40), PATHLIKE), min_size=1, max_size=4).map("".join))
def test_accepted_names_are_one_safe_component(text):
    try:
        name = check_name(text)
    except GFLError as err:
        assert not is_name(text)
        message = str(err)
        assert "\n" not in message and "\x00" not in message and message.isprintable()
        return
    assert name == text and is_name(text)
    assert Path(name).parts == (name,) and os.path.basename(name) == name
    assert os.path.normpath(os.path.join("root", name)) == os.path.join("root", name)  # nothing to normalise away
    assert name not in (".", "..") and not name.startswith((".", "~")) and "/" not in name and "\\" not in name
    assert name.isprintable() and len(name.encode("utf-8")) <= NAME_LIMIT and name == name.strip()
    check_inside(Path("/r") / name, "/r")
