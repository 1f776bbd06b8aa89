"""Paired, multi-seed study of GFL's components on real families.

For each family, variant and seed: meta-train with the default settings, then
score every test graph on the same ``--episodes`` support draws. Writes one row
per (family, variant, seed, graph, episode) so that variants can be compared
pairwise over identical episodes::

    python scripts/component_study.py facebook cora --seeds 0,1,2 --episodes 20 -o study.csv
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

import pandas as pd

import gflkit
from gflkit.config import ABLATIONS, PRESETS, EpisodeConfig, TrainConfig
from gflkit.episodes import EpisodeSampler
from gflkit.evaluation.scoring import graph_records
from gflkit.training.meta import meta_train


def variants(names: list[str]) -> dict[str, object]:
    """Model configurations by name: presets and ``no-<component>`` ablations."""
    base = PRESETS["gfl"]
    table = {"gfl": base, "protonet": PRESETS["protonet"]}
    table.update({f"no-{k}": replace(base, **v) for k, v in ABLATIONS.items()})
    out = {}
    for n in names:
        if n in table:
            out[n] = table[n]
        else:  # key=value,key=value on top of gfl
            changes = {}
            for kv in n.split(","):
                k, v = kv.split("=")
                field = type(getattr(base, k))
                changes[k] = (v.lower() == "true") if field is bool else field(v)
            out[n] = replace(base, **changes)
    return out


def episode_accuracies(model, collection, ep_cfg, episodes: int, seed: int) -> list[dict]:
    """Query accuracy of every (test graph, episode), as gflkit's own evaluation computes it."""
    sampler = EpisodeSampler(collection, "test", ep_cfg, seed).require_graphs()
    records = graph_records(model, sampler, episodes)
    return [{"graph": int(r.graph_id), "episode": int(r.episode), "accuracy": float(r.accuracy)}
            for r in records.itertuples()]


def main(argv=None) -> None:
    """Parse the command line and print the results."""
    p = argparse.ArgumentParser()
    p.add_argument("families", nargs="+")
    p.add_argument("--variants", default="gfl,protonet")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--k-shot", type=int, default=10)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args(argv)
    rows = []
    for fam in a.families:
        collection = gflkit.load_collection(fam)
        ep_cfg = EpisodeConfig(k_shot=a.k_shot)
        for name, cfg in variants(a.variants.split(";")).items():
            for seed in map(int, a.seeds.split(",")):
                t = time.perf_counter()
                res = meta_train(collection, cfg, ep_cfg, TrainConfig(seed=seed, steps=a.steps), progress=False)
                accs = episode_accuracies(res.model, collection, ep_cfg, a.episodes, seed)
                for r in accs:
                    rows.append({"family": fam, "variant": name, "seed": seed, **r})
                mean = sum(r["accuracy"] for r in accs) / len(accs)
                print(f"{fam} {name} seed={seed} step={res.best_step} acc={100*mean:.2f} "
                      f"({time.perf_counter()-t:.0f}s)", file=sys.stderr, flush=True)
                pd.DataFrame(rows).to_csv(a.output, index=False)


if __name__ == "__main__":
    main()
