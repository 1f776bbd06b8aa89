"""The built-in default family: seeded attributed graphs where transfer matters.

Every graph of the family shares one label set and one set of class-conditional
feature centres (drawn once from the family seed), so a metric space learned on
some graphs transfers to others. What varies per graph:

* size (nodes drawn uniformly from a range) and class proportions;
* topology: a degree-corrected stochastic block model whose homophily (share of
  edges that stay inside a class) and mean degree are drawn per graph;
* a per-graph perturbation of the class centres and a per-graph feature shift.

One property can be varied at a time (each knob is a :class:`SyntheticSpec`
field, recorded in the manifest; ``gflkit preprocess synthetic`` exposes them):

* homophily: ``min_homophily == max_homophily`` fixes the share of a node's
  edges that stay inside its community. A node's community is the class whose
  features it carries, so outliers (``outlier_rate``, with ``outlier_links``)
  link like their profile class and the edge homophily measured on labels is
  somewhat lower than the knob unless ``outlier_rate`` or ``outlier_links`` is 0
  (each graph's measured value is recorded as ``edge_homophily``);
* feature signal-to-noise: ``center_scale / noise`` (per feature, for a node of
  median propensity). Over ``feat_size`` informative features the class
  centres lie about ``center_scale * sqrt(2 * feat_size)`` apart;
* shift between train and test graphs: ``test_shift`` adds one family-level
  vector (per feature ``test_shift`` times a standard normal draw, in the
  units of ``center_scale``) to the features of every test graph. Train and
  val graphs are left as they are, so neither training nor early stopping sees
  the shift;
* size and density: ``min_nodes``/``max_nodes`` and ``min_degree``/``max_degree``
  (equal bounds fix them; every node starts one edge, so a mean degree below 2
  gives about 2);
* number of classes: ``num_classes``.

Nodes have a heavy-tailed degree propensity. Peripheral (low-propensity) nodes
get noisier features, and a share of them carry the feature profile of another
class while keeping their own label and their own class's links. A support
node of that kind drags a plain mean prototype towards the wrong class, but it
shares few multi-hop neighbours with the other support nodes of its class, so a
prototype built from the support nodes' relational structure can discount it.
This is the situation the GFL paper's graph-structured prototype is built for.

Defaults follow the paper's Collaboration set: 4 classes, 128 features,
100/10/20 graphs of ~4.5k nodes on average.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from typing import Sequence

import numpy as np
import torch

from ..errors import GFLError, SizeError
from ..io import available_memory, require_memory
from ..sizes import require_at_most, require_fit
from .collection import GraphCollection, build_graph
from ..progress import progress_bar, progress_enabled

__all__ = ["SyntheticSpec", "make_synthetic_family", "SMALL_SPEC"]


@dataclass(frozen=True)
class SyntheticSpec:
    """Knobs of the synthetic family (all recorded in the manifest)."""

    n_train: int = 100
    n_val: int = 10
    n_test: int = 20
    num_classes: int = 4
    feat_size: int = 128
    min_nodes: int = 3000
    max_nodes: int = 6000
    min_degree: float = 3.0  # range of a graph's mean degree
    max_degree: float = 5.0
    min_homophily: float = 0.5  # range of a graph's share of intra-class edges
    max_homophily: float = 0.9
    center_scale: float = 0.16  # spread of the shared class centres
    graph_shift: float = 0.10  # per-graph shift of all features
    class_jitter: float = 0.05  # per-graph perturbation of each class centre
    noise: float = 1.0  # feature noise of a node of median propensity
    outlier_rate: float = 0.15  # share of nodes with another class's profile
    unlabelled_rate: float = 0.05
    outlier_links: float = 1.0  # share of outliers that also link like their profile class
    n_types: int = 1  # graph types, each with its own informative feature block
    type_offset: float = 0.5  # spread of the per-type feature offsets
    test_shift: float = 0.0  # family-level feature shift added to the test graphs only

    def __post_init__(self) -> None:
        problems = []
        if self.n_train < 1 or self.n_val < 0 or self.n_test < 0:
            problems.append(f"graphs per split {self.n_train},{self.n_val},{self.n_test} (need train >= 1, "
                            "val and test >= 0)")
        if self.num_classes < 2:
            problems.append(f"num_classes {self.num_classes} (need >= 2)")
        if self.feat_size < 1 or self.n_types < 1:
            problems.append(f"feat_size {self.feat_size} / n_types {self.n_types} (need >= 1)")
        if not 1 <= self.min_nodes <= self.max_nodes:
            problems.append(f"nodes {self.min_nodes},{self.max_nodes} (need 1 <= min <= max)")
        rates = (self.outlier_rate, self.unlabelled_rate, self.outlier_links, self.min_homophily, self.max_homophily)
        if not all(0.0 <= r <= 1.0 for r in rates):  # also false for NaN
            problems.append("rates and homophily must lie in [0, 1]")
        numbers = (self.min_degree, self.max_degree, self.center_scale, self.graph_shift, self.class_jitter,
                   self.noise, self.type_offset, self.test_shift)
        if not all(np.isfinite(x) and x >= 0 for x in numbers) or self.min_degree > self.max_degree:
            problems.append("degrees, scales and noise must be finite and >= 0 (min_degree <= max_degree)")
        if problems:
            raise GFLError(f"synthetic family: invalid {'; '.join(problems)}")

    def estimated_bytes(self) -> int:
        """Memory the family needs while it is built: float32 features and edges of every graph kept,
        plus the float64 features and the edge temporaries of the largest graph, and the class centres."""
        n_graphs = self.n_train + self.n_val + self.n_test
        mean_nodes = (self.min_nodes + self.max_nodes) / 2
        mean_edges = mean_nodes * max((self.min_degree + self.max_degree) / 2, 2.0) / 2
        largest_edges = self.max_nodes * max(self.max_degree, 2.0) / 2
        kept = n_graphs * (mean_nodes * (4 * self.feat_size + 64) + _KEPT_BYTES_PER_EDGE * mean_edges)
        largest = 4 * 8 * self.max_nodes * self.feat_size + _TEMP_BYTES_PER_EDGE * largest_edges
        centres = 8 * (3 * self.num_classes + self.n_types) * self.feat_size
        return int(min(kept + largest + centres, 2**62))

    def feature_bound(self) -> float:
        """A bound on the size of any feature value the family draws (40 standard deviations of each term)."""
        return 40.0 * (self.center_scale + self.class_jitter + self.type_offset + self.graph_shift + self.test_shift
                       + 2.5 * self.noise)


#: Bytes per edge of a graph kept (both directions, int64 ends, DGL's index formats).
_KEPT_BYTES_PER_EDGE = 96
#: Bytes per edge drawn for the largest graph (int64 ends, uniform draws, masks).
_TEMP_BYTES_PER_EDGE = 64
#: The largest feature value a family may draw: squared distances between nodes stay finite in float32.
FEATURE_LIMIT = 1e16
#: Labelled nodes every class needs in the smallest graph, on average: a support and a query node.
MIN_PER_CLASS = 2
#: The family's settings as the command line names them (``gflkit preprocess synthetic``), each a knob of
#: :class:`SyntheticSpec`: the checks of :func:`check_memory` name the one that does not fit.
SIZE_SETTINGS = ("num_classes", "nodes", "degree", "feat_size", "snr", "test_shift")


def _with(spec: "SyntheticSpec", setting: str, value: float) -> "SyntheticSpec":
    """``spec`` with the knob ``setting`` (one of :data:`SIZE_SETTINGS`) at ``value`` (a range's top)."""
    if setting == "nodes":
        return replace(spec, min_nodes=min(spec.min_nodes, int(value)), max_nodes=int(value))
    if setting == "degree":
        return replace(spec, min_degree=min(spec.min_degree, float(value)), max_degree=float(value))
    if setting == "snr":
        return replace(spec, center_scale=float(value) * spec.noise)
    return replace(spec, **{setting: value})


def _value(spec: "SyntheticSpec", setting: str) -> float:
    return {"nodes": spec.max_nodes, "degree": spec.max_degree,
            "snr": spec.center_scale / spec.noise if spec.noise else spec.center_scale}.get(
        setting, getattr(spec, setting, None))


def varied(spec: SyntheticSpec, *, n_graphs: Sequence[int] | None = None, nodes: Sequence[int] | None = None,
           degree: Sequence[float] | None = None, homophily: Sequence[float] | None = None, snr: float | None = None,
           test_shift: float | None = None, num_classes: int | None = None, feat_size: int | None = None,
           outlier_rate: float | None = None) -> SyntheticSpec:
    """``spec`` with the properties given changed, each alone (``None`` keeps the spec's).

    ``n_graphs`` is ``(train, val, test)``; ``nodes``, ``degree`` and ``homophily`` are ``(min, max)``
    ranges drawn per graph (``(x, x)`` for one value); ``snr`` is the class centres' spread over the
    feature noise (``center_scale / noise``); the rest are the fields of the same names. A
    combination the spec refuses is a GFLError.
    """
    changes: dict = {}
    if n_graphs:
        changes.update(n_train=n_graphs[0], n_val=n_graphs[1], n_test=n_graphs[2])
    for low, high, span in (("min_nodes", "max_nodes", nodes), ("min_degree", "max_degree", degree),
                            ("min_homophily", "max_homophily", homophily)):
        if span is not None:
            changes.update({low: span[0], high: span[1]})
    if snr is not None:
        changes["center_scale"] = snr * spec.noise
    for key, value in (("num_classes", num_classes), ("feat_size", feat_size), ("outlier_rate", outlier_rate),
                       ("test_shift", test_shift)):
        if value is not None:
            changes[key] = value
    return replace(spec, **changes)


def check_memory(spec: SyntheticSpec, given: Sequence[str] = ()) -> None:
    """Refuse, before anything is allocated, a family whose sizes do not fit.

    Checked: every class must have :data:`MIN_PER_CLASS` labelled nodes in the
    smallest graph on average (when ``given`` holds ``num_classes`` or
    ``nodes``: tiny families for tests stay possible); features must stay below :data:`FEATURE_LIMIT`;
    the family must fit in the available memory
    (:meth:`SyntheticSpec.estimated_bytes`). The settings in ``given`` (of
    :data:`SIZE_SETTINGS`, those the user chose) are named first, each with the
    largest value that fits with the others (:class:`~gflkit.errors.SizeError`).

    Raises:
        SizeError: a setting of ``given`` does not fit.
        GFLError: the family does not fit, whichever setting causes it.
    """
    labelled = spec.min_nodes * (1.0 - spec.unlabelled_rate)
    most_classes = int(labelled // MIN_PER_CLASS)
    if spec.num_classes > most_classes and {"num_classes", "nodes"} & set(given):
        require_at_most("num_classes", spec.num_classes, max(most_classes, 2),
                        f"graphs of {spec.min_nodes} nodes hold about {labelled / spec.num_classes:.2g} labelled "
                        f"nodes per class, and each class needs {MIN_PER_CLASS} (a support and a query node)",
                        "or give larger graphs (`nodes`)")
    if spec.feature_bound() > FEATURE_LIMIT:
        for setting in (s for s in ("snr", "test_shift") if s in given):
            rest = spec.feature_bound() / 40.0 - (spec.center_scale if setting == "snr" else spec.test_shift)
            room = FEATURE_LIMIT / 40.0 - rest
            largest = room / spec.noise if setting == "snr" and spec.noise else room
            raise SizeError(setting, _value(spec, setting), f"features would reach {spec.feature_bound():.3g}, "
                            f"beyond {FEATURE_LIMIT:.0e} (squared distances would overflow float32); at most "
                            f"{largest:.3g} fits", largest)
        raise GFLError(f"synthetic family: features would reach {spec.feature_bound():.3g}, beyond "
                       f"{FEATURE_LIMIT:.0e}; lower the scales and noise")
    budget = available_memory()
    if budget is None or spec.estimated_bytes() <= budget:
        return
    for setting in (s for s in ("num_classes", "nodes", "degree", "feat_size") if s in given):
        low = {"num_classes": 2, "degree": 2}.get(setting, 1)
        value = _value(spec, setting)
        if _with(spec, setting, low).estimated_bytes() <= budget:
            require_fit(setting, value, lambda v, s=setting: _with(spec, s, v).estimated_bytes(),
                        "the synthetic family", low=low, budget=budget)
    require_memory(spec.estimated_bytes(), "synthetic family", "ask for fewer graphs, nodes or features")


def thin_classes(spec: SyntheticSpec, k_shot: int) -> str | None:
    """One line when the smallest graphs hold fewer than ``k_shot + 1`` labelled nodes per class on average
    (episodes of ``k_shot`` shots then skip many of them), else ``None``."""
    per_class = spec.min_nodes * (1.0 - spec.unlabelled_rate) / spec.num_classes
    if per_class >= k_shot + 1:
        return None
    return (f"`num_classes={spec.num_classes}`: graphs of {spec.min_nodes} nodes hold about {per_class:.3g} labelled "
            f"nodes per class, fewer than the k_shot + 1 = {k_shot + 1} an episode of `k_shot={k_shot}` needs: "
            "such graphs are skipped; give fewer classes, larger graphs (`nodes`) or a lower `k_shot`")


#: A family small enough for unit tests and quick trials (``--small``).
SMALL_SPEC = SyntheticSpec(
    n_train=16, n_val=4, n_test=8, feat_size=32, min_nodes=200, max_nodes=400, center_scale=0.32,
)


def _weighted_choice(rng: np.random.Generator, pool: np.ndarray, weight: np.ndarray, size: int) -> np.ndarray:
    if size == 0 or pool.size == 0:
        return np.empty(0, dtype=np.int64)
    p = weight[pool] / weight[pool].sum()
    return rng.choice(pool, size=size, p=p)


def edge_homophily(g) -> float:
    """Share of the edges between two labelled nodes of ``g`` that join nodes of one label (NaN without any)."""
    src, dst = g.edges()
    label = g.ndata["label"]
    a, b = label[src], label[dst]
    both = (a >= 0) & (b >= 0)
    return float((a[both] == b[both]).double().mean()) if bool(both.any()) else float("nan")


def _rounded(x: float) -> float | None:
    return None if np.isnan(x) else round(x, 4)  # the manifest is strict JSON


def _make_graph(spec: SyntheticSpec, centers: np.ndarray, offsets: np.ndarray, rng: np.random.Generator,
                shift: np.ndarray | None = None):
    n = int(rng.integers(spec.min_nodes, spec.max_nodes + 1))
    kind = int(rng.integers(spec.n_types))
    block = np.array_split(np.arange(spec.feat_size), spec.n_types)[kind]
    mask = np.zeros(spec.feat_size)
    mask[block] = 1.0
    c = spec.num_classes
    proportions = rng.dirichlet(np.full(c, 8.0))
    label = rng.choice(c, size=n, p=proportions)
    # Heavy-tailed degree propensity, median 1.
    theta = rng.lognormal(mean=0.0, sigma=1.0, size=n)
    homophily = float(rng.uniform(spec.min_homophily, spec.max_homophily))
    mean_degree = float(rng.uniform(spec.min_degree, spec.max_degree))

    # Outliers, drawn mostly from the periphery (weight 1/theta), carry another
    # class's feature profile; a share `outlier_links` of them also link like
    # that class (their community), the rest like their own.
    profile = label.copy()
    n_out = int(round(spec.outlier_rate * n))
    outliers = rng.choice(n, size=n_out, replace=False, p=(1 / theta) / (1 / theta).sum())
    profile[outliers] = (label[outliers] + rng.integers(1, c, size=n_out)) % c
    community = np.where(rng.random(n) < spec.outlier_links, profile, label)

    # Degree-corrected SBM: endpoints drawn by propensity, the second one inside
    # the first one's community with probability `homophily`. Every node starts one
    # edge itself, so no node is isolated (as in graphs cut by random walks).
    m = max(int(round(n * mean_degree / 2)), n)
    src = np.concatenate([np.arange(n), _weighted_choice(rng, np.arange(n), theta, m - n)])
    intra = rng.random(m) < homophily
    dst = np.empty(m, dtype=np.int64)
    # Per community, in increasing order, as a loop over all classes would draw them; a community no edge
    # starts from draws nothing, so only those of the edges' sources are visited (time linear in the edges,
    # whatever the number of classes).
    by_node = np.argsort(community, kind="stable")
    node_bounds = np.searchsorted(community[by_node], np.arange(c + 1))
    from_community = community[src]
    by_edge = np.argsort(from_community, kind="stable")  # positions stay increasing within a community
    present = np.unique(from_community)
    edge_bounds = np.searchsorted(from_community[by_edge], np.concatenate([present, [c]]))
    for j, k in enumerate(present):
        members = by_node[node_bounds[k]:node_bounds[k + 1]]
        members.sort()
        others = np.setdiff1d(np.arange(n), members, assume_unique=True)
        edges = by_edge[edge_bounds[j]:edge_bounds[j + 1]]
        inside = intra[edges]
        sel = edges[inside]
        dst[sel] = _weighted_choice(rng, members, theta, int(sel.size))
        sel = edges[~inside]
        # a tiny graph may hold one community only: its "outside" edges stay inside
        dst[sel] = _weighted_choice(rng, others if others.size else members, theta, int(sel.size))

    # Features: shared centres, perturbed per graph; noisier on the periphery.
    graph_centers = (centers + spec.class_jitter * rng.standard_normal(centers.shape)) * mask + offsets[kind]
    graph_centers += spec.graph_shift * rng.standard_normal(centers.shape[1])
    sigma = spec.noise * np.clip(theta ** -0.5, 0.5, 2.5)
    feat = rng.standard_normal((n, spec.feat_size))  # in place from here: the same numbers, fewer copies
    feat *= sigma[:, None]
    feat += graph_centers[profile]
    if shift is not None:  # drawn from no generator of the graph's: its other numbers stay the same
        feat += shift

    unlabelled = rng.random(n) < spec.unlabelled_rate
    label = np.where(unlabelled, -1, label)
    # A node's own edge that drew the node itself would be dropped as a self-loop
    # and could leave it isolated: redraw its end among the other members of its
    # community. Drawn last, so features and labels do not depend on it.
    for i in np.flatnonzero(dst[:n] == src[:n]):
        pool = np.flatnonzero(community == community[i])
        pool = pool[pool != i]
        if pool.size:
            dst[i] = _weighted_choice(rng, pool, theta, 1)[0]
    g = build_graph(src, dst, n, torch.from_numpy(feat.astype(np.float32)), torch.from_numpy(label))
    extra = {"homophily": round(homophily, 4), "mean_degree": round(mean_degree, 4), "type": kind,
             "edge_homophily": _rounded(edge_homophily(g))}
    return g, extra


def make_synthetic_family(
    spec: SyntheticSpec = SyntheticSpec(), seed: int = 0, name: str = "synthetic", progress: bool = False
) -> GraphCollection:
    """Build the seeded synthetic family described in the module docstring.

    Graph ``i`` is drawn from ``np.random.default_rng([seed, 1, i])``, so it does
    not depend on how many graphs are drawn before it (graphs are drawn on one
    thread per torch thread); the test shift comes from ``[seed, 2]``. A family that would not
    fit in the available memory is refused before anything is allocated.
    """
    check_memory(spec)
    family_rng = np.random.default_rng([seed, 0])
    centers = spec.center_scale * family_rng.standard_normal((spec.num_classes, spec.feat_size))
    offsets = spec.type_offset * family_rng.standard_normal((spec.n_types, spec.feat_size))
    splits = ["train"] * spec.n_train + ["val"] * spec.n_val + ["test"] * spec.n_test
    # Its own generator, so the family's other numbers do not depend on the shift.
    shift = spec.test_shift * np.random.default_rng([seed, 2]).standard_normal(spec.feat_size) \
        if spec.test_shift else None
    graphs, extras = [], []

    def draw(i: int):
        g, extra = _make_graph(spec, centers, offsets, np.random.default_rng([seed, 1, i]),
                               shift if splits[i] == "test" else None)
        if not bool(torch.isfinite(g.ndata["feat"]).all()):  # checked as the readers check theirs
            raise GFLError(f"synthetic family: graph {i} ({splits[i]}) has features that are not finite in "
                           "float32; lower the scales and noise")
        return g, extra

    # Each graph has its own generator, so graphs drawn side by side on threads
    # (NumPy fills its arrays with the GIL released) are the graphs drawn one
    # after another.
    workers = max(1, min(torch.get_num_threads(), len(splits)))
    with ThreadPoolExecutor(workers) as pool:
        made = pool.map(draw, range(len(splits))) if workers > 1 else map(draw, range(len(splits)))
        if progress and progress_enabled():
            made = progress_bar(made, total=len(splits), desc=f"generating {name}", unit="graph")
        for g, extra in made:
            graphs.append(g)
            extras.append(extra)
    return GraphCollection(
        graphs=graphs,
        splits=splits,
        classes=[f"class_{k}" for k in range(spec.num_classes)],
        name=name,
        source="synthetic",
        sampler={"name": "dc-sbm", **asdict(spec)},
        seed=seed,
        graph_extra=extras,
    )
