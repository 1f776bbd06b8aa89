"""Names the command line offers as choices, without importing torch or DGL.

Each name and default is written here once; the modules that implement them
import it from here, so ``gflkit --help`` can list every choice in a fraction
of a second.
"""
from __future__ import annotations

__all__ = []

#: Meta-trained GFL configurations (``gflkit.config.PRESETS``).
GFL_MODELS = ("gfl", "protonet")

#: The registry of baselines: model name -> ``"module:attribute"`` of what implements it, the
#: module relative to :mod:`gflkit.models.baselines` (``".lp"``) or absolute. A new baseline is its
#: module plus one line here; ``gflkit.models.baselines.PER_GRAPH`` / ``TRANSFER`` and
#: :func:`model_names` read these tables. Baselines fitted on each test graph alone:
#: ``fit_predict(g, episode, *, num_classes, seed)``; ``centroid`` and ``ridge`` (``-sgc``: on ``A_hat^2 X``) are
#: the candidates of ``gflkit predict`` (:mod:`gflkit.prediction.per_graph`).
PER_GRAPH_BASELINES: dict[str, str] = {
    "lp": ".lp:fit_predict_lp",
    "planetoid": ".planetoid:fit_predict_planetoid",
    "deepwalk": ".deepwalk:fit_predict_deepwalk",
    "node2vec": ".node2vec:fit_predict_node2vec",
    "gcn": ".gcn:fit_predict_gcn",
    "centroid": "gflkit.prediction.per_graph:fit_predict_centroid",
    "centroid-sgc": "gflkit.prediction.per_graph:fit_predict_centroid_sgc",
    "ridge": "gflkit.prediction.per_graph:fit_predict_ridge",
    "ridge-sgc": "gflkit.prediction.per_graph:fit_predict_ridge_sgc",
}
#: Baselines trained on the train graphs, then adapted: ``TransferBaseline`` subclasses.
TRANSFER_BASELINES: dict[str, str] = {
    "agf": ".agf:AllGraphFinetune",
    "knn": ".knn:KNearestNeighbours",
    "matchingnet": ".matchingnet:MatchingNetwork",
    "maml": ".maml:MAML",
    "gpn": ".gpn:GraphPrototypicalNetwork",
    "gmeta": ".gmeta:GMeta",
    "transfer-head": ".transfer_head:TransferHead",
    "tlp": ".tlp:TransductiveLinearProbe",
    "tlp-bgrl": ".tlp:BootstrapLinearProbe",
    "tlp-sup": ".tlp:SupervisedLinearProbe",
}
#: The optimiser settings a model trains with unless they are given (``TrainConfig.lr`` /
#: ``weight_decay`` left at ``None``): every model's are :data:`OPTIMIZER_DEFAULTS` (the GFL
#: paper's Adam), except where a baseline's own paper used others, listed here.
OPTIMIZER_DEFAULTS: dict[str, float] = {"lr": 0.01, "weight_decay": 0.0}
MODEL_OPTIMIZER_DEFAULTS: dict[str, dict[str, float]] = {
    "gpn": {"lr": 0.005, "weight_decay": 5e-4},  # Ding et al. 2020
    "gmeta": {"lr": 0.001},  # Huang and Zitnik 2020 (meta learning rate)
    "tlp": {"lr": 5e-4, "weight_decay": 1e-5},  # GRACE (Zhu et al. 2020), its Cora settings
    "tlp-bgrl": {"lr": 5e-4, "weight_decay": 1e-5},  # BGRL (Thakoor et al. 2022), its WikiCS settings
}
#: The training budget a model takes unless it is given (``TrainConfig.steps`` / ``patience`` /
#: ``meta_batch`` left at ``None``): :data:`BUDGET_DEFAULTS` for every model, except those listed in
#: :data:`MODEL_BUDGETS`: G-Meta, whose validation accuracy was still rising at 400 steps (results/gmeta/
#: holds the curves behind the choice), and TLP's self-supervised pretraining, one graph per step.
BUDGET_DEFAULTS: dict[str, int] = {"steps": 400, "patience": 8, "meta_batch": 5}
MODEL_BUDGETS: dict[str, dict[str, int]] = {
    "gmeta": {"steps": 3000, "patience": 20},  # lr 1e-3: early stopping, not the budget, ends its training
    "tlp": {"meta_batch": 1},  # GRACE (Zhu et al. 2020): one graph per step, full batch
    "tlp-bgrl": {"meta_batch": 1},  # BGRL (Thakoor et al. 2022): the same
}
#: Their names when this module was imported (choices of the command line).
PER_GRAPH_MODELS = tuple(PER_GRAPH_BASELINES)
TRANSFER_MODELS = tuple(TRANSFER_BASELINES)
#: How a large graph is cut into a family (``gflkit.data.sampling.METHODS``).
SAMPLING_METHODS = ("walk", "metis", "ego")
#: Refinements of the scores (``gflkit.refine.REFINE_METHODS``).
REFINE_METHODS = ("none", "lp", "cs")
#: Default weight and steps of a refinement (``gflkit.refine.RefineConfig``).
REFINE_ALPHA = 0.8
REFINE_STEPS = 10
#: Figure formats of ``gflkit plot`` (``gflkit.plotting.FORMATS``).
FIGURE_FORMATS = ("png", "pdf", "svg")
#: Parameters ``gflkit sweep --param`` varies (``gflkit.experiments.SWEEP_PARAMS``).
SWEEP_PARAM_NAMES = ("mu", "mu0", "similarity", "distance", "aggregator", "levels", "gamma", "gate-mode", "k-shot")
#: How a feature file's rows map to nodes (``gflkit.data.sources.table_features.FEATURE_KEYS``).
FEATURE_KEYS = ("row", "node", "graph-node")
#: Name of the built-in synthetic family (``gflkit.data.DEFAULT_COLLECTION``).
DEFAULT_COLLECTION = "synthetic"
#: Steps between resume checkpoints (``gflkit.training.meta.CHECKPOINT_EVERY``).
CHECKPOINT_EVERY = 50
#: Scores behind the relational structure among a class's support nodes (``gflkit.config.GFLConfig.similarity``;
#: :mod:`gflkit.nn.relation`): from the graph (``khop-cn``, ``jaccard``, ``adamic-adar``, ``pagerank``, ``ppr``), from
#: the embeddings (``learned``) or both (``combined``).
SIMILARITIES = ("khop-cn", "jaccard", "adamic-adar", "pagerank", "ppr", "learned", "combined")
#: Similarities whose relation weights are learned from the node embeddings (a part with parameters).
LEARNED_SIMILARITIES = ("learned", "combined")
#: Forms of the hierarchical gate (``gflkit.config.GFLConfig.gate_mode``).
GATE_MODES = ("open", "centered", "paper", "feature")
#: Normalisations of the PGNN's relation matrix (``gflkit.config.GFLConfig.pgnn_norm``).
PGNN_NORMS = ("row", "sym")
#: Node encoders of GFL (``gflkit.nn.make_encoder``): dgl.nn's GraphConv, SAGEConv, GATConv, GINConv.
ENCODERS = ("gcn", "sage", "gat", "gin")
#: Encoders registered at run time by :func:`gflkit.nn.register_encoder` (names only; builders in gflkit.nn).
REGISTERED_ENCODERS: set[str] = set()


def encoder_names() -> tuple[str, ...]:
    """The built-in encoders and those registered in this process."""
    return ENCODERS + tuple(sorted(REGISTERED_ENCODERS - set(ENCODERS)))


#: Device kinds ``--device`` takes (``cuda:N`` names one GPU).
DEVICES = ("cpu", "cuda")
#: Training seeds of compare, ablate and sweep by default (``gflkit.experiments.TableSettings.seeds``).
DEFAULT_SEEDS = (0, 1, 2)
#: Seconds a rank waits for a dead or stuck peer (``gflkit.training.distributed.DEFAULT_TIMEOUT``).
DEFAULT_TIMEOUT = 300.0
#: Folds and repeats of predict's accuracy estimate (``gflkit.prediction.diagnostics``).
ESTIMATE_FOLDS = 5
ESTIMATE_REPEATS = 3
#: predict's candidates in the order ``auto`` prefers among those the labels cannot tell apart
#: (:mod:`gflkit.prediction.selection`), and how many paired standard errors count as a tie.
PREDICT_ORDER = ("model", "model+lp", "ridge-sgc", "lp", "centroid-sgc", "cs", "model+cs", "ridge", "centroid")
PREDICT_TOLERANCE = 1.0
#: How far (balanced accuracy) the best estimate must also be ahead of an earlier candidate for ``auto`` to leave
#: it, with 3 labels per class; it shrinks with the square of the labels per class (``selection.margin``).
PREDICT_MARGIN = 0.25
#: Thresholds of predict's feature-shift warnings (``gflkit.prediction.diagnostics``): mean shift in training
#: standard deviations, typical factor of the spread, all-zero rows above the training share.
MEAN_SHIFT_LIMIT = 0.5
SCALE_LIMIT = 1.5
ZERO_ROWS_LIMIT = 0.10
#: Predict's collapse warning: one class above this share of the unlabelled nodes and this factor of its label share.
COLLAPSE_SHARE = 0.5
COLLAPSE_FACTOR = 2.0


#: How figures and tables call each model (the paper's names, Table 2), by model name or
#: ``gfl-<aggregator>``; the one place these names are written.
MODEL_DISPLAY_NAMES = {
    "gfl": "GFL", "gfl-mean": "GFL-mean", "gfl-att": "GFL-att", "protonet": "Protonet", "maml": "MAML",
    "matchingnet": "Matching Network", "knn": "K-NN", "agf": "All-Graph-Finetune", "transfer-head": "Transfer head",
    "gpn": "GPN", "gmeta": "G-Meta",
    "gcn": "Non-transfer GCN", "lp": "Label Propagation", "node2vec": "node2vec", "deepwalk": "DeepWalk",
    "planetoid": "Planetoid", "majority": "Majority class",
    "centroid": "Nearest centroid", "centroid-sgc": "Nearest centroid (SGC features)",
    "ridge": "Ridge classifier", "ridge-sgc": "Ridge classifier (SGC features)",
    "tlp": "TLP (GRACE)", "tlp-bgrl": "TLP (BGRL)", "tlp-sup": "TLP (supervised)",
}
#: What each ablation variant is (Table 3): the variant is named by what it removes.
VARIANT_DISPLAY_NAMES = {
    "full": "GFL (full model)",
    "structure": "M1a: mean prototype (Protonet)",
    "gate": "M2a: no hierarchical representation gate",
    "hierarchy": "M2b: flat representation (R = 1)",
    "recon": "M3: no reconstruction loss",
}
#: The same, short enough to label a bar (two lines).
VARIANT_SHORT_NAMES = {
    "full": "GFL\nfull model", "structure": "M1a\nmean prototype", "gate": "M2a\nno gate",
    "hierarchy": "M2b\nflat, R = 1", "recon": "M3\nno recon. loss",
}
#: How figures call the refinements of the scores (:data:`REFINE_METHODS`).
REFINE_DISPLAY_NAMES = {"none": "", "lp": "label propagation", "cs": "Correct & Smooth"}


def display_name(key: str) -> str:
    """The name figures and tables give a model (``gfl-mean``), a variant (``gate``) or a row label
    (``protonet+lp``: "Protonet + label propagation"); unknown names are kept."""
    base, _, refine = str(key).partition("+")
    name = MODEL_DISPLAY_NAMES.get(base) or VARIANT_DISPLAY_NAMES.get(base) or base
    if refine and refine != "none":
        name += f" + {REFINE_DISPLAY_NAMES.get(refine) or refine}"
    return name


def trainable_names() -> tuple[str, ...]:
    """Models that learn from the meta-training graphs (``train --model``)."""
    return GFL_MODELS + tuple(TRANSFER_BASELINES)


def model_names() -> tuple[str, ...]:
    """Every model name: trainable ones and per-graph baselines."""
    return trainable_names() + tuple(PER_GRAPH_BASELINES)
