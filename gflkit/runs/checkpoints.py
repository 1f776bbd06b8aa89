"""Runs and checkpoints: loading, naming, provenance, and the run -> collection lookup.

A run folder holds ``config.json`` (settings and provenance), ``metrics.csv``
(one row per step) and ``best.pt``; it is written through a hidden partial
folder (see :mod:`gflkit.runs.folder`), and its ``config.json`` records the
SHA-256 of the other two, checked when they are read and when runs are
listed. Checkpoints hold tensors and plain Python values only and load with
``torch.load(..., weights_only=True)``.
"""
from __future__ import annotations

import hashlib
import io
import json
import logging
import math
import os
import platform
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from ..config import GFLConfig, config_from_dict
from ..errors import GFLError
from ..models.baselines import TRANSFER
from ..models.gfl import GFL
from .folder import (BEST_FILE, CONFIG_FILE, HASHED_FILES, LAST_FILE, METRICS_FILE, HASHES, file_sha256,
                     final_run_path, parse_config, partial_path, read_run_file, read_verified, recorded_hashes,
                     size_limit)
from .states import check_state, load_state
from ..io import FileRefused, atomic_torch_save, open_regular
from ..paths import printable

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_checkpoint", "list_runs"]

log = logging.getLogger(__name__)

CHECKPOINT_FORMAT = "gflkit.checkpoint"

#: Keys of a run's ``config.json`` besides its settings (``model_config``, ``episode_config``,
#: ``train_config``, ``model``, ``options``): what the run was trained on, when and how it ended.
RUN_RECORD_KEYS = ("format", "gflkit_version", "kind", "in_feats", "num_classes", "classes", "dataset", "data_path",
                   "seed", "feature_fingerprint", "data_sha256", "provenance", "step", "val_accuracy", "validation",
                   "feature_stats", HASHES)


def checkpoint_dict(model: torch.nn.Module, meta: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint: ``meta`` plus a detached copy of the weights."""
    return {**meta, "state_dict": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}}


def save_checkpoint(model: torch.nn.Module, meta: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write weights and metadata atomically (plain tensors and builtins only)."""
    return atomic_torch_save(checkpoint_dict(model, meta), path)


def _checkpoint_file(path: Path) -> Path:
    """The ``best.pt`` of a run folder or checkpoint path, refusing unfinished runs."""
    folder = path if path.is_dir() else path.parent
    final = final_run_path(path if path.is_dir() else folder)
    unfinished = folder.name != final.name or (
        (folder / CONFIG_FILE).is_file() and (folder / BEST_FILE).is_file() and not (folder / METRICS_FILE).is_file()
    )
    if not path.exists() and partial_path(path).is_dir():
        unfinished, final = True, path
    if unfinished:
        raise GFLError(
            f"{path}: the run did not finish (no {METRICS_FILE}); resume its training (`resume={final}`) "
            f"or train it again"
        )
    return path / BEST_FILE if path.is_dir() else path


def _build_model(path: Path, ckpt: dict[str, Any], device: torch.device | str | None = None) -> torch.nn.Module:
    """The empty model a checkpoint's settings describe (on ``device``); errors name the checkpoint."""
    try:
        with torch.device(device or "cpu"):
            return _model_of(ckpt)
    except GFLError as err:
        raise GFLError(f"{path}: {err}") from None
    except Exception as err:  # edited settings: wrong types, missing keys, bad values
        detail = f"missing {err}" if isinstance(err, KeyError) else str(err).splitlines()[0] if str(err) else ""
        raise GFLError(
            f"{path}: its settings do not describe a model ({type(err).__name__}: {detail}); retrain"
        ) from None


def _model_of(ckpt: dict[str, Any]) -> torch.nn.Module:
    if ckpt.get("kind") == "baseline":
        if ckpt.get("model") not in TRANSFER:
            raise GFLError(f"unknown baseline {ckpt.get('model')!r} (written by a newer gflkit?)")
        return TRANSFER[ckpt["model"]](int(ckpt["in_feats"]), int(ckpt["num_classes"]), **ckpt["options"])
    return GFL(int(ckpt["in_feats"]), config_from_dict(GFLConfig, ckpt["model_config"]))


def load_checkpoint(path: str | os.PathLike) -> tuple[torch.nn.Module, dict[str, Any]]:
    """Rebuild a model (GFL or a transfer baseline) from a checkpoint or run folder.

    Only tensors and plain Python values are read (``weights_only=True``). A run
    folder that did not finish (no ``metrics.csv``, or a hidden partial folder)
    is refused, and so is a run whose ``config.json`` cannot be read or
    records no well-formed digests, or whose ``best.pt`` has another SHA-256
    (:func:`~gflkit.runs.folder.read_verified`). A checkpoint file with no
    ``config.json`` beside it is read by itself.
    """
    given = Path(path)
    path = _checkpoint_file(given)
    if not os.path.lexists(path):
        raise GFLError(f"{path}: no such checkpoint; give a run folder written by 'gflkit train' or its best.pt")
    data = read_verified(path, run=given.is_dir())
    try:
        ckpt = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # unpickling errors have no common base
        raise GFLError(f"{path}: not a loadable gflkit checkpoint ({type(err).__name__}); retrain") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
        raise GFLError(f"{path}: not a gflkit checkpoint")
    # The settings are checked against the weights on the meta device first (shapes
    # only, no memory), so settings that describe a huge model allocate nothing.
    fit = dict(source=path, advice="retrain", model="the model it describes")
    check_state(_build_model(path, ckpt, "meta"), ckpt.get("state_dict"), **fit)
    model = _build_model(path, ckpt)
    load_state(model, ckpt["state_dict"], **fit)
    model.eval()
    meta = {k: v for k, v in ckpt.items() if k != "state_dict"}
    return model, meta


def load_metrics(run: str | os.PathLike) -> "pd.DataFrame":
    """A finished run's ``metrics.csv``, checked against the SHA-256 its ``config.json`` recorded (an empty
    table for a run that took no training step).

    Raises:
        GFLError: the file is missing, unreadable, damaged or not a table.
    """
    import pandas as pd

    path = Path(run) / METRICS_FILE
    if not os.path.lexists(path):
        raise GFLError(f"{path}: missing; the run did not finish, train it again")
    data = read_verified(path)
    if not data.strip():  # a run that took no training step (verified: written so, not damaged)
        return pd.DataFrame()
    try:
        return pd.read_csv(io.BytesIO(data))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as err:
        raise GFLError(f"{path}: not a metrics table ({type(err).__name__}); train the run again") from None


def training_collection(meta: dict, root=None) -> str | None:
    """The collection a run was trained on, if it can still be found.

    With an explicit ``root`` it is looked up by name under that root first;
    otherwise at the folder the run recorded first, then by name under the
    default data root.
    """
    from ..paths import is_name, processed_dir

    name, path = meta.get("dataset"), meta.get("data_path")
    named = processed_dir(name, root) if is_name(name) else None  # a name, never a path, even in an edited config
    recorded = Path(path) if path else None
    order = [named, recorded] if root is not None else [recorded, named]
    for candidate in order:
        if candidate is not None and (candidate / "manifest.json").is_file():
            return str(candidate)
    return None


def find_training_collection(meta: dict, root=None, run: str | os.PathLike | None = None) -> str:
    """Like :func:`training_collection`, but a missing collection is an error naming where it was."""
    found = training_collection(meta, root)
    if found is not None:
        return found
    from ..paths import data_root

    name, path = meta.get("dataset"), meta.get("data_path")
    where = f"{run}: " if run is not None else ""
    if not name and not path:
        raise GFLError(f"{where}no collection is recorded with the model; give the collection to use")
    raise GFLError(
        f"{where}its collection {name!r} is neither at {path} nor under the data root {data_root(root)}; "
        f"pass `data_root` with the root that holds processed/{name}, or give the collection folder"
    )


# -- naming and provenance ----------------------------------------------------------


def settings_hash(settings: dict[str, Any], length: int = 6) -> str:
    """A short, stable hex digest of JSON-able settings."""
    text = json.dumps(settings, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def run_name(dataset: str, model: str, aggregator: str, seed: int, settings: dict[str, Any]) -> str:
    """``<dataset>-<model>[-<aggregator>]-s<seed>-<hash6>``: different settings never share a name.

    Raises:
        GFLError: the collection name ``dataset``, or the whole name, is not a
            plain folder name (:func:`gflkit.paths.check_name`).
    """
    from ..paths import RUN_NAME_LIMIT, check_name

    check_name(dataset)
    parts = [dataset, model, aggregator, f"s{seed}", settings_hash(settings)]
    return check_name("-".join(str(p) for p in parts if p), what="run name", limit=RUN_NAME_LIMIT)


def collection_hash(collection) -> str:
    """sha256 over a collection's classes, splits and each graph's edges, features and labels
    (:meth:`~gflkit.data.GraphCollection.content_sha256`).

    The same for a collection in memory and after a save and load.
    """
    return collection.content_sha256()


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def provenance() -> dict[str, Any]:
    """Versions, thread count, command line and start time of this process."""
    import dgl

    from .. import __version__

    return {
        "gflkit": __version__, "torch": str(torch.__version__), "dgl": str(dgl.__version__),
        "python": platform.python_version(), "threads": torch.get_num_threads(),
        "command": shlex.join(sys.argv), "started": now(),
    }


# -- listing ------------------------------------------------------------------------

def _config_problem(folder: Path) -> tuple[dict[str, Any] | None, str, str]:
    """A run folder's ``config.json``, or ``None``, the status (``malformed`` or ``damaged``) and what is wrong."""
    path = folder / CONFIG_FILE
    try:
        config = parse_config(read_run_file(path), path)
    except FileRefused as err:  # missing or not a run's: malformed; unreadable, not a file, too large: damaged
        malformed = err.missing or err.problem.startswith(("not JSON", "not the configuration"))
        return None, "malformed" if malformed else "damaged", f"{CONFIG_FILE}: {err.problem}"
    if config.get("format") != CHECKPOINT_FORMAT:
        return None, "malformed", f"{CONFIG_FILE}: not the configuration of a gflkit run"
    return config, "", ""


def _percent(value: Any) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return math.nan
    return 100 * value if math.isfinite(value) else math.nan


def _interrupted_progress(folder: Path) -> tuple[int, float, str]:
    """Step and best val accuracy so far of an interrupted run, from its ``last.pt``, and what is wrong with it."""
    path = folder / LAST_FILE
    if not os.path.lexists(path):  # stopped before its first checkpoint
        return 0, math.nan, ""
    try:
        ckpt = torch.load(io.BytesIO(read_run_file(path)), map_location="cpu", weights_only=True)
        vals = [r.get("val_accuracy", math.nan) for r in ckpt["rows"]]
        finite = [v for v in vals if isinstance(v, float) and math.isfinite(v)]
        return int(ckpt["step"]), max(finite) if finite else math.nan, ""
    except FileRefused as err:
        return 0, math.nan, f"{LAST_FILE}: {err.problem}"
    except Exception as err:  # unpickling errors have no common base
        return 0, math.nan, f"{LAST_FILE}: not a loadable resume checkpoint ({type(err).__name__})"


def _verify(folder: Path, config: dict[str, Any], verify: bool) -> tuple[str, str, str]:
    """``(status, verified, reason)`` of a folder holding a finished run."""
    missing = [name for name in HASHED_FILES if not os.path.lexists(folder / name)]
    if missing:
        return "malformed", "", f"{missing[0]}: missing"
    try:
        hashes = recorded_hashes(config)
    except FileRefused as err:
        return "malformed", "", f"{CONFIG_FILE}: {err.problem}"
    for name in HASHED_FILES:
        try:
            if not verify or hashes is None:  # nothing is hashed, but what is there is checked
                open_regular(folder / name, size_limit(name), "").close()
            elif hashes is not None and file_sha256(folder / name) != hashes[name]:
                return "damaged", "no", f"{name}: SHA-256 differs from the one {CONFIG_FILE} recorded"
        except FileRefused as err:
            return "damaged", "no", f"{name}: {err.problem}"
    if not verify:
        return "", "skipped", ""
    if hashes is None:
        return "", "unrecorded", f"{CONFIG_FILE} records no SHA-256 (written by gflkit 0.1): not verified"
    return "", "yes", ""


def _run_entry(folder: Path, verify: bool) -> dict[str, Any]:
    entry = _entry(folder, verify)
    entry = {k: printable(v) if isinstance(v, str) else v for k, v in entry.items()}
    if entry["status"] in ("damaged", "malformed"):
        log.warning("%s: %s run: %s", printable(str(folder)), entry["status"], entry["reason"])
    return entry


def _entry(folder: Path, verify: bool) -> dict[str, Any]:
    final = final_run_path(folder)
    entry: dict[str, Any] = {"name": final.name, "model": "", "aggregator": "", "dataset": "", "seed": "", "step": "",
                             "val_accuracy": math.nan, "date": "", "verified": "", "reason": "", "path": str(final)}
    config, status, problem = _config_problem(folder)
    if config is None:
        return {**entry, "status": status, "reason": problem}
    prov = config.get("provenance") or {}
    cfg = config.get("model_config") or {}
    prov, cfg = (prov if isinstance(prov, dict) else {}), (cfg if isinstance(cfg, dict) else {})
    aggregator = cfg.get("aggregator", "") if cfg.get("prototype") == "pgnn" and cfg.get("gate") else ""
    entry.update(model=config.get("model", ""), aggregator=aggregator, dataset=config.get("dataset", ""),
                 seed=config.get("seed", ""), date=prov.get("finished") or prov.get("started") or "")
    if final.name != folder.name and not os.path.lexists(folder / METRICS_FILE):
        step, val, problem = _interrupted_progress(folder)
        return {**entry, "status": "damaged" if problem else "interrupted", "reason": problem, "step": step,
                "val_accuracy": _percent(val)}
    status, verified, reason = _verify(folder, config, verify)
    if not status:
        status = "complete" if final.name == folder.name else "finished"
    return {**entry, "status": status, "verified": verified, "reason": reason, "step": config.get("step", ""),
            "val_accuracy": _percent(config.get("val_accuracy"))}


def list_runs(folder: str | os.PathLike, verify: bool = True) -> list[dict[str, Any]]:
    """One dict per folder under ``folder``: complete runs, interrupted ones, and the damaged and malformed.

    Keys: ``name, status, model, aggregator, dataset, seed, step, val_accuracy``
    (best, percent), ``date`` (end, else start, UTC), ``verified``,
    ``reason`` and ``path``. ``status`` is ``complete``; ``interrupted``
    (``--resume`` continues it) or ``finished`` (it only awaits its rename);
    ``damaged`` (a file differs from the SHA-256 ``config.json`` recorded,
    ``last.pt`` does not load, or a file is not a regular file or is over its
    size limit, :func:`~gflkit.runs.folder.size_limit`) or ``malformed`` (not a
    run: ``config.json`` missing or not a run's, or a file missing); ``reason``
    names the file. Text that cannot be written as UTF-8 (a folder name that is
    not UTF-8) is escaped (:func:`gflkit.paths.printable`).
    ``verified`` is ``yes`` (``best.pt`` and ``metrics.csv`` match their
    recorded SHA-256), ``no``, ``unrecorded`` (a run written before digests
    were recorded), ``skipped`` (``verify=False``: nothing is hashed) or empty
    (not a finished run). Each damaged or malformed folder is also logged as
    a warning.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise GFLError(f"{folder}: no such folder of runs")
    entries = [_run_entry(child, verify) for child in sorted(folder.iterdir())
               if child.is_dir() and (not child.name.startswith(".") or child.name != final_run_path(child).name)]
    return sorted(entries, key=lambda e: e["name"])
