"""GFL computed densely, the way the authors' release computes it.

A self-contained torch module for the step benchmark: every graph is an
``n x n`` dense adjacency, and every part of the model that gflkit computes by
message passing is a dense matrix product here:

* the GCN encoder and decoder multiply by the dense normalised adjacency
  ``D^-1/2 (A + I) D^-1/2``;
* the reconstruction loss builds ``D D^T`` and takes ``||A - D D^T||_F^2``;
* the k-hop neighbourhoods of the relational structure come from the dense
  matrix power ``(A + I)^k`` (nodes within k hops = its non-zero entries);
* the first hierarchy level pools with the dense product ``P^T A P``.

Only the default configuration of :class:`gflkit.config.GFLConfig` is
implemented (k-hop common neighbours, mean pooling, tanh, gate, mean
aggregator, inner-product distance, row-normalised decoder, loss divided by
``n^2``). The parameters have the same shapes as gflkit's ``GFL`` so that the
two do the same arithmetic per node; the weights are not shared.

Graphs are processed one at a time (the authors' code loops over the graphs
of a meta-batch); the loss is averaged over graphs as gflkit averages it.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["DenseGraph", "DenseGCNLayer", "DenseGFL", "dense_graph"]


class DenseGraph:
    """A graph as dense matrices, built once per graph (not per step).

    Attributes:
        adj: ``(n, n)`` binary adjacency without self-loops.
        a_hat: ``(n, n)`` GCN normalisation ``D^-1/2 (A + I) D^-1/2``.
        feat: ``(n, in_feats)`` node features.
    """

    def __init__(self, adj: torch.Tensor, feat: torch.Tensor) -> None:
        self.adj = adj
        self.a_hat = gcn_norm(adj)
        self.feat = feat


def gcn_norm(adj: torch.Tensor) -> torch.Tensor:
    """``D^-1/2 (A + I) D^-1/2`` of a dense adjacency ``(..., n, n)``."""
    a = adj + torch.eye(adj.shape[-1], dtype=adj.dtype)
    d = a.sum(-1).clamp(min=1e-12).rsqrt()
    return d.unsqueeze(-1) * a * d.unsqueeze(-2)


def dense_graph(src: torch.Tensor, dst: torch.Tensor, num_nodes: int, feat: torch.Tensor) -> DenseGraph:
    """A :class:`DenseGraph` from an edge list (self-loops dropped, duplicates merged)."""
    adj = torch.zeros(num_nodes, num_nodes)
    adj[src, dst] = 1.0
    adj.fill_diagonal_(0.0)
    return DenseGraph(adj, feat)


class DenseGCNLayer(nn.Module):
    """``a_hat @ x @ W + b`` with ``W`` shaped ``(in, out)`` like ``dgl.nn.GraphConv``.

    Shapes:
        a_hat ``(n, n)``, x ``(n, in_feats)`` -> ``(n, out_feats)``.
    """

    def __init__(self, in_feats: int, out_feats: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_feats, out_feats))
        self.bias = nn.Parameter(torch.zeros(out_feats))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, a_hat: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        # Multiply by the narrower side first, as GraphConv does.
        if x.shape[1] > self.weight.shape[1]:
            return a_hat @ (x @ self.weight) + self.bias
        return (a_hat @ x) @ self.weight + self.bias


class DenseGFL(nn.Module):
    """The full GFL model (default configuration) on dense matrices.

    Args:
        in_feats: node feature size.
        hidden_feats, out_feats: encoder widths (paper: 32, 32).
        graph_feats: size of the hierarchical graph representation.
        clusters: clusters of hierarchy levels 2 and 3.
        hops: k of the k-hop common-neighbour similarity.
        mu, mu0: relation weights below ``mu`` become ``mu0``.
        gamma: weight of the reconstruction loss.
    """

    def __init__(self, in_feats: int, hidden_feats: int = 32, out_feats: int = 32, graph_feats: int = 32,
                 clusters: tuple[int, int] = (32, 8), hops: int = 3, mu: float = 0.5, mu0: float = 0.1,
                 gamma: float = 1.0) -> None:
        super().__init__()
        if out_feats != graph_feats:
            raise ValueError("the dense reference needs out_feats == graph_feats (no projection layer)")
        self.hops, self.mu, self.mu0, self.gamma = hops, mu, mu0, gamma
        self.enc1 = DenseGCNLayer(in_feats, hidden_feats)
        self.enc2 = DenseGCNLayer(hidden_feats, out_feats)
        self.dec = DenseGCNLayer(out_feats, out_feats)
        self.pgnn_weight = nn.Parameter(torch.eye(out_feats))
        self.pgnn_bias = nn.Parameter(torch.zeros(out_feats))
        # Level-1 AGNN and FGNN side by side in one layer, as in gflkit.
        self.first1 = DenseGCNLayer(out_feats, clusters[0] + graph_feats)
        self.k2 = clusters[0]
        self.assign2 = nn.Linear(graph_feats, clusters[1])
        self.fuse2 = nn.Linear(graph_feats, graph_feats)
        self.gate = nn.Linear(graph_feats, out_feats * out_feats + out_feats)

    @torch.no_grad()
    def relation_weights(self, adj: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
        """R_k of every class from dense k-hop reachability.

        Shapes:
            adj ``(n, n)``, support ``(C, K)`` -> ``(C, K, K)``.
        """
        c, k = support.shape
        reach = (torch.linalg.matrix_power(adj + torch.eye(adj.shape[0]), self.hops) > 0).float()  # (n, n)
        ids = support.reshape(-1)
        rows = reach[ids]  # (C*K, n)
        close = rows[:, ids]  # 1 where v is within `hops` of u
        shared = rows @ rows.t() - close - close.t()  # |N_h(u) & N_h(v)| without u and v
        shared = shared.view(c, k, c, k)
        score = torch.stack([shared[i, :, i, :] for i in range(c)])  # (C, K, K)
        w = torch.sigmoid(score)
        w = torch.where(w < self.mu, torch.full_like(w, self.mu0), w)
        return w.masked_fill(torch.eye(k, dtype=torch.bool), 1.0)

    def graph_representation(self, graph: DenseGraph, z: torch.Tensor) -> torch.Tensor:
        """Mean of three levels: node mean, ``P^T A P`` pooling, one more pooling. ``(graph_feats,)``."""
        out = self.first1(graph.a_hat, z)
        p = torch.softmax(out[:, : self.k2], dim=-1)  # (n, K2)
        x2 = (p / p.sum(0, keepdim=True).clamp(min=1e-12)).t() @ torch.relu(out[:, self.k2 :])
        a2 = p.t() @ graph.adj @ p  # (K2, K2)
        a_hat2 = gcn_norm(a2)
        p2 = torch.softmax(a_hat2 @ self.assign2(x2), dim=-1)  # (K2, K3)
        x3 = (p2 / p2.sum(0, keepdim=True).clamp(min=1e-12)).t() @ torch.relu(a_hat2 @ self.fuse2(x2))
        return torch.stack([z.mean(0), x2.mean(0), x3.mean(0)]).mean(0)

    def prototypes(self, z: torch.Tensor, weights: torch.Tensor, support: torch.Tensor,
                   gate: torch.Tensor) -> torch.Tensor:
        """Gated PGNN over each class's relational structure. ``(C, out_feats)``."""
        d = z.shape[1]
        # weights[c, u, v] is the edge u -> v: node v averages its in-neighbours.
        degree = weights.sum(-2).clamp(min=1e-12).unsqueeze(-1)  # (C, K, 1)
        agg = weights.transpose(1, 2) @ z[support] / degree  # (C, K, d)
        w = self.pgnn_weight * gate[: d * d].view(d, d)
        b = self.pgnn_bias * gate[d * d:]
        return torch.tanh(agg @ w + b).mean(1)

    def graph_loss(self, graph: DenseGraph, support: torch.Tensor, query: torch.Tensor,
                   query_label: torch.Tensor) -> torch.Tensor:
        """Cross-entropy over the queries plus ``gamma * ||A - D D^T||_F^2 / n^2`` of one graph."""
        z = self.enc2(graph.a_hat, torch.relu(self.enc1(graph.a_hat, graph.feat)))  # (n, d)
        weights = self.relation_weights(graph.adj, support)
        gate = torch.sigmoid(self.gate(self.graph_representation(graph, z)))
        protos = self.prototypes(z, weights, support, gate)
        ce = F.cross_entropy(z[query] @ protos.t(), query_label)
        dec = F.normalize(self.dec(graph.a_hat, z), dim=-1)
        n = graph.adj.shape[0]
        recon = (graph.adj - dec @ dec.t()).pow(2).sum() / n**2
        return ce + self.gamma * recon

    def forward(self, graphs, episodes) -> torch.Tensor:
        """Mean loss over the graphs of a meta-batch (episodes carry support, query, labels)."""
        losses = [self.graph_loss(g, ep.support, ep.query, ep.query_label) for g, ep in zip(graphs, episodes)]
        return torch.stack(losses).mean()
