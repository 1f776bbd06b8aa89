"""TLP (transductive linear probing): GRACE / BGRL / supervised pretraining, the probe, runs and the CLI."""
from __future__ import annotations

import math
import time

import dgl
import numpy as np
import pandas as pd
import pytest
import torch
from cli_helpers import csv_table, invoke, one_line_error

import gflkit
from gflkit.config import EpisodeConfig, TrainConfig
from gflkit.data import make_synthetic_family
from gflkit.data.synthetic import SyntheticSpec
from gflkit.episodes import EpisodeSampler
from gflkit.errors import GFLError
from gflkit.evaluation.scoring import graph_accuracies
from gflkit.graphs import GraphCache, prepare_graph
from gflkit.models.baselines import TRANSFER
from gflkit.models.baselines import tlp
from gflkit.runs.checkpoints import load_checkpoint, load_metrics
from gflkit.training.meta import fit_transfer

NAMES = ("tlp", "tlp-bgrl", "tlp-sup")
FAST = TrainConfig(steps=4, eval_every=2, meta_batch=2, seed=0)
EPISODES = EpisodeConfig(k_shot=5)


def _graph(n: int, feats: int = 8, degree: int = 4, seed: int = 0, classes: int = 3) -> dgl.DGLGraph:
    """A prepared random graph of ``n`` nodes with seeded features and labels."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n, (n * degree // 2,), generator=gen)
    dst = torch.randint(0, n, (n * degree // 2,), generator=gen)
    g = dgl.graph((torch.cat([src, dst]), torch.cat([dst, src])), num_nodes=n)
    g.ndata["feat"] = torch.randn(n, feats, generator=gen)
    h = prepare_graph(g)
    h.ndata["label"] = torch.randint(0, classes, (n,), generator=gen)
    return h


def _dense_grace(u: torch.Tensor, v: torch.Tensor, tau: float) -> float:
    """GRACE's loss written out term by term (Zhu et al. 2020, eq. 1-2), in float64."""
    u, v = (torch.nn.functional.normalize(t.double(), dim=1) for t in (u, v))
    n = len(u)

    def ell(a, b, i):
        pos = math.exp(float(a[i] @ b[i]) / tau)
        between = sum(math.exp(float(a[i] @ b[k]) / tau) for k in range(n) if k != i)
        within = sum(math.exp(float(a[i] @ a[k]) / tau) for k in range(n) if k != i)
        return -math.log(pos / (pos + between + within))

    return sum(ell(u, v, i) + ell(v, u, i) for i in range(n)) / (2 * n)


def test_grace_loss_matches_the_dense_formula():
    gen = torch.Generator().manual_seed(1)
    u, v = torch.randn(7, 5, generator=gen), torch.randn(7, 5, generator=gen)
    for tau in (0.5, 1.0):
        assert float(tlp.grace_loss(u, v, tau)) == pytest.approx(_dense_grace(u, v, tau), rel=1e-5)


def test_contrastive_loss_is_exact_on_a_tiny_graph():
    """With max_nodes >= N every node is an anchor: the model's loss is the dense formula on its projections."""
    g = _graph(9)
    torch.manual_seed(0)
    model = TRANSFER["tlp"](8, 3, drop_edge_1=0.0, drop_edge_2=0.0, mask_feat_1=0.0, mask_feat_2=0.0, max_nodes=9)
    loss = model.contrastive_loss(g)
    with torch.no_grad():
        p = model.projector(model.encoder(g))
    assert loss.item() == pytest.approx(_dense_grace(p, p, 0.4), rel=1e-5)  # GRACE's Cora temperature


def test_grace_memory_never_grows_with_n_squared(monkeypatch):
    """5,000 nodes, max_nodes=256: the loss sees 256 anchors and no tensor kept for backward is near N x N."""
    n = 5000
    g = _graph(n, feats=16)
    torch.manual_seed(0)
    model = TRANSFER["tlp"](16, 3, max_nodes=256)
    seen, largest = [], [0]
    real = tlp.grace_loss

    def spy(u, v, tau):
        seen.append((tuple(u.shape), tuple(v.shape)))
        return real(u, v, tau)

    def pack(t):
        largest[0] = max(largest[0], t.numel())
        return t

    monkeypatch.setattr(tlp, "grace_loss", spy)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model.step_loss([g], [None], [g.ndata["label"]])
    loss.backward()
    assert seen == [((256, 128), (256, 128))]
    assert largest[0] <= max(256 * 512, n * 256)  # B x 2B logits, N x hidden activations, never N x N = 25e6
    assert torch.isfinite(loss)


def test_grace_step_on_fifty_thousand_nodes_is_quick():
    g = _graph(50_000, feats=16)
    torch.manual_seed(0)
    model = TRANSFER["tlp"](16, 3)
    start = time.perf_counter()
    model.step_loss([g], [None], [g.ndata["label"]]).backward()
    assert time.perf_counter() - start < 30  # an N x N float matrix would be 10 GB


def test_bgrl_target_is_a_moving_average_without_gradient():
    g = _graph(30)
    torch.manual_seed(0)
    model = TRANSFER["tlp-bgrl"](8, 3, ema=0.9)
    targets = [p for _, p in model.target.named_parameters()]
    assert all(not p.requires_grad for p in targets)
    assert all(torch.equal(t, o) for t, o in zip(targets, model.encoder.parameters()))  # a copy at the start
    with torch.no_grad():
        for p in model.encoder.parameters():
            p.add_(1.0)
    before = [t.clone() for t in targets]
    online = [o.detach().clone() for o in model.encoder.parameters()]
    model.update_target()
    for t, b, o in zip(targets, before, online):
        assert torch.allclose(t, 0.9 * b + 0.1 * o, atol=1e-7)
    # step_loss moves the target once, then the loss reaches the online side only
    moved = [t.clone() for t in targets]
    loss = model.step_loss([g], [None], [g.ndata["label"]])
    loss.backward()
    for t, m, o in zip(targets, moved, model.encoder.parameters()):
        assert torch.allclose(t, 0.9 * m + 0.1 * o.detach(), atol=1e-7)
        assert t.grad is None
    assert model.encoder.conv1.weight.grad.abs().sum() > 0
    assert any(k.startswith("target.") for k in model.state_dict())  # checkpoints keep the target


@pytest.mark.parametrize("name", NAMES)
def test_forward_and_backward(name):
    g = _graph(40)
    torch.manual_seed(0)
    model = TRANSFER[name](8, 3)
    loss = model.step_loss([g, _graph(25, seed=1)], [None, None], [g.ndata["label"], torch.full((25,), -1)])
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    assert model.encoder.conv1.weight.grad.abs().sum() > 0
    assert model.embed(g).shape == (40, model.options["out_feats"])
    scores = model.class_scores(g, [torch.tensor([0, 1]), torch.tensor([2]), torch.tensor([3, 4, 5])])
    assert scores.shape == (40, 3) and torch.isfinite(scores).all()


def test_the_probe_recovers_a_linearly_separable_embedding_exactly():
    gen = torch.Generator().manual_seed(0)
    centres = torch.tensor([[6.0, 0, 0, 0], [0, 6.0, 0, 0], [0, 0, 6.0, 0]])
    label = torch.arange(3).repeat_interleave(50)
    z = centres[label] + torch.randn(150, 4, generator=gen)  # margins of several standard deviations
    support = [torch.nonzero(label == c).squeeze(1)[:3] for c in range(3)]
    model = TRANSFER["tlp"](4, 3)
    pred = model.class_scores(_graph(150, feats=4), support, z).argmax(1)
    assert torch.equal(pred, label)


def test_pretrain_is_fixed_by_the_model_name():
    assert TRANSFER["tlp-bgrl"](8, 3).options["pretrain"] == "bgrl"
    assert TRANSFER["tlp"](8, 3, pretrain="grace").options["pretrain"] == "grace"
    with pytest.raises(ValueError, match="train the model tlp-sup"):
        TRANSFER["tlp"](8, 3, pretrain="supervised")
    with pytest.raises(ValueError, match="max_nodes=1"):
        TRANSFER["tlp"](8, 3, max_nodes=1)


@pytest.fixture(scope="module")
def toy():
    """Four classes, well-separated features, homophilous edges: a family a linear probe must solve."""
    spec = SyntheticSpec(n_train=4, n_val=2, n_test=3, feat_size=16, min_nodes=120, max_nodes=160,
                         center_scale=1.0, noise=0.5, outlier_rate=0.0, min_homophily=0.9, max_homophily=0.95)
    return make_synthetic_family(spec, seed=0, name="toy")


@pytest.mark.parametrize("name", NAMES)
def test_beats_chance_by_a_wide_margin(toy, name):
    result = fit_transfer(name, toy, EPISODES, TrainConfig(steps=10, eval_every=5, meta_batch=2, seed=0),
                          progress=False)
    acc = graph_accuracies(result.model, EpisodeSampler(toy, "test", EPISODES, seed=0))
    assert np.mean(list(acc.values())) > 0.7  # chance: 0.25


@pytest.mark.parametrize("name", ["tlp", "tlp-bgrl"])
def test_seeded_training_is_deterministic(toy, name):
    runs = [fit_transfer(name, toy, EPISODES, FAST, progress=False) for _ in range(2)]
    first, second = (r.model.state_dict() for r in runs)
    assert first.keys() == second.keys()
    for key in first:
        assert torch.equal(first[key], second[key]), key
    sampler = EpisodeSampler(toy, "test", EPISODES, seed=0)
    gid = sampler.graph_ids[0]
    g, ep = GraphCache(toy)[gid], sampler.episode(gid, 0)
    assert torch.equal(runs[0].model.class_scores(g, list(ep.support)), runs[1].model.class_scores(g, list(ep.support)))


def test_checkpoint_keeps_options_and_bgrl_target(toy, tmp_path):
    result = fit_transfer("tlp-bgrl", toy, EPISODES, FAST, options={"ema": 0.95}, run_dir=tmp_path / "run",
                          progress=False)
    model, meta = load_checkpoint(tmp_path / "run")
    assert meta["model"] == "tlp-bgrl" and meta["options"]["ema"] == 0.95 and meta["options"]["pretrain"] == "bgrl"
    for key, value in result.model.state_dict().items():
        assert torch.equal(model.state_dict()[key], value), key


def test_a_wrong_option_is_one_line(toy):
    with pytest.raises(GFLError, match=r"tlp options: pretrain='bgrl'.*train the model tlp-bgrl"):
        fit_transfer("tlp", toy, EPISODES, FAST, options={"pretrain": "bgrl"}, progress=False)


# -- the command line -------------------------------------------------------------------------------------------

CLI_FAST = ["--steps", "4", "--eval-every", "2", "--k-shot", "5"]


def test_cli_compare_has_a_tlp_row(root):
    table = csv_table(invoke("--no-progress", "compare", "tiny", "--model", "tlp", "--seed", "0", *CLI_FAST,
                             "--no-majority", "--data-root", root))
    assert list(table.model) == ["tlp"] and 0 <= table.accuracy[0] <= 100
    assert gflkit.names.display_name("tlp") == "TLP (GRACE)"


def test_cli_train_evaluate_predict_embed(root, tmp_path):
    run = tmp_path / "tlp"
    trained = csv_table(invoke("train", "tiny", "--model", "tlp", *CLI_FAST, "--run-dir", run, "--data-root", root))
    assert trained.loc[0, "model"] == "tlp"
    again = csv_table(invoke("evaluate", run, "tiny", "--data-root", root))
    assert again.loc[0, "accuracy"] == pytest.approx(trained.loc[0, "accuracy"])
    region = tmp_path / "region"
    assert invoke("export-graph", "tiny:6", region, "--labels-per-class", "5", "--data-root", root).exit_code == 0
    np.save(region / "feat.npy", gflkit.load_collection("tiny", root).graphs[6].ndata["feat"].numpy())
    graph = ["--edges", region / "edges.csv", "--features", region / "feat.npy"]
    table = csv_table(invoke("predict", run, *graph, "--labels", region / "labels.csv"))
    assert len(table) == len(pd.read_csv(region / "nodes.csv"))
    assert np.allclose(table.filter(like="score_").to_numpy().sum(1), 1.0, atol=1e-3)
    labels = pd.read_csv(region / "labels.csv")
    given = dict(zip(labels["node"], labels["label"]))
    assert all(given[n] == lab for n, lab in zip(table["node"], table["label"]) if n in given)
    emb = csv_table(invoke("embed", run, *graph))
    assert emb.filter(like="z_").shape == (len(table), 128)  # GRACE's Cora width


def test_cli_bad_option_is_one_line(root, tmp_path):
    one_line_error(invoke("train", "tiny", "--model", "tlp", "--option", "tau=0", *CLI_FAST, "--run-dir",
                          tmp_path / "bad", "--data-root", root), "tau=0")
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("name", ["tlp", "tlp-bgrl"])
def test_transductive_steps_pretrain_a_copy_on_the_graph_being_labelled(name):
    g = _graph(120)
    frozen = TRANSFER[name](8, 3, transductive_steps=0)
    adapted = TRANSFER[name](8, 3, transductive_steps=5)
    adapted.load_state_dict(frozen.state_dict())
    before = {k: v.clone() for k, v in adapted.state_dict().items()}
    label = g.ndata.pop("label")  # no label is there to be read
    z = adapted.embed(g)
    assert not torch.equal(z, frozen.embed(g))  # the copy moved
    assert all(torch.equal(before[k], v) for k, v in adapted.state_dict().items())  # the model did not
    torch.manual_seed(123)
    assert torch.equal(adapted.embed(g), z)  # its own generator: the same embedding whatever came before
    g.ndata["label"] = label
    assert adapted.class_scores(g, [torch.tensor([0]), torch.tensor([1]), torch.tensor([2])]).shape == (120, 3)


def test_transductive_steps_need_a_label_free_loss():
    with pytest.raises(ValueError, match="supervised encoder has no label-free loss"):
        TRANSFER["tlp-sup"](8, 3, transductive_steps=5)
    with pytest.raises(ValueError, match="transductive_steps must be at least 0"):
        TRANSFER["tlp"](8, 3, transductive_steps=-1)


@pytest.mark.parametrize("name, widths, rates", [
    ("tlp", (256, 128, 128), (0.2, 0.4, 0.3, 0.4)),  # GRACE's Cora encoder (hidden twice the output) and views
    ("tlp-bgrl", (512, 256, 512), (0.2, 0.3, 0.2, 0.1)),  # BGRL's WikiCS encoder, predictor and views
    ("tlp-sup", (32, 32, 32), (0.2, 0.4, 0.3, 0.4)),  # GFL's encoder, as the other supervised baselines
])
def test_defaults_are_the_papers(name, widths, rates):
    model = TRANSFER[name](8, 3)
    o = model.options
    assert (o["hidden_feats"], o["out_feats"], o["proj_feats"]) == widths
    assert (o["drop_edge_1"], o["drop_edge_2"], o["mask_feat_1"], o["mask_feat_2"]) == rates
    assert model.encoder.conv1.weight.shape == (8, widths[0]) and model.encoder.conv2.weight.shape == widths[:2]
    assert o["transductive_steps"] == (0 if name == "tlp-sup" else tlp.TRANSDUCTIVE_STEPS)
    assert o["tau"] == 0.4  # GRACE's Cora temperature (BGRL has none)


def test_by_default_each_graph_being_labelled_is_pretrained_on_and_transductive_steps_0_freezes(monkeypatch):
    g = _graph(60)
    calls = []
    real = tlp.TransductiveLinearProbe.adapted_to

    def spy(self, graph):
        calls.append(graph.num_nodes())
        return real(self, graph)

    monkeypatch.setattr(tlp.TransductiveLinearProbe, "adapted_to", spy)
    torch.manual_seed(0)
    default = TRANSFER["tlp"](8, 3, transductive_steps=2)
    frozen = TRANSFER["tlp"](8, 3, transductive_steps=0)
    frozen.load_state_dict(default.state_dict())
    assert TRANSFER["tlp"](8, 3).options["transductive_steps"] > 0
    z = default.embed(g)
    assert calls == [60]
    assert torch.equal(frozen.embed(g), frozen.encoder(g)) and calls == [60]  # the frozen probe: no copy trained
    assert not torch.equal(z, frozen.embed(g))


def test_bgrl_keeps_its_own_defaults_under_given_options():
    model = TRANSFER["tlp-bgrl"](8, 3, ema=0.9, out_feats=64)
    assert model.options["out_feats"] == 64 and model.options["hidden_feats"] == 512 and model.options["ema"] == 0.9
    with pytest.raises(ValueError, match="drop_edge_2=1"):
        TRANSFER["tlp-bgrl"](8, 3, drop_edge_2=1)


def test_pretrainings_validation_rounds_score_the_frozen_probe(toy, monkeypatch):
    """No val graph is pretrained on while the warm start is chosen; the scores after training are the model's."""
    calls = []
    real = tlp.TransductiveLinearProbe.adaptations

    def spy(self, g, counts):
        calls.append(list(counts))
        return real(self, g, counts)

    monkeypatch.setattr(tlp.TransductiveLinearProbe, "adaptations", spy)
    result = fit_transfer("tlp", toy, EPISODES, FAST, options={"transductive_steps": 3}, progress=False)
    assert calls == []
    view = result.model.for_validation()
    assert view.options["transductive_steps"] == 0 and result.model.options["transductive_steps"] == 3
    assert view.encoder is result.model.encoder  # the same weights, not a copy
    graph_accuracies(result.model, EpisodeSampler(toy, "test", EPISODES, seed=0))
    assert calls == [[3]] * len(toy.graph_ids("test"))  # each test graph pretrained on once


def test_adaptations_read_one_run_of_the_steps_at_each_count():
    g = _graph(50)
    torch.manual_seed(0)
    model = TRANSFER["tlp"](8, 3, max_nodes=16)
    got = {n: enc(g) for n, enc in model.adaptations(g, [0, 2, 5])}
    assert torch.equal(got[0], model.encoder(g))  # no step: the warm start
    for n in (2, 5):
        model.options["transductive_steps"] = n
        assert torch.equal(got[n], model.embed(g))  # what transductive_steps=n embeds with
    with pytest.raises(ValueError, match="increasing order"):
        next(model.adaptations(g, [5, 2]))


def test_cli_compare_passes_a_baselines_options_to_its_runs(root, tmp_path):
    """compare --option MODEL.KEY=VALUE gives the row train --option KEY=VALUE prints, on the same episodes."""
    frozen = ["--option", "tlp.transductive_steps=0", "--option", "tlp.out_feats=16"]
    table = csv_table(invoke("--no-progress", "compare", "tiny", "--model", "tlp", "--seed", "0", *CLI_FAST,
                             "--no-majority", *frozen, "--data-root", root))
    trained = csv_table(invoke("train", "tiny", "--model", "tlp", *CLI_FAST, "--option", "transductive_steps=0",
                               "--option", "out_feats=16", "--run-dir", tmp_path / "frozen", "--data-root", root))
    assert table.accuracy[0] == pytest.approx(trained.accuracy[0])
    default = csv_table(invoke("--no-progress", "compare", "tiny", "--model", "tlp", "--seed", "0", *CLI_FAST,
                               "--no-majority", "--data-root", root))
    assert default.accuracy[0] != pytest.approx(table.accuracy[0])


@pytest.mark.parametrize("args, named, code", [
    (["--option", "transductive_steps=0"], "MODEL.KEY=VALUE", 2),
    (["--option", "tlp.nothing=1"], "nothing", 1),
    (["--option", "tlp.max_nodes=1.5"], "max_nodes", 1),
    (["--option", "lp.window=3", "--model", "lp"], "lp", 1),
    (["--option", "tlp.tau=0.5", "--model", "protonet"], "tlp", 1),
])
def test_cli_compare_bad_option_is_one_line_before_any_work(root, tmp_path, args, named, code):
    result = invoke("--no-progress", "compare", "never-made", "--model", "tlp", *args, "--data-root", tmp_path)
    one_line_error(result, named, code=code)  # the options are refused before the data is looked for


@pytest.mark.parametrize("name", ["tlp", "tlp-bgrl"])
def test_without_a_warm_start_the_train_graphs_are_not_read(toy, name, monkeypatch):
    def no_step(*args, **kwargs):
        raise AssertionError("a step on the train graphs")

    monkeypatch.setattr(TRANSFER[name], "step_loss", no_step)
    options = {"warm_start": False, "transductive_steps": 2}
    result = fit_transfer(name, toy, EPISODES, FAST, options=options, progress=False)
    assert result.best_step == 0 and result.history.empty and math.isnan(result.best_val)
    torch.manual_seed(FAST.seed)
    fresh = TRANSFER[name](toy.feat_size, toy.num_classes, **options)  # as the run's seed initialises it
    for key, value in fresh.state_dict().items():
        assert torch.equal(result.model.state_dict()[key], value), key
    g = GraphCache(toy)[EpisodeSampler(toy, "test", EPISODES, seed=0).graph_ids[0]]
    assert not torch.equal(result.model.embed(g), fresh.encoder(g))  # each graph still pretrains its own copy


def test_warm_start_is_checked():
    with pytest.raises(ValueError, match="warm_start='no' must be true or false"):
        TRANSFER["tlp"](8, 3, warm_start="no")
    with pytest.raises(ValueError, match="supervised encoder learns from the train graphs alone"):
        TRANSFER["tlp-sup"](8, 3, warm_start=False)
    assert TRANSFER["tlp"](8, 3).trains and not TRANSFER["tlp"](8, 3, warm_start=False).trains


def test_cli_compare_without_a_warm_start(root, tmp_path):
    table = csv_table(invoke("--no-progress", "compare", "tiny", "--model", "tlp", "--option", "tlp.warm_start=false",
                             "--option", "tlp.transductive_steps=2", "--seed", "0", *CLI_FAST, "--no-majority",
                             "--data-root", root))
    assert list(table.model) == ["tlp"] and 0 <= table.accuracy[0] <= 100


def test_a_run_without_a_warm_start_saves_and_loads(toy, tmp_path):
    options = {"warm_start": False, "transductive_steps": 1}
    result = fit_transfer("tlp", toy, EPISODES, FAST, options=options, run_dir=tmp_path / "run", progress=False)
    model, meta = load_checkpoint(tmp_path / "run")
    assert meta["options"]["warm_start"] is False and meta["step"] == 0
    for key, value in result.model.state_dict().items():
        assert torch.equal(model.state_dict()[key], value), key
    assert load_metrics(tmp_path / "run").empty  # no step taken: an empty table, verified, not an error
