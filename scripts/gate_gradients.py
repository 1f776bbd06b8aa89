"""Gradient norm reaching each module of GFL, per gate mode, at the start and after training.

    python scripts/gate_gradients.py facebook --modes open,centered,paper,feature --seed 0 [--steps 400]

For each gate mode: the gradient norm of the encoder, PGNN, hierarchy and gate
parameters on the first meta-batch (5 train graphs, 10-shot) at
initialisation and, with ``--steps`` > 0, after meta-training (default
settings otherwise; the best checkpoint), plus the hierarchy's gradient over
the encoder's and the spread of the gate values across the test graphs (std
over graphs, mean over gate values). CSV on stdout.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace

import pandas as pd

import gflkit
from diagnose import gate_and_relations, grad_norms
from gflkit.config import PRESETS, EpisodeConfig, TrainConfig
from gflkit.episodes import EpisodeSampler
from gflkit.graphs import GraphCache
from gflkit.models.gfl import GFL
from gflkit.seeding import seed_everything
from gflkit.training.meta import meta_train


def main(argv=None) -> None:
    """Parse the command line and print one row per (mode, moment)."""
    p = argparse.ArgumentParser()
    p.add_argument("family")
    p.add_argument("--modes", default="open,centered,paper,feature")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=0, help="meta-training steps before the second measurement (0: none)")
    a = p.parse_args(argv)
    collection = gflkit.load_collection(a.family)
    ep_cfg = EpisodeConfig(k_shot=10)
    sampler = EpisodeSampler(collection, "train", ep_cfg, a.seed).require_graphs()
    cache = GraphCache(collection)
    ids = sampler.graph_ids[:5]
    rows = []
    for mode in a.modes.split(","):
        cfg = replace(PRESETS["gfl"], gate_mode=mode)
        seed_everything(a.seed)
        models = [("init", GFL(collection.feat_size, cfg))]
        if a.steps:
            res = meta_train(collection, cfg, ep_cfg, TrainConfig(seed=a.seed, steps=a.steps), progress=False)
            models.append((f"trained (step {res.best_step})", res.model))
        for when, model in models:
            model.train()
            row = {"family": a.family, "gate_mode": mode, "when": when, **grad_norms(model, cache, sampler, ids, 1)}
            row["hierarchy_over_encoder"] = row["grad_hierarchy"] / row["grad_encoder"]
            stats = gate_and_relations(model, collection, ep_cfg, a.seed)
            row.update({k: v for k, v in stats.items() if k.startswith("gate_")})
            rows.append(row)
    pd.DataFrame(rows).to_csv(sys.stdout, index=False, float_format="%.3g")


if __name__ == "__main__":
    main()
