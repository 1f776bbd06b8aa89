"""Settings of the model, the episodes and meta-training, as dataclasses.

One :class:`GFLConfig` configures the whole model; the paper's ablations and the
Protonet baseline are configurations of it (see :data:`PRESETS`), never separate
code paths::

    from dataclasses import replace
    m2a = replace(GFLConfig(), gate=False)
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from .errors import GFLError

__all__ = [
    "GFLConfig", "EpisodeConfig", "TrainConfig", "PRESETS", "ABLATIONS",
    "SIMILARITIES", "DISTANCES", "AGGREGATORS", "GATE_MODES", "PGNN_NORMS", "config_from_dict", "to_dict",
]

SIMILARITIES = ("khop-cn", "jaccard", "adamic-adar", "pagerank")
DISTANCES = ("inner", "cosine", "euclidean")
AGGREGATORS = ("mean", "att")
GATE_MODES = ("open", "centered", "paper")
PGNN_NORMS = ("row", "sym")


#: Largest seed (NumPy's generators take 32-bit seeds).
SEED_MAX = 2**32 - 1


def _check_finite(cfg) -> None:
    """One-line error for a NaN or infinite float setting (they would train to chance quietly)."""
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise GFLError(f"{f.name}={value}: must be a finite number")


@dataclass(frozen=True)
class GFLConfig:
    """The GFL model (paper section 4; defaults from section 5 and appendix A).

    Attributes:
        hidden_feats: width of the first GCN layer of the node encoder.
        out_feats: node embedding size (second GCN layer, linear).
        dropout: dropout on the encoder input and hidden layer.
        prototype: ``"pgnn"`` graph-structured prototype, or ``"mean"`` (Protonet).
        pool: pooling of PGNN outputs into a prototype, ``"mean"`` or ``"max"``.
        pgnn_activation: ``"tanh"`` (as designed) or ``"none"`` on the PGNN output.
        pgnn_norm: ``"row"`` (``D^-1 R``, default) or ``"sym"`` (GCN's
            ``D^-1/2 R D^-1/2``, the paper's literal choice) in the PGNN.
        similarity: relational structure score, one of :data:`SIMILARITIES`.
        hops: k of the k-hop common-neighbour score (paper: 3).
        mu: threshold; a relation weight below ``mu`` becomes ``mu0``.
        mu0: weight given to relations below the threshold (``mu0 < mu``).
        gate: modulate the PGNN parameters with the hierarchical graph gate.
        gate_mode: the gate's form and start (:class:`~gflkit.nn.HierarchyGate`):
            ``"open"`` (default: sigmoid near 1), ``"centered"`` (2 sigmoid,
            starting at 1) or ``"paper"`` (sigmoid with the usual initialisation).
        levels: R, number of levels of the hierarchical graph representation.
        clusters: number of clusters of levels 2..R (length ``levels - 1``).
        graph_feats: size of the hierarchical graph representation h.
        aggregator: ``"mean"`` or ``"att"`` over the R level representations.
        recon: add the auxiliary graph reconstruction loss.
        gamma: weight of the reconstruction loss.
        recon_reduction: ``"mean"`` (divide by n^2 per graph) or ``"sum"``.
        recon_normalize: L2-normalise the decoder's rows, so ``D D^T`` holds
            cosines and the loss stays bounded whatever the scale of the
            features (without it, large inputs make the loss explode and its
            gradient flattens the embeddings).
        distance: ``"inner"`` product, ``"cosine"`` or squared ``"euclidean"``.
        cosine_scale: logits multiplier for the cosine distance.
    """

    hidden_feats: int = 32
    out_feats: int = 32
    dropout: float = 0.0
    prototype: str = "pgnn"
    pool: str = "mean"
    pgnn_activation: str = "tanh"
    pgnn_norm: str = "row"
    similarity: str = "khop-cn"
    hops: int = 3
    mu: float = 0.5
    mu0: float = 0.1
    gate: bool = True
    gate_mode: str = "open"
    levels: int = 3
    clusters: tuple[int, ...] = (32, 8)
    graph_feats: int = 32
    aggregator: str = "mean"
    recon: bool = True
    gamma: float = 1.0
    recon_reduction: str = "mean"
    recon_normalize: bool = True
    distance: str = "inner"
    cosine_scale: float = 10.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "clusters", tuple(int(c) for c in self.clusters))
        _check_finite(self)
        choices = {
            "prototype": ("pgnn", "mean"), "pool": ("mean", "max"), "pgnn_activation": ("tanh", "none"), "similarity": SIMILARITIES,
            "aggregator": AGGREGATORS, "gate_mode": GATE_MODES, "pgnn_norm": PGNN_NORMS, "recon_reduction": ("mean", "sum"), "distance": DISTANCES,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise GFLError(f"{name}={getattr(self, name)!r} is not valid: choose one of {', '.join(allowed)}")
        if self.levels < 1:
            raise GFLError(f"levels={self.levels}: need at least 1 level")
        if len(self.clusters) < self.levels - 1:
            raise GFLError(
                f"clusters={list(self.clusters)} gives sizes for {len(self.clusters) + 1} levels but "
                f"levels={self.levels}: give {self.levels - 1} cluster counts"
            )
        if not 0 <= self.mu0 <= self.mu:
            raise GFLError(f"mu0={self.mu0} must lie in [0, mu={self.mu}]")
        if self.hops < 1:
            raise GFLError(f"hops={self.hops}: need at least 1")
        for name in ("hidden_feats", "out_feats", "graph_feats"):
            if getattr(self, name) < 1:
                raise GFLError(f"{name} must be positive")

    @property
    def uses_hierarchy(self) -> bool:
        """Whether the model computes graph representations (only for the gate)."""
        return self.prototype == "pgnn" and self.gate


#: Named configurations: the full model, and the paper's Protonet (M1a).
PRESETS: dict[str, GFLConfig] = {
    "gfl": GFLConfig(),
    "protonet": GFLConfig(prototype="mean", gate=False, recon=False),
}

#: The paper's Table 3 ablations, as changes to a full-model config.
ABLATIONS: dict[str, dict[str, Any]] = {
    "structure": {"prototype": "mean", "gate": False},  # M1a: mean prototype (Protonet)
    "gate": {"gate": False},  # M2a: no hierarchical representation gate
    "hierarchy": {"levels": 1},  # M2b: flat representation, R = 1
    "recon": {"recon": False},  # M3: no reconstruction loss
}


@dataclass(frozen=True)
class EpisodeConfig:
    """How support and query nodes are drawn from a graph.

    Attributes:
        k_shot: labelled support nodes per class.
        n_query: cap on query nodes per graph (``None``: every other labelled node).
        on_small: what to do with a graph whose class has fewer than ``k_shot + 1``
            labelled nodes: ``"skip"`` it (and log its id) or ``"error"``.
    """

    k_shot: int = 10
    n_query: int | None = None
    on_small: str = "skip"

    def __post_init__(self) -> None:
        if self.k_shot < 1:
            raise GFLError(f"k_shot={self.k_shot}: need at least one support node per class")
        if self.n_query is not None and self.n_query < 1:
            raise GFLError(f"n_query={self.n_query}: give a positive cap or none")
        if self.on_small not in ("skip", "error"):
            raise GFLError(f"on_small={self.on_small!r}: choose skip or error")


@dataclass(frozen=True)
class TrainConfig:
    """Meta-training (paper Algorithm 1).

    Attributes:
        steps: maximum number of meta-training steps.
        meta_batch: graphs per step, batched into one DGLGraph.
        lr: Adam learning rate (paper: 0.01).
        weight_decay: Adam weight decay.
        eval_every: steps between validation rounds.
        patience: validation rounds without improvement before stopping.
        val_episodes: support draws per validation graph.
        seed: seed of initialisation, graph order and episodes.
        grad_clip: clip the gradient norm to this value before each step
            (``None``: no clipping, as in the paper).
    """

    steps: int = 400
    meta_batch: int = 5
    lr: float = 0.01
    weight_decay: float = 0.0
    eval_every: int = 20
    patience: int = 8
    val_episodes: int = 1
    seed: int = 0
    grad_clip: float | None = None

    def __post_init__(self) -> None:
        _check_finite(self)
        if not 0 <= self.seed <= SEED_MAX:
            raise GFLError(f"seed={self.seed} must lie in 0..{SEED_MAX}")
        if self.grad_clip is not None and self.grad_clip <= 0:
            raise GFLError(f"grad_clip={self.grad_clip} must be positive (or None for no clipping)")
        for name in ("steps", "meta_batch", "eval_every", "patience", "val_episodes"):
            if getattr(self, name) < 1:
                raise GFLError(f"{name}={getattr(self, name)} must be at least 1")
        if self.lr <= 0:
            raise GFLError(f"lr={self.lr} must be positive")


def config_from_dict(cls, data: dict[str, Any]):
    """Rebuild a config dataclass from :func:`dataclasses.asdict` output."""
    names = {f.name for f in fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise GFLError(f"unknown {cls.__name__} fields: {', '.join(sorted(unknown))}")
    return cls(**data)


def to_dict(cfg) -> dict[str, Any]:
    """A JSON-friendly dict of a config (tuples become lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(cfg).items()}

