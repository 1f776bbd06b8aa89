"""The GFL model: shapes, every configuration, checkpoints, reproducible training."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import dgl
import pandas as pd
import numpy as np
import pytest
import torch

import gflkit
from gflkit.config import ABLATIONS, PRESETS, EpisodeConfig, GFLConfig, TrainConfig
from gflkit.episodes import EpisodeSampler
from gflkit.errors import GFLError
from gflkit.graphs import EpisodeBatch, batch_episodes, prepare_graph
from gflkit.models.gfl import GFL, upgrade_state_dict
from gflkit.runs.checkpoints import load_checkpoint, save_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from reference_outputs import CONFIGS as REFERENCE_CONFIGS, reference_outputs  # noqa: E402


@pytest.fixture(scope="module")
def batch(small_family):
    """Two train graphs of the small family with a 3-shot episode each."""
    sampler = EpisodeSampler(small_family, "train", EpisodeConfig(k_shot=3), seed=0)
    ids = sampler.graph_ids[:2]
    episodes = [sampler.episode(gid, 0) for gid in ids]
    made = batch_episodes([prepare_graph(small_family.graphs[gid]) for gid in ids], episodes)
    return made.graph, made.support, made.queries, [ep.query_label for ep in episodes]


def test_forward_shapes(batch, small_family):
    bg, support, queries, labels = batch
    torch.manual_seed(0)
    model = GFL(small_family.feat_size)
    out = model(EpisodeBatch(bg, support, queries))
    assert support.shape == (2, 4, 3)
    assert [s.shape for s in out.logits] == [(q.numel(), 4) for q in queries]
    assert out.prototypes.shape == (2, 4, 32)
    assert out.recon_loss.shape == () and float(out.recon_loss.detach()) >= 0
    assert out.gate.shape == (2, model.pgnn.num_params)
    assert bool(((out.gate > 0) & (out.gate < 1)).all())
    loss, parts = model.loss(out, labels)
    assert set(parts) == {"ce", "recon"}
    assert float(loss.detach()) == pytest.approx(parts["ce"] + parts["recon"], rel=1e-5)


@pytest.mark.parametrize("distance", ["inner", "cosine", "euclidean"])
def test_query_scores_are_the_distance_of_the_queries_on_either_path(batch, small_family, distance):
    """Many queries are scored through every node's scores, few through a gather: both
    give the distance of each query to its own graph's prototypes, and its gradient."""
    from gflkit.nn.distance import logits

    bg, support, queries, _ = batch
    torch.manual_seed(0)
    model = GFL(small_family.feat_size, GFLConfig(distance=distance))
    z = torch.randn(bg.num_nodes(), 32, requires_grad=True)
    protos = torch.randn(2, 4, 32, requires_grad=True)
    calls = []
    blocks = model.distance.blocks
    model.distance.blocks = lambda *args: calls.append(len(args[0])) or blocks(*args)
    assert 2 * sum(len(q) for q in queries) >= bg.num_nodes()
    for qs in (queries, [q[:2] for q in queries]):  # most nodes, then a few
        got = model._query_scores(bg, z, protos, qs)
        expected = [logits(z[q], protos[b], distance) for b, q in enumerate(qs)]
        weights = [torch.randn_like(e) for e in expected]
        grads = [torch.autograd.grad(sum((w * s).sum() for w, s in zip(weights, scores)), (z, protos))
                 for scores in (got, expected)]
        for a, b in zip(got, expected, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
        for a, b in zip(*grads):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert calls == [bg.num_nodes()]  # every node scored for the many queries only


def test_batch_episodes_shifts_node_ids(small_family):
    sampler = EpisodeSampler(small_family, "train", EpisodeConfig(k_shot=2), seed=0)
    graphs = [prepare_graph(small_family.graphs[i]) for i in (0, 1)]
    eps = [sampler.episode(0, 0), sampler.episode(1, 0)]
    made = batch_episodes(graphs, eps)
    bg, support, queries = made.graph, made.support, made.queries
    assert made.features is None and made.symmetric is True  # the family's graphs are undirected
    n0 = graphs[0].num_nodes()
    assert torch.equal(support[1], eps[1].support + n0) and torch.equal(queries[0], eps[0].query)
    assert torch.equal(bg.ndata["feat"][support[1].flatten()], graphs[1].ndata["feat"][eps[1].support.flatten()])
    assert int(graphs[0].in_degrees().min()) >= 1 and graphs[0].has_edges_between(0, 0)  # self-loops


def test_stored_graph_data_only_saves_work(batch, small_family):
    """The normalisation stored by prepare_graph changes no result."""
    bg, support, queries, _ = batch
    bare = dgl.graph(bg.edges(), num_nodes=bg.num_nodes())
    bare.set_batch_num_nodes(bg.batch_num_nodes())
    bare.set_batch_num_edges(bg.batch_num_edges())
    bare.ndata["feat"] = bg.ndata["feat"]
    torch.manual_seed(0)
    model = GFL(small_family.feat_size, GFLConfig(aggregator="att"))
    a, b = model(EpisodeBatch(bg, support, queries)), model(EpisodeBatch(bare, support, queries))
    for x, y in zip(a.logits, b.logits):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(a.recon_loss, b.recon_loss, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(a.gate, b.gate)


REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "gfl_outputs_2a76192.pt"


@pytest.mark.parametrize("name", list(REFERENCE_CONFIGS))
def test_outputs_and_gradients_equal_the_earlier_model(name):
    """Logits, prototypes, gate, loss and every gradient as the model computed them
    before the speed-ups (recorded by ``benchmarks/reference_outputs.py`` at 2a76192)."""
    expected = torch.load(REFERENCE, weights_only=True)[name]
    got = _current_outputs()[name]
    tol = {"rtol": 1e-4, "atol": 1e-5}
    for a, b in zip(got["logits"], expected["logits"], strict=True):
        torch.testing.assert_close(a, b, **tol)
    torch.testing.assert_close(got["prototypes"], expected["prototypes"], **tol)
    torch.testing.assert_close(got["loss"], expected["loss"], **tol)
    assert ("gate" in got) == ("gate" in expected)
    if "gate" in got:
        torch.testing.assert_close(got["gate"], expected["gate"], **tol)
    expected_grads = upgrade_state_dict(expected["grads"])  # recorded under 0.1.0's parameter names
    assert set(got["grads"]) == set(expected_grads)
    for key, grad in expected_grads.items():
        torch.testing.assert_close(got["grads"][key], grad, **tol, msg=lambda m, key=key: f"{key}: {m}")


_OUTPUTS: dict = {}


def _current_outputs() -> dict:
    if not _OUTPUTS:
        _OUTPUTS.update(reference_outputs())
    return _OUTPUTS


@pytest.mark.parametrize("cfg", [GFLConfig(), GFLConfig(aggregator="att", similarity="jaccard"),
                                 GFLConfig(gate=False), PRESETS["protonet"],
                                 GFLConfig(similarity="combined", gate_mode="feature")],
                         ids=["default", "att-jaccard", "no-gate", "protonet", "combined-feature-gate"])
def test_class_scores_equal_forward_on_each_episode(small_family, cfg):
    """One encoder pass for many episodes of a graph (shared embeddings) gives each episode's forward logits."""
    sampler = EpisodeSampler(small_family, "test", EpisodeConfig(k_shot=3), seed=0)
    gid = sampler.graph_ids[0]
    g = prepare_graph(small_family.graphs[gid])
    episodes = [sampler.episode(gid, e) for e in range(7)]
    torch.manual_seed(0)
    model = GFL(small_family.feat_size, cfg).eval()
    with torch.no_grad():
        expected = [model(batch_episodes([g], [ep])).logits[0] for ep in episodes]
    z = model.shared_embeddings(g)
    for ep, b in zip(episodes, expected):
        torch.testing.assert_close(model.class_scores(g, list(ep.support), z, nodes=ep.query), b,
                                   rtol=1e-5, atol=1e-5)


CONFIGS = {
    **{f"preset-{name}": cfg for name, cfg in PRESETS.items()},
    **{f"ablation-{name}": replace(PRESETS["gfl"], **change) for name, change in ABLATIONS.items()},
    "att": GFLConfig(aggregator="att"),
    "max-pool": GFLConfig(pool="max"),
    **{f"similarity-{s}": GFLConfig(similarity=s)
       for s in ("jaccard", "adamic-adar", "pagerank", "ppr", "learned", "combined")},
    "gate-feature": GFLConfig(gate_mode="feature"),
    **{f"distance-{d}": GFLConfig(distance=d) for d in ("cosine", "euclidean")},
    **{f"encoder-{e}": GFLConfig(encoder=e) for e in ("sage", "gat", "gin")},
    "encoder-gat-protonet": replace(PRESETS["protonet"], encoder="gat"),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_configuration_runs_forward_and_backward(batch, small_family, name):
    bg, support, queries, labels = batch
    cfg = CONFIGS[name]
    torch.manual_seed(0)
    model = GFL.from_config(cfg, small_family.feat_size)
    out = model(EpisodeBatch(bg, support, queries))
    loss, parts = model.loss(out, labels)
    loss.backward()
    assert torch.isfinite(loss)
    assert ("recon" in parts) == cfg.recon
    assert (out.gate is not None) == cfg.uses_hierarchy
    untrained = [n for n, p in model.encoder.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not untrained, f"encoder parameters without a gradient: {untrained}"
    if cfg.uses_hierarchy:
        assert model.gate.linear.weight.grad is not None
    scorer = getattr(model.prototype, "scorer", None)
    if scorer is not None:  # learned relation weights train with the rest
        assert float(scorer.bilinear.grad.abs().sum()) > 0


def test_ablations_remove_modules(small_family):
    full = GFL(small_family.feat_size, GFLConfig())
    assert full.hierarchy is not None and full.gate is not None and full.pgnn is not None and full.decoder is not None
    no_gate = GFL(small_family.feat_size, replace(GFLConfig(), gate=False))
    assert no_gate.hierarchy is None and no_gate.gate is None and no_gate.pgnn is not None
    assert not any(name.startswith(("hierarchy.", "gate.")) for name in no_gate.state_dict())
    protonet = GFL(small_family.feat_size, PRESETS["protonet"])
    assert protonet.pgnn is None and protonet.decoder is None and protonet.gate is None
    flat = GFL(small_family.feat_size, replace(GFLConfig(), levels=1))
    assert flat.hierarchy.levels == 1


def test_mean_prototype_is_the_support_mean(batch, small_family):
    bg, support, queries, _ = batch
    model = GFL(small_family.feat_size, PRESETS["protonet"])
    out = model(EpisodeBatch(bg, support, queries))
    z = model.embed(bg)
    torch.testing.assert_close(out.prototypes, z[support].mean(2))
    torch.testing.assert_close(out.logits[1], z[queries[1]] @ out.prototypes[1].t())


def test_checkpoint_round_trip(batch, small_family, tmp_path):
    bg, support, queries, _ = batch
    cfg = GFLConfig(aggregator="att", levels=2, clusters=(16,))
    torch.manual_seed(3)
    model = GFL(small_family.feat_size, cfg)
    meta = {"format": "gflkit.checkpoint", "model": "gfl", "model_config": gflkit.config.to_dict(cfg),
            "in_feats": small_family.feat_size, "dataset": "small", "seed": 3}
    path = save_checkpoint(model, meta, tmp_path / "run" / "best.pt")
    raw = torch.load(path, weights_only=True)
    assert raw["model_config"]["clusters"] == [16] and set(raw["state_dict"]) == set(model.state_dict())
    loaded, loaded_meta = load_checkpoint(path)  # a checkpoint file by itself, no config.json beside it
    with pytest.raises(GFLError, match="config.json: missing"):
        load_checkpoint(tmp_path / "run")  # a folder is a run, whose config.json vouches for its best.pt
    assert loaded.cfg == cfg and not loaded.training
    assert loaded_meta["dataset"] == "small" and "state_dict" not in loaded_meta
    model.eval()
    with torch.no_grad():
        a, b = model(EpisodeBatch(bg, support, queries)), loaded(EpisodeBatch(bg, support, queries))
    assert all(torch.equal(x, y) for x, y in zip(a.logits, b.logits))


def test_load_checkpoint_rejects_other_files(tmp_path):
    text = tmp_path / "notes.pt"
    text.write_text("not a checkpoint")
    with pytest.raises(GFLError, match="not a loadable gflkit checkpoint"):
        load_checkpoint(text)
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, other)
    with pytest.raises(GFLError, match="not a gflkit checkpoint"):
        load_checkpoint(other)
    with pytest.raises(GFLError, match="no such checkpoint"):
        load_checkpoint(tmp_path / "missing")


def test_seeded_training_is_reproducible(small_family):
    runs = [
        gflkit.train(small_family, train_cfg=TrainConfig(steps=5, eval_every=5), eval_split=None, progress=False,
                     return_result=True, run_dir=False)[0]
        for _ in range(2)
    ]
    a, b = (r.model.state_dict() for r in runs)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    history = [r.history.drop(columns="seconds") for r in runs]
    pd.testing.assert_frame_equal(history[0], history[1])
    assert list(history[0]["step"]) == [1, 2, 3, 4, 5] and history[0]["val_accuracy"].notna().sum() == 1
    assert runs[0].best_step == 5


def test_grad_clip_bounds_the_update(small_family):
    import gflkit
    from gflkit.config import TrainConfig
    from gflkit.errors import GFLError

    with pytest.raises(GFLError, match="grad_clip"):
        TrainConfig(grad_clip=0)
    plain, _ = gflkit.train(small_family, train_cfg=TrainConfig(steps=2, eval_every=2), eval_split=None, progress=False,
                            return_result=True, run_dir=False)
    clipped, _ = gflkit.train(small_family, train_cfg=TrainConfig(steps=2, eval_every=2, grad_clip=1e-3),
                              eval_split=None, progress=False, return_result=True, run_dir=False)
    a, b = plain.model.state_dict(), clipped.model.state_dict()
    assert any(not torch.equal(a[k], b[k]) for k in a)


def _meta_batch(small_family, size: int = 4):
    sampler = EpisodeSampler(small_family, "train", EpisodeConfig(k_shot=3), seed=0)
    ids = sampler.graph_ids[:size]
    return [prepare_graph(small_family.graphs[gid]) for gid in ids], [sampler.episode(gid, 1) for gid in ids]


@pytest.mark.parametrize("workers", [2, 3])
def test_meta_batch_in_parts_gives_the_whole_batch_loss_and_gradients(small_family, workers):
    from gflkit.training._engine import meta_batch_loss

    graphs, episodes = _meta_batch(small_family)
    torch.manual_seed(0)
    model = GFL(small_family.feat_size, GFLConfig(aggregator="att"))
    results = []
    for n in (1, workers, workers):
        model.zero_grad()
        loss, parts = meta_batch_loss(model, graphs, episodes, workers=n)
        loss.backward()
        results.append((float(loss.detach()), parts, [p.grad.clone() for p in model.parameters()]))
    (whole, whole_parts, whole_grads), (split, split_parts, split_grads), again = results
    assert split == pytest.approx(whole, rel=1e-5)
    assert split_parts == pytest.approx(whole_parts, rel=1e-5)
    for a, b in zip(split_grads, whole_grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert split == again[0] and all(torch.equal(a, b) for a, b in zip(split_grads, again[2]))  # bit-for-bit


@pytest.mark.parametrize("model_name", ["gfl", "protonet"])
def test_meta_batch_in_parts_on_threads_matches_the_whole_batch(small_family, model_name):
    """The default path of training: the parts on the pool's threads, each part's
    relational structure prepared on its own thread."""
    from gflkit.training._engine import meta_batch_loss

    graphs, episodes = _meta_batch(small_family, size=5)
    torch.manual_seed(0)
    model = GFL(small_family.feat_size, PRESETS[model_name])
    results = []
    for n in (1, 2):
        model.zero_grad()
        loss, _ = meta_batch_loss(model, graphs, episodes, workers=n)
        loss.backward()
        results.append((float(loss.detach()), [p.grad.clone() for p in model.parameters()]))
    assert results[1][0] == pytest.approx(results[0][0], rel=1e-5)
    for a, b in zip(results[1][1], results[0][1]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_prepare_computes_the_relational_structure_ahead_and_forward_finds_it(small_family, monkeypatch):
    from gflkit.nn import relation

    graphs, episodes = _meta_batch(small_family)
    made = batch_episodes(graphs, episodes)
    bg, support, queries = made.graph, made.support, made.queries
    torch.manual_seed(0)
    model = GFL(small_family.feat_size)
    plain = model(batch_episodes(graphs, episodes))  # another batched graph: computed in the forward pass
    model.prepare(made)
    weights = model.prototype.relations(bg, support)
    assert weights.shape == (*support.shape, support.shape[-1])
    # Per graph, on each graph alone, the structure is the same to the last bit.
    alone = torch.cat([model.prototype.relations(g, ep.support.unsqueeze(0)) for g, ep in zip(graphs, episodes)])
    assert torch.equal(alone, weights)
    calls = []
    real = relation.support_similarity
    monkeypatch.setattr(relation, "support_similarity", lambda *a, **k: calls.append(1) or real(*a, **k))
    out = model(made)
    assert calls == []  # found, not computed again
    assert torch.equal(out.prototypes, plain.prototypes)
    assert all(torch.equal(a, b) for a, b in zip(out.logits, plain.logits))
    model(EpisodeBatch(bg, support.flip(-1), queries))  # other support sets: their own structure
    assert calls == [1]
    GFL(small_family.feat_size, PRESETS["protonet"]).prepare(made)  # nothing to prepare


def test_one_graphs_relations_are_remembered_per_support_set_and_setting(small_family):
    """Scoring a graph's episodes again (each validation round) reuses their relation
    weights; other support sets and other settings get their own."""
    sampler = EpisodeSampler(small_family, "val", EpisodeConfig(k_shot=3), seed=0)
    gid = sampler.graph_ids[0]
    g = prepare_graph(small_family.graphs[gid])
    support = torch.stack([sampler.episode(gid, e).support for e in range(2)])
    torch.manual_seed(0)
    proto = GFL(small_family.feat_size).prototype
    fresh = lambda s: proto.relations(prepare_graph(small_family.graphs[gid]), s, one_graph=True)  # noqa: E731
    attributes = set(vars(g))
    first = proto.relations(g, support, one_graph=True)
    assert proto.relations(g, support, one_graph=True) is first  # remembered
    assert set(vars(g)) == attributes  # by gflkit.nn.relation, not on the graph
    assert torch.equal(first, fresh(support))
    assert torch.equal(proto.relations(g, support[:1], one_graph=True), fresh(support[:1]))
    proto.hops = 1  # another setting: computed again, with it
    again = proto.relations(g, support, one_graph=True)
    assert again is not first and torch.equal(again, fresh(support))


def test_an_error_in_the_relations_computed_ahead_reaches_the_caller(small_family, monkeypatch):
    from gflkit.training._engine import meta_batch_loss
    from gflkit.nn import GraphPrototype

    graphs, episodes = _meta_batch(small_family)
    model = GFL(small_family.feat_size)

    def broken(self, g, support, one_graph=False):
        raise RuntimeError("no structure")

    monkeypatch.setattr(GraphPrototype, "relations", broken)
    with pytest.raises(RuntimeError, match="no structure"):
        meta_batch_loss(model, graphs, episodes, workers=2)


def test_parts_have_about_the_same_nodes():
    from gflkit.training._engine import split_by_nodes

    parts = split_by_nodes([6000, 3000, 5000, 3500, 4000], 2)
    assert sorted(int(i) for p in parts for i in p) == [0, 1, 2, 3, 4]
    assert [p.tolist() for p in parts] == [[1, 2, 4], [0, 3]]  # 12,000 and 9,500 nodes; by count: 14,000 and 7,500
    assert [p.tolist() for p in split_by_nodes([4500] * 5, 2)] == [[0, 2, 4], [1, 3]]
    assert [p.tolist() for p in split_by_nodes([100, 1, 1, 1, 1], 2)] == [[0], [1, 2, 3, 4]]
    assert [p.tolist() for p in split_by_nodes([7], 1)] == [[0]]
    rng = np.random.default_rng(0)
    for _ in range(50):
        sizes = rng.integers(1, 100, rng.integers(2, 9)).tolist()
        k = int(rng.integers(1, len(sizes) + 1))
        parts = split_by_nodes(sizes, k)
        loads = [sum(sizes[i] for i in p) for p in parts]
        assert all(len(p) for p in parts) and sorted(i for p in parts for i in p.tolist()) == list(range(len(sizes)))
        assert loads == sorted(loads, reverse=True)
        assert max(loads) <= sum(sizes) / k + max(sizes)  # the greedy bound
    with pytest.raises(ValueError, match="3 graphs among 4"):
        split_by_nodes([1, 2, 3], 4)


def test_meta_batch_parts_do_not_follow_the_threads_and_avoid_dropout(small_family, torch_threads):
    from gflkit.training._engine import STEP_PARTS, meta_batch_workers

    model = GFL(small_family.feat_size)
    for threads in (1, 2, 3, 8):
        torch_threads(threads)
        assert meta_batch_workers(model, 5) == STEP_PARTS == 2
        assert meta_batch_workers(model, 1) == 1
    with torch.no_grad():
        assert meta_batch_workers(model, 5) == 1
    assert meta_batch_workers(GFL(small_family.feat_size, GFLConfig(dropout=0.5)), 5) == 1


@pytest.mark.slow
def test_seeded_training_gives_the_same_bits_on_any_thread_count(small_family, torch_threads):
    """Trained weights and the result row do not depend on how many torch threads computed them."""
    import gflkit

    def trained(threads: int):
        torch_threads(threads)
        result, row = gflkit.train(small_family, train_cfg=TrainConfig(steps=6, eval_every=3), run_dir=False,
                                   progress=False, return_result=True)
        return result.model.state_dict(), row

    (ref, ref_row), *others = [trained(t) for t in (1, 2, 3)]
    for state, row in others:
        assert all(torch.equal(ref[k], state[k]) for k in ref)
        assert row.equals(ref_row)


@pytest.mark.slow
def test_meta_batch_parts_may_share_a_graph(small_family):
    """A meta-batch drawn with replacement holds one graph in several parts at once."""
    from gflkit.training._engine import meta_batch_loss

    sampler = EpisodeSampler(small_family, "train", EpisodeConfig(k_shot=3), seed=0)
    gid = sampler.graph_ids[0]
    model = GFL(small_family.feat_size)
    values = set()
    ep = sampler.episode(gid, 0)
    for _ in range(40):
        g = prepare_graph(small_family.graphs[gid])  # fresh: nothing DGL builds lazily exists yet
        loss, _ = meta_batch_loss(model, [g] * 8, [ep] * 8, workers=4)
        values.add(float(loss.detach()))
    assert len(values) == 1


def test_gfl_multiplies_each_graphs_features_apart(small_family):
    """With the GCN encoder (no dropout), the first layer multiplies each graph's rows of the
    batched features and sums its weight gradient graph by graph; other encoders take the
    features whole."""
    graphs, episodes = _meta_batch(small_family, size=3)
    made = batch_episodes(graphs, episodes)
    bg = made.graph
    torch.manual_seed(0)
    gcn = GFL(small_family.feat_size)
    parts = gcn._feature_parts(made)
    assert [p.shape[0] for p in parts] == [g.num_nodes() for g in graphs]
    assert torch.equal(torch.cat(parts), bg.ndata["feat"])
    assert GFL(small_family.feat_size, GFLConfig(encoder="sage"))._feature_parts(made) is None
    assert GFL(small_family.feat_size, GFLConfig(dropout=0.5))._feature_parts(made) is None
    torch.testing.assert_close(gcn.embed(bg, parts), gcn.embed(bg))


def _loss_and_grads(model, call):
    model.zero_grad()
    loss, parts = call()
    loss.backward()
    return float(loss.detach()), parts, [p.grad.clone() for p in model.parameters()]


def _same_bits(a, b) -> bool:
    return a[0] == b[0] and a[1] == b[1] and all(torch.equal(x, y) for x, y in zip(a[2], b[2]))


@pytest.mark.parametrize("model_name", ["gfl", "protonet"])
def test_a_batch_without_its_features_gives_the_same_bits(small_family, model_name):
    graphs, episodes = _meta_batch(small_family, size=3)
    torch.manual_seed(0)
    model = GFL(small_family.feat_size, PRESETS[model_name])
    assert model.takes_feature_parts
    labels = [ep.query_label for ep in episodes]

    def run(features: bool):
        made = batch_episodes(graphs, episodes, features=features)
        assert ("feat" in made.graph.ndata) == features
        return _loss_and_grads(model, lambda: model.loss(model(made), labels))

    assert _same_bits(run(False), run(True))
    bare = batch_episodes(graphs, episodes, features=False)
    assert [f.data_ptr() for f in bare.features] == [g.ndata["feat"].data_ptr() for g in graphs]
    assert batch_episodes(graphs, episodes).features is None


@pytest.mark.parametrize("model_name", ["gfl", "protonet"])
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_prepared_meta_batch_gives_the_loss_computed_from_scratch(small_family, model_name, workers):
    from gflkit.training._engine import meta_batch_loss, prepare_meta_batch

    graphs, episodes = _meta_batch(small_family, size=5)
    torch.manual_seed(0)
    model = GFL(small_family.feat_size, PRESETS[model_name])
    plain = _loss_and_grads(model, lambda: meta_batch_loss(model, graphs, episodes, workers=workers))
    prepared = prepare_meta_batch(model, graphs, episodes, workers)
    assert len(prepared.groups) == workers and len(prepared.batches) == workers
    ready = _loss_and_grads(model, lambda: meta_batch_loss(model, [], [], prepared=prepared))
    assert _same_bits(ready, plain)


def _step_sampler(small_family):
    return EpisodeSampler(small_family, "train", EpisodeConfig(k_shot=3), seed=0)


@pytest.mark.parametrize("model_name", ["gfl", "protonet"])
def test_step_loss_prepares_the_next_step_without_changing_a_bit(small_family, model_name, monkeypatch):
    from gflkit.training._engine import StepLoss, meta_batch_loss
    from gflkit.graphs import GraphCache

    sampler, cache = _step_sampler(small_family), GraphCache(small_family)
    ids_of = {1: [0, 1, 2, 3, 4], 2: [2, 3, 5, 5, 1], 3: [4, 0, 1, 2, 3], 4: [1, 2, 3, 4, 5], 5: [0, 1, 2, 3, 4]}
    ids_of = {s: [sampler.graph_ids[i % len(sampler.graph_ids)] for i in ids] for s, ids in ids_of.items()}
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        torch.manual_seed(0)
        model = GFL(small_family.feat_size, PRESETS[model_name])
        step_loss = StepLoss(model, lambda sampler, step: ids_of.get(step))
        for step in (1, 2, 3):
            ahead = _loss_and_grads(model, lambda step=step: step_loss(cache, sampler, ids_of[step], step))
            assert step_loss._ahead is not None and step_loss._ahead[0] == (tuple(ids_of[step + 1]), step + 1)
            graphs = [cache[gid] for gid in ids_of[step]]
            plain = _loss_and_grads(model, lambda graphs=graphs, step=step: meta_batch_loss(
                model, graphs, [sampler.episode(gid, step) for gid in ids_of[step]]))
            assert _same_bits(ahead, plain)
        # The loop asks for another meta-batch than the one prepared: it is computed from scratch.
        other = [sampler.graph_ids[0]] * 5
        ahead = _loss_and_grads(model, lambda: step_loss(cache, sampler, other, 4))
        plain = _loss_and_grads(model, lambda: meta_batch_loss(model, [cache[other[0]]] * 5,
                                                               [sampler.episode(other[0], 4)] * 5))
        assert _same_bits(ahead, plain)
        step_loss.wait()
        assert step_loss._ahead is not None and all(f.done() for f in step_loss._ahead[2])
    finally:
        torch.set_num_threads(threads)


def test_jobs_after_the_parts_run_once_each_on_the_parts_threads(small_family):
    import threading
    import time

    from gflkit.training._engine import meta_batch_loss

    graphs, episodes = _meta_batch(small_family, size=5)
    model = GFL(small_family.feat_size)
    ran, lock = [], threading.Lock()

    def job(i):
        def run():
            with lock:
                ran.append((i, threading.current_thread().name))
        return run

    meta_batch_loss(model, graphs, episodes, workers=2, then=[job(i) for i in range(6)])
    for _ in range(200):  # every job has started; a helper thread may still be in its last one
        with lock:
            if len(ran) == 6:
                break
        time.sleep(0.01)
    assert sorted(i for i, _ in ran) == list(range(6))  # each job once
    ran.clear()
    meta_batch_loss(model, graphs, episodes, workers=1, then=[job(i) for i in range(3)])
    assert ran == []  # one part: no second thread to fill


def test_step_loss_prepares_on_one_thread_in_turn_and_nothing_without_next_ids(small_family):
    from gflkit.training._engine import StepLoss
    from gflkit.graphs import GraphCache

    sampler, cache = _step_sampler(small_family), GraphCache(small_family)
    ids = sampler.graph_ids[:4]
    model = GFL(small_family.feat_size)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = StepLoss(model, lambda sampler, step: ids)
        one(cache, sampler, ids, 1)
        assert one._ahead is not None and all(f.done() for f in one._ahead[2])  # prepared after the parts
        torch.set_num_threads(2)
        unknown = StepLoss(model)
        unknown(cache, sampler, ids, 1)
        unknown.wait()  # nothing to wait for
        assert unknown._ahead is None
        last = StepLoss(model, lambda sampler, step: None)  # the last step: no next one
        last(cache, sampler, ids, 1)
        assert last._ahead is None
    finally:
        torch.set_num_threads(threads)


def test_step_loss_in_one_piece_when_parallel_steps_is_off(small_family, torch_threads):
    from gflkit.training._engine import StepLoss, meta_batch_loss
    from gflkit.graphs import GraphCache
    from gflkit.config import hashed_dict
    from gflkit.training.meta import _gfl_step

    sampler, cache = _step_sampler(small_family), GraphCache(small_family)
    ids = sampler.graph_ids[:4]
    torch_threads(2)
    torch.manual_seed(0)
    model = GFL(small_family.feat_size)
    whole = StepLoss(model, lambda sampler, step: ids, parallel=False)
    got = _loss_and_grads(model, lambda: whole(cache, sampler, ids, 1))
    assert whole._ahead is None  # one part: nothing prepared ahead
    plain = _loss_and_grads(model, lambda: meta_batch_loss(model, [cache[g] for g in ids],
                                                           [sampler.episode(g, 1) for g in ids], workers=1))
    assert _same_bits(got, plain)
    assert _gfl_step(model, TrainConfig(parallel_steps=False)).parallel is False
    assert _gfl_step(model, TrainConfig()).parallel is True
    # recorded in the run's settings; at its default it leaves run names as they were
    assert "parallel_steps" not in hashed_dict(TrainConfig())
    assert hashed_dict(TrainConfig(parallel_steps=False))["parallel_steps"] is False


def test_an_error_while_preparing_ahead_reaches_the_step_that_needs_it(small_family, monkeypatch):
    from gflkit.training._engine import StepLoss
    from gflkit.graphs import GraphCache

    sampler, cache = _step_sampler(small_family), GraphCache(small_family)
    ids = sampler.graph_ids[:4]
    model = GFL(small_family.feat_size)
    calls = []
    real = sampler.episode

    def episode(gid, step):
        calls.append(step)
        if step == 2:
            raise RuntimeError("no episode for step 2")
        return real(gid, step)

    monkeypatch.setattr(sampler, "episode", episode)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        step_loss = StepLoss(model, lambda sampler, step: ids)
        step_loss(cache, sampler, ids, 1)  # step 1 itself is fine; preparing step 2 fails
        step_loss.wait()
        assert 2 in calls
        with pytest.raises(RuntimeError, match="no episode for step 2"):
            step_loss(cache, sampler, ids, 2)
    finally:
        torch.set_num_threads(threads)


def test_graph_cache_makes_each_graph_once_when_threads_ask_together(small_family):
    from concurrent.futures import ThreadPoolExecutor

    from gflkit.graphs import GraphCache

    cache = GraphCache(small_family)
    ids = list(range(len(small_family.graphs))) * 8
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda gid: (gid, cache[gid]), ids))
    for gid, g in got:
        assert g is cache[gid]  # one object per graph, whichever thread made it
        assert g.num_nodes() == small_family.graphs[gid].num_nodes()
        assert "csc" in g.formats()["created"]  # built at once, not lazily by a later reader
