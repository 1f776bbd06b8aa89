"""Make DGL 2.1 importable on current PyTorch and setuptools.

DGL 2.1.0 is the newest DGL release on PyPI for Linux. Its core (graphs,
``dgl.nn``, sampling, METIS, ``save_graphs``) runs on recent PyTorch, but
``import dgl`` breaks in two places that gflkit never uses:

* ``dgl.distributed`` imports ``dgl.graphbolt``, which loads a C++ library that
  DGL 2.1 ships only for torch 2.0-2.2.1 (and needs ``torchdata.datapipes``,
  removed in torchdata 0.10). When that library cannot load, this module puts a
  placeholder ``dgl.graphbolt`` into ``sys.modules``; touching any of its
  attributes raises an error that says why.
* ``dgl.utils`` falls back to ``setuptools.extern.packaging`` when ``packaging``
  is missing; ``setuptools.extern`` is gone from setuptools 71+. When it is
  missing, this module registers the real ``packaging`` under that name.

Both steps run only when needed, and must run before the first ``import dgl``.
``gflkit/__init__.py`` calls :func:`arm`, which puts a small finder first on
``sys.meta_path``: the first ``import dgl`` anywhere in the process (after
``import gflkit``) runs :func:`install` and then imports DGL as usual. So
``import gflkit`` stays cheap (torch and DGL load only when a function needs
them) and the fixes still come first.

It also selects DGL's PyTorch backend through ``DGLBACKEND=pytorch`` when that
variable is unset or names another backend. Without it, the first ``import dgl``
under a new ``HOME`` prints "Setting the default backend..." to **stdout**
(breaking the first CSV a command writes there) and writes
``~/.dgl/config.json``, which fails when ``HOME`` is not writable.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types


#: What :func:`install` changed, for tests and bug reports.
patched: dict[str, bool] = {"graphbolt": False, "setuptools_extern": False, "backend": False}
#: Why each entry of :data:`patched` was applied (``gflkit doctor`` prints it).
reasons: dict[str, str] = {}


def select_backend(environ=os.environ) -> bool:
    """Set ``DGLBACKEND=pytorch`` in ``environ`` unless it already says so; True when changed."""
    if environ.get("DGLBACKEND") == "pytorch":
        return False
    environ["DGLBACKEND"] = "pytorch"
    return True


def _torch_release() -> str:
    import torch

    return torch.__version__.split("+", maxsplit=1)[0]


def graphbolt_library_available(dgl_dir: str | None = None) -> bool:
    """Whether the installed DGL can load graphbolt with the installed torch.

    Args:
        dgl_dir: DGL's package folder; found without importing DGL when omitted.
    """
    if dgl_dir is None:
        spec = importlib.util.find_spec("dgl")
        if spec is None or not spec.submodule_search_locations:
            return True  # no DGL: nothing to fix
        dgl_dir = list(spec.submodule_search_locations)[0]
    if sys.platform.startswith("darwin"):
        name = f"libgraphbolt_pytorch_{_torch_release()}.dylib"
    elif sys.platform.startswith("win"):
        name = f"graphbolt_pytorch_{_torch_release()}.dll"
    else:
        name = f"libgraphbolt_pytorch_{_torch_release()}.so"
    if not os.path.exists(os.path.join(dgl_dir, "graphbolt", name)):
        return False
    return importlib.util.find_spec("torchdata.datapipes") is not None


def _graphbolt_placeholder(reason: str) -> types.ModuleType:
    module = types.ModuleType("dgl.graphbolt", doc=f"Unavailable: {reason}")
    module.__spec__ = importlib.machinery.ModuleSpec("dgl.graphbolt", None)  # for importlib.util.find_spec

    def __getattr__(name: str):
        # AttributeError (not ImportError) so hasattr()/inspect keep working.
        raise AttributeError(f"dgl.graphbolt is unavailable ({reason}); gflkit does not use it")

    module.__getattr__ = __getattr__  # type: ignore[attr-defined]
    return module


def _setuptools_extern_missing() -> bool:
    # Look on disk instead of importing setuptools, which patches distutils.
    if "setuptools.extern" in sys.modules:
        return False
    spec = importlib.util.find_spec("setuptools")
    if spec is None or not spec.submodule_search_locations:
        return True
    return not any(
        os.path.isdir(os.path.join(loc, "extern")) for loc in spec.submodule_search_locations
    )


def install() -> None:
    """Apply the fixes that this environment needs; a no-op when DGL is imported."""
    if "dgl" in sys.modules:
        return
    patched["backend"] = select_backend()
    if "dgl.graphbolt" not in sys.modules and not graphbolt_library_available():
        reason = f"DGL ships no graphbolt library usable with torch {_torch_release()}"
        sys.modules["dgl.graphbolt"] = _graphbolt_placeholder(reason)
        patched["graphbolt"] = True
        reasons["graphbolt"] = reason
    if _setuptools_extern_missing():
        try:
            packaging = importlib.import_module("packaging")
            importlib.import_module("packaging.version")
        except ImportError:
            return  # dgl.utils will then raise its own clear ImportError
        extern = types.ModuleType("setuptools.extern")
        # A spec keeps importlib.util.find_spec("setuptools.extern") working (it
        # raises ValueError on a module whose __spec__ is None).
        extern.__spec__ = importlib.machinery.ModuleSpec("setuptools.extern", None)
        extern.packaging = packaging  # type: ignore[attr-defined]
        sys.modules["setuptools.extern"] = extern
        sys.modules["setuptools.extern.packaging"] = packaging
        sys.modules.setdefault("setuptools.extern.packaging.version", sys.modules["packaging.version"])
        patched["setuptools_extern"] = True
        reasons["setuptools_extern"] = (
            "setuptools has no setuptools.extern (removed in 71); dgl.utils imports packaging from it"
        )


class _BeforeDGL:
    """A ``sys.meta_path`` finder that runs :func:`install` when ``dgl`` is first looked up.

    It finds nothing itself (the regular finders then import DGL) and removes
    itself before doing anything, so it runs at most once.
    """

    @classmethod
    def find_spec(cls, fullname: str, path=None, target=None):
        if fullname == "dgl":
            disarm()
            install()
        return None


def arm() -> None:
    """Apply :func:`install` right before the first ``import dgl`` (at once if DGL is already imported)."""
    if "dgl" in sys.modules:
        return
    if _BeforeDGL not in sys.meta_path:
        sys.meta_path.insert(0, _BeforeDGL)


def disarm() -> None:
    """Remove the finder :func:`arm` installed (nothing when it is not there)."""
    while _BeforeDGL in sys.meta_path:
        sys.meta_path.remove(_BeforeDGL)


def armed() -> bool:
    """Whether :func:`install` still waits for the first ``import dgl``."""
    return _BeforeDGL in sys.meta_path
