"""The hierarchical representation gate (gflkit.nn.gate): where each mode starts and its gradient."""
from __future__ import annotations

import pytest
import torch


@pytest.mark.parametrize("mode, start", [("open", 0.95), ("centered", 1.0), ("paper", 0.5), ("feature", 1.0)])
def test_gate_modes_start_where_documented(mode, start):
    from gflkit.nn import HierarchyGate

    torch.manual_seed(0)
    gate = HierarchyGate(32, 100, mode=mode)
    g = gate(torch.zeros(1, 32))  # a zero representation leaves only the bias
    assert abs(float(g.detach().mean()) - start) < (0.25 if mode == "paper" else 0.01)
    h = torch.randn(4, 32, requires_grad=True)
    gate(h).sum().backward()
    if mode in ("centered", "feature"):  # slope 0.5 or 1 and the usual weights: a real gradient
        assert float(h.grad.norm()) > 10 * _open_gate_grad()


def _open_gate_grad() -> float:
    from gflkit.nn import HierarchyGate

    torch.manual_seed(0)
    gate = HierarchyGate(32, 100, mode="open")
    h = torch.randn(4, 32, requires_grad=True)
    gate(h).sum().backward()
    return float(h.grad.norm())


def test_feature_gate_normalises_the_representation_and_spans_zero_to_two():
    from gflkit.nn import HierarchyGate

    torch.manual_seed(0)
    gate = HierarchyGate(8, 4, mode="feature")
    h = torch.randn(3, 8)
    torch.testing.assert_close(gate(h), gate(5 * h + 2))  # per-graph layer norm: scale and shift drop out
    with torch.no_grad():
        gate.linear.weight.mul_(100)
    g = gate(h).detach()
    assert float(g.min()) >= 0.0 and float(g.max()) <= 2.0


def test_pgnn_with_a_gate_per_output_feature_is_the_gate_per_parameter_constant_down_columns():
    from gflkit.nn import PrototypeGNN

    torch.manual_seed(0)
    pgnn = PrototypeGNN(5, 3)
    support, weights = torch.randn(2, 4, 6, 5), torch.rand(2, 4, 6, 6)
    per_feature = torch.rand(2, 3) * 2
    per_param = torch.cat([per_feature.unsqueeze(1).expand(2, 5, 3).reshape(2, 15), per_feature], dim=1)
    torch.testing.assert_close(pgnn(support, weights, per_feature), pgnn(support, weights, per_param))


def test_feature_gate_model_passes_the_hierarchy_a_gradient_far_above_the_open_gate():
    """A GFL model with gate_mode=feature has a gate of out_feats values, and its hierarchy learns."""
    import dgl
    import networkx as nx
    from nn_graphs import _model_graph

    from gflkit.config import GFLConfig
    from gflkit.graphs import EpisodeBatch
    from gflkit.models.gfl import GFL

    graphs = [_model_graph(nx.gnm_random_graph(40, 120, seed=s), feat_size=6, seed=s) for s in range(3)]
    bg = dgl.batch(graphs)
    support = torch.stack([torch.arange(6).view(2, 3) + 40 * b for b in range(3)])
    queries = [torch.arange(6, 40) + 40 * b for b in range(3)]
    labels = [torch.randint(0, 2, (34,), generator=torch.Generator().manual_seed(b)) for b in range(3)]
    norms = {}
    for mode in ("open", "feature"):
        torch.manual_seed(0)
        model = GFL(6, GFLConfig(gate_mode=mode, hidden_feats=8, out_feats=8, graph_feats=8, clusters=(4, 2)))
        out = model(EpisodeBatch(bg, support, queries))
        assert out.gate.shape == (3, 8 if mode == "feature" else model.pgnn.num_params)
        model.loss(out, labels)[0].backward()
        norms[mode] = sum(float(p.grad.norm()) ** 2 for p in model.hierarchy.parameters()) ** 0.5
    assert norms["feature"] > 100 * norms["open"]
