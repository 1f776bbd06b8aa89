"""``gflkit doctor``: versions, threads and what the DGL compat layer patched.

Printed as ``key,value`` CSV on stdout, to paste into a bug report. Nothing is
changed: the command only looks.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import sys

import click

from .options import emit, output_options

#: Environment variables that change how gflkit, torch and DGL run.
ENV_VARS = ("GFLKIT_DATA", "DGLBACKEND", "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "MKL_NUM_THREADS")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _versions() -> list[tuple[str, str]]:
    import gflkit

    rows = [("gflkit", gflkit.__version__), ("python", platform.python_version()),
            ("platform", platform.platform())]
    rows += [(dist, _version(dist)) for dist in ("torch", "dgl", "setuptools", "torchdata", "packaging",
                                                 "numpy", "scipy", "pandas", "click")]
    return rows


def _patches() -> list[tuple[str, str]]:
    """What :mod:`gflkit._compat` changed at import, and the facts it decided on."""
    import dgl  # noqa: F401  (the compat layer applies its fixes on the first import of DGL)
    from gflkit import _compat

    rows = []
    for name, applied in _compat.patched.items():
        rows.append((f"patch_{name}", _yes(applied)))
        reason = _compat.reasons.get(name, "") if applied else "not needed"
        rows.append((f"patch_{name}_reason", reason))
    spec = importlib.util.find_spec("dgl")
    dgl_dir = list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else None
    release = _version("torch").split("+", maxsplit=1)[0]
    library = os.path.join(dgl_dir or "", "graphbolt", f"libgraphbolt_pytorch_{release}.so")
    rows.append(("graphbolt_library", f"{library} ({'present' if os.path.exists(library) else 'absent'})"))
    rows.append(("torchdata_datapipes", _yes(importlib.util.find_spec("torchdata.datapipes") is not None
                                             if importlib.util.find_spec("torchdata") else False)))
    return rows


def _devices() -> list[tuple[str, str]]:
    import dgl  # noqa: F401  (after gflkit, so the compat layer is in place)
    import torch

    from gflkit.devices import dgl_cuda_build

    return [
        ("torch_threads", str(torch.get_num_threads())),
        ("torch_interop_threads", str(torch.get_num_interop_threads())),
        ("cpu_count", str(os.cpu_count())),
        ("torch_cuda_available", _yes(torch.cuda.is_available())),
        ("dgl_cuda_build", _yes(dgl_cuda_build())),
        ("dgl_backend", dgl.backend.backend_name),
    ]


def environment_report() -> list[tuple[str, str]]:
    """``(key, value)`` pairs describing this installation."""
    from gflkit.paths import data_root

    env = [(f"env_{name}", os.environ.get(name, "")) for name in ENV_VARS]
    return (_versions() + _patches() + _devices() + env
            + [("data_root", str(data_root())), ("executable", sys.executable)])


@click.command()
@output_options
def doctor(output, fmt):
    """Versions, threads, CUDA and what gflkit patched to import DGL.

    Prints key,value rows: the versions of Python, torch, DGL, setuptools and
    torchdata; whether the compat layer stubbed dgl.graphbolt or aliased
    setuptools.extern, and why; thread counts; whether torch sees a GPU and
    whether DGL was built with CUDA. Paste it into a bug report.
    """
    import pandas as pd

    emit(pd.DataFrame(environment_report(), columns=["key", "value"]), output, fmt)
