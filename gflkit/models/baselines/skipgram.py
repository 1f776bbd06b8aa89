"""Skip-gram with negative sampling over random-walk contexts (Mikolov et al. 2013).

The embedding step of DeepWalk (Perozzi et al. 2014), node2vec (Grover &
Leskovec 2016) and the graph context of Planetoid (Yang et al. 2016): a node
should predict the nodes within ``window`` steps of it on a walk, and not
``negatives`` nodes drawn from the unigram distribution to the power 3/4.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = []


def context_pairs(traces: torch.Tensor, window: int) -> tuple[torch.Tensor, torch.Tensor]:
    """All ``(centre, context)`` pairs at most ``window`` apart on a walk.

    Walks that stopped early are padded with ``-1`` by DGL; pairs touching
    padding are dropped.

    Shapes:
        traces ``(W, L)`` -> two ``(P,)`` tensors of node ids.
    """
    centres, contexts = [], []
    for offset in range(1, window + 1):
        a, b = traces[:, :-offset].reshape(-1), traces[:, offset:].reshape(-1)
        keep = (a >= 0) & (b >= 0) & (a != b)
        centres += [a[keep], b[keep]]
        contexts += [b[keep], a[keep]]
    return torch.cat(centres), torch.cat(contexts)


def negative_table(context: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """Sampling weights of negatives: context frequency to the power 3/4.

    Shapes:
        context ``(P,)`` -> ``(N,)`` weights (every node at least a little).
    """
    counts = torch.bincount(context, minlength=num_nodes).double()
    return (counts + 1.0).pow(0.75)


def sgns_loss(emb: torch.Tensor, ctx: torch.Tensor, centre: torch.Tensor, context: torch.Tensor,
              negative: torch.Tensor) -> torch.Tensor:
    """Negative-sampling loss ``-log s(u_c . v_o) - sum_n log s(-u_c . v_n)``, averaged over pairs.

    Shapes:
        emb, ctx ``(N, d)``; centre, context ``(P,)``; negative ``(P, M)`` -> scalar.
    """
    p, m = negative.shape
    u = emb.index_select(0, centre)  # (P, d); index_select has a fast backward on CPU
    v = ctx.index_select(0, torch.cat([context[:, None], negative], 1).reshape(-1)).view(p, m + 1, -1)
    sign = torch.ones(m + 1)
    sign[1:] = -1.0
    return -F.logsigmoid((u[:, None, :] * v).sum(-1) * sign).sum(1).mean()  # (P, 1 + M) scores


def train_skipgram(
    traces: torch.Tensor,
    num_nodes: int,
    *,
    dim: int = 32,
    window: int = 5,
    negatives: int = 5,
    epochs: int = 1,
    pairs_per_node: int | None = 200,
    batch_size: int = 4096,
    lr: float = 0.05,
    generator: torch.Generator,
) -> torch.Tensor:
    """Node embeddings learnt from walks by skip-gram with negative sampling.

    Args:
        traces: random walks, ``-1`` padded.
        num_nodes: N, the number of nodes of the graph.
        dim: embedding size.
        window: context window on each side of a node.
        negatives: negative samples per pair.
        epochs: passes over the pairs (shuffled each time).
        pairs_per_node: a pass visits at most ``N * pairs_per_node`` pairs,
            drawn afresh each pass (``None``: all of them), so the cost
            grows with the graph, not with the walk settings.
        batch_size: pairs per Adam step.
        lr: Adam learning rate.
        generator: source of the initial embedding, the order and the negatives.

    Shapes:
        traces ``(W, L)`` -> ``(N, dim)``.
    """
    centre, context = context_pairs(traces, window)
    weights = negative_table(context, num_nodes)
    emb = ((torch.rand(num_nodes, dim, generator=generator) - 0.5) / dim).requires_grad_()
    ctx = torch.zeros(num_nodes, dim, requires_grad=True)
    opt = torch.optim.Adam([emb, ctx], lr=lr)
    for _ in range(epochs):
        order = torch.randperm(centre.numel(), generator=generator)
        if pairs_per_node is not None:
            order = order[: num_nodes * pairs_per_node]
        for start in range(0, order.numel(), batch_size):
            idx = order[start : start + batch_size]
            neg = torch.multinomial(weights, idx.numel() * negatives, replacement=True, generator=generator)
            loss = sgns_loss(emb, ctx, centre[idx], context[idx], neg.view(idx.numel(), negatives))
            opt.zero_grad()
            loss.backward()
            opt.step()
    return emb.detach()
