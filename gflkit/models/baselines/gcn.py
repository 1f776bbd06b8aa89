"""Non-transfer GCN: a 2-layer GCN trained on one test graph's support set alone."""
from __future__ import annotations

import dgl
import torch
import torch.nn.functional as F

from ...episodes import Episode
from ...nn import GCNEncoder
from ...graphs import prepare_graph, receptive_field

__all__ = ["fit_predict_gcn"]


def fit_predict_gcn(
    g: dgl.DGLGraph,
    episode: Episode,
    *,
    num_classes: int,
    seed: int = 0,
    hidden_feats: int = 32,
    epochs: int = 100,
    lr: float = 0.01,
    weight_decay: float = 5e-4,
    dropout: float = 0.5,
) -> torch.Tensor:
    """Train a GCN (Kipf & Welling) from scratch on the support nodes, predict the queries.

    The network is Kipf & Welling's: two GraphConv layers, 32 hidden units, the
    second one giving class scores; cross-entropy on the ``C * K`` support
    nodes, Adam, a fixed number of epochs (a few-shot graph has no labelled
    nodes to spare for validation). The epochs run on the support nodes' two-hop
    receptive field (:func:`~gflkit.graphs.receptive_field`), the part of the graph
    their outputs read; dropout draws its masks over that part only.

    Shapes:
        returns ``(Q,)`` predicted classes of ``episode.query``.
    """
    gen = torch.Generator().manual_seed(seed * 1_000_003 + episode.graph_id)
    torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
    h = prepare_graph(g)
    model = GCNEncoder(h.ndata["feat"].shape[1], hidden_feats, num_classes, dropout)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    support = episode.support.reshape(-1)
    target = torch.arange(num_classes).repeat_interleave(episode.support.shape[1])
    model.train()
    # the loss reads the support nodes' outputs alone: the epochs run on their two-hop receptive field
    near, at = receptive_field(h, support, 2) or (h, support)
    for _ in range(epochs):
        loss = F.cross_entropy(model(near)[at], target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        return model(h)[episode.query].argmax(1)
