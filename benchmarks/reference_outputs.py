"""Write the GFL model's outputs and gradients on a fixed small batch to a file.

Run with a source tree of an earlier commit first on ``PYTHONPATH`` to record that
commit's outputs; ``tests/models/test_model.py`` checks that the current model gives
the same ones (the speed-ups must not change what the model computes)::

    git worktree add /tmp/base 2a76192
    PYTHONPATH=/tmp/base python benchmarks/reference_outputs.py tests/fixtures/gfl_outputs_2a76192.pt

The batch: the small synthetic family (seed 0), train graphs 0 and 1, episode 0
with 3 shots, a model seeded with 0 for each configuration of :data:`CONFIGS`.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

CONFIGS = {
    "default": {},
    "att-max": {"aggregator": "att", "pool": "max"},
    "jaccard": {"similarity": "jaccard"},
    "adamic-adar": {"similarity": "adamic-adar"},
    "pagerank-cosine": {"similarity": "pagerank", "distance": "cosine"},
    "no-gate": {"gate": False},
    "protonet": {"prototype": "mean", "recon": False, "gate": False},
}


def _modules():
    """``(make_family, SMALL_SPEC, EpisodeSampler, EpisodeConfig, GFLConfig, GFL, batch, prepare)``
    from the current layout or the one before ``gflkit.batching`` existed."""
    import gflkit  # noqa: F401  (before dgl)
    from gflkit.config import EpisodeConfig, GFLConfig
    from gflkit.data import SMALL_SPEC, make_synthetic_family
    from gflkit.episodes import EpisodeSampler
    from layout import gflkit_layout

    parts = gflkit_layout()
    GFL, batch_episodes, prepare_graph = parts.GFL, parts.batch_episodes, parts.prepare_graph
    return (make_synthetic_family, SMALL_SPEC, EpisodeSampler, EpisodeConfig, GFLConfig, GFL, batch_episodes,
            prepare_graph)


def reference_outputs() -> dict[str, dict[str, object]]:
    """Per configuration: logits, prototypes, recon loss, gate and parameter gradients."""
    import torch

    make_family, spec, Sampler, EpisodeConfig, GFLConfig, GFL, batch_episodes, prepare_graph = _modules()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the recorded outputs come from one thread
    try:
        return _outputs(make_family, spec, Sampler, EpisodeConfig, GFLConfig, GFL, batch_episodes, prepare_graph)
    finally:
        torch.set_num_threads(threads)


def _outputs(make_family, spec, Sampler, EpisodeConfig, GFLConfig, GFL, batch_episodes, prepare_graph):
    import torch

    family = make_family(spec, seed=0, name="small")
    sampler = Sampler(family, "train", EpisodeConfig(k_shot=3), seed=0)
    ids = sampler.graph_ids[:2]
    episodes = [sampler.episode(gid, 0) for gid in ids]
    batch = batch_episodes([prepare_graph(family.graphs[gid]) for gid in ids], episodes)
    args = batch if isinstance(batch, tuple) else (batch,)  # (graph, support, queries) before EpisodeBatch
    result = {}
    for name, change in CONFIGS.items():
        torch.manual_seed(0)
        model = GFL(family.feat_size, replace(GFLConfig(), **change))
        out = model(*args)
        loss, _ = model.loss(out, [ep.query_label for ep in episodes])
        loss.backward()
        row = {"logits": [s.detach() for s in out.logits], "prototypes": out.prototypes.detach(),
               "loss": loss.detach()}
        if out.gate is not None:
            row["gate"] = out.gate.detach()
        row["grads"] = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
        result[name] = row
    return result


if __name__ == "__main__":
    import torch

    torch.save(reference_outputs(), sys.argv[1])
    print(f"wrote {sys.argv[1]}", file=sys.stderr)
