"""Graph Prototypical Networks (``gpn``): importance-weighted prototypes, training, and the command line."""
from __future__ import annotations

from dataclasses import replace

import dgl
import numpy as np
import pandas as pd
import pytest
import torch
from cli_helpers import csv_table, invoke, one_line_error

import gflkit
from gflkit.config import EpisodeConfig, TrainConfig
from gflkit.data import SyntheticSpec, make_synthetic_family
from gflkit.episodes import Episode, EpisodeSampler
from gflkit.errors import GFLError
from gflkit.evaluation.scoring import graph_accuracies
from gflkit.graphs import GraphCache, prepare_graph
from gflkit.models.baselines import TRANSFER
from gflkit.models.baselines.gpn import class_weights, degree_centrality, squared_distances, support_weights
from gflkit.names import display_name, trainable_names
from gflkit.prediction.class_scores import class_scores, shared_embeddings
from gflkit.training.meta import fit_transfer

EPISODES = EpisodeConfig(k_shot=5)


def _graph(n: int = 12, feats: int = 6, seed: int = 0) -> dgl.DGLGraph:
    """A ring with chords from node 0 (a hub), seeded features, prepared (self-loops)."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.cat([torch.arange(n), torch.zeros(4, dtype=torch.int64)])
    dst = torch.cat([(torch.arange(n) + 1) % n, torch.tensor([3, 5, 7, 9])])
    g = dgl.graph((torch.cat([src, dst]), torch.cat([dst, src])), num_nodes=n)
    g.ndata["feat"] = torch.randn(n, feats, generator=gen)
    return prepare_graph(g)


def _episode(g: dgl.DGLGraph) -> Episode:
    support = torch.tensor([[0, 1], [4, 6], [8, 10]])  # 3 classes, 2 shots
    query = torch.tensor([2, 3, 5, 7, 9, 11])
    return Episode(0, support, query, torch.tensor([0, 0, 1, 1, 2, 2]))


def _model(**options):
    torch.manual_seed(0)
    return TRANSFER["gpn"](6, 3, **options)


def test_registered_with_its_display_name():
    assert TRANSFER["gpn"].name == "gpn" and display_name("gpn") == "GPN"
    assert "gpn" in trainable_names()


def test_shapes_forward_and_backward():
    g = _graph()
    ep = _episode(g)
    model = _model()
    loss = model.step_loss([g, g], [ep, ep], [torch.zeros(12, dtype=torch.int64)] * 2)
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    model.eval()
    assert model.embed(g).shape == (12, 32) and model.node_importance(g).shape == (12,)
    assert model.class_scores(g, list(ep.support), nodes=ep.query).shape == (6, 3)
    assert model.class_scores(g, list(ep.support)).shape == (12, 3)
    ragged = [torch.tensor([0]), torch.tensor([4, 6, 8]), torch.tensor([10, 11]), torch.tensor([2])]
    assert model.class_scores(g, ragged).shape == (12, 4)  # any classes, any sizes
    assert shared_embeddings(model, g).shape == (12, 33)


def test_gradient_reaches_both_networks():
    g = _graph()
    model = _model()
    model.step_loss([g], [_episode(g)], [torch.zeros(12, dtype=torch.int64)]).backward()
    for prefix in ("encoder.", "scorer."):
        grads = [p.grad for name, p in model.named_parameters() if name.startswith(prefix)]
        assert grads and all(d is not None and torch.isfinite(d).all() for d in grads), prefix
        assert sum(float(d.abs().sum()) for d in grads) > 0, prefix


def test_weights_sum_to_one_within_each_class():
    scores = torch.tensor([0.3, -1.0, 2.0, 0.5, 0.5, 7.0])
    target = torch.tensor([0, 0, 1, 1, 1, 2])
    w = class_weights(scores, target, 3)
    assert torch.allclose(torch.zeros(3).index_add_(0, target, w), torch.ones(3))
    assert w[5] == 1  # a class with one support gives it all its weight
    assert torch.allclose(w[:2], support_weights(scores[:2]))  # the ragged form matches the (C, K) one
    even = support_weights(torch.randn(4, 5))
    assert torch.allclose(even.sum(1), torch.ones(4))


def test_higher_degree_gets_higher_weight_when_scores_are_equal():
    g = _graph()  # node 0 has degree 6, node 1 degree 2
    deg = g.in_degrees() - 1
    assert deg[0] > deg[1]
    centrality = degree_centrality(g)
    assert centrality[0] > centrality[1]
    # self-loops do not count: the graph without them has the same centrality
    assert torch.allclose(degree_centrality(dgl.remove_self_loop(g)), centrality)
    # the mean degree is each graph's own inside a batch
    other = _graph(30)
    assert torch.allclose(degree_centrality(dgl.batch([g, other]))[:12], centrality)

    model = _model().eval()

    class Equal(torch.nn.Module):
        def forward(self, g):
            return torch.ones(g.num_nodes(), 1)

    model.scorer = Equal()
    w = support_weights(model.node_importance(g)[torch.tensor([[0, 1]])])
    assert w[0, 0] > w[0, 1] and torch.isclose(w.sum(), torch.tensor(1.0))


def test_class_scores_take_shared_embeddings_and_match_the_paper_prototypes():
    g = _graph()
    ep = _episode(g)
    model = _model().eval()
    scores = class_scores(model, g, list(ep.support))
    assert torch.equal(model.class_scores(g, list(ep.support), shared_embeddings(model, g)), scores)
    with torch.no_grad():  # the importance-weighted prototypes of the paper, computed per episode
        z, importance = model.embed(g), model.node_importance(g)
        paper = squared_distances(z[ep.query], model.prototypes(z, importance, ep.support)).argmin(1)
    assert torch.equal(scores[ep.query].argmax(1), paper)
    with pytest.raises(ValueError, match="shared_embeddings"):
        model.class_scores(g, list(ep.support), model.embed(g))


def test_scores_a_large_sparse_graph_without_n_by_n_memory():
    """200,000 nodes: an N x N matrix would take 160 GB."""
    n = 200_000
    src = torch.arange(n)
    g = dgl.graph((torch.cat([src, (src + 1) % n]), torch.cat([(src + 1) % n, src])), num_nodes=n)
    g.ndata["feat"] = torch.randn(n, 6, generator=torch.Generator().manual_seed(0))
    g = prepare_graph(g)
    model = _model().eval()
    scores = model.class_scores(g, [torch.tensor([0, 1]), torch.tensor([5])])
    assert scores.shape == (n, 2) and torch.isfinite(scores).all()


@pytest.fixture(scope="module")
def family():
    """Twelve small graphs (6/2/4 train/val/test, 120-160 nodes, 4 classes), seed 0."""
    spec = SyntheticSpec(n_train=6, n_val=2, n_test=4, feat_size=16, min_nodes=120, max_nodes=160, center_scale=0.32)
    return make_synthetic_family(spec, seed=0, name="gpn-toy")


def test_seeded_training_is_deterministic(family):
    cfg = TrainConfig(steps=4, meta_batch=2, eval_every=2, seed=3)
    first = fit_transfer("gpn", family, EPISODES, cfg, progress=False)
    again = fit_transfer("gpn", family, EPISODES, cfg, progress=False)
    state = first.model.state_dict()
    assert state.keys() == again.model.state_dict().keys()
    for key, value in again.model.state_dict().items():
        assert torch.equal(value, state[key]), key
    sampler = EpisodeSampler(family, "test", EPISODES, seed=0)
    cache = GraphCache(family)
    for gid in sampler.graph_ids:
        ep = sampler.episode(gid, 0)
        support = list(ep.support)
        assert torch.equal(first.model.class_scores(cache[gid], support), again.model.class_scores(cache[gid], support))


@pytest.mark.slow
def test_beats_chance_by_a_wide_margin(small_family):
    result = fit_transfer("gpn", small_family, EpisodeConfig(k_shot=10),
                          TrainConfig(steps=30, meta_batch=3, eval_every=10, seed=0), progress=False)
    acc = graph_accuracies(result.model, EpisodeSampler(small_family, "test", EpisodeConfig(k_shot=10), seed=0))
    assert np.mean(list(acc.values())) > 0.50  # chance is 0.25 (4 classes); about 0.62 (0.51 with the input dropped)


def test_cli_compare_prints_gpn_rows(root):
    table = csv_table(invoke("compare", "tiny", "--model", "gpn,protonet", "--seed", "0", "--steps", "4",
                             "--k-shot", "5", "--no-majority", "--data-root", root))
    assert table["model"].tolist() == ["gpn", "protonet"]
    assert [display_name(m) for m in table["model"]] == ["GPN", "Protonet"]
    assert table["accuracy"].between(0, 100).all() and table.loc[1, "reference"] == "gpn"


def test_cli_train_evaluate_predict_and_embed(root, tmp_path):
    run = tmp_path / "gpn"
    trained = csv_table(invoke("train", "tiny", "--model", "gpn", "--steps", "4", "--eval-every", "2",
                               "--k-shot", "5", "--run-dir", run, "--data-root", root))
    assert trained.loc[0, "model"] == "gpn"
    again = csv_table(invoke("evaluate", run, "tiny", "--data-root", root))
    assert again.loc[0, "model"] == "gpn" and again.loc[0, "accuracy"] == pytest.approx(trained.loc[0, "accuracy"])

    region = tmp_path / "region"
    assert invoke("export-graph", "tiny:6", region, "--labels-per-class", "5", "--data-root", root).exit_code == 0
    np.save(region / "feat.npy", gflkit.load_collection("tiny", root).graphs[6].ndata["feat"].numpy())
    tables = ["--edges", region / "edges.csv", "--features", region / "feat.npy"]
    n = len(pd.read_csv(region / "nodes.csv"))
    table = csv_table(invoke("predict", run, *tables, "--labels", region / "labels.csv"))
    scores = table.filter(like="score_").to_numpy()
    assert len(table) == n and np.allclose(scores.sum(1), 1.0, atol=1e-3)
    # more classes than it was trained with: prototypes need no classifier head
    five = tmp_path / "five.csv"
    five.write_text("node,label\n" + "".join(f"{i},c{i}\n" for i in range(5)))
    assert csv_table(invoke("predict", run, *tables, "--labels", five)).filter(like="score_").shape == (n, 5)

    assert invoke("embed", run, *tables, "-o", tmp_path / "z.npy").exit_code == 0
    z = np.load(tmp_path / "z.npy")
    assert z.shape == (n, 32) and np.isfinite(z).all()


def test_errors_name_the_models_that_can_predict():
    g = _graph()
    head = TRANSFER["transfer-head"](6, 3)
    with pytest.raises(GFLError, match="transfer-head cannot predict on a new graph: only .*gpn.* runs can"):
        class_scores(head, g, [torch.tensor([0])])
    torch.manual_seed(0)
    maml = TRANSFER["maml"](6, 2)
    with pytest.raises(GFLError, match=r"2-class head; it cannot predict 3 classes \(.*gpn.* can\)") as err:
        class_scores(maml, g, [torch.tensor([0]), torch.tensor([1]), torch.tensor([2])])
    assert "maml" not in str(err.value).split("(")[1] and "agf" not in str(err.value).split("(")[1]


def test_bad_option_is_one_line(root, tmp_path):
    one_line_error(invoke("train", "tiny", "--model", "gpn", "--option", "dropout=1.5", "--steps", "1",
                          "--run-dir", tmp_path / "r", "--data-root", root), "gpn options", "dropout=1.5")
    assert not (tmp_path / "r").exists()


def test_trains_with_its_papers_optimiser_unless_told_otherwise(family, tmp_path):
    from gflkit.config import optimizer_defaults

    assert optimizer_defaults("gpn") == {"lr": 0.005, "weight_decay": 5e-4}
    assert optimizer_defaults("gfl") == optimizer_defaults("protonet") == {"lr": 0.01, "weight_decay": 0.0}
    cfg = TrainConfig(steps=2, meta_batch=2, eval_every=2)
    own = fit_transfer("gpn", family, EPISODES, cfg, progress=False, run_dir=tmp_path / "own")
    assert own.meta["train_config"]["lr"] == 0.005 and own.meta["train_config"]["weight_decay"] == 5e-4
    told = fit_transfer("gpn", family, EPISODES, replace(cfg, lr=0.02), progress=False, run_dir=tmp_path / "told")
    assert told.meta["train_config"]["lr"] == 0.02 and told.meta["train_config"]["weight_decay"] == 5e-4
    # the weights differ only through the optimiser: the same seed draws the same initial weights
    first = next(iter(own.model.state_dict()))
    assert not torch.equal(own.model.state_dict()[first], told.model.state_dict()[first])


def test_cli_lr_overrides_the_models_own(root, tmp_path):
    import json

    for flags, lr in (([], 0.005), (["--lr", "0.02"], 0.02)):
        run = tmp_path / f"gpn{len(flags)}"
        assert invoke("train", "tiny", "--model", "gpn", "--steps", "2", "--eval-every", "2", "--k-shot", "5",
                      "--no-eval", "--run-dir", run, *flags, "--data-root", root).exit_code == 0
        assert json.loads((run / "config.json").read_text())["train_config"]["lr"] == lr


def test_dropout_masks_the_hidden_layer_of_both_networks_never_the_input():
    model = _model(dropout=0.5).train()
    g = _graph()
    seen = []
    for net in (model.encoder, model.scorer):
        net.conv1.register_forward_pre_hook(lambda module, args: seen.append(args[1]))
        net.conv2.register_forward_pre_hook(lambda module, args: seen.append(args[1]))
    model.embed(g), model.node_importance(g)
    first_inputs, hidden = seen[0::2], seen[1::2]
    assert all(torch.equal(x, g.ndata["feat"]) for x in first_inputs)  # GPN's code: the input is not dropped
    assert all((h == 0).float().mean() > 0.3 for h in hidden)  # about half the hidden units masked
