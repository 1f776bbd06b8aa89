"""How the runs of an experiment table are made, kept and scored, and the one check of the keyword settings.

:func:`gflkit.experiments.compare`, :func:`~gflkit.experiments.ablate` and
:func:`~gflkit.experiments.sweep` take a :class:`TableSettings` (``table=``)
or build one from their keywords, as :func:`gflkit.train` does with
:class:`~gflkit.config.RunSettings`; :func:`table_settings` sorts the keywords
and names one that no setting has.
"""
from __future__ import annotations

import numbers
import os
from dataclasses import dataclass, fields, replace
from typing import Any, Sequence

from ..devices import resolve_device
from ..errors import GFLError
from ..evaluation.tables import CI_METHODS
from ..names import DEFAULT_SEEDS
from .tasks import _check_adjust, _seed_list

__all__: list[str] = []  # TableSettings is exported by gflkit.experiments


@dataclass(frozen=True)
class TableSettings:
    """How the runs of a table are made, kept and scored; each value is checked here, once.

    Attributes:
        seeds: training seeds, one run each per row (``None``: :data:`~gflkit.names.DEFAULT_SEEDS`);
            a row's intervals are over (seed, graph) units. One seed leaves training randomness
            out (a :class:`~gflkit.errors.OneSeedWarning`).
        episodes: support draws per test graph in the scoring.
        ci: ``t`` or ``paper`` (:mod:`gflkit.evaluation.statistics`).
        adjust: ``holm``, ``bh`` or ``none``: how ``p_adjusted`` adjusts the p-values over every
            comparison of the table (the family a claim from it belongs to).
        root: data root for collection names (``None``: the default).
        runs_root: keep each trained run under this folder (``None``: keep none).
        force: replace an existing run folder under ``runs_root`` (else it is an error).
        device: where the GFL models train and are scored (``cpu``, ``cuda``, ``cuda:N``); the
            baselines run on the CPU.
        progress: announce the runs on stderr.
        jobs: processes to spread the runs over; the rows are the same as with one.
    """

    seeds: Sequence[int] | None = DEFAULT_SEEDS
    episodes: int = 1
    ci: str = "t"
    adjust: str = "holm"
    root: str | os.PathLike | None = None
    runs_root: str | os.PathLike | None = None
    force: bool = False
    device: str = "cpu"
    progress: bool = True
    jobs: int = 1

    def __post_init__(self) -> None:
        resolve_device(self.device)  # a device this machine lacks fails before any work
        _check_adjust(self.adjust)
        if self.ci not in CI_METHODS:
            raise GFLError(f"`ci={self.ci!r}`: choose one of {', '.join(CI_METHODS)}")
        for name in ("episodes", "jobs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise GFLError(f"`{name}={value!r}` must be a whole number of at least 1")
        object.__setattr__(self, "seeds", tuple(_seed_list(self.seeds)))


_TABLE_FIELDS = tuple(f.name for f in fields(TableSettings))


def table_settings(what: str, table: TableSettings | None, settings: dict[str, Any],
                   own: dict[str, Any]) -> tuple[TableSettings, dict[str, Any]]:
    """The keyword ``settings`` of ``what`` (``compare``, ...) checked, in one place, before any work.

    Each keyword is a field of :class:`TableSettings` (applied over ``table``) or one of the
    function's ``own`` row options (name -> default); a name that is neither is a GFLError
    naming it.

    Returns:
        ``(table settings, own options with their defaults filled in)``.
    """
    unknown = sorted(set(settings) - set(_TABLE_FIELDS) - set(own))
    if unknown:
        raise GFLError(f"{what}() got unknown settings {', '.join(unknown)}: give fields of TableSettings "
                       f"({', '.join(_TABLE_FIELDS)}) or {', '.join(own)}")
    given = {k: v for k, v in settings.items() if k in _TABLE_FIELDS}
    table = replace(table, **given) if table is not None else TableSettings(**given)
    return table, {k: settings.get(k, default) for k, default in own.items()}
