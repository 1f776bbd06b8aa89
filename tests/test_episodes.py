"""Support and query sampling: the paper's protocol, seeding, small classes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gflkit.config import EpisodeConfig
from gflkit.data import GraphCollection, build_graph
from gflkit.episodes import EpisodeSampler, sample_episode
from gflkit.errors import GFLError

# 30 nodes: class 0 x 12, class 1 x 10, class 2 x 5, and 3 unlabelled
LABEL = np.array([0] * 12 + [1] * 10 + [2] * 5 + [-1] * 3)
LABEL = LABEL[np.random.default_rng(0).permutation(LABEL.size)]


def _draw(cfg=EpisodeConfig(k_shot=3), seed=0, graph_id=0, episode=0):
    return sample_episode(torch.from_numpy(LABEL), 3, cfg, seed=seed, graph_id=graph_id, episode=episode)


def test_support_and_query_follow_the_protocol():
    ep = _draw()
    assert ep.support.shape == (3, 3) and ep.k_shot == 3 and ep.num_classes == 3
    for c in range(3):
        assert (LABEL[ep.support[c].numpy()] == c).all()
        assert len(set(ep.support[c].tolist())) == 3
    support = set(ep.support.flatten().tolist())
    query = ep.query.tolist()
    assert support.isdisjoint(query)
    labelled = set(np.flatnonzero(LABEL >= 0).tolist())
    assert set(query) == labelled - support  # every other labelled node, no unlabelled one
    assert len(query) == len(set(query)) == 27 - 9
    assert torch.equal(ep.query_label, torch.from_numpy(LABEL[ep.query.numpy()]))
    assert ep.query.dtype == ep.support.dtype == ep.query_label.dtype == torch.int64


def test_query_cap():
    full = _draw()
    capped = _draw(EpisodeConfig(k_shot=3, n_query=5))
    assert capped.query.numel() == 5
    assert torch.equal(capped.support, full.support)
    assert set(capped.query.tolist()) <= set(full.query.tolist())
    assert _draw(EpisodeConfig(k_shot=3, n_query=100)).query.numel() == full.query.numel()


def test_episode_is_seeded_by_seed_graph_and_index():
    ids = [(g, e) for g in range(3) for e in range(4)]
    forward = {key: _draw(graph_id=key[0], episode=key[1]) for key in ids}
    backward = {key: _draw(graph_id=key[0], episode=key[1]) for key in reversed(ids)}
    for key in ids:
        assert torch.equal(forward[key].support, backward[key].support)
        assert torch.equal(forward[key].query, backward[key].query)
    supports = {tuple(ep.support.flatten().tolist()) for ep in forward.values()}
    assert len(supports) == len(ids)  # different episodes and graphs differ
    assert not torch.equal(_draw(seed=1).support, _draw(seed=0).support)


def test_small_class_raises_with_graph_id():
    with pytest.raises(GFLError, match=r"graph 7: classes \[2\] have fewer than k_shot \+ 1 = 6"):
        _draw(EpisodeConfig(k_shot=5), graph_id=7)
    _draw(EpisodeConfig(k_shot=4))  # 5 labelled nodes are enough for k_shot = 4


def _graph(label) -> object:
    n = len(label)
    ring = np.arange(n)
    return build_graph(ring, (ring + 1) % n, n, torch.zeros(n, 2), torch.tensor(label))


@pytest.fixture
def uneven() -> GraphCollection:
    """Graph 1 has only two nodes of class 1."""
    ok = [0] * 6 + [1] * 6
    small = [0] * 6 + [1] * 2 + [-1] * 4
    return GraphCollection([_graph(ok), _graph(small), _graph(ok)], ["train"] * 3, ["a", "b"], name="uneven")


def test_sampler_skips_graphs_with_small_classes(uneven, caplog):
    sampler = EpisodeSampler(uneven, "train", EpisodeConfig(k_shot=3), seed=0)
    assert sampler.graph_ids == [0, 2] and len(sampler) == 2
    assert sampler.skipped == {1: [1]}
    assert "uneven/train: graphs 1 have a class" in caplog.text
    ep = sampler.episode(2, 5)
    same = sample_episode(uneven.graphs[2].ndata["label"], 2, EpisodeConfig(k_shot=3), seed=0, graph_id=2, episode=5)
    assert torch.equal(ep.support, same.support) and torch.equal(ep.query, same.query)
    assert EpisodeSampler(uneven, "val", EpisodeConfig(k_shot=3)).graph_ids == []


def test_sampler_error_names_the_graph(uneven):
    with pytest.raises(GFLError) as err:
        EpisodeSampler(uneven, "train", EpisodeConfig(k_shot=3, on_small="error"))
    message = str(err.value)
    assert "graphs 1 " in message and "`on_small=skip`" in message and "\n" not in message
    EpisodeSampler(uneven, "train", EpisodeConfig(k_shot=1, on_small="error"))  # fine with k_shot = 1


def test_query_is_every_labelled_node_outside_the_support_in_id_order():
    rng = np.random.default_rng(3)
    for i in range(30):
        label = rng.integers(-1, 4, int(rng.integers(60, 300)))
        label[:48] = np.repeat(np.arange(4), 12)  # every class has enough labelled nodes
        ep = sample_episode(label, 4, EpisodeConfig(k_shot=int(rng.integers(1, 11))), seed=0, graph_id=i, episode=i)
        want = np.setdiff1d(np.flatnonzero(label >= 0), ep.support.numpy().ravel())
        assert np.array_equal(ep.query.numpy(), want)
        assert np.array_equal(ep.query_label.numpy(), label[want])
