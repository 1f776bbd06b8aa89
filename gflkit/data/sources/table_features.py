"""The features of a user's tables: feature columns or a feature file, reduced or transformed.

How a feature file's rows map to nodes is the *feature key* (see
:mod:`gflkit.data.sources.tables`). Sparse or wide features are reduced with a
seeded randomized SVD, fitted once and kept as a
:class:`~gflkit.data.transform.FeatureTransform`.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from ... import names
from ...errors import GFLError
from ...io import require_memory
from ..transform import FeatureTransform
from ..validate import finite_features
from .table_io import MEMORY_HINT, add_lines, fit_svd, read_feature_file, read_graph_feature_file
from .table_nodes import NodeRows, TableColumns, feature_rows

__all__: list[str] = []

#: Features are reduced to this many dimensions when they come as a sparse bag.
SPARSE_FEAT_SIZE = 128
#: How rows of a feature file map to nodes (see the module docstring; :data:`gflkit.names.FEATURE_KEYS`).
FEATURE_KEYS = names.FEATURE_KEYS


def _feature_key(nd: NodeRows, features: Path, cols: TableColumns) -> str:
    key = cols.feature_key
    if key is None:
        key = "row" if nd.frame is not None and features.suffix.lower() != ".json" else "node"
    if key not in FEATURE_KEYS:
        raise GFLError(f"unknown feature key {key!r}: choose one of {', '.join(FEATURE_KEYS)} (`feature_key`)")
    if key == "node" and cols.graph:
        valid = nd.ids >= 0
        if len(np.unique(nd.ids[valid])) < int(valid.sum()):
            raise GFLError(
                f"{features}: features keyed by node id are ambiguous because node ids repeat across graphs "
                f"({cols.graph!r}); use `feature_key=row` (row i = node-table row i) or `feature_key=graph-node` "
                f"(an .npz with one array per graph)"
            )
    if key == "row" and nd.frame is None:
        raise GFLError(f"{features}: `feature_key=row` needs a node table (`nodes`); use `feature_key=node`")
    return key


def node_features(nd: NodeRows, rows, features, cols: TableColumns, report):
    if features is not None:
        key = _feature_key(nd, features, cols)
        if key == "graph-node":
            return read_graph_feature_file(features, [nd.names[c] for c in nd.code[rows]], nd.ids[rows], report)
        if key == "row":
            n_rows = feature_rows(features, report)
            if n_rows is not None and n_rows != nd.records:
                raise GFLError(
                    f"{features}: {n_rows} feature rows but {nd.path.name} has {nd.records} data rows; with "
                    f"`feature_key=row` (the default with a node table) row i holds the node of table row i; "
                    f"pass `feature_key=node` if rows are node ids"
                )
            return read_feature_file(features, nd.record[rows], report)
        return read_feature_file(features, nd.ids[rows], report)
    if cols.features is None or nd.frame is None:
        raise GFLError(f"{nd.path or 'the graph'}: no node features; pass feature columns (`feature_cols`) "
                       f"of a node table or a file (`features`)")
    ndf, nodes = nd.frame, nd.path
    names = [cols.features] if isinstance(cols.features, str) else list(cols.features)
    chosen = [c for c in ndf.columns if c in names] or [c for c in ndf.columns if str(c).startswith(names[0])]
    if len(names) > 1 and len(chosen) != len(names):
        raise GFLError(f"{nodes}: feature columns {sorted(set(names) - set(chosen))} not found")
    if not chosen:
        raise GFLError(f"{nodes}: no column named or starting with {names[0]!r}; check `feature_cols`")
    import pandas as pd

    block = ndf[chosen].iloc[rows].apply(lambda c: pd.to_numeric(c.str.strip(), errors="coerce"))
    values = block.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(values).all(axis=1)
    add_lines(report, "non-numeric feature value (set to 0)", nodes.name, nd.lines[rows][bad])
    return finite_features(values)  # counted above by line, with the non-numeric values


def finish_features(feat, feat_size: int | None, seed: int, transform: FeatureTransform | None,
                     fit: bool, what: str, optional: bool = False, fit_rows: np.ndarray | None = None,
                     fitted_on: dict | None = None) -> tuple[torch.Tensor, FeatureTransform | None]:
    """Dense float32 features: ``transform`` applied, or a reduction fitted (``fit``), or kept.

    With ``optional`` the transform is applied only to features of its input size.
    A reduction is fitted on the rows ``fit_rows`` (default all) and applied to all rows;
    ``fitted_on`` says which those are (:func:`~gflkit.data.transform.fitted_on`, kept in its params).
    The memory a reduction or the dense features need is checked first (``what`` names the file)."""
    if transform is not None and not (optional and feat.shape[1] != transform.in_feats):
        return torch.from_numpy(transform.apply(feat, what)), transform
    if transform is not None:
        fit = False
    fitted = None
    n, m = feat.shape
    if fit:
        if feat_size is None and sp.issparse(feat):
            feat_size = SPARSE_FEAT_SIZE
        if feat_size and m > feat_size:
            # fit_svd's blocks: (n + m) x (feat_size + oversampling) float32, a few at a time
            require_memory(4 * 4 * (n + m) * (feat_size + 10), what, MEMORY_HINT)
            basis = feat if fit_rows is None else (feat.tocsr() if sp.issparse(feat) else feat)[fit_rows]
            fitted = fit_svd(basis, feat_size, seed)
            if fitted_on:
                fitted = replace(fitted, params={**fitted.params, **fitted_on})
            feat = fitted.apply(feat, what)
    if sp.issparse(feat):
        require_memory(2 * 4 * n * feat.shape[1], what, MEMORY_HINT)
    return torch.from_numpy(np.asarray(feat.todense() if sp.issparse(feat) else feat, dtype=np.float32)), fitted
