"""Settings of the model, the episodes and meta-training, as dataclasses.

One :class:`GFLConfig` configures the whole model; the paper's ablations and the
Protonet baseline are configurations of it (see :data:`PRESETS`), never separate
code paths::

    from dataclasses import replace
    m2a = replace(GFLConfig(), gate=False)
"""
from __future__ import annotations

import math
import numbers
import os
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any, Sequence

from .devices import resolve_device
from .errors import GFLError
# ENCODERS and SIMILARITIES stay importable here
from .names import (CHECKPOINT_EVERY, DEFAULT_TIMEOUT, ENCODERS, GATE_MODES, MODEL_OPTIMIZER_DEFAULTS,  # noqa: F401
                    MODEL_BUDGETS, BUDGET_DEFAULTS, OPTIMIZER_DEFAULTS, PGNN_NORMS, SIMILARITIES, encoder_names)

__all__ = ["GFLConfig", "EpisodeConfig", "TrainConfig", "RunSettings"]

DISTANCES = ("inner", "cosine", "euclidean")
AGGREGATORS = ("mean", "att")


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
        encoder: the node encoder, one of :data:`ENCODERS`: ``gcn`` (the
            paper's), ``sage``, ``gat`` or ``gin`` (the ``dgl.nn`` convolutions,
            two layers of the same widths), or a name registered with
            :func:`gflkit.nn.register_encoder`.
        hidden_feats: width of the first layer of the node encoder.
        out_feats: node embedding size (second encoder layer, linear).
        dropout: dropout on the encoder input and hidden layer.
        prototype: ``"pgnn"`` graph-structured prototype, or ``"mean"`` (Protonet).
        pool: pooling of PGNN outputs into a prototype, ``"mean"`` or ``"max"``.
        pgnn_activation: ``"tanh"`` (as designed) or ``"none"`` on the PGNN output.
        pgnn_norm: ``"row"`` (``D^-1 R``, default) or ``"sym"`` (GCN's
            ``D^-1/2 R D^-1/2``, the paper's literal choice) in the PGNN.
        similarity: relational structure score, one of :data:`SIMILARITIES`:
            from the graph (``khop-cn``, the paper's; ``jaccard``,
            ``adamic-adar``, ``pagerank``; ``ppr``, the personalised PageRank
            mass between two support nodes over the whole graph, as a log
            ratio to the walk's stationary mass), from the node embeddings
            (``learned``: bilinear attention over support pairs, trained end
            to end) or both (``combined``: the ``ppr`` log ratio and the
            learned score summed as logits, with a learned weight on the first).
        hops: k of the k-hop common-neighbour score (paper: 3).
        mu: threshold; a relation weight below ``mu`` becomes ``mu0``.
        mu0: weight given to relations below the threshold (``mu0 < mu``).
        gate: modulate the PGNN parameters with the hierarchical graph gate.
        gate_mode: the gate's form and start (:class:`~gflkit.nn.HierarchyGate`):
            ``"open"`` (default: sigmoid near 1), ``"centered"`` (2 sigmoid,
            starting at 1), ``"paper"`` (sigmoid with the usual initialisation) or
            ``"feature"`` (one value per PGNN output feature, ``1 + tanh`` of the
            layer-normalised representation, starting around 1).
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

    encoder: str = field(default="gcn",
        metadata={"help": "Node encoder: gcn (GraphConv, the paper's), sage, gat or gin (two dgl.nn layers)."})
    hidden_feats: int = field(default=32, metadata={"help": "Hidden units of the node encoder."})
    out_feats: int = field(default=32, metadata={"help": "Embedding size of the node encoder."})
    dropout: float = field(default=0.0, metadata={"help": "Dropout in the encoder."})
    prototype: str = field(default="pgnn", metadata={"help": "Graph-structured (pgnn) or mean (Protonet) prototype."})
    pool: str = field(default="mean", metadata={"help": "Pooling of PGNN outputs into a prototype."})
    pgnn_activation: str = field(default="tanh", metadata={"help": "Activation of the PGNN layer."})
    pgnn_norm: str = field(default="row",
        metadata={"help": "PGNN normalisation: row (D^-1 R) or sym (D^-1/2 R D^-1/2, as in the paper)."})
    similarity: str = field(default="khop-cn", metadata={
        "help": "Similarity behind the relational structure: from the graph (khop-cn, jaccard, adamic-adar, pagerank, "
                "ppr), learned from the embeddings (learned) or both (combined)."})
    hops: int = field(default=3, metadata={"help": "k of the k-hop common-neighbour similarity."})
    mu: float = field(default=0.5, metadata={"help": "Threshold: relation weights below it become mu0."})
    mu0: float = field(default=0.1, metadata={"help": "Weight given to relations below mu."})
    gate: bool = field(default=True, metadata={"help": "Hierarchical graph representation gate on the PGNN."})
    gate_mode: str = field(default="open",
        metadata={"help": "Form and start of the gate: open (sigmoid near 1), centered (2 sigmoid), paper, or feature "
                "(1 + tanh, one value per PGNN output feature)."})
    levels: int = field(default=3, metadata={"help": "R, levels of the hierarchical graph representation."})
    clusters: tuple[int, ...] = field(default=(32, 8), metadata={"help": "Clusters of levels 2..R, comma-separated."})
    graph_feats: int = field(default=32, metadata={"help": "Size of the graph representation."})
    aggregator: str = field(default="mean",
        metadata={"help": "Aggregator of the hierarchy levels (GFL-mean / GFL-att)."})
    recon: bool = field(default=True, metadata={"help": "Auxiliary graph reconstruction loss."})
    gamma: float = field(default=1.0, metadata={"help": "Weight of the reconstruction loss."})
    recon_reduction: str = field(default="mean",
        metadata={"help": "Divide the reconstruction loss by n^2 (mean) or not."})
    recon_normalize: bool = field(default=True, metadata={"help": "L2-normalise decoder rows (bounded loss)."})
    distance: str = field(default="inner", metadata={"help": "Distance between queries and prototypes."})
    cosine_scale: float = field(default=10.0, metadata={"help": "Logit scale of the cosine distance."})

    def __post_init__(self) -> None:
        object.__setattr__(self, "clusters", tuple(int(c) for c in self.clusters))
        _check_finite(self)
        choices = {
            "encoder": encoder_names(), "prototype": ("pgnn", "mean"), "pool": ("mean", "max"),
            "pgnn_activation": ("tanh", "none"), "similarity": SIMILARITIES, "aggregator": AGGREGATORS,
            "gate_mode": GATE_MODES, "pgnn_norm": PGNN_NORMS, "recon_reduction": ("mean", "sum"), "distance": DISTANCES,
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

    k_shot: int = field(default=10, metadata={"help": "Labelled support nodes per class."})
    n_query: int | None = field(default=None,
        metadata={"help": "Cap on query nodes per graph (default: every other labelled node)."})
    on_small: str = field(default="skip",
        metadata={"help": "Graphs with a class of fewer than k_shot + 1 labelled nodes: skip (and list) or fail."})

    def __post_init__(self) -> None:
        if self.k_shot < 1:
            raise GFLError(f"k_shot={self.k_shot}: need at least one support node per class")
        if self.n_query is not None and self.n_query < 1:
            raise GFLError(f"n_query={self.n_query}: give a positive cap or none")
        if self.on_small not in ("skip", "error"):
            raise GFLError(f"on_small={self.on_small!r}: choose skip or error")


def optimizer_defaults(model: str) -> dict[str, float]:
    """The learning rate and weight decay ``model`` trains with unless they are given.

    0.01 and 0 (the GFL paper's Adam) for every model, except the baselines whose
    own papers used other values (:data:`~gflkit.names.MODEL_OPTIMIZER_DEFAULTS`):
    GPN 0.005 and 5e-4, G-Meta 0.001, TLP's GRACE and BGRL 5e-4 and 1e-5.
    """
    return {**OPTIMIZER_DEFAULTS, **MODEL_OPTIMIZER_DEFAULTS.get(model, {})}


def budget_defaults(model: str) -> dict[str, int]:
    """The most training steps, the patience and the graphs per step ``model`` trains with unless they are given.

    400 steps, 8 validation rounds and 5 graphs per step for every model
    (:data:`~gflkit.names.BUDGET_DEFAULTS`), except (:data:`~gflkit.names.MODEL_BUDGETS`):

    * G-Meta's 3000 steps and 20 rounds: at its paper's learning rate of 1e-3 its validation
      accuracy still rises after 400 steps, slowly and noisily, and with this budget early
      stopping ends its training on the families measured in results/gmeta/;
    * one graph per step for TLP's GRACE and BGRL pretraining (``tlp``, ``tlp-bgrl``), as those
      methods train, each step on one whole graph; it also holds one graph's activations at a time.
    """
    return {**BUDGET_DEFAULTS, **MODEL_BUDGETS.get(model, {})}


def _own_budgets(key: str) -> str:
    """``gmeta 3000``: the models whose ``key`` differs from the shared default."""
    return ", ".join(f"{name} {own[key]}" for name, own in MODEL_BUDGETS.items() if key in own)


def _paper_settings(key: str) -> str:
    """``gpn 0.005, gmeta 0.001, ...``: the models whose ``key`` differs from the shared default."""
    found = [(name, own[key]) for name, own in MODEL_OPTIMIZER_DEFAULTS.items() if key in own]
    return ", ".join(f"{name} {value:g}" for name, value in found) + " after their papers"


@dataclass(frozen=True)
class TrainConfig:
    """Meta-training (paper Algorithm 1).

    Attributes:
        steps: maximum number of meta-training steps; ``None``: the model's own
            (:func:`budget_defaults`: 400, more for G-Meta).
        meta_batch: graphs per step, batched into one DGLGraph; ``None``: the model's own
            (:func:`budget_defaults`: 5, one for TLP's GRACE and BGRL pretraining).
        lr: Adam learning rate; ``None``: the model's own (:func:`optimizer_defaults`:
            0.01 as in the paper, unless a baseline's paper used another).
        weight_decay: Adam weight decay; ``None``: the model's own (0 unless a
            baseline's paper used another).
        eval_every: steps between validation rounds.
        patience: validation rounds without improvement before stopping; ``None``: the
            model's own (:func:`budget_defaults`: 8, more for G-Meta).
        val_episodes: support draws per validation graph.
        seed: seed of initialisation, graph order and episodes.
        grad_clip: clip the gradient norm to this value before each step
            (``None``: no clipping, as in the paper).
        val_from_train: move this many train graphs, drawn with ``seed``, to
            validation for model selection and early stopping; only for a
            collection without val graphs (:mod:`gflkit.training.validation`).
        parallel_steps: compute each step's meta-batch of a GFL model (and of a
            baseline that allows it, ``steps_in_parts``) in two parts side by
            side, with GFL's next step prepared meanwhile (the
            parts' gradients are summed in a fixed order: the numbers are the
            same on any thread count); ``False``: each step in one piece (the
            last digits differ from the two parts').
    """

    steps: int | None = field(default=None, metadata={
        "help": f"Maximum meta-training steps (default: the model's own; {BUDGET_DEFAULTS['steps']}, "
                + _own_budgets("steps") + ")."})
    meta_batch: int | None = field(default=None, metadata={
        "help": f"Graphs per meta-training step (default: the model's own; {BUDGET_DEFAULTS['meta_batch']}, "
                + _own_budgets("meta_batch") + ")."})
    lr: float | None = field(default=None, metadata={
        "help": "Adam learning rate (default: the model's own; 0.01, " + _paper_settings("lr") + ")."})
    weight_decay: float | None = field(default=None, metadata={
        "help": "Adam weight decay (default: the model's own; 0, " + _paper_settings("weight_decay") + ")."})
    eval_every: int = field(default=20, metadata={"help": "Steps between validation rounds."})
    patience: int | None = field(default=None, metadata={
        "help": f"Validation rounds without gain before stopping (default: the model's own; "
                f"{BUDGET_DEFAULTS['patience']}, " + _own_budgets("patience") + ")."})
    val_episodes: int = field(default=1, metadata={"help": "Support draws per validation graph."})
    seed: int = field(default=0, metadata={"help": "Seed of initialisation, graph order and episodes."})
    grad_clip: float | None = field(default=None,
        metadata={"help": "Clip the gradient norm to this value (default: no clipping)."})
    val_from_train: int = field(default=0, metadata={
        "help": "Move N train graphs (drawn with the seed) to validation for model selection and early stopping, "
                "for a collection without val graphs."})
    parallel_steps: bool = field(default=True,
        metadata={"help": "Compute each meta-batch in two parts side by side (the same numbers on any thread count)."})

    def __post_init__(self) -> None:
        _check_finite(self)
        if not 0 <= self.seed <= SEED_MAX:
            raise GFLError(f"seed={self.seed} must lie in 0..{SEED_MAX}")
        if self.grad_clip is not None and self.grad_clip <= 0:
            raise GFLError(f"grad_clip={self.grad_clip} must be positive (or None for no clipping)")
        for name in ("steps", "meta_batch", "eval_every", "patience", "val_episodes"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise GFLError(f"{name}={getattr(self, name)} must be at least 1")
        if isinstance(self.val_from_train, bool) or not isinstance(self.val_from_train, numbers.Integral) \
                or self.val_from_train < 0:
            raise GFLError(f"val_from_train={self.val_from_train!r} must be a count of graphs (0 or more)")
        if self.lr is not None and self.lr <= 0:
            raise GFLError(f"lr={self.lr} must be positive")
        if self.weight_decay is not None and self.weight_decay < 0:
            raise GFLError(f"weight_decay={self.weight_decay} must be 0 or more")

    def for_model(self, model: str) -> "TrainConfig":
        """This config with ``lr``, ``weight_decay``, ``steps``, ``patience`` and ``meta_batch`` left at ``None`` set to
        ``model``'s own (:func:`optimizer_defaults`, :func:`budget_defaults`); given values are kept."""
        own = {**optimizer_defaults(model), **budget_defaults(model)}
        return replace(self, **{k: v for k, v in own.items() if getattr(self, k) is None})


def field_help(cls, name: str) -> str:
    """The one-line help of a config field (its ``metadata["help"]``), as the command line shows it."""
    return next(f.metadata.get("help", "") for f in fields(cls) if f.name == name)


def field_default(cls, name: str) -> Any:
    """The default value of a config field."""
    found = next(f for f in fields(cls) if f.name == name)
    return None if found.default is MISSING else found.default


def config_from_dict(cls, data: dict[str, Any]):
    """Rebuild a config dataclass from :func:`dataclasses.asdict` output."""
    names = {f.name for f in fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise GFLError(f"unknown {cls.__name__} fields: {', '.join(sorted(unknown))}")
    return cls(**data)


#: Settings added after 0.1.0, with the default that behaves as 0.1.0 did: a run
#: that leaves them at it keeps the name (settings hash) it had then.
ADDED_SINCE_0_1 = {"GFLConfig": {"encoder": "gcn"}, "TrainConfig": {"val_from_train": 0, "parallel_steps": True}}


def hashed_dict(cfg) -> dict[str, Any]:
    """:func:`to_dict` without the settings of :data:`ADDED_SINCE_0_1` left at their default."""
    added = ADDED_SINCE_0_1.get(type(cfg).__name__, {})
    return {k: v for k, v in to_dict(cfg).items() if not (k in added and v == added[k])}


def to_dict(cfg) -> dict[str, Any]:
    """A JSON-friendly dict of a config (tuples become lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(cfg).items()}



@dataclass(frozen=True)
class RunSettings:
    """How one training run is launched, kept and scored: its folder, resuming, checkpoints, processes,
    device, where its data is looked up, and the evaluation after training.

    :func:`gflkit.train` takes one (``run=``) or builds one from its keywords; each value is
    checked here, once, and the device is resolved here, once (``device`` then holds a
    :class:`torch.device`).

    Attributes:
        run_dir: the run folder; ``None``: ``./runs/<name>``; ``False``: keep no run folder.
        force: replace an existing run folder.
        resume: the interrupted run folder to continue (with its own settings), or ``None``.
        checkpoint_every: steps between resume checkpoints (``last.pt``).
        progress: show a progress bar on stderr.
        nproc: processes to train one GFL model with.
        threads_per_proc: threads of each process (``None``: cores / nproc).
        timeout: seconds after which a rank waiting for a dead peer gives up.
        device: ``cpu``, ``cuda`` or ``cuda:N`` (:func:`gflkit.devices.resolve_device`; ``None``: ``cpu``).
        root: data root for collection names and the built-in family (``None``: the default).
        eval_split: split to score after training (``None``: no scoring).
        episodes: support draws per graph in that scoring.
        refine: transductive refinement of the scores, a :class:`gflkit.refine.RefineConfig` (``None``: none).
        ci: interval of the result row, ``t`` or ``paper`` (:mod:`gflkit.evaluation.statistics`).
    """

    run_dir: Any = None
    force: bool = False
    resume: Any = None
    checkpoint_every: int = CHECKPOINT_EVERY
    progress: bool = True
    nproc: int = 1
    threads_per_proc: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    device: Any = None
    root: Any = None
    eval_split: str | None = "test"
    episodes: int = 1
    refine: Any = None
    ci: str = "t"

    def __post_init__(self) -> None:
        run_dir = self.run_dir
        if run_dir is True or not (run_dir is None or run_dir is False or isinstance(run_dir, (str, os.PathLike))):
            raise GFLError(f"run_dir={run_dir!r}: give a folder, None (./runs/<name>) or False (keep no run folder)")
        if not (self.resume is None or isinstance(self.resume, (str, os.PathLike))):
            raise GFLError(f"resume={self.resume!r}: give the run folder to continue, or None")
        optional = ("threads_per_proc",) if self.threads_per_proc is not None else ()
        for name in ("checkpoint_every", "nproc", "episodes") + optional:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise GFLError(f"{name}={value!r} must be a whole number of at least 1")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, numbers.Real) or not (
                math.isfinite(self.timeout) and self.timeout > 0):
            raise GFLError(f"timeout={self.timeout!r} must be a positive number of seconds")
        if self.ci not in ("t", "paper"):
            raise GFLError(f"ci={self.ci!r}: choose t or paper")
        if not (self.eval_split is None or isinstance(self.eval_split, str)):
            raise GFLError(f"eval_split={self.eval_split!r}: give a split name (test, val, train) or None")
        object.__setattr__(self, "device", resolve_device(self.device))


def refuse_settings_on_resume(resume: Any, given: Sequence[str]) -> None:
    """The one check of the settings given with ``resume``: a resumed run continues with its own settings,
    so ``given`` (the names of the settings given all the same: keywords, or command-line flags) must be
    empty; else a GFLError names them."""
    if resume is not None and given:
        raise GFLError(f"resume continues {resume} with its own settings: drop {', '.join(given)}")
