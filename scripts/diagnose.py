"""Gradient flow, gate values and relation weights of GFL on a family.

    python scripts/diagnose.py facebook --seed 0 [--steps 400]

Prints, as CSV on stdout, one row per measurement: the gradient norm reaching
each module at the first step and after training, the spread of the gate values
across test graphs, and how informative the relation weights are.
"""
from __future__ import annotations

import argparse

import pandas as pd
import torch

import gflkit
from gflkit.graphs import GraphCache, batch_episodes
from gflkit.config import EpisodeConfig, TrainConfig, PRESETS
from gflkit.episodes import EpisodeSampler
from gflkit.models.gfl import GFL
from gflkit.nn import relation_weights, support_similarity
from gflkit.training.meta import meta_train
from gflkit.seeding import seed_everything

MODULES = ("encoder", "decoder", "pgnn", "hierarchy", "gate")


def grad_norms(model: GFL, cache, sampler, ids, step: int) -> dict[str, float]:
    """Gradient norm of each parameter group after one meta-batch's loss."""
    eps = [sampler.episode(g, step) for g in ids]
    bg, support, queries = batch_episodes([cache[g] for g in ids], eps)
    model.zero_grad()
    out = model(bg, support, queries)
    loss, _ = model.loss(out, [e.query_label for e in eps])
    loss.backward()
    res = {}
    for name in MODULES:
        mod = getattr(model, name, None)
        if mod is None:
            continue
        grads = [p.grad.norm() ** 2 for p in mod.parameters() if p.grad is not None]
        params = [p.norm() ** 2 for p in mod.parameters()]
        res[f"grad_{name}"] = float(torch.stack(grads).sum().sqrt()) if grads else 0.0
        res[f"param_{name}"] = float(torch.stack(params).sum().sqrt())
    return res


@torch.no_grad()
def gate_and_relations(model: GFL, collection, ep_cfg, seed: int) -> dict[str, float]:
    """Statistics of the gate and the relation weights over the test graphs' first episodes."""
    sampler = EpisodeSampler(collection, "test", ep_cfg, seed).require_graphs()
    cache = GraphCache(collection)
    gates, weights, scores = [], [], []
    for gid in sampler.graph_ids:
        ep = sampler.episode(gid, 0)
        bg, support, queries = batch_episodes([cache[gid]], [ep])
        out = model(bg, support, queries)
        if out.gate is not None:
            gates.append(out.gate[0])
        s = support_similarity(bg, support, model.cfg.similarity, model.cfg.hops)
        w = relation_weights(s, model.cfg.similarity, model.cfg.mu, model.cfg.mu0)
        k = w.shape[-1]
        off = ~torch.eye(k, dtype=torch.bool)
        weights.append(w[..., off].flatten())
        scores.append(s[..., off].flatten())
    res = {}
    if gates:
        g = torch.stack(gates)  # (graphs, |phi|)
        res.update(gate_mean=float(g.mean()), gate_min=float(g.min()), gate_max=float(g.max()),
                   gate_std_across_graphs=float(g.std(0).mean()))
    w, s = torch.cat(weights), torch.cat(scores)
    res.update(rel_weight_mean=float(w.mean()), rel_weight_std=float(w.std()),
               rel_weight_share_above_0_99=float((w > 0.99).float().mean()),
               rel_weight_share_mu0=float((w == model.cfg.mu0).float().mean()),
               rel_score_median=float(s.median()), rel_score_share_zero=float((s == 0).float().mean()))
    return res


def main(argv=None) -> None:
    """Parse the command line and print the diagnostics."""
    p = argparse.ArgumentParser()
    p.add_argument("family")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--k-shot", type=int, default=10)
    p.add_argument("--set", default="", help="config changes, key=value,key=value")
    a = p.parse_args(argv)
    collection = gflkit.load_collection(a.family)
    ep_cfg = EpisodeConfig(k_shot=a.k_shot)
    cfg = PRESETS["gfl"]
    if a.set:
        from component_study import variants

        cfg = variants([a.set])[a.set]
    seed_everything(a.seed)
    model = GFL(collection.feat_size, cfg)
    sampler = EpisodeSampler(collection, "train", ep_cfg, a.seed).require_graphs()
    cache = GraphCache(collection)
    ids = sampler.graph_ids[:5]
    rows = [{"when": "init", **grad_norms(model, cache, sampler, ids, 1)}]
    res = meta_train(collection, cfg, ep_cfg, TrainConfig(seed=a.seed, steps=a.steps), progress=False)
    model = res.model
    model.train()
    rows.append({"when": f"trained(step {res.best_step})", **grad_norms(model, cache, sampler, ids, 1),
                 **gate_and_relations(model, collection, ep_cfg, a.seed)})
    pd.DataFrame(rows).T.to_csv(__import__("sys").stdout, header=False)


if __name__ == "__main__":
    main()
