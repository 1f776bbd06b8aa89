"""gflkit: Graph Few-shot Learning (Yao et al., AAAI 2020) on DGL and PyTorch.

``import gflkit`` is cheap: the functions and classes below are imported on
first use (PEP 562), so ``gflkit.__version__`` and the command line's help
never load torch or DGL. The DGL compatibility fixes of :mod:`gflkit._compat`
still run before the first ``import dgl`` in the process.
"""
from __future__ import annotations

import importlib
from typing import Any

from . import _compat

_compat.arm()  # must come before the first `import dgl`

__version__ = "0.2.0.dev0"

#: Public name -> module that defines it (imported on first access). These strings are not imports:
#: tests/test_layout.py leaves them out of the import graph, since nothing is imported until a name is used.
_LAZY = {
    "train": ".api", "evaluate": ".api", "evaluate_baseline": ".api", "model_config": ".api",
    "EpisodeConfig": ".config", "GFLConfig": ".config", "TrainConfig": ".config",
    "GraphCollection": ".data", "load_collection": ".data",
    "GFLError": ".errors", "GFLWarning": ".errors", "OneSeedWarning": ".errors",
    "embed": ".prediction.functions", "load": ".prediction.predictor", "predict": ".prediction.functions",
}

__all__ = [
    "train", "evaluate", "evaluate_baseline", "model_config", "GFLConfig", "EpisodeConfig",
    "TrainConfig", "GraphCollection", "load_collection", "GFLError", "GFLWarning", "OneSeedWarning", "load", "predict",
    "embed", "__version__",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gflkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
