"""Packaging and the environment: the wheel's contents, metadata, python -m gflkit, gflkit doctor."""
from __future__ import annotations

import io
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from gflkit import _compat
from gflkit_cli.main import cli

REPO = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_metadata_is_complete_and_licence_matches():
    project = _pyproject()["project"]
    assert project["license"] == {"text": "MIT"}
    assert "License :: OSI Approved :: MIT License" in project["classifiers"]
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    assert project["authors"] and project["keywords"] and project["urls"]
    dev = " ".join(project["optional-dependencies"]["dev"])
    for need in ("pytest", "pyarrow", "hypothesis", "matplotlib", "scikit-learn"):
        assert need in dev
    assert (REPO / "gflkit" / "py.typed").is_file()


def test_build_holds_every_package_and_no_top_level_cli(tmp_path):
    # build_py copies what a wheel would hold, without needing the wheel package or the network
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "-d", str(tmp_path / "lib")],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "Package would be ignored" not in proc.stderr
    built = tmp_path / "lib"
    assert sorted(p.name for p in built.iterdir()) == ["gflkit", "gflkit_cli"]  # never a top-level cli
    for folder, package in (("gflkit", "gflkit"), ("cli", "gflkit_cli")):
        for source in (REPO / folder).rglob("*.py"):
            if "__pycache__" not in source.parts:
                assert (built / package / source.relative_to(REPO / folder)).is_file(), source
    assert (built / "gflkit" / "py.typed").is_file()
    assert (built / "gflkit" / "resources" / "venue_fields.csv").is_file()


def _python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, cwd=REPO)


def test_python_m_gflkit_runs_the_command_line_which_import_gflkit_does_not_load():
    # one interpreter for both checks: runpy.run_module is what "python -m gflkit" does
    code = (
        "import runpy, sys, gflkit\n"
        "print(any(m.startswith('gflkit_cli') for m in sys.modules))\n"
        "sys.argv = ['gflkit', '--version']\n"
        "runpy.run_module('gflkit', run_name='__main__', alter_sys=True)\n"
    )
    proc = _python("-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["False", f"gflkit, version {__import__('gflkit').__version__}"]


def test_doctor_reports_versions_and_patches():
    result = CliRunner().invoke(cli, ["doctor"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(io.StringIO(result.stdout), dtype=str, keep_default_na=False)
    assert list(table.columns) == ["key", "value"]
    report = dict(zip(table.key, table.value))
    for key in ("python", "torch", "dgl", "setuptools", "torchdata", "torch_threads", "dgl_cuda_build"):
        assert report[key], key
    assert report["python"] == ".".join(map(str, sys.version_info[:3]))
    for name, applied in _compat.patched.items():
        assert report[f"patch_{name}"] == ("yes" if applied else "no")
        assert (report[f"patch_{name}_reason"] == "not needed") is (not applied)
    assert report["dgl_cuda_build"] in ("yes", "no")
