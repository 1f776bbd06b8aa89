"""gflkit exports a small, deliberate public API through its modules' ``__all__``."""
from __future__ import annotations

import importlib
import pkgutil

import gflkit

MODULES = sorted(m.name for m in pkgutil.walk_packages(gflkit.__path__, "gflkit.") if m.name != "gflkit.__main__")


def test_private_modules_export_nothing():
    for name in MODULES:
        if any(part.startswith("_") for part in name.split(".")):
            assert not getattr(importlib.import_module(name), "__all__", []), name


def test_every_exported_name_exists():
    for name in MODULES:
        module = importlib.import_module(name)
        missing = [n for n in getattr(module, "__all__", []) if not hasattr(module, n)]
        assert not missing, f"{name}: {missing}"


def test_the_public_api_stays_small():
    """The step machinery and internal helpers are not exported (about 165 names in all, from ~500)."""
    total = sum(len(getattr(importlib.import_module(n), "__all__", [])) for n in MODULES) + len(gflkit.__all__)
    # with prediction's candidates, the model contract, its EpisodeBatch, summarize and join_records, the
    # experiments' TableSettings and the preprocess pipelines (one call per source, their Sampling and Preprocessed)
    assert total <= 182
    from gflkit import threads
    from gflkit.training import loop

    assert "map_graphs" not in threads.__all__ and "fit_loop" not in loop.__all__
