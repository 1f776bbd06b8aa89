"""Transfer baselines of Table 2: training, adaptation, determinism, checkpoints and the CLI."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner

import gflkit  # noqa: F401  (DGL compat shim first)
from gflkit.config import EpisodeConfig, TrainConfig
from gflkit.episodes import EpisodeSampler
from gflkit.graphs import GraphCache
from gflkit.evaluation.scoring import graph_accuracies
from gflkit.models.baselines import TRANSFER
from gflkit.runs.checkpoints import load_checkpoint
from gflkit.training.meta import fit_transfer
from gflkit_cli.main import cli

EPISODES = EpisodeConfig(k_shot=10)
# A few steps are enough to clear chance (25%) on the small family: after 30
# steps the transfer baselines reach about 50-65% mean test accuracy.
QUICK = TrainConfig(steps=30, meta_batch=3, eval_every=10, seed=0)
OPTIONS = {"maml": {"first_order": True, "inner_steps": 2}, "agf": {"finetune_steps": 10},
           "gmeta": {"inner_steps": 2, "max_nodes": 32},
           "tlp": {"hidden_feats": 16, "out_feats": 8, "proj_feats": 8, "transductive_steps": 3},
           "tlp-bgrl": {"hidden_feats": 16, "out_feats": 8, "proj_feats": 8, "transductive_steps": 3}}


@pytest.fixture(scope="module")
def trained(small_family):
    return {
        name: fit_transfer(name, small_family, EPISODES, QUICK, options=OPTIONS.get(name), progress=False)
        for name in TRANSFER
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", ["agf", "knn", "matchingnet", "maml"])
def test_transfer_baseline_beats_chance(small_family, trained, name):
    result = trained[name]
    assert 1 <= result.best_step <= QUICK.steps
    assert 0 <= result.best_val <= 1
    assert {"step", "loss", "val_accuracy"} <= set(result.history.columns)
    sampler = EpisodeSampler(small_family, "test", EPISODES, seed=0)
    acc = graph_accuracies(result.model, sampler)
    assert np.mean(list(acc.values())) > 0.32


@pytest.mark.slow
def test_transfer_baseline_is_deterministic(small_family, trained):
    again = fit_transfer("matchingnet", small_family, EPISODES, QUICK, progress=False)
    first = trained["matchingnet"].model.state_dict()
    for key, value in again.model.state_dict().items():
        assert torch.equal(value, first[key]), key


def test_maml_inner_loop_lowers_support_loss(small_family, trained):
    model = trained["maml"].model
    sampler = EpisodeSampler(small_family, "test", EPISODES, seed=0)
    gid = sampler.graph_ids[0]
    g, ep = GraphCache(small_family)[gid], sampler.episode(gid, 0)
    params, losses = model.adapt(g, ep, steps=10)
    assert len(losses) == 11
    assert all(b < a for a, b in zip(losses, losses[1:]))  # a small step down the gradient each time
    assert set(params) == {name for name, _ in model.named_parameters()}
    # a larger inner step adapts much further
    model.options["inner_lr"] = 0.1
    try:
        _, fast = model.adapt(g, ep, steps=10)
    finally:
        model.options["inner_lr"] = OPTIONS["maml"].get("inner_lr", 0.001)
    assert fast[-1] < 0.9 * fast[0]


def test_maml_second_order_meta_gradient_reaches_encoder(small_family):
    model = TRANSFER["maml"](small_family.feat_size, 4, inner_steps=2, first_order=False)
    sampler = EpisodeSampler(small_family, "train", EPISODES, seed=0)
    gid = sampler.graph_ids[0]
    g, ep = GraphCache(small_family)[gid], sampler.episode(gid, 1)
    model.step_loss([g], [ep], [small_family.graphs[gid].ndata["label"]]).backward()
    assert model.encoder.conv1.weight.grad.abs().sum() > 0


def test_transfer_checkpoint_round_trip(small_family, trained, tmp_path):
    result = fit_transfer("knn", small_family, EPISODES, TrainConfig(steps=3, eval_every=3), options={"k": 3},
                          run_dir=tmp_path / "run", progress=False)
    model, meta = load_checkpoint(tmp_path / "run")
    assert meta["model"] == "knn" and meta["options"]["k"] == 3
    sampler = EpisodeSampler(small_family, "test", EPISODES, seed=0)
    gid = sampler.graph_ids[0]
    g, ep = GraphCache(small_family)[gid], sampler.episode(gid, 0)
    assert torch.equal(model.class_scores(g, list(ep.support)), result.model.class_scores(g, list(ep.support)))


def _csv(result) -> pd.DataFrame:
    assert result.exit_code == 0, result.output
    return pd.read_csv(io.StringIO(result.stdout))


def test_cli_trains_and_evaluates_maml(small_family_dir, tmp_path):
    runner = CliRunner()
    run = tmp_path / "maml"
    table = _csv(runner.invoke(cli, ["train", str(small_family_dir), "--model", "maml", "--steps", "5",
                                     "--eval-every", "5", "--run-dir", str(run)]))
    assert table.loc[0, "model"] == "maml" and table.loc[0, "n_graphs"] == 8
    again = _csv(runner.invoke(cli, ["evaluate", str(run), str(small_family_dir)]))
    assert again.loc[0, "model"] == "maml"
    assert again.loc[0, "accuracy"] == pytest.approx(table.loc[0, "accuracy"])


def test_cli_evaluates_label_propagation(small_family_dir):
    table = _csv(CliRunner().invoke(cli, ["evaluate", "--baseline", "lp", str(small_family_dir)]))
    assert table.loc[0, "model"] == "lp" and table.loc[0, "split"] == "test"
    assert 32 < table.loc[0, "accuracy"] <= 100


PARTS = [name for name in TRANSFER if TRANSFER[name](64, 4, **OPTIONS.get(name, {})).steps_in_parts]


def test_the_baselines_that_step_in_parts_are_the_ones_that_may():
    """Parts side by side need a mean over graphs, no rebinding of parameters and no random draws."""
    assert sorted(PARTS) == ["agf", "gmeta", "knn", "maml", "matchingnet", "transfer-head"]
    gin = TRANSFER["gmeta"](64, 4, encoder="gin")  # through functional_call
    assert not gin.steps_in_parts and not gin.adapts_in_threads


@pytest.mark.parametrize("name", PARTS)
def test_a_meta_batch_in_parts_gives_the_loss_and_gradients_of_one_piece(small_family, name, torch_threads):
    from gflkit.training._engine import graph_mean_loss

    torch_threads(2)
    torch.manual_seed(0)
    model = TRANSFER[name](small_family.feat_size, small_family.num_classes, **OPTIONS.get(name, {}))
    sampler = EpisodeSampler(small_family, "train", EPISODES, seed=0)
    cache = GraphCache(small_family)
    ids = sampler.graph_ids[:5]
    args = ([cache[i] for i in ids], [sampler.episode(i, 0) for i in ids],
            [small_family.graphs[i].ndata["label"] for i in ids])
    grads = []
    for workers in (1, 2):
        model.zero_grad()
        loss = graph_mean_loss(model, *args, workers=workers)
        loss.backward()
        grads.append((float(loss), [p.grad.clone() for p in model.parameters()]))
    (whole, g1), (parts, g2) = grads
    assert parts == pytest.approx(whole, rel=1e-5)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["knn", "gmeta", "maml"])
def test_a_baseline_trained_in_parts_gives_the_same_bits_on_any_thread_count(small_family, name, torch_threads):
    states = []
    for threads in (1, 2, 3):
        torch_threads(threads)
        result = fit_transfer(name, small_family, EPISODES, TrainConfig(steps=6, meta_batch=3, eval_every=3, seed=1),
                              options=OPTIONS.get(name), progress=False)
        states.append(result.model.state_dict())
    for state in states[1:]:
        assert all(torch.equal(states[0][k], state[k]) for k in state)


@pytest.mark.parametrize("name", ["agf", "gmeta", "maml", "tlp", "tlp-bgrl"])
def test_adapting_baselines_scored_side_by_side_give_the_records_of_one_thread(small_family, name, torch_threads):
    from gflkit.evaluation.scoring import graph_records

    torch.manual_seed(0)
    model = TRANSFER[name](small_family.feat_size, small_family.num_classes, **OPTIONS.get(name, {})).eval()
    assert model.adapts and model.adapts_in_threads
    sampler = EpisodeSampler(small_family, "test", EPISODES, seed=0)
    records = []
    for threads in (1, 2):
        torch_threads(threads)
        records.append(graph_records(model, sampler, 2, GraphCache(small_family)))
    pd.testing.assert_frame_equal(records[0], records[1])
