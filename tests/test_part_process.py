"""The second part of a 2-part training step in a forked process (gflkit.part_process)."""
from __future__ import annotations

import copy
import os
import signal
import sys
import time

import pytest
import torch

from gflkit.batching import GraphCache, StepLoss, one_thread
from gflkit.config import EpisodeConfig
from gflkit.episodes import EpisodeSampler
from gflkit.models.gfl import GFL
from gflkit.optim import Adam

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the part process is Linux-only")

#: Each step's meta-batch: ids repeat across steps and within one (drawn with replacement).
IDS = {1: [0, 1, 2, 3, 4], 2: [2, 3, 5, 5, 1], 3: [4, 0, 1, 2, 3], 4: [1, 2, 3, 4, 5], 5: [6, 7, 0, 1, 2]}


@pytest.fixture
def two_threads(torch_threads):
    torch_threads(2)


def _setup(family):
    sampler = EpisodeSampler(family, "train", EpisodeConfig(k_shot=3), seed=0)
    ids_of = {s: [sampler.graph_ids[i % len(sampler.graph_ids)] for i in ids] for s, ids in IDS.items()}
    return sampler, GraphCache(family), ids_of


def _train(family, steps, monkeypatch, process: bool):
    """Losses and final parameters of ``steps`` training steps, each as the loop takes it."""
    monkeypatch.setenv("GFLKIT_PART_PROCESS", "1" if process else "0")
    sampler, cache, ids_of = _setup(family)
    torch.manual_seed(0)
    model = GFL(family.feat_size)
    optimizer = Adam(model.parameters(), lr=0.01)
    step_loss = StepLoss(model, lambda sampler, step: ids_of.get(step))
    losses = []
    try:
        for step in steps:
            loss, parts = step_loss(cache, sampler, ids_of[step], step)
            optimizer.zero_grad()
            loss.backward()
            with one_thread():
                optimizer.step()
            losses.append((float(loss.detach()), parts))
        used = step_loss._process is not None
    finally:
        step_loss.close()
    return losses, [p.detach().clone() for p in model.parameters()], used


def test_the_part_process_gives_the_two_thread_numbers_to_the_last_bit(small_family, two_threads, monkeypatch):
    steps = [1, 2, 3, 5, 4]  # 5 after 3: a meta-batch nobody prepared
    by_process, params_process, used = _train(small_family, steps, monkeypatch, process=True)
    by_threads, params_threads, used_threads = _train(small_family, steps, monkeypatch, process=False)
    assert used and not used_threads
    assert by_process == by_threads
    assert all(torch.equal(a, b) for a, b in zip(params_process, params_threads))


def test_a_failure_in_the_other_process_reaches_the_training_process(small_family, two_threads, monkeypatch):
    monkeypatch.setenv("GFLKIT_PART_PROCESS", "1")
    sampler, cache, ids_of = _setup(small_family)
    episode = sampler.episode

    def failing(gid, step):
        if step == 3:
            raise ValueError(f"no episode for step {step}")
        return episode(gid, step)

    monkeypatch.setattr(sampler, "episode", failing)  # before the fork: the other process fails too
    model = GFL(small_family.feat_size)
    step_loss = StepLoss(model, lambda sampler, step: ids_of.get(step))
    try:
        for step in (1, 2):  # preparing step 3 fails during step 2, in one process or the other
            step_loss(cache, sampler, ids_of[step], step)
        step_loss.wait()  # waiting for the preparation does not raise either
        assert step_loss._process is not None
        with pytest.raises((RuntimeError, ValueError), match="no episode for step 3"):
            step_loss(cache, sampler, ids_of[3], 3)
        failed = step_loss._process
        assert failed.pid is None  # ended with the failed step
        step_loss(cache, sampler, ids_of[4], 4)  # a fresh process takes the next one
        assert step_loss._process is not failed and step_loss._process.pid is not None
    finally:
        step_loss.close()


def test_the_other_process_ends_with_close_and_its_death_is_reported(small_family, two_threads, monkeypatch):
    monkeypatch.setenv("GFLKIT_PART_PROCESS", "1")
    sampler, cache, ids_of = _setup(small_family)
    model = GFL(small_family.feat_size)
    step_loss = StepLoss(model, lambda sampler, step: ids_of.get(step))
    try:
        step_loss(cache, sampler, ids_of[1], 1)
        first = step_loss._process
        pid = first.pid
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(RuntimeError, match="part process ended unexpectedly"):
            for step in (2, 3):
                step_loss(cache, sampler, ids_of[step], step)
    finally:
        step_loss.close()
    assert step_loss._process is None and first.pid is None
    # a fresh StepLoss starts a fresh process, and close() ends it
    other = StepLoss(model, lambda sampler, step: ids_of.get(step))
    other(cache, sampler, ids_of[1], 1)
    pid = other._process.pid
    other.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie has ended
        return f.read().split(") ")[1][0] != "Z"


def test_no_part_process_when_switched_off_on_one_thread_or_for_other_models(small_family, monkeypatch,
                                                                              torch_threads):
    from gflkit.config import PRESETS

    sampler, cache, ids_of = _setup(small_family)
    cases = [("0", 2, GFL(small_family.feat_size)), ("1", 1, GFL(small_family.feat_size)),
             ("1", 2, GFL(small_family.feat_size, PRESETS["protonet"]))]
    for setting, n, model in cases:
        monkeypatch.setenv("GFLKIT_PART_PROCESS", setting)
        torch_threads(n)
        step_loss = StepLoss(model, lambda sampler, step: ids_of.get(step))
        step_loss(cache, sampler, ids_of[1], 1)
        assert step_loss._process is None
        step_loss.close()


def test_the_parameters_stay_the_models_own_after_sharing(small_family, two_threads, monkeypatch):
    monkeypatch.setenv("GFLKIT_PART_PROCESS", "1")
    sampler, cache, ids_of = _setup(small_family)
    model = GFL(small_family.feat_size)
    before = copy.deepcopy(model.state_dict())
    params = list(model.parameters())
    step_loss = StepLoss(model, lambda sampler, step: ids_of.get(step))
    try:
        step_loss(cache, sampler, ids_of[1], 1)
    finally:
        step_loss.close()
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    assert all(p.is_shared() for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_a_part_handed_over_through_shared_memory_gives_the_same_bits(small_family):
    from gflkit.batching import _batch_loss, _prepare_part
    from gflkit.part_process import _Handover

    sampler, cache, ids_of = _setup(small_family)
    model = GFL(small_family.feat_size)
    params = list(model.parameters())
    handover = _Handover(max_nodes=5 * 400, max_edges=5 * 4000, max_support=5 * 4 * 3, max_relations=5 * 4 * 3 * 3)
    for step in (1, 2):  # the buffers are written again for each step
        gids = ids_of[step][:3]
        episodes = [sampler.episode(g, step) for g in gids]
        batch, relations = _prepare_part(model, [cache[g] for g in gids], episodes)
        meta = handover.put(gids, episodes, batch, relations)
        taken_episodes, taken_batch, taken_relations = handover.take(meta, cache)
        assert [e.graph_id for e in taken_episodes] == gids
        assert all(torch.equal(a.support, b.support) and torch.equal(a.query, b.query)
                   and torch.equal(a.query_label, b.query_label) for a, b in zip(episodes, taken_episodes))
        assert torch.equal(taken_relations, relations) and torch.equal(taken_batch[1], batch[1])
        results = []
        for eps, b, rel in ((episodes, batch, relations), (taken_episodes, taken_batch, taken_relations)):
            loss, parts = _batch_loss(model, b, eps, rel)
            results.append((float(loss.detach()), parts, torch.autograd.grad(loss, params, allow_unused=True)))
        (l0, p0, g0), (l1, p1, g1) = results
        assert l0 == l1 and p0 == p1 and all(torch.equal(a, b) for a, b in zip(g0, g1))
