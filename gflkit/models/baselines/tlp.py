"""Transductive linear probing (TLP; Tan et al., LoG 2022): a self-supervised GCN encoder, a linear probe per graph.

As TLP's paper runs it, by default: a two-layer GCN encoder
(:class:`~gflkit.nn.GCNEncoder`, ``dgl.nn.GraphConv(norm="both")``) is
pretrained on the train graphs (the warm start), then, on each graph being
labelled, a copy of it is pretrained ``transductive_steps`` more steps with the
same self-supervised loss on that graph alone (unlabelled, queries included; no
label is read), and embeds every node. Each embedding column is standardised
over the graph's nodes, and a multiclass logistic regression with an L2
penalty is fitted on the support nodes' embeddings by L-BFGS from zero weights,
in float64 (:func:`~gflkit.models.baselines.common.fit_linear`: a strictly
convex loss, so the probe depends on its inputs alone). Each query takes the
probe's argmax. ``transductive_steps=0`` keeps the frozen probe: the train
graphs' encoder, unchanged, on every graph.
``warm_start=false`` leaves the train graphs out: each graph being labelled
pretrains its copy from the encoder as the run's seed initialises it, which is
TLP's paper exactly (one graph, self-supervised from scratch, then the probe).

Three pretraining methods, one registered model each (the method is fixed by the
model name, recorded in the run's ``pretrain`` option):

* ``tlp``, **GRACE** (Zhu et al. 2020), with GRACE's Cora settings by default:
  a 256-unit hidden layer and 128-unit embeddings (GRACE's encoder is twice as
  wide inside as its output), a 128-unit projection head, two views of each
  graph by dropping edges (0.2 and 0.4) and masking feature columns (0.3 and
  0.4), and the InfoNCE loss with temperature ``tau`` 0.4 whose negatives are
  the other anchors in both views (inter- and intra-view); 200 transductive
  steps (GRACE's 200 epochs on Cora). GRACE's Citeseer settings are another
  preset of these options (``scripts/tlp_search.py``). Memory never grows with
  ``N^2``: the loss is computed on at most ``max_nodes`` anchor nodes per graph
  and step, drawn without replacement from the global torch generator (seeded
  by the run, saved in its resume checkpoints), so its similarity matrices are
  at most ``max_nodes x max_nodes`` (all nodes, in order, when the graph is
  smaller).
* ``tlp-bgrl``, **BGRL** (Thakoor et al. 2022), with BGRL's WikiCS settings by
  default (512 and 256 units, a 512-unit predictor, edges dropped at 0.2 and
  0.3, features masked at 0.2 and 0.1): the same kind of views; an online
  encoder with a predictor regresses the other view's embedding by a target
  encoder (cosine loss, no negatives). The target is an exponential moving
  average of the online encoder, ``target <- ema * target + (1 - ema) * online``,
  updated under ``torch.no_grad`` at the start of each training step from the
  weights the previous step left (the same sequence of targets as an update
  after each optimizer step); it takes no gradient and is part of the state
  dict, so checkpoints keep it.
* ``tlp-sup``, **supervised**: GFL's 32-unit encoder with a linear head trained
  by cross-entropy on the labelled nodes of the train graphs, frozen (it has no
  label-free loss to train on a graph being labelled); the head is not used on
  a test graph.

Pretraining runs in the shared training loop (:func:`gflkit.training.meta.fit_transfer`:
Adam), for GRACE and BGRL one whole graph per step, as they train, with their papers'
learning rate 5e-4 and weight decay 1e-5 unless others are given (the supervised
variant five graphs per step, with the shared 0.01 and 0;
:func:`gflkit.config.budget_defaults`, :func:`gflkit.config.optimizer_defaults`); like every transfer baseline, the
weights kept are those whose probe scores best on the val graphs, so the
val labels choose the stopping step while GRACE and BGRL never see a label.
Those validation rounds score the frozen probe (:meth:`TransductiveLinearProbe.for_validation`):
a transductive pretraining of every val graph at every round would cost
``transductive_steps`` steps per val graph each round; the scores after training
(``evaluate``, ``compare``) pretrain on each graph as described above.
"""
from __future__ import annotations

import copy
from typing import Any, Iterator, Sequence

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ...episodes import Episode
from ...threads import one_thread
from ...nn import GCNEncoder
from ...nn.conv import add_gcn_norm
from ..support_sets import flat_support
from .base import TransferBaseline
from .common import fit_linear, standardise

__all__: list[str] = []

#: Pretraining methods.
PRETRAIN_METHODS = ("grace", "bgrl", "supervised")
#: Self-supervised steps on each graph being labelled, by default (GRACE's 200 epochs on Cora).
TRANSDUCTIVE_STEPS = 200


def augmented_view(g: dgl.DGLGraph, drop_edge: float, mask_feat: float,
                   generator: torch.Generator | None = None) -> tuple[dgl.DGLGraph, torch.Tensor]:
    """A random view of ``g`` (GRACE's augmentations), drawn from ``generator`` (default: the global one).

    Every edge but the self-loops is dropped with probability ``drop_edge`` (each
    direction on its own, as GRACE does); every feature column is zeroed with
    probability ``mask_feat`` for all nodes at once.

    Args:
        g: a prepared graph (self-loops, ``ndata["feat"]``).

    Shapes:
        returns the view (self-loops kept, its own GCN normalisation) and its features ``(N, F)``.
    """
    src, dst = g.edges()
    keep = (src == dst) | (torch.rand(len(src), device=src.device, generator=generator) >= drop_edge)
    view = add_gcn_norm(dgl.graph((src[keep], dst[keep]), num_nodes=g.num_nodes()))
    x = g.ndata["feat"]
    mask = (torch.rand(x.shape[1], device=x.device, generator=generator) >= mask_feat).to(x.dtype)
    return view, x * mask


def anchor_nodes(n: int, max_nodes: int, device: torch.device | None = None,
                 generator: torch.Generator | None = None) -> torch.Tensor:
    """The anchors of one graph's contrastive loss: all ``n`` nodes in order when ``n <= max_nodes``,
    else ``max_nodes`` of them drawn without replacement from ``generator`` (default: the global one).

    Shapes:
        returns ``(min(n, max_nodes),)`` node ids.
    """
    if n <= max_nodes:
        return torch.arange(n, device=device)
    return torch.randperm(n, device=device, generator=generator)[:max_nodes]


def grace_loss(u: torch.Tensor, v: torch.Tensor, tau: float) -> torch.Tensor:
    """GRACE's symmetric InfoNCE loss between the projections of the same anchors in two views.

    Anchor ``i`` of view ``u`` has its positive ``v_i`` and ``2B - 2`` negatives:
    the other anchors of both views. With ``s`` the cosine similarity,
    ``l(u_i, v_i) = -log(e^{s(u_i, v_i)/tau} / (sum_k e^{s(u_i, v_k)/tau} + sum_{k != i} e^{s(u_i, u_k)/tau}))``,
    and the loss is the mean of ``l(u_i, v_i)`` and ``l(v_i, u_i)`` over the anchors.
    Its similarity matrices are ``B x B``.

    Shapes:
        u, v ``(B, d)`` -> scalar.
    """
    u, v = F.normalize(u, dim=1), F.normalize(v, dim=1)
    eye = torch.eye(len(u), dtype=torch.bool, device=u.device)

    def half(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        between = a @ b.T / tau  # (B, B)
        within = (a @ a.T / tau).masked_fill(eye, float("-inf"))  # (B, B), itself excluded
        return (torch.cat([between, within], 1).logsumexp(1) - between.diagonal()).mean()

    return 0.5 * (half(u, v) + half(v, u))


def bgrl_loss(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """BGRL's loss ``2 - 2 cos(prediction_i, target_i)`` averaged over nodes; no gradient reaches ``target``.

    Shapes:
        prediction, target ``(N, d)`` -> scalar.
    """
    return (2 - 2 * F.cosine_similarity(prediction, target.detach(), dim=1)).mean()


class TransductiveLinearProbe(TransferBaseline):
    """TLP with GRACE pretraining (model ``tlp``); see the module docstring.

    Args:
        in_feats: node feature size.
        num_classes: size of the shared label set (the supervised head's width).
        pretrain: the pretraining method; fixed by the class (:attr:`method`), recorded in checkpoints.
        hidden_feats, out_feats: GCN widths (GRACE's Cora encoder: 256, 128; BGRL's WikiCS: 512, 256).
        proj_feats: hidden width of GRACE's projection head and BGRL's predictor.
        drop_edge_1, drop_edge_2: edge-drop rates of the two views (GRACE, BGRL).
        mask_feat_1, mask_feat_2: feature-masking rates of the two views (GRACE, BGRL).
        tau: InfoNCE temperature (GRACE; its Cora value 0.4).
        max_nodes: anchors per graph and step of GRACE's loss (its memory is ``O(max_nodes^2)``).
        ema: BGRL's target decay.
        probe_weight_decay: L2 penalty of the linear probe.
        probe_iter: L-BFGS iterations of the probe.
        transductive_steps: self-supervised steps on each graph being labelled before it is embedded
            (GRACE or BGRL on that graph alone, warm-started from the pretrained encoder; no label is read),
            as TLP's paper pretrains on the target graph (default: :data:`TRANSDUCTIVE_STEPS`); 0: the
            encoder stays frozen (the frozen probe).
        transductive_lr: Adam's learning rate for those steps.
        warm_start: pretrain on the train graphs first (the warm start); false: no training on the train
            graphs, each graph being labelled pretrains a copy of the encoder as initialised by the run's
            seed, as TLP's paper pretrains on its one graph from scratch.

    Shapes:
        :meth:`embed` -> ``(N, out_feats)``; :meth:`class_scores` -> ``(N, C)``.
    """

    name = "tlp"
    embeds = True
    shares_embeddings = True
    adapts = True
    #: The pretraining on a graph being labelled trains a copy and draws from its own generator, so graphs
    #: are embedded side by side (the copies run in eval mode: no dropout draws).
    adapts_in_threads = True
    #: The pretraining method of this model name.
    method = "grace"

    def __init__(self, in_feats: int, num_classes: int, *, pretrain: str | None = None, hidden_feats: int = 256,
                 out_feats: int = 128, proj_feats: int = 128, drop_edge_1: float = 0.2, drop_edge_2: float = 0.4,
                 mask_feat_1: float = 0.3, mask_feat_2: float = 0.4, tau: float = 0.4, max_nodes: int = 1024,
                 ema: float = 0.99, probe_weight_decay: float = 1e-3, probe_iter: int = 500,
                 transductive_steps: int = TRANSDUCTIVE_STEPS, transductive_lr: float = 5e-4,
                 warm_start: bool = True) -> None:
        pretrain = self.method if pretrain is None else pretrain
        if pretrain != self.method:
            other = {m: n for n, m in _NAMES.items()}.get(pretrain)
            hint = f"train the model {other}" if other else f"choose one of {', '.join(PRETRAIN_METHODS)}"
            raise ValueError(f"pretrain={pretrain!r}: the model {self.name} pretrains with {self.method}; {hint}")
        for key, rate in (("drop_edge_1", drop_edge_1), ("drop_edge_2", drop_edge_2),
                          ("mask_feat_1", mask_feat_1), ("mask_feat_2", mask_feat_2)):
            if not 0 <= rate < 1:
                raise ValueError(f"{key}={rate} must lie in [0, 1)")
        if tau <= 0:
            raise ValueError(f"tau={tau} must be positive")
        if max_nodes < 2:
            raise ValueError(f"max_nodes={max_nodes} must be at least 2")
        if not 0 <= ema < 1:
            raise ValueError(f"ema={ema} must lie in [0, 1)")
        if probe_weight_decay <= 0 or probe_iter < 1:
            raise ValueError("probe_weight_decay must be positive and probe_iter at least 1")
        if min(hidden_feats, out_feats, proj_feats) < 1:
            raise ValueError("hidden_feats, out_feats and proj_feats must be positive")
        if transductive_steps < 0 or not transductive_lr > 0:
            raise ValueError("transductive_steps must be at least 0 and transductive_lr positive")
        if not isinstance(warm_start, bool):
            raise ValueError(f"warm_start={warm_start!r} must be true or false")
        if not warm_start and pretrain == "supervised":
            raise ValueError("warm_start=false: the supervised encoder learns from the train graphs alone; "
                             "use tlp or tlp-bgrl")
        if transductive_steps and pretrain == "supervised":
            raise ValueError("transductive_steps: the supervised encoder has no label-free loss to pretrain on a "
                             "test graph; use tlp or tlp-bgrl")
        super().__init__(in_feats, num_classes, pretrain=pretrain, hidden_feats=hidden_feats, out_feats=out_feats,
                         proj_feats=proj_feats, drop_edge_1=drop_edge_1, drop_edge_2=drop_edge_2,
                         mask_feat_1=mask_feat_1, mask_feat_2=mask_feat_2, tau=tau, max_nodes=max_nodes, ema=ema,
                         probe_weight_decay=probe_weight_decay, probe_iter=probe_iter,
                         transductive_steps=transductive_steps, transductive_lr=transductive_lr,
                         warm_start=warm_start)
        self.encoder = GCNEncoder(in_feats, hidden_feats, out_feats)
        if pretrain == "grace":
            self.projector = nn.Sequential(nn.Linear(out_feats, proj_feats), nn.ELU(), nn.Linear(proj_feats, out_feats))
        elif pretrain == "bgrl":
            self.predictor = nn.Sequential(nn.Linear(out_feats, proj_feats), nn.PReLU(),
                                           nn.Linear(proj_feats, out_feats))
            self.target = copy.deepcopy(self.encoder).requires_grad_(False)
        else:
            self.head = nn.Linear(out_feats, num_classes)

    @property
    def trains(self) -> bool:
        """Whether the train graphs pretrain the encoder (the ``warm_start`` option)."""
        return self.options["warm_start"]

    # -- pretraining ---------------------------------------------------------------------------------------------

    def _views(self, g: dgl.DGLGraph, generator: torch.Generator | None = None) -> list[
            tuple[dgl.DGLGraph, torch.Tensor]]:
        o = self.options
        return [augmented_view(g, o["drop_edge_1"], o["mask_feat_1"], generator),
                augmented_view(g, o["drop_edge_2"], o["mask_feat_2"], generator)]

    def contrastive_loss(self, g: dgl.DGLGraph, generator: torch.Generator | None = None) -> torch.Tensor:
        """GRACE's loss on one graph: two views, at most ``max_nodes`` anchors (:func:`grace_loss`)."""
        (g1, x1), (g2, x2) = self._views(g, generator)
        h1, h2 = self.encoder(g1, x1), self.encoder(g2, x2)  # (N, d): linear in N
        nodes = anchor_nodes(g.num_nodes(), self.options["max_nodes"], h1.device, generator)
        return grace_loss(self.projector(h1[nodes]), self.projector(h2[nodes]), self.options["tau"])

    @torch.no_grad()
    def update_target(self) -> None:
        """BGRL's moving average: ``target <- ema * target + (1 - ema) * online``, parameter by parameter."""
        m = self.options["ema"]
        for t, o in zip(self.target.parameters(), self.encoder.parameters()):
            t.mul_(m).add_(o.detach(), alpha=1 - m)

    def bootstrap_loss(self, g: dgl.DGLGraph, generator: torch.Generator | None = None) -> torch.Tensor:
        """BGRL's symmetric loss on one graph: each view's prediction against the other view's target."""
        (g1, x1), (g2, x2) = self._views(g, generator)
        p1, p2 = self.predictor(self.encoder(g1, x1)), self.predictor(self.encoder(g2, x2))
        with torch.no_grad():
            t1, t2 = self.target(g1, x1), self.target(g2, x2)
        return 0.5 * (bgrl_loss(p1, t2) + bgrl_loss(p2, t1))

    def step_loss(self, graphs: Sequence[dgl.DGLGraph], episodes: Sequence[Episode],
                  labels: Sequence[torch.Tensor]) -> torch.Tensor:
        """The pretraining loss, averaged over the meta-batch's graphs (``episodes`` are not used;
        ``labels`` only by the supervised method, over the graphs with labelled nodes: zero without any).
        BGRL first moves its target (:meth:`update_target`)."""
        method = self.options["pretrain"]
        if method == "bgrl":
            self.update_target()
        losses = []
        for g, label in zip(graphs, labels):
            if method == "grace":
                losses.append(self.contrastive_loss(g))
            elif method == "bgrl":
                losses.append(self.bootstrap_loss(g))
            else:
                nodes = torch.nonzero(label >= 0).squeeze(1)
                if len(nodes):  # a graph without labelled nodes teaches the supervised head nothing
                    losses.append(F.cross_entropy(self.head(self.encoder(g))[nodes], label[nodes]))
        if not losses:
            return torch.zeros((), requires_grad=True)
        return torch.stack(losses).mean()

    # -- the probe -----------------------------------------------------------------------------------------------

    @torch.no_grad()
    def embed(self, g: dgl.DGLGraph) -> torch.Tensor:
        """The encoder's node embeddings: the frozen pretrained encoder's, or, with
        ``transductive_steps``, those of a copy pretrained further on ``g`` itself
        (:meth:`adapted_to`). Shapes: ``(N, out_feats)``."""
        encoder = self.adapted_to(g) if self.options["transductive_steps"] else self.encoder
        return encoder(g)

    def adapted_to(self, g: dgl.DGLGraph) -> nn.Module:
        """A copy of the encoder pretrained ``transductive_steps`` more steps on ``g`` alone, as TLP's paper
        pretrains on the graph being labelled: the same self-supervised loss, no label, Adam at
        ``transductive_lr``; this model is left as it was (:meth:`adaptations`)."""
        return next(self.adaptations(g, [self.options["transductive_steps"]]))[1]

    def adaptations(self, g: dgl.DGLGraph, counts: Sequence[int]) -> Iterator[tuple[int, nn.Module]]:
        """``(n, encoder)`` for each ``n`` of ``counts`` (increasing): a frozen copy of the encoder after ``n``
        self-supervised steps on ``g``, from one run of the steps, so each is the encoder
        ``transductive_steps=n`` would embed ``g`` with.

        The views and anchors are drawn from a generator seeded with 0 for each graph, so a graph's
        embeddings do not depend on which graphs were embedded before it, nor on the thread that embeds it.
        """
        if list(counts) != sorted(set(counts)) or min(counts, default=0) < 0:
            raise ValueError(f"counts={list(counts)}: give step counts of at least 0 in increasing order")
        work = copy.deepcopy(self)
        work.options = {**self.options, "transductive_steps": 0}
        params = [p for p in work.parameters() if p.requires_grad]
        optimizer = torch.optim.Adam(params, lr=self.options["transductive_lr"], weight_decay=1e-5)
        generator = torch.Generator(device=g.device).manual_seed(0)
        done = 0
        for n in counts:
            with torch.enable_grad():
                for _ in range(n - done):
                    optimizer.zero_grad()
                    if self.method == "bgrl":
                        work.update_target()
                        loss = work.bootstrap_loss(g, generator)
                    else:
                        loss = work.contrastive_loss(g, generator)
                    loss.backward()
                    optimizer.step()
            done = n
            yield n, copy.deepcopy(work.encoder).requires_grad_(False)

    def for_validation(self) -> "TransductiveLinearProbe":
        """The frozen probe on these weights (``transductive_steps=0``; parameters shared, not copied): what the
        pretraining's validation rounds score, so the val graphs choose the warm start without a
        transductive pretraining per val graph at every round."""
        view = copy.copy(self)
        view.options = {**self.options, "transductive_steps": 0}
        return view

    @torch.no_grad()
    def shared_embeddings(self, g: dgl.DGLGraph) -> torch.Tensor:
        """What the probe reads: :meth:`embed` with each column standardised over the graph's nodes;
        the ``z`` :meth:`class_scores` takes for every support set of ``g``."""
        return standardise(self.embed(g))

    def class_scores(self, g: dgl.DGLGraph, support: Sequence[torch.Tensor], z: torch.Tensor | None = None, *,
                     nodes: torch.Tensor | None = None) -> torch.Tensor:
        """The linear probe's logits for every node of a graph (or for ``nodes``), fitted on its support
        nodes (any classes, any support sizes). ``z``: :meth:`shared_embeddings` of ``g`` when already computed.

        Shapes:
            support: ``C`` tensors of ``(K_c,)`` ids; returns ``(N, C)`` (``(Q, C)`` with ``nodes``).
        """
        z = self.shared_embeddings(g) if z is None else z
        ids, target = flat_support(support)
        logits = self._probe(z, ids.to(z.device), target.to(z.device), len(support))
        return logits if nodes is None else logits[nodes]

    def _probe(self, z: torch.Tensor, ids: torch.Tensor, target: torch.Tensor, width: int) -> torch.Tensor:
        with one_thread():  # hundreds of tiny L-BFGS steps: waking a second thread costs more than it saves
            weight, bias = fit_linear(z[ids], target, width, weight_decay=self.options["probe_weight_decay"],
                                      max_iter=self.options["probe_iter"])
        with torch.no_grad():
            return (z.double() @ weight + bias).to(z.dtype)


class BootstrapLinearProbe(TransductiveLinearProbe):
    """TLP with BGRL pretraining (model ``tlp-bgrl``; options as :class:`TransductiveLinearProbe`), with
    BGRL's WikiCS encoder (512 and 256 units, a 512-unit predictor) and augmentation rates by default."""

    name = "tlp-bgrl"
    method = "bgrl"

    def __init__(self, in_feats: int, num_classes: int, *, hidden_feats: int = 512, out_feats: int = 256,
                 proj_feats: int = 512, drop_edge_1: float = 0.2, drop_edge_2: float = 0.3, mask_feat_1: float = 0.2,
                 mask_feat_2: float = 0.1, **options: Any) -> None:
        super().__init__(in_feats, num_classes, hidden_feats=hidden_feats, out_feats=out_feats, proj_feats=proj_feats,
                         drop_edge_1=drop_edge_1, drop_edge_2=drop_edge_2, mask_feat_1=mask_feat_1,
                         mask_feat_2=mask_feat_2, **options)


class SupervisedLinearProbe(TransductiveLinearProbe):
    """TLP with a supervised encoder (model ``tlp-sup``; options as :class:`TransductiveLinearProbe`): GFL's
    32-unit encoder, frozen (it has no label-free loss to train on a graph being labelled)."""

    name = "tlp-sup"
    method = "supervised"

    def __init__(self, in_feats: int, num_classes: int, *, hidden_feats: int = 32, out_feats: int = 32,
                 proj_feats: int = 32, transductive_steps: int = 0, **options: Any) -> None:
        super().__init__(in_feats, num_classes, hidden_feats=hidden_feats, out_feats=out_feats, proj_feats=proj_feats,
                         transductive_steps=transductive_steps, **options)


#: Model name of each pretraining method.
_NAMES = {cls.name: cls.method for cls in (TransductiveLinearProbe, BootstrapLinearProbe, SupervisedLinearProbe)}
