"""Evaluating ``dgl.nn.GraphConv`` layers with normalisation and propagation reused.

Every graph convolution of GFL is a ``GraphConv(norm="both")``:

    conv(g, x) = A_hat x W + b,    A_hat = D_in^-1/2 (A + I) D_out^-1/2

On CPU a step is bound by passes over ``(N, d)`` tensors, and ``GraphConv``
spends several of them per call recomputing what does not change: the degree
normalisation of the graph, and (for the input layer) the product ``A_hat X`` of
fixed features. Here the layer is evaluated from its own ``weight`` and
``bias`` with

* the normalisation stored on the graph once (:func:`add_gcn_norm`, called by
  :func:`gflkit.models.gfl.prepare_graph`, so ``dgl.batch`` concatenates it);
* ``A_hat x`` computed once wherever several layers read the same input, or
  where the input has no gradient: the decoder and the first hierarchy level both
  read ``A_hat Z``; the first encoder layer reads ``A_hat X``, stored per graph.

The result equals ``conv(g, x)`` up to floating-point rounding (tested).
"""
from __future__ import annotations

import dgl
import torch
from dgl.nn import GraphConv

__all__ = ["NORM_SRC", "NORM_DST", "add_gcn_norm", "gcn_norm", "propagate", "apply_conv", "graph_conv"]

NORM_SRC, NORM_DST = "gcn_norm_src", "gcn_norm_dst"


def _degree_norm(degrees: torch.Tensor) -> torch.Tensor:
    return degrees.float().clamp(min=1).pow(-0.5).unsqueeze(-1)


def gcn_norm(g: dgl.DGLGraph) -> tuple[torch.Tensor, torch.Tensor]:
    """``(D_out^-1/2, D_in^-1/2)`` as ``(N, 1)`` columns: stored ones when present."""
    if NORM_SRC in g.ndata and NORM_DST in g.ndata:
        return g.ndata[NORM_SRC], g.ndata[NORM_DST]
    return _degree_norm(g.out_degrees()), _degree_norm(g.in_degrees())


def add_gcn_norm(g: dgl.DGLGraph) -> dgl.DGLGraph:
    """Store the degree normalisation of ``g`` in its ``ndata`` (in place); returns ``g``."""
    g.ndata[NORM_SRC] = _degree_norm(g.out_degrees())
    g.ndata[NORM_DST] = _degree_norm(g.in_degrees())
    return g


def propagate(g: dgl.DGLGraph, x: torch.Tensor) -> torch.Tensor:
    """``A_hat x``: one sparse product over ``g`` (which has its self-loops).

    Shapes:
        x ``(N, d)`` -> ``(N, d)``.
    """
    src, dst = gcn_norm(g)
    return dgl.ops.copy_u_sum(g, x * src) * dst


def _check(conv: GraphConv) -> None:
    if conv._norm != "both" or conv.weight is None or conv._activation is not None:
        raise ValueError("only GraphConv layers with norm='both', their own weight and no activation are supported")


def apply_conv(conv: GraphConv, x_prop: torch.Tensor) -> torch.Tensor:
    """``conv`` applied to an already propagated input ``x_prop = A_hat x``."""
    _check(conv)
    if conv.bias is None:
        return x_prop @ conv.weight
    return torch.addmm(conv.bias, x_prop, conv.weight)


def graph_conv(conv: GraphConv, g: dgl.DGLGraph, x: torch.Tensor) -> torch.Tensor:
    """``conv(g, x)`` with the graph's stored normalisation.

    Like ``GraphConv``, the weight is applied first when it shrinks the features,
    so the sparse product runs on the narrower side.
    """
    _check(conv)
    if conv._in_feats > conv._out_feats:
        out = propagate(g, x @ conv.weight)
        return out if conv.bias is None else out + conv.bias
    return apply_conv(conv, propagate(g, x))
