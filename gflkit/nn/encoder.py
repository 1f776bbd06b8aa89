"""The node embedding function f_theta: a two-layer GCN (paper section 5)."""
from __future__ import annotations

import dgl
import torch
from dgl.nn import GraphConv
from torch import nn

from .conv import apply_conv, graph_conv

__all__ = ["GCNEncoder", "FEAT_PROP"]

FEAT_PROP = "feat_prop"
"""``ndata`` key of ``A_hat X``, the input features propagated once per graph."""


class GCNEncoder(nn.Module):
    """Two GraphConv layers, ReLU between, linear output.

    Args:
        in_feats: input feature size.
        hidden_feats: width of the hidden layer (paper: 32).
        out_feats: embedding size (paper: 32).
        dropout: dropout on the input and the hidden layer.

    Shapes:
        feat ``(N, in_feats)`` -> ``(N, out_feats)``; the graph must have self-loops.
    """

    def __init__(self, in_feats: int, hidden_feats: int = 32, out_feats: int = 32, dropout: float = 0.0) -> None:
        super().__init__()
        if in_feats < 1 or hidden_feats < 1 or out_feats < 1:
            raise ValueError("GCNEncoder sizes must be positive")
        self.conv1 = GraphConv(in_feats, hidden_feats, norm="both")
        self.conv2 = GraphConv(hidden_feats, out_feats, norm="both")
        self.dropout = nn.Dropout(dropout)

    def reset_parameters(self) -> None:
        self.conv1.reset_parameters()
        self.conv2.reset_parameters()

    def forward(self, g: dgl.DGLGraph, feat: torch.Tensor | None = None) -> torch.Tensor:
        """Embed the nodes of ``g``.

        Args:
            g: graph with one self-loop per node.
            feat: input features; by default the graph's ``ndata["feat"]``. In
                that case, when the graph carries ``ndata["feat_prop"]``
                (``A_hat X``, stored by :func:`gflkit.models.gfl.prepare_graph`)
                and no input dropout is active, the first layer starts from it
                and skips a sparse product and its backward pass.
        """
        dropping = self.training and self.dropout.p > 0
        if feat is None and FEAT_PROP in g.ndata and not dropping:
            h = apply_conv(self.conv1, g.ndata[FEAT_PROP])
        else:
            h = graph_conv(self.conv1, g, self.dropout(g.ndata["feat"] if feat is None else feat))
        return graph_conv(self.conv2, g, self.dropout(torch.relu(h)))
