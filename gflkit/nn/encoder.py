"""The node embedding function f_theta: a two-layer GCN (paper section 5)."""
from __future__ import annotations

import dgl
import torch
from torch import nn

from .conv import GCNLayer

__all__ = ["GCNEncoder"]


class GCNEncoder(nn.Module):
    """Two GCN layers, ReLU between, linear output.

    The first layer multiplies the wide input features by its weight before
    propagating them (as ``GraphConv`` does), so a prepared graph needs no
    second, propagated copy of its features.

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
        self.conv1 = GCNLayer(in_feats, hidden_feats)
        self.conv2 = GCNLayer(hidden_feats, out_feats)
        self.dropout = nn.Dropout(dropout)

    def reset_parameters(self) -> None:
        self.conv1.reset_parameters()
        self.conv2.reset_parameters()

    def forward(self, g: dgl.DGLGraph, feat: torch.Tensor | None = None) -> torch.Tensor:
        """Embed the nodes of ``g``.

        Args:
            g: graph with one self-loop per node.
            feat: input features; by default the graph's ``ndata["feat"]``.
        """
        x = g.ndata["feat"] if feat is None else feat
        h = self.conv1(g, self.dropout(x))
        return self.conv2(g, self.dropout(torch.relu(h)))
