"""The DGL compatibility shim: graphbolt placeholder and setuptools.extern alias."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from gflkit import _compat

COMPAT_FILE = Path(_compat.__file__)
LIB_NAME = f"libgraphbolt_pytorch_{torch.__version__.split('+')[0]}.so"


def _run(code: str, *args: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON object last."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_import_gflkit_then_dgl_in_fresh_interpreter():
    out = _run(
        """
        import importlib.util, json, sys
        import gflkit, dgl
        from gflkit import _compat
        gb = sys.modules["dgl.graphbolt"] if _compat.patched["graphbolt"] else None
        print(json.dumps({
            "patched": _compat.patched["graphbolt"],
            "available": _compat.graphbolt_library_available(),
            "placeholder_hasattr": hasattr(gb, "ItemSet") if gb is not None else None,
            "find_spec": importlib.util.find_spec("dgl.graphbolt") is not None,
            "graph_ok": dgl.graph(([0, 1], [1, 2])).num_edges() == 2,
        }))
        """
    )
    assert out["patched"] is (not out["available"])
    assert out["graph_ok"] and out["find_spec"]
    if out["patched"]:
        assert out["placeholder_hasattr"] is False


@pytest.fixture
def fake_find_spec(monkeypatch):
    """Control whether ``torchdata.datapipes`` looks installed."""
    real = importlib.util.find_spec
    state = {"datapipes": True}

    def find_spec(name, *args, **kwargs):
        if name == "torchdata.datapipes":
            return object() if state["datapipes"] else None
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    return state


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="library name checked for Linux")
def test_graphbolt_library_available_looks_for_the_torch_specific_library(tmp_path, fake_find_spec):
    assert not _compat.graphbolt_library_available(str(tmp_path))
    (tmp_path / "graphbolt").mkdir()
    (tmp_path / "graphbolt" / "libgraphbolt_pytorch_2.0.0.so").touch()  # another torch release
    assert not _compat.graphbolt_library_available(str(tmp_path))
    (tmp_path / "graphbolt" / LIB_NAME).touch()
    assert _compat.graphbolt_library_available(str(tmp_path))
    fake_find_spec["datapipes"] = False
    assert not _compat.graphbolt_library_available(str(tmp_path))


def test_graphbolt_placeholder_explains_itself():
    module = _compat._graphbolt_placeholder("no library for torch 9.9")
    assert module.__name__ == "dgl.graphbolt"
    with pytest.raises(AttributeError, match=r"dgl.graphbolt is unavailable \(no library for torch 9.9\)"):
        module.ItemSet  # noqa: B018
    assert not hasattr(module, "ItemSet")
    assert getattr(module, "ItemSet", None) is None
    assert module.__spec__.name == "dgl.graphbolt"  # importlib.util.find_spec works on it


# The shim is loaded from its file under another name, so that the subprocess
# does not import gflkit (and with it torch and dgl). A placeholder graphbolt
# is registered first so that install() only deals with setuptools.extern; a
# fake setuptools package on disk, first on sys.path, decides whether
# setuptools.extern exists.
_SETUPTOOLS_SCRIPT = """
import importlib.util, json, sys, types
compat_file, fake_root, mode = sys.argv[1:4]
sys.path.insert(0, fake_root)
if mode == "sys-modules":
    sys.modules["setuptools.extern"] = types.ModuleType("setuptools.extern")
sys.modules["dgl.graphbolt"] = types.ModuleType("dgl.graphbolt")
before = {k: sys.modules.get(k) for k in ("setuptools.extern", "setuptools.extern.packaging")}
spec = importlib.util.spec_from_file_location("compat_under_test", compat_file)
compat = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compat)
compat.install()
result = {"patched": compat.patched, "torch_imported": "torch" in sys.modules,
          "dgl_imported": "dgl" in sys.modules}
if compat.patched["setuptools_extern"]:
    from setuptools.extern.packaging import version
    import packaging.version
    result["version_is_packaging"] = version is packaging.version
    result["compares"] = version.Version("71.0") > version.Version("9.0")
    result["find_spec"] = importlib.util.find_spec("setuptools.extern") is not None
else:
    result["untouched"] = all(sys.modules.get(k) is v for k, v in before.items())
print(json.dumps(result))
"""


def _fake_setuptools(root: Path, with_extern: bool) -> Path:
    pkg = root / "setuptools"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    if with_extern:
        (pkg / "extern").mkdir()
        (pkg / "extern" / "__init__.py").write_text("")
    return root


def test_setuptools_extern_registered_when_missing(tmp_path):
    root = _fake_setuptools(tmp_path, with_extern=False)
    out = _run(_SETUPTOOLS_SCRIPT, str(COMPAT_FILE), str(root), "disk")
    assert {k: out["patched"][k] for k in ("graphbolt", "setuptools_extern")} == {"graphbolt": False,
                                                                                "setuptools_extern": True}
    assert out["version_is_packaging"] and out["compares"] and out["find_spec"]
    assert not out["torch_imported"] and not out["dgl_imported"]


@pytest.mark.parametrize("mode", ["disk", "sys-modules"])
def test_setuptools_extern_left_alone_when_present(tmp_path, mode):
    root = _fake_setuptools(tmp_path, with_extern=mode == "disk")
    out = _run(_SETUPTOOLS_SCRIPT, str(COMPAT_FILE), str(root), mode)
    assert {k: out["patched"][k] for k in ("graphbolt", "setuptools_extern")} == {"graphbolt": False,
                                                                                "setuptools_extern": False}
    assert out["untouched"]


def test_install_is_a_no_op_once_dgl_is_imported(monkeypatch):
    import dgl  # noqa: F401

    fresh = {"graphbolt": False, "setuptools_extern": False}
    monkeypatch.setattr(_compat, "patched", fresh)
    modules = dict(sys.modules)
    _compat.install()
    assert fresh == {"graphbolt": False, "setuptools_extern": False}
    assert set(sys.modules) == set(modules)
    assert all(sys.modules[k] is v for k, v in modules.items())


@pytest.mark.parametrize("value", [None, "tensorflow", "", "pytorch"])
def test_select_backend_sets_pytorch(value):
    env = {} if value is None else {"DGLBACKEND": value}
    changed = _compat.select_backend(env)
    assert env["DGLBACKEND"] == "pytorch" and changed == (value != "pytorch")


@pytest.mark.slow
@pytest.mark.parametrize("home_mode", [0o755, 0o555])
def test_first_command_under_a_new_home_prints_only_csv(small_family_dir, tmp_path, home_mode):
    """DGL announces its default backend on stdout and writes ~/.dgl on a first import: neither may happen."""
    import os

    import pandas as pd

    home = tmp_path / "home"
    home.mkdir()
    home.chmod(home_mode)
    env = {k: v for k, v in os.environ.items() if k not in ("DGLBACKEND", "DGLDEFAULTDIR")}
    env["HOME"] = str(home)
    try:
        proc = subprocess.run([sys.executable, "-m", "gflkit_cli.main", "stats", str(small_family_dir)],
                              capture_output=True, text=True, timeout=300, env=env)
    finally:
        home.chmod(0o755)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    import io

    table = pd.read_csv(io.StringIO(proc.stdout))
    assert proc.stdout.splitlines()[0].startswith("dataset") or "dataset" in table.columns
    assert len(table) == 1 and "backend" not in proc.stdout
    assert list(home.iterdir()) == []  # nothing written under HOME
