"""Every registered model keeps the contract of :class:`gflkit.models.base.FewShotModel`.

Parametrised over the registry (:data:`gflkit.names.GFL_MODELS`, the transfer baselines and the
per-graph baselines), so a new model is tested by registering it.
"""
from __future__ import annotations

import pytest
import torch

import gflkit
from gflkit.config import EpisodeConfig
from gflkit.data import SyntheticSpec, make_synthetic_family
from gflkit.episodes import EpisodeSampler
from gflkit.errors import GFLError
from gflkit.graphs import GraphCache
from gflkit.models.base import FewShotModel
from gflkit.models.baselines import PER_GRAPH, TRANSFER
from gflkit.names import GFL_MODELS, PER_GRAPH_MODELS, TRANSFER_MODELS
from gflkit.runs.checkpoints import load_checkpoint

TRAINABLE = [*GFL_MODELS, *TRANSFER_MODELS]
TAGS = ("episodic", "embeds", "shares_embeddings", "adapts", "uses_support", "head_classes", "takes_feature_parts",
        "needs_prepare")
EPISODES = EpisodeConfig(k_shot=3, n_query=6)


@pytest.fixture(scope="module")
def tiny():
    spec = SyntheticSpec(n_train=3, n_val=1, n_test=1, num_classes=3, feat_size=8, min_nodes=40, max_nodes=60)
    return make_synthetic_family(spec, seed=0, name="tiny")


@pytest.fixture(scope="module")
def trained(tiny, tmp_path_factory):
    """Each trainable model after two steps on the tiny family, kept in a run folder."""
    runs = {}

    def fit(name):
        if name not in runs:
            folder = tmp_path_factory.mktemp("runs") / name
            runs[name] = gflkit.train(tiny, model=name, steps=2, eval_every=2, meta_batch=2, k_shot=3, n_query=6,
                                      run_dir=folder, progress=False, eval_split=None, return_result=True)[0]
        return runs[name]

    return fit


@pytest.fixture(scope="module")
def graph_and_episode(tiny):
    sampler = EpisodeSampler(tiny, "test", EPISODES, seed=0)
    gid = sampler.graph_ids[0]
    return GraphCache(tiny)[gid], sampler.episode(gid, 0)


@pytest.mark.parametrize("name", TRAINABLE)
def test_model_declares_its_capabilities(trained, name):
    model = trained(name).model
    assert isinstance(model, FewShotModel)
    assert all(isinstance(getattr(model, tag), bool) for tag in TAGS)
    assert model.episodic == (name in GFL_MODELS)
    assert not (model.head_classes and not model.uses_support)


@pytest.mark.parametrize("name", TRAINABLE)
def test_class_scores_shapes(trained, graph_and_episode, name):
    model = trained(name).model.eval()
    g, ep = graph_and_episode
    support = list(ep.support)
    width = ep.num_classes if model.uses_support else model.num_classes
    torch.manual_seed(0)
    every = model.class_scores(g, support)
    assert every.shape == (g.num_nodes(), width) and torch.isfinite(every).all()
    torch.manual_seed(0)
    assert torch.equal(model.class_scores(g, support, nodes=ep.query), every[ep.query])
    if model.shares_embeddings:  # one embedding of the graph serves every support set
        assert torch.equal(model.class_scores(g, support, model.shared_embeddings(g)), every)
    else:
        assert model.shared_embeddings(g) is None
    if model.embeds:
        with torch.no_grad():
            z = model.embed(g)
        assert z.dim() == 2 and z.shape[0] == g.num_nodes()
    if model.uses_support and not model.head_classes:  # any classes, any support sizes
        ragged = [ep.support[0, :1], ep.support[1], ep.support[2, :2], ep.support[0, 1:]]
        assert model.class_scores(g, ragged).shape == (g.num_nodes(), 4)


@pytest.mark.parametrize("name", TRAINABLE)
def test_checkpoint_round_trip(trained, graph_and_episode, name):
    result = trained(name)
    state = torch.load(result.run_dir / "best.pt", weights_only=True)
    assert isinstance(state, dict)
    model, meta = load_checkpoint(result.run_dir)
    assert type(model) is type(result.model) and meta["model"] == name
    for key, value in result.model.state_dict().items():
        assert torch.equal(model.state_dict()[key], value), key
    g, ep = graph_and_episode
    torch.manual_seed(0)
    before = result.model.eval().class_scores(g, list(ep.support), nodes=ep.query)
    torch.manual_seed(0)
    assert torch.equal(model.eval().class_scores(g, list(ep.support), nodes=ep.query), before)


@pytest.mark.parametrize("name", TRAINABLE)
def test_unknown_options_are_refused(tiny, name):
    with pytest.raises(GFLError, match="no_such_option"):
        if name in TRANSFER:
            gflkit.train(tiny, model=name, options={"no_such_option": 1}, run_dir=False, progress=False)
        else:
            gflkit.train(tiny, model=name, no_such_option=1, run_dir=False, progress=False)
    if name in TRANSFER:
        with pytest.raises((TypeError, ValueError), match="no_such_option"):
            TRANSFER[name](8, 3, no_such_option=1)


@pytest.mark.parametrize("name", PER_GRAPH_MODELS)
def test_per_graph_baseline_predicts_each_query(graph_and_episode, tiny, name):
    g, ep = graph_and_episode
    pred = torch.as_tensor(PER_GRAPH[name](tiny.graphs[ep.graph_id], ep, num_classes=tiny.num_classes, seed=0))
    assert pred.shape == ep.query.shape and int(pred.min()) >= 0 and int(pred.max()) < tiny.num_classes


def test_the_candidates_are_per_graph_baselines_that_score_the_queries_as_predict_does(graph_and_episode, tiny):
    from gflkit.prediction.candidates import NearestCentroid, RidgeClassifier
    from gflkit.prediction.predictor import candidate_graph

    g, ep = graph_and_episode
    raw = tiny.graphs[ep.graph_id]
    h, _ = candidate_graph(raw)
    for name, candidate in [("centroid", NearestCentroid(0)), ("centroid-sgc", NearestCentroid(2)),
                            ("ridge", RidgeClassifier(0)), ("ridge-sgc", RidgeClassifier(2))]:
        pred = PER_GRAPH[name](raw, ep, num_classes=tiny.num_classes, seed=3)
        assert PER_GRAPH[name].name == name and pred.shape == ep.query.shape
        assert torch.equal(pred, candidate.class_scores(h, list(ep.support))[ep.query].argmax(1))
