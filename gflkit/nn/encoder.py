"""The node embedding function f_theta: two graph convolutions (paper section 5).

The paper's encoder is a two-layer GCN (:class:`GCNEncoder`, with the graph's
normalisation read from the prepared graph, the fast path). Any other node
encoder of ``dgl.nn`` fits the same frame through :class:`NodeEncoder`:
:func:`make_encoder` builds the GraphSAGE, GAT and GIN variants with the same
widths, and a user can pass two convolutions of their own.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import dgl
import torch
from torch import nn

from ..names import ENCODERS, REGISTERED_ENCODERS, encoder_names
from .conv import GCNLayer, propagate

__all__ = ["NodeEncoder", "GCNEncoder", "make_encoder", "register_encoder"]


class NodeEncoder(nn.Module):
    """Two graph convolutions, ReLU between them, linear output.

    Each convolution is called as ``conv(g, x)``, the signature of every
    ``dgl.nn`` node convolution. A convolution with attention heads returns
    ``(N, heads, d)``; the heads are averaged.

    Args:
        conv1: input features to the hidden width.
        conv2: hidden width to the embedding size.
        dropout: dropout on the input and the hidden layer.
        input_dropout: whether ``dropout`` also applies to the input features (false: the hidden
            layer alone, as GPN's code applies it).

    Shapes:
        feat ``(N, in_feats)`` -> ``(N, out_feats)``; the graph must have self-loops.
    """

    def __init__(self, conv1: nn.Module, conv2: nn.Module, dropout: float = 0.0, *,
                 input_dropout: bool = True) -> None:
        super().__init__()
        self.conv1, self.conv2 = conv1, conv2
        self.dropout = nn.Dropout(dropout)
        self.input_dropout = input_dropout

    def reset_parameters(self) -> None:
        for conv in (self.conv1, self.conv2):
            conv.reset_parameters()

    @property
    def takes_feature_parts(self) -> bool:
        """Whether a batch's features may come as one tensor per graph, not
        concatenated (the first convolution multiplies each part in place;
        without dropout, which would draw its mask over the concatenation)."""
        return isinstance(self.conv1, GCNLayer) and (self.dropout.p == 0 or not self.input_dropout)

    @staticmethod
    def _merge_heads(h: torch.Tensor) -> torch.Tensor:
        return h.mean(1) if h.dim() == 3 else h

    def forward(self, g: dgl.DGLGraph, feat: torch.Tensor | None = None, *,
                symmetric: bool | None = None) -> torch.Tensor:
        """Embed the nodes of ``g``.

        Args:
            g: graph with one self-loop per node.
            feat: input features; by default the graph's ``ndata["feat"]``.
                A list of one tensor per graph of a batched ``g`` is
                concatenated, unless the encoder takes the parts as they are
                (:attr:`takes_feature_parts`).
            symmetric: whether ``g`` is symmetric, for the convolutions that
                take it (:class:`~gflkit.nn.conv.GCNLayer`); ``None``: not known.
        """
        x = g.ndata["feat"] if feat is None else feat
        if isinstance(x, (list, tuple)):  # one tensor per graph of the batch
            x = list(x) if self.takes_feature_parts else torch.cat(list(x))
        # A GCNLayer is told whether g is symmetric; a dgl.nn convolution takes (g, x) only.
        told = {"symmetric": symmetric} if isinstance(self.conv1, GCNLayer) else {}
        if not isinstance(x, list) and self.input_dropout:
            x = self.dropout(x)
        h = self._merge_heads(self.conv1(g, x, **told))
        if not (isinstance(self.conv1, GCNLayer) and self.conv1.relu):  # a GCNLayer may rectify in place
            h = torch.relu(h)
        told = {"symmetric": symmetric} if isinstance(self.conv2, GCNLayer) else {}
        return self._merge_heads(self.conv2(g, self.dropout(h), **told))


class GCNEncoder(NodeEncoder):
    """Two GCN layers (:class:`~gflkit.nn.conv.GCNLayer`), the paper's encoder.

    The first layer multiplies the wide input features by its weight before
    propagating them (as ``GraphConv`` does), and both read the degree
    normalisation stored on a prepared graph instead of recomputing it.

    Args:
        in_feats: input feature size.
        hidden_feats: width of the hidden layer (paper: 32).
        out_feats: embedding size (paper: 32).
        dropout: dropout on the input and the hidden layer.
        input_dropout: whether ``dropout`` also applies to the input (false: the hidden layer alone).
    """

    def __init__(self, in_feats: int, hidden_feats: int = 32, out_feats: int = 32, dropout: float = 0.0, *,
                 input_dropout: bool = True) -> None:
        _check_sizes("GCNEncoder", in_feats, hidden_feats, out_feats)
        super().__init__(GCNLayer(in_feats, hidden_feats, relu=True), GCNLayer(hidden_feats, out_feats), dropout,
                         input_dropout=input_dropout)


def gcn_blocks(params: Sequence[Mapping[str, torch.Tensor]], g: dgl.DGLGraph, x: torch.Tensor,
               sizes: Sequence[int], *, symmetric: bool | None = None) -> torch.Tensor:
    """What a :class:`GCNEncoder` without dropout computes on ``g``, with the rows of each block of
    nodes under that block's own weights (``conv1.weight``, ``conv1.bias``, ``conv2.weight``,
    ``conv2.bias``), never rebinding a module's parameters.

    Each layer multiplies every block's rows by that block's weight (or propagates first, where the
    weight widens the features, as :class:`~gflkit.nn.conv.GCNLayer` does), propagates all rows with
    one sparse product and adds each block's bias. Blocks that share no edge (the graphs of a batch)
    then get the numbers of the encoder run on each alone; one block is the encoder itself, for
    weights that are tensors of a computation (an inner loop's adapted weights), and it is safe to
    call from several threads at once, as ``torch.func.functional_call`` is not.

    Shapes:
        x ``(N, in_feats)``, ``sum(sizes) == N``; returns ``(N, out_feats)``.
    """
    h = x
    for layer in ("conv1", "conv2"):
        weights = [p[f"{layer}.weight"] for p in params]
        parts = h.split(list(sizes))
        if weights[0].shape[0] < weights[0].shape[1]:  # widening: propagate the narrower input first
            h = propagate(g, h, symmetric)
            h = torch.cat([part @ w for part, w in zip(h.split(list(sizes)), weights)])
        else:
            h = propagate(g, torch.cat([part @ w for part, w in zip(parts, weights)]), symmetric)
        h = h + torch.cat([p[f"{layer}.bias"].expand(n, -1) for p, n in zip(params, sizes)])
        if layer == "conv1":
            h = torch.relu(h)
    return h


def _check_sizes(name: str, *sizes: int) -> None:
    if min(sizes) < 1:
        raise ValueError(f"{name} sizes must be positive, got {', '.join(map(str, sizes))}")


def _sage(i: int, o: int) -> nn.Module:
    from dgl.nn import SAGEConv

    return SAGEConv(i, o, "mean")


def _gat(i: int, o: int) -> nn.Module:
    from dgl.nn import GATConv

    return GATConv(i, o, num_heads=1)


def _gin(i: int, o: int) -> nn.Module:
    from dgl.nn import GINConv

    return GINConv(nn.Sequential(nn.Linear(i, o), nn.ReLU(), nn.Linear(o, o)), "sum")


#: Builders of one convolution ``(in, out) -> module`` per encoder name other than ``gcn``.
_CONVS: dict[str, Callable[[int, int], nn.Module]] = {"sage": _sage, "gat": _gat, "gin": _gin}

#: Encoders registered by :func:`register_encoder`: ``(in, hidden, out, dropout) -> module``.
_REGISTERED: dict[str, Callable[[int, int, int, float], nn.Module]] = {}


def register_encoder(name: str, build: Callable[[int, int, int, float], nn.Module]) -> None:
    """Make ``encoder=name`` build ``build(in_feats, hidden_feats, out_feats, dropout)``.

    The encoder then works wherever a config names one: ``gflkit.train(encoder=name)``,
    the experiment functions, checkpoints (which record the name: register it again
    before loading them). Registration lives in this process: runs spread over
    processes (``nproc``, ``jobs``) cannot use it. The module is called as ``module(g) -> (N, out_feats)`` on
    a prepared graph (features in ``g.ndata["feat"]``, one self-loop per node)::

        from dgl.nn import GraphConv
        from gflkit.nn import NodeEncoder, register_encoder

        register_encoder("gcn-dgl", lambda i, h, o, p: NodeEncoder(GraphConv(i, h), GraphConv(h, o), p))

    Raises:
        ValueError: ``name`` is a built-in encoder.
    """
    if name in ENCODERS:
        raise ValueError(f"{name!r} is a built-in encoder; register yours under another name")
    _REGISTERED[name] = build
    REGISTERED_ENCODERS.add(name)


def make_encoder(name: str, in_feats: int, hidden_feats: int = 32, out_feats: int = 32,
                 dropout: float = 0.0) -> NodeEncoder:
    """A two-layer node encoder by name, one of :data:`ENCODERS`.

    * ``gcn``: :class:`GCNEncoder` (``GraphConv(norm="both")``, cached normalisation);
    * ``sage``: ``dgl.nn.SAGEConv`` with the mean aggregator;
    * ``gat``: ``dgl.nn.GATConv`` with one attention head;
    * ``gin``: ``dgl.nn.GINConv``, sum aggregator, a two-layer MLP per layer.

    All have the same widths, ReLU between the layers and a linear output.
    """
    if name == "gcn":
        return GCNEncoder(in_feats, hidden_feats, out_feats, dropout)
    if name in _REGISTERED:
        return _REGISTERED[name](in_feats, hidden_feats, out_feats, dropout)
    if name not in _CONVS:
        raise ValueError(f"unknown encoder {name!r}: choose one of {', '.join(encoder_names())}")
    _check_sizes(f"{name} encoder", in_feats, hidden_feats, out_feats)
    conv = _CONVS[name]
    return NodeEncoder(conv(in_feats, hidden_feats), conv(hidden_feats, out_feats), dropout)
