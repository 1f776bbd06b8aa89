"""Checks and shapes of a prediction's inputs and output: features, labels, the output table.

Shared by :mod:`gflkit.prediction.predictor` and the candidate methods; each
check raises a one-line :class:`~gflkit.errors.GFLError` that names the graph
or labels and says what to do.
"""
from __future__ import annotations

import logging
from typing import Hashable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from ..errors import GFLError

__all__ = []

log = logging.getLogger(__name__)


def normalised(scores: torch.Tensor) -> torch.Tensor:
    """Refined scores as probabilities: clipped at 0 and divided by their row sums, argmax kept
    (a row with no positive score becomes the one-hot of its largest score)."""
    p = scores.float().clamp_min(0)
    total = p.sum(1, keepdim=True)
    empty = total.squeeze(1) <= 0
    if empty.any():
        p[empty] = torch.nn.functional.one_hot(scores[empty].argmax(1), scores.shape[1]).float()
        total = p.sum(1, keepdim=True)
    return p / total


def zero_non_finite(feat: torch.Tensor, what: str) -> torch.Tensor:
    """``feat`` with NaN/inf values set to 0, and one warning naming ``what`` when there were any."""
    bad = ~torch.isfinite(feat)
    if not bad.any():
        return feat
    rows = bad.any(1)
    log.warning("%s: %d node(s) have NaN or infinite features (set to 0; first at node position %d)", what,
                int(rows.sum()), int(torch.nonzero(rows)[0]))
    return torch.where(bad, torch.zeros((), dtype=feat.dtype), feat)


def check_finite(feat: torch.Tensor, what: str) -> None:
    """One-line error when a transformed feature value is NaN or infinite (raw values too large for it)."""
    bad = ~torch.isfinite(feat).all(1)
    if bad.any():
        first = int(torch.nonzero(bad)[0])
        raise GFLError(f"{what}: the feature transform gives NaN or infinite values for {int(bad.sum())} node(s) "
                       f"(first at node position {first}): their raw features are too large; scale them down")


def check_support(support: Mapping[Hashable, Sequence[int]], num_nodes: int, k_shot: int,
                  what: str) -> tuple[list[str], list[torch.Tensor]]:
    """Class names (sorted) and id tensors of a ``{label: ids}`` mapping, checked."""
    if not support:
        raise GFLError(f"{what}: no labelled nodes; give at least one labelled node per class")
    from ..data.sources.table_io import sorted_classes

    names = sorted_classes([str(k) for k in support])
    by_name = {str(k): v for k, v in support.items()}
    ids, seen = [], {}
    for name in names:
        t = torch.as_tensor(np.asarray(list(by_name[name]), dtype=np.int64))
        if t.numel() == 0:
            raise GFLError(f"{what}: class {name!r} has no labelled node; give at least one or drop the class")
        out = t[(t < 0) | (t >= num_nodes)]
        if out.numel():
            raise GFLError(f"{what}: labelled node {int(out[0])} (class {name!r}) is not in the graph "
                           f"({num_nodes} nodes)")
        for i in t.tolist():
            if i in seen:
                raise GFLError(f"{what}: node {i} is labelled twice ({seen[i]!r} and {name!r}); keep one label")
            seen[i] = name
        ids.append(t)
    few = [f"{n!r} ({len(t)})" for n, t in zip(names, ids) if len(t) < k_shot]
    if few:
        log.warning("%s: class(es) %s have fewer labelled nodes than the run's k_shot = %d; predictions may be "
                    "less accurate", what, ", ".join(few), k_shot)
    return names, ids


def prediction_frame(probs: torch.Tensor, names: list[str], support: Sequence[torch.Tensor],
                     node_ids: Sequence[int] | None = None) -> pd.DataFrame:
    """The output table: ``node, label, score_<class>..., is_support``."""
    n = probs.shape[0]
    label = probs.argmax(1).numpy().copy()
    is_support = np.zeros(n, dtype=bool)
    for c, ids in enumerate(support):
        label[ids.numpy()] = c
        is_support[ids.numpy()] = True
    frame = {"node": np.arange(n) if node_ids is None else np.asarray(node_ids),
             "label": np.asarray(names, dtype=object)[label]}
    for c, name in enumerate(names):
        frame[f"score_{name}"] = probs[:, c].numpy()
    frame["is_support"] = is_support
    return pd.DataFrame(frame)



#: First characters that make a spreadsheet read a CSV cell as a formula (OWASP, "CSV injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def escape_formulas(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose text cells and column names that start like a spreadsheet formula
    (:data:`FORMULA_STARTS`) are prefixed with ``'``, so a spreadsheet shows them as text. Numbers are kept."""
    def escape(value):
        return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value

    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_object_dtype(out[col]) or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(escape).astype(object)
    return out.rename(columns=escape)
