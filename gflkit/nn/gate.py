"""The hierarchical graph representation gate (paper Eqs. 7-8)."""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["HierarchyGate"]


class HierarchyGate(nn.Module):
    """``g = sigmoid(W_g h + b_g)``, one gate value per PGNN parameter.

    Args:
        graph_feats: size of the graph representation h.
        num_params: number of gated parameters (``|phi|``).

    Shapes:
        h ``(B, graph_feats)`` -> ``(B, num_params)`` in (0, 1).
    """

    def __init__(self, graph_feats: int, num_params: int, open_bias: float = 3.0) -> None:
        super().__init__()
        self.open_bias = open_bias
        self.linear = nn.Linear(graph_feats, num_params)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # The gate starts nearly open (sigmoid(3) = 0.95) with small weights,
        # so training begins from the shared phi and learns graph-specific changes.
        nn.init.normal_(self.linear.weight, std=0.01)
        nn.init.constant_(self.linear.bias, self.open_bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.linear(h))
