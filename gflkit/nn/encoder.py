"""The node embedding function f_theta: a two-layer GCN (paper section 5)."""
from __future__ import annotations

import dgl
import torch
from dgl.nn import GraphConv
from torch import nn

__all__ = ["GCNEncoder"]


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

    def forward(self, g: dgl.DGLGraph, feat: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv1(g, self.dropout(feat)))
        return self.conv2(g, self.dropout(h))
