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
        h ``(B, graph_feats)`` -> ``(B, num_params)`` in (0, 1) (``(0, 2)`` centered).

    Modes:
        ``"open"``: ``sigmoid``, starting nearly open (bias 3, so 0.95) with
        weights of std 0.01. Its slope there is 0.045 and the weights are
        small, so almost no gradient reaches the graph representation.
        ``"centered"``: ``2 * sigmoid``, bias 0 and the usual ``nn.Linear``
        initialisation: it starts around 1 (phi unchanged on average), varies
        from graph to graph from the first step and passes a gradient of slope
        0.5 back to the hierarchy.
        ``"paper"``: the paper's ``sigmoid`` with the usual initialisation
        (about 0.5 at the start).
        ``"feature"``: one gate value per PGNN *output feature* instead of
        per parameter (``num_params`` is then the PGNN's output width: the
        gate scales each column of ``W`` and the bias, a FiLM-style gain), of
        the form ``1 + tanh(W_g LayerNorm(h) + b_g)`` with the usual
        initialisation and ``b_g = 0``: it starts with mean 1 (values about
        0.2-1.8 across features, the same order for every graph) and slope
        1, and the representation is normalised per graph so the gate's input
        has unit scale whatever the hierarchy's output scale.
    """

    MODES = ("open", "centered", "paper", "feature")

    def __init__(self, graph_feats: int, num_params: int, open_bias: float = 3.0, mode: str = "open") -> None:
        super().__init__()
        if mode not in self.MODES:
            raise ValueError(f"gate mode must be one of {', '.join(self.MODES)}, not {mode!r}")
        self.open_bias, self.mode = open_bias, mode
        self.linear = nn.Linear(graph_feats, num_params)
        self.norm = nn.LayerNorm(graph_feats, elementwise_affine=False) if mode == "feature" else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.mode == "open":
            # Nearly open (sigmoid(3) = 0.95) with small weights: training begins
            # from the shared phi and learns graph-specific changes.
            nn.init.normal_(self.linear.weight, std=0.01)
            nn.init.constant_(self.linear.bias, self.open_bias)
        else:
            self.linear.reset_parameters()
            if self.mode in ("centered", "feature"):
                nn.init.zeros_(self.linear.bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if self.mode == "feature":
            return 1 + torch.tanh(self.linear(self.norm(h)))
        g = torch.sigmoid(self.linear(h))
        return 2 * g if self.mode == "centered" else g
