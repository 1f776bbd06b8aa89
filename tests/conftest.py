"""Shared fixtures: tiny graphs, a small synthetic family, the shared real data."""
from __future__ import annotations

import os
from pathlib import Path

# Before torch and DGL load: idle OpenMP threads must not spin while other work needs the cores.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402

import gflkit  # noqa: F401,E402  (applies the DGL compat shim before dgl is imported)

REPO = Path(__file__).resolve().parents[1]


def _shared_data_dir() -> Path | None:
    """Folder of the read-only real datasets, if this machine has it.

    Looked up in $GFLKIT_SHARED_DATA, then ../shared/data beside the checkout,
    then /work/shared/data. Tests that need it skip when it is absent.
    """
    candidates = [os.environ.get("GFLKIT_SHARED_DATA"), REPO.parent / "shared" / "data", "/work/shared/data"]
    for c in candidates:
        if c and Path(c).is_dir():
            return Path(c)
    return None


@pytest.fixture(scope="session", autouse=True)
def no_runs_left_in_the_working_folder():
    """Tests keep their runs in temporary folders: ``gflkit.train`` (as ``gflkit train``) keeps
    ``./runs/<name>`` unless it is given ``run_dir`` (``run_dir=False``: no run folder)."""
    runs = Path.cwd() / "runs"
    existed = runs.exists()
    yield
    if not existed and runs.exists():
        left = sorted(p.name for p in runs.iterdir())[:5]
        pytest.fail(f"a test left {runs} ({', '.join(left)}): give gflkit.train run_dir=False or a tmp_path "
                    f"folder, or monkeypatch.chdir(tmp_path)", pytrace=False)


@pytest.fixture
def torch_threads():
    """``torch.set_num_threads`` for one test; the thread count before it is restored afterwards."""
    import torch

    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = _shared_data_dir()
    if path is None:
        pytest.skip("shared real datasets (../shared/data) not available")
    return path


@pytest.fixture(scope="session")
def small_family():
    """The small synthetic family (16/4/8 graphs of 200-400 nodes), seed 0."""
    from gflkit.data import SMALL_SPEC, make_synthetic_family

    return make_synthetic_family(SMALL_SPEC, seed=0, name="small")


@pytest.fixture(scope="session")
def small_family_dir(small_family, tmp_path_factory) -> Path:
    return small_family.save(tmp_path_factory.mktemp("collections") / "small")


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A data root holding the collection ``tiny`` (3/2/2 graphs of 100-150 nodes, 4 classes), one per module."""
    from cli_helpers import invoke

    path = tmp_path_factory.mktemp("root")
    result = invoke("preprocess", "synthetic", "--small", "--name", "tiny", "--graphs", "3,2,2",
                    "--nodes", "100,150", "--data-root", path)
    assert result.exit_code == 0, result.output
    assert (path / "processed" / "tiny" / "manifest.json").is_file()
    return path
