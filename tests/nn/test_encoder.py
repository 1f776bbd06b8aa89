"""Node encoders (gflkit.nn.encoder): the GCN encoder against a dense reference and DGL's GraphConv."""
from __future__ import annotations

import dgl
import networkx as nx
import torch
from dgl.nn import GraphConv
from nn_graphs import _adj, _gcn_norm, _model_graph

from gflkit.nn import GCNEncoder


def test_gcn_encoder_matches_dense_reference(six):
    torch.manual_seed(0)
    g = _model_graph(six, feat_size=5)
    enc = GCNEncoder(5, hidden_feats=7, out_feats=3)
    with torch.no_grad():
        enc.conv1.bias.normal_()
        enc.conv2.bias.normal_()
    x = g.ndata["feat"]
    a = _gcn_norm(_adj(six))
    w1, b1, w2, b2 = enc.conv1.weight, enc.conv1.bias, enc.conv2.weight, enc.conv2.bias
    expected = a @ torch.relu(a @ x @ w1 + b1) @ w2 + b2
    torch.testing.assert_close(enc(g, x), expected, rtol=1e-5, atol=1e-5)
    assert enc(g, x).shape == (6, 3)


def test_gcn_encoder_initialises_and_computes_as_graphconv_layers(six):
    """Two ``dgl.nn.GraphConv`` layers seeded alike give the same weights and outputs."""
    g = _model_graph(six, feat_size=40)  # wide input: the weight comes before the propagation
    torch.manual_seed(0)
    enc = GCNEncoder(40, hidden_feats=8, out_feats=3)
    torch.manual_seed(0)
    conv1, conv2 = GraphConv(40, 8, norm="both"), GraphConv(8, 3, norm="both")
    assert torch.equal(enc.conv1.weight, conv1.weight) and torch.equal(enc.conv2.weight, conv2.weight)
    x = g.ndata["feat"]
    torch.testing.assert_close(enc(g), conv2(g, torch.relu(conv1(g, x))), rtol=1e-5, atol=1e-6)


def test_gcn_encoder_takes_each_graphs_features_as_they_are():
    from gflkit.nn import make_encoder

    graphs = [_model_graph(nx.gnp_random_graph(n, 0.2, seed=n), feat_size=6, seed=n) for n in (12, 7, 15)]
    bg = dgl.batch(graphs)
    torch.manual_seed(0)
    gcn = make_encoder("gcn", 6, 8, 4)
    assert gcn.takes_feature_parts
    parts = [g.ndata["feat"] for g in graphs]
    torch.testing.assert_close(gcn(bg, parts), gcn(bg))
    (a,) = torch.autograd.grad(gcn(bg, parts).square().sum(), gcn.conv1.weight)
    (b,) = torch.autograd.grad(gcn(bg).square().sum(), gcn.conv1.weight)
    torch.testing.assert_close(a, b)
    assert not make_encoder("gcn", 6, 8, 4, dropout=0.5).takes_feature_parts  # its mask covers the batch
    sage = make_encoder("sage", 6, 8, 4)
    assert not sage.takes_feature_parts
    torch.testing.assert_close(sage(bg, parts), sage(bg))  # concatenated for it
