"""How informative the relation weights R_k are on a family, for each similarity.

    python scripts/relation_stats.py facebook --similarity khop-cn,ppr,learned,combined [--seed 0]

For every test graph's first ``--episodes`` support draws (10-shot), the
weights among each class's support nodes, as the PGNN reads them. Learned
similarities (``learned``, ``combined``) are meta-trained first (seed
``--seed``, default settings otherwise), the others need no training. Prints
one CSV row per similarity on stdout:

- ``share_half``: same-class pairs whose weight is within 0.01 of 0.5 (the
  uninformative ``sigmoid(0)`` of ``khop-cn``: no common node within 3 hops);
- ``share_mu0``: pairs at the floor ``mu0`` (the threshold fired);
- ``share_above_0_99``: pairs at nearly full weight;
- ``weight_mean``, ``weight_std``: of the off-diagonal weights;
- ``row_cv``: the coefficient of variation (std / mean) of the off-diagonal
  weights of a row of R_k, averaged over rows (0: every relation of a node the same);
- ``proto_tv``: the total-variation distance between the weight each support
  node has in the PGNN's row-normalised mean (``sum_i R_ij / D_i``, divided by
  K) and the uniform ``1 / K`` of a mean prototype, averaged over classes
  (0: the aggregation is a plain mean; at most ``1 - 1/K``).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace

import pandas as pd
import torch

import gflkit
from gflkit.config import PRESETS, EpisodeConfig, TrainConfig
from gflkit.episodes import EpisodeSampler
from gflkit.graphs import GraphCache, batch_episodes
from gflkit.models.gfl import GFL
from gflkit.names import LEARNED_SIMILARITIES
from gflkit.training.meta import meta_train


@torch.no_grad()
def weight_stats(model: GFL, collection, ep_cfg: EpisodeConfig, seed: int, episodes: int) -> dict[str, float]:
    """Statistics of the relation weights over the test graphs' first ``episodes`` episodes."""
    model.eval()
    sampler = EpisodeSampler(collection, "test", ep_cfg, seed).require_graphs()
    cache = GraphCache(collection)
    mu0 = model.prototype.mu0
    off_w, row_cv, tv = [], [], []
    for gid in sampler.graph_ids:
        for e in range(episodes):
            ep = sampler.episode(gid, e)
            bg, support, _ = batch_episodes([cache[gid]], [ep])
            z = model.embed(bg)
            w = model.prototype.weights(bg, z, support)  # (1, C, K, K)
            k = w.shape[-1]
            off = ~torch.eye(k, dtype=torch.bool)
            rows = w[..., off].view(*w.shape[:-2], k, k - 1)  # off-diagonal weights of each row
            off_w.append(rows.flatten())
            row_cv.append((rows.std(-1) / rows.mean(-1).clamp(min=1e-12)).flatten())
            share = (w / w.sum(-2, keepdim=True)).sum(-1) / k  # (1, C, K): support node j's share
            tv.append(0.5 * (share - 1.0 / k).abs().sum(-1).flatten())
    w, cv, tv = torch.cat(off_w), torch.cat(row_cv), torch.cat(tv)
    return {
        "pairs": int(w.numel()),
        "share_half": float(((w - 0.5).abs() < 0.01).float().mean()),
        "share_mu0": float(((w - mu0).abs() < 1e-6).float().mean()),
        "share_above_0_99": float((w > 0.99).float().mean()),
        "weight_mean": float(w.mean()), "weight_std": float(w.std()),
        "row_cv": float(cv.mean()), "proto_tv": float(tv.mean()),
    }


def main(argv=None) -> None:
    """Parse the command line and print one row per similarity."""
    p = argparse.ArgumentParser()
    p.add_argument("family")
    p.add_argument("--similarity", default="khop-cn,ppr,learned,combined")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--episodes", type=int, default=5)
    p.add_argument("--k-shot", type=int, default=10)
    p.add_argument("--steps", type=int, default=400)
    a = p.parse_args(argv)
    collection = gflkit.load_collection(a.family)
    ep_cfg = EpisodeConfig(k_shot=a.k_shot)
    rows = []
    for sim in a.similarity.split(","):
        cfg = replace(PRESETS["gfl"], similarity=sim)
        if sim in LEARNED_SIMILARITIES:
            model = meta_train(collection, cfg, ep_cfg, TrainConfig(seed=a.seed, steps=a.steps), progress=False).model
        else:
            model = GFL(collection.feat_size, cfg)
        row = {"family": a.family, "similarity": sim, "trained": sim in LEARNED_SIMILARITIES}
        row.update(weight_stats(model, collection, ep_cfg, a.seed, a.episodes))
        if model.prototype.scorer is not None and model.prototype.scorer.mix is not None:
            row["mix"] = float(model.prototype.scorer.mix.detach())
        rows.append(row)
    pd.DataFrame(rows).to_csv(sys.stdout, index=False, float_format="%.4g")


if __name__ == "__main__":
    main()
