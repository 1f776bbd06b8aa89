"""Planetoid, transductive variant (Yang, Cohen & Salakhutdinov, ICML 2016).

Every node has a learnt embedding ``e_i``. A classifier reads both the node
features and the embedding, ``softmax([relu(x W_x), relu(e W_e)] W_y)``, and
is trained on the support nodes; at the same time the embedding is trained
to predict each node's context (section 3 of the paper):

* graph context: nodes near it on random walks, against sampled negatives;
* label context: support nodes of its class (positive) and of other classes
  (negative), ``-log s(gamma * e_i . w_c)``.

This is a compact joint version: each step adds one batch of graph-context
pairs, the label context and the supervised loss, instead of the paper's
alternating ``T1`` / ``T2`` inner loops.
"""
from __future__ import annotations

import dgl
import torch
import torch.nn.functional as F

from ...episodes import Episode
from .common import dgl_walks, episode_seed, standardise, support_targets, undirected
from .skipgram import context_pairs, negative_table, sgns_loss

__all__ = ["fit_predict_planetoid"]


def label_context_loss(emb: torch.Tensor, ctx: torch.Tensor, support: torch.Tensor,
                       target: torch.Tensor) -> torch.Tensor:
    """Same-class support pairs are positive contexts, other pairs negative.

    Shapes:
        emb, ctx ``(N, d)``; support, target ``(S,)`` -> scalar.
    """
    score = emb[support] @ ctx[support].T  # (S, S)
    same = target[:, None] == target[None, :]
    off_diag = ~torch.eye(len(support), dtype=torch.bool)
    return -(F.logsigmoid(score[same & off_diag]).mean() + F.logsigmoid(-score[~same]).mean())


def fit_predict_planetoid(
    g: dgl.DGLGraph,
    episode: Episode,
    *,
    num_classes: int,
    seed: int = 0,
    dim: int = 32,
    hidden_feats: int = 32,
    walk_length: int = 10,
    walks_per_node: int = 4,
    window: int = 3,
    negatives: int = 5,
    steps: int = 100,
    batch_size: int = 1024,
    context_weight: float = 1.0,
    lr: float = 0.01,
) -> torch.Tensor:
    """Train Planetoid-T on one test graph and predict its queries.

    Walks use DGL's generator, seeded with :func:`dgl.seed` from
    ``(seed, graph_id)``; weights, batches and negatives use a torch generator
    from the same integers.

    Shapes:
        returns ``(Q,)`` predicted classes of ``episode.query``.
    """
    s = episode_seed(seed, episode.graph_id)
    gen = torch.Generator().manual_seed(s)
    h = undirected(g)
    n = h.num_nodes()
    starts = torch.arange(n).repeat(walks_per_node)
    traces, _ = dgl_walks(lambda: dgl.sampling.random_walk(h, starts, length=walk_length), s)
    centre, context = context_pairs(traces, window)
    weights = negative_table(context, n)

    x = standardise(g.ndata["feat"].float())  # (N, F)

    def init(*shape):
        return (torch.randn(*shape, generator=gen) / shape[0] ** 0.5).requires_grad_()

    emb = init(n, dim)
    ctx = torch.zeros(n, dim, requires_grad=True)
    w_x, w_e, w_y = init(x.shape[1], hidden_feats), init(dim, hidden_feats), init(2 * hidden_feats, num_classes)
    params = [emb, ctx, w_x, w_e, w_y]
    opt = torch.optim.Adam(params, lr=lr)
    support, target = support_targets(episode)

    def classify(nodes):
        return torch.cat([torch.relu(x[nodes] @ w_x), torch.relu(emb[nodes] @ w_e)], 1) @ w_y

    for _ in range(steps):
        loss = F.cross_entropy(classify(support), target)
        context_loss = label_context_loss(emb, ctx, support, target)
        if centre.numel():  # a graph without edges has no graph context
            idx = torch.randint(0, centre.numel(), (min(batch_size, centre.numel()),), generator=gen)
            neg = torch.multinomial(weights, idx.numel() * negatives, replacement=True, generator=gen)
            context_loss = context_loss + sgns_loss(emb, ctx, centre[idx], context[idx], neg.view(-1, negatives))
        loss = loss + context_weight * context_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return classify(episode.query).argmax(1)
