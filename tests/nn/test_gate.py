"""The hierarchical representation gate (gflkit.nn.gate): where each mode starts and its gradient."""
from __future__ import annotations

import pytest
import torch


@pytest.mark.parametrize("mode, start", [("open", 0.95), ("centered", 1.0), ("paper", 0.5)])
def test_gate_modes_start_where_documented(mode, start):
    from gflkit.nn import HierarchyGate

    torch.manual_seed(0)
    gate = HierarchyGate(32, 100, mode=mode)
    g = gate(torch.zeros(1, 32))  # a zero representation leaves only the bias
    assert abs(float(g.detach().mean()) - start) < (0.25 if mode == "paper" else 0.01)
    h = torch.randn(4, 32, requires_grad=True)
    gate(h).sum().backward()
    if mode == "centered":  # slope 0.5 and the usual weights: the representation gets a real gradient
        assert float(h.grad.norm()) > 10 * _open_gate_grad()


def _open_gate_grad() -> float:
    from gflkit.nn import HierarchyGate

    torch.manual_seed(0)
    gate = HierarchyGate(32, 100, mode="open")
    h = torch.randn(4, 32, requires_grad=True)
    gate(h).sum().backward()
    return float(h.grad.norm())
