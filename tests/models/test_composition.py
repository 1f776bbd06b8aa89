"""GFL built from parts: pluggable encoders, composed models, old checkpoints, devices."""
from __future__ import annotations

from pathlib import Path

import dgl
import pytest
import torch
from torch import nn

from cli_helpers import invoke, one_line_error

from gflkit.api import default_run_dir
from gflkit.graphs import EpisodeBatch, batch_episodes, prepare_graph
from gflkit.config import EpisodeConfig, GFLConfig, TrainConfig, hashed_dict, to_dict
from gflkit.devices import module_device, resolve_device
from gflkit.episodes import Episode
from gflkit.errors import GFLError
from gflkit.models.gfl import GFL, upgrade_state_dict
from gflkit.refine import RefineConfig, refine_scores
from gflkit.nn import (Distance, GraphPrototype, HierarchicalGraphRepresentation, HierarchyGate, MeanPrototype,
                       NodeEncoder, PrototypeGNN, make_encoder)
from gflkit.runs.checkpoints import load_checkpoint

OLD_CHECKPOINT = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoint_0.1.0.pt"


@pytest.fixture(scope="module")
def graph():
    """A prepared random graph of 60 nodes and a 2-graph batch with one episode each."""
    torch.manual_seed(0)
    g = dgl.to_bidirected(dgl.rand_graph(60, 240))
    g.ndata["feat"] = torch.randn(60, 8)
    pg = prepare_graph(g)
    ep = Episode(0, torch.tensor([[0, 1, 2], [3, 4, 5]]), torch.arange(6, 30), torch.randint(0, 2, (24,)))
    made = batch_episodes([pg, pg], [ep, ep])
    return pg, ep, made.graph, made.support, made.queries


# -- encoders ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,conv", [("sage", "SAGEConv"), ("gat", "GATConv"), ("gin", "GINConv")])
def test_encoders_are_two_dgl_convolutions(graph, name, conv):
    """Each named encoder is the dgl.nn layer stacked twice, ReLU between, same widths."""
    pg = graph[0]
    torch.manual_seed(0)
    enc = make_encoder(name, 8, 16, 4)
    assert type(enc.conv1).__name__ == conv and type(enc.conv2).__name__ == conv
    x = pg.ndata["feat"]
    expected = enc.conv2(pg, torch.relu(enc.conv1(pg, x).reshape(60, -1))).reshape(60, -1)
    out = enc(pg)
    assert out.shape == (60, 4)
    torch.testing.assert_close(out, expected)


def test_gcn_encoder_is_the_fast_path():
    enc = make_encoder("gcn", 8, 16, 4)
    assert type(enc).__name__ == "GCNEncoder" and enc.conv1.weight.shape == (8, 16)
    with pytest.raises(ValueError, match="unknown encoder 'gcnn'"):
        make_encoder("gcnn", 8)
    with pytest.raises(GFLError, match="encoder='mlp' is not valid"):
        GFLConfig(encoder="mlp")


def test_a_users_own_encoder_plugs_in(graph):
    """Any module taking (g) and giving (N, d) is an encoder; here two dgl.nn.GraphConv layers."""
    from dgl.nn import GraphConv

    pg, ep, bg, support, queries = graph
    encoder = NodeEncoder(GraphConv(8, 16), GraphConv(16, 8))
    model = GFL(encoder, MeanPrototype(), Distance("euclidean"))
    out = model(EpisodeBatch(bg, support, queries))
    loss, parts = model.loss(out, [ep.query_label, ep.query_label])
    loss.backward()
    assert out.logits[0].shape == (24, 2) and set(parts) == {"ce"}
    assert encoder.conv1.weight.grad.abs().sum() > 0
    assert model.cfg is None


def test_composed_model_equals_the_configured_one(graph):
    """GFL(parts) with the parts from_config builds, in the same order, is the same model."""
    pg, ep, bg, support, queries = graph
    cfg = GFLConfig(encoder="sage", distance="cosine", recon=False)
    torch.manual_seed(1)
    configured = GFL.from_config(cfg, 8)
    torch.manual_seed(1)
    encoder = make_encoder("sage", 8, cfg.hidden_feats, cfg.out_feats)
    prototype = GraphPrototype(PrototypeGNN(cfg.out_feats, cfg.out_feats), cfg.similarity, cfg.hops, cfg.mu, cfg.mu0)
    hierarchy = HierarchicalGraphRepresentation(cfg.out_feats, cfg.graph_feats, cfg.levels, cfg.clusters)
    composed = GFL(encoder, prototype, Distance("cosine", cfg.cosine_scale), hierarchy=hierarchy,
                   gate=HierarchyGate(cfg.graph_feats, prototype.num_params))
    assert list(composed.state_dict()) == list(configured.state_dict())
    made = EpisodeBatch(bg, support, queries)
    for a, b in zip(composed(made).logits, configured(made).logits):
        torch.testing.assert_close(a, b)


def test_parts_must_fit_together():
    enc = make_encoder("gcn", 8)
    with pytest.raises(ValueError, match="give both or neither"):
        GFL(enc, GraphPrototype(PrototypeGNN(32, 32)), gate=HierarchyGate(32, 32 * 33))
    with pytest.raises(ValueError, match="needs a prototype with parameters"):
        GFL(enc, MeanPrototype(), hierarchy=HierarchicalGraphRepresentation(32, 32, 2, (4,)),
            gate=HierarchyGate(32, 10))


# -- checkpoints of 0.1.0 --------------------------------------------------------------------------------------


def test_checkpoint_of_0_1_0_loads_and_scores_as_it_did():
    """A checkpoint written before the model was composed (PGNN weights under ``pgnn.``) loads
    through the key map and gives the logits it gave then."""
    raw = torch.load(OLD_CHECKPOINT, weights_only=True)
    assert "pgnn.weight" in raw["state_dict"] and "encoder" not in raw["model_config"]
    model, meta = load_checkpoint(OLD_CHECKPOINT)
    torch.testing.assert_close(model.prototype.pgnn.weight, raw["state_dict"]["pgnn.weight"])
    g = dgl.graph((meta["graph_src"], meta["graph_dst"]), num_nodes=12)
    g.ndata["feat"] = meta["graph_feat"]
    with torch.no_grad():
        out = model(EpisodeBatch(prepare_graph(g), meta["support"], [meta["queries"]]))
    torch.testing.assert_close(out.logits[0], meta["expected_logits"])


def test_key_map_applies_to_load_state_dict_and_is_idempotent():
    raw = torch.load(OLD_CHECKPOINT, weights_only=True)
    model = GFL.from_config(GFLConfig(**{k: tuple(v) if k == "clusters" else v
                                         for k, v in raw["model_config"].items()}), 6)
    model.load_state_dict(raw["state_dict"])  # the pre-hook renames in place
    upgraded = upgrade_state_dict(raw["state_dict"])
    assert upgrade_state_dict(upgraded) == upgraded
    assert set(upgraded) == set(model.state_dict())


def test_run_names_of_default_settings_did_not_change(tiny_collection):
    """``encoder``, ``val_from_train`` and ``parallel_steps`` joined the settings after 0.1.0: left at their
    defaults they do not enter the name's hash."""
    assert "encoder" not in hashed_dict(GFLConfig()) and "encoder" in to_dict(GFLConfig())
    assert "val_from_train" not in hashed_dict(TrainConfig()) and "val_from_train" in to_dict(TrainConfig())
    assert "parallel_steps" not in hashed_dict(TrainConfig()) and "parallel_steps" in to_dict(TrainConfig())
    args = (EpisodeConfig(), TrainConfig())
    gcn = default_run_dir(tiny_collection, "gfl", GFLConfig(), *args)
    sage = default_run_dir(tiny_collection, "gfl", GFLConfig(encoder="sage"), *args)
    carved = default_run_dir(tiny_collection, "gfl", GFLConfig(), EpisodeConfig(), TrainConfig(val_from_train=1))
    assert len({gcn, sage, carved}) == 3
    assert gcn.name.endswith("-" + __import__("gflkit.runs.checkpoints", fromlist=["settings_hash"]).settings_hash({
        "model": "gfl", "model_config": {k: v for k, v in to_dict(GFLConfig()).items() if k != "encoder"},
        "options": {}, "episode_config": to_dict(EpisodeConfig()),
        "train_config": {"steps": 400, "meta_batch": 5, "lr": 0.01, "weight_decay": 0.0, "eval_every": 20,
                         "patience": 8, "val_episodes": 1, "seed": 0, "grad_clip": None}}))  # 0.1.0's


@pytest.fixture(scope="module")
def tiny_collection(root):
    from gflkit.data import GraphCollection

    return GraphCollection.load(root / "processed" / "tiny")


def test_train_with_each_encoder_from_the_command_line(root, tmp_path):
    from cli_helpers import csv_table

    for name in ("sage", "gat"):
        run = tmp_path / name
        table = csv_table(invoke("--no-progress", "train", "tiny", "--encoder", name, "--steps", "3",
                                 "--eval-every", "3", "--k-shot", "2", "--run-dir", run, "--data-root", root))
        assert len(table) == 1 and 0 <= table.accuracy.iloc[0] <= 100
        model, meta = load_checkpoint(run)
        assert meta["model_config"]["encoder"] == name and type(model.encoder.conv1).__name__ != "GCNLayer"


# -- devices -----------------------------------------------------------------------------------------------------

CONFIGS = [GFLConfig(), GFLConfig(aggregator="att", pool="max"), GFLConfig(similarity="jaccard"),
           GFLConfig(similarity="adamic-adar", pgnn_norm="sym"), GFLConfig(similarity="pagerank", distance="cosine"),
           GFLConfig(distance="euclidean", gate_mode="centered"), GFLConfig(encoder="sage"),
           GFLConfig(encoder="gat"), GFLConfig(encoder="gin"), GFLConfig(prototype="mean", gate=False)]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c.encoder}-{c.similarity}-{c.distance}-{c.prototype}")
def test_no_tensor_is_made_without_the_inputs_device(graph, cfg):
    """With the default device set to ``meta``, any tensor made without an explicit device lands on
    ``meta`` and fails when it meets the CPU inputs: forward, loss, backward and scoring must not."""
    pg, ep, bg, support, queries = graph
    torch.manual_seed(0)
    model = GFL.from_config(cfg, 8)
    torch.set_default_device("meta")
    try:
        out = model(EpisodeBatch(bg, support, queries))
        loss, _ = model.loss(out, [ep.query_label, ep.query_label])
        loss.backward()
        scores = [model.class_scores(pg, list(ep.support), nodes=ep.query) for _ in range(2)]
        every = model.class_scores(pg, list(ep.support))
        refined = [refine_scores(pg, every, ep.support, RefineConfig(m)) for m in ("lp", "cs")]
    finally:
        torch.set_default_device(None)
    assert all(r.device.type == "cpu" and r.shape == (60, 2) and torch.isfinite(r).all() for r in refined)
    assert loss.device.type == "cpu" and torch.isfinite(loss)
    assert all(s.device.type == "cpu" and s.shape == (24, 2) for s in scores)


def test_resolve_device_names_what_to_install(monkeypatch):
    import gflkit.devices as devices

    assert resolve_device(None) == torch.device("cpu") and resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(GFLError, match="choose cpu, cuda or cuda:N"):
        resolve_device("tpu")
    monkeypatch.setattr(devices, "dgl_cuda_build", lambda: False)
    with pytest.raises(GFLError) as err:
        resolve_device("cuda:0")
    message = str(err.value)
    assert "\n" not in message and "CPU-only build" in message
    assert "pip install dgl -f https://data.dgl.ai/wheels/" in message
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    with pytest.raises(GFLError, match=r"torch-\d+\.\d+/cu124/repo.html"):
        resolve_device("cuda")
    monkeypatch.setattr(devices, "dgl_cuda_build", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(GFLError, match="sees no CUDA device"):
        resolve_device("cuda")


def test_a_working_cuda_device_is_checked_once_per_process(monkeypatch):
    import gflkit.devices as devices

    checks = []
    monkeypatch.setattr(devices, "_WORKING", {})
    monkeypatch.setattr(devices, "dgl_cuda_build", lambda: checks.append("dgl") or True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("cuda:0") == resolve_device(torch.device("cuda:0")) == torch.device("cuda:0")
    assert checks == ["dgl"]  # the second call found the first one's answer
    with pytest.raises(GFLError, match="has 1 CUDA device"):  # a failure is not remembered: checked each time
        resolve_device("cuda:1")
    with pytest.raises(GFLError, match="has 1 CUDA device"):
        resolve_device("cuda:1")
    assert checks == ["dgl", "dgl", "dgl"]


def test_this_dgl_is_reported_as_a_cpu_build():
    """PyPI's DGL 2.1 has no CUDA: the probe must say so here (and the doctor reports the same)."""
    from gflkit.devices import dgl_cuda_build

    assert dgl_cuda_build() is False


def test_device_cuda_on_this_machine_is_one_line_before_any_work(tmp_path):
    result = invoke("train", "--device", "cuda", "--data-root", tmp_path)
    one_line_error(result, "--device cuda", "pip install dgl")
    assert not (tmp_path / "processed").exists()  # failed before generating the default family
    one_line_error(invoke("train", "--device", "gpu"), "--device", code=2)
    for command in ("compare", "ablate", "sweep"):
        args = {"ablate": ("--drop", "gate"), "sweep": ("--param", "mu", "--values", "0.5")}.get(command, ())
        one_line_error(invoke(command, *args, "--device", "cuda:1", "--data-root", tmp_path), "--device cuda:1")
    assert not (tmp_path / "processed").exists()


def test_training_keeps_the_model_on_the_device(small_family):
    from gflkit.training.meta import meta_train

    result = meta_train(small_family, GFLConfig(), EpisodeConfig(k_shot=3), TrainConfig(steps=2, eval_every=2),
                        progress=False, device="cpu")
    assert module_device(result.model) == torch.device("cpu")
    assert all(p.device.type == "cpu" for p in result.model.parameters())


def test_distributed_backend_follows_the_device(monkeypatch):
    import torch.distributed as tdist

    from gflkit.training.distributed import backend_for, rank_device

    assert backend_for(torch.device("cpu")) == "gloo"
    assert rank_device(torch.device("cuda"), 3) == torch.device("cuda", 3)
    assert rank_device(torch.device("cpu"), 3) == torch.device("cpu")
    monkeypatch.setattr(tdist, "is_nccl_available", lambda: True)
    assert backend_for(torch.device("cuda", 1)) == "nccl"
    monkeypatch.setattr(tdist, "is_nccl_available", lambda: False)
    assert backend_for(torch.device("cuda", 1)) == "gloo"


class _Frozen(nn.Module):  # a module without parameters
    def forward(self, x):
        return x


def test_module_device_of_a_module_without_parameters():
    assert module_device(_Frozen()) == torch.device("cpu")


def test_settings_that_describe_a_huge_model_allocate_nothing(tmp_path):
    """A hostile checkpoint's settings are checked against its weights on the meta device first:
    a model of 10^12 parameters is refused in one line instead of being allocated."""
    import resource

    raw = torch.load(OLD_CHECKPOINT, weights_only=True)
    raw["model_config"]["hidden_feats"] = 10**7
    raw["in_feats"] = 10**5
    bad = tmp_path / "best.pt"
    torch.save(raw, bad)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(GFLError, match="weights do not fit the model it describes.*wrong shape: encoder.conv1.weight"):
        load_checkpoint(bad)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KB: nothing near 4 TB


def test_a_registered_encoder_trains_and_reloads_by_name(root, tmp_path):
    """register_encoder makes a user's encoder a config value like the built-in ones."""
    import gflkit
    from dgl.nn import GraphConv

    from gflkit.names import REGISTERED_ENCODERS
    from gflkit.nn import register_encoder
    from gflkit.nn.encoder import _REGISTERED

    with pytest.raises(ValueError, match="built-in encoder"):
        register_encoder("gat", lambda i, h, o, p: None)
    with pytest.raises(GFLError, match="encoder='graphconv' is not valid"):
        GFLConfig(encoder="graphconv")
    register_encoder("graphconv", lambda i, h, o, p: NodeEncoder(GraphConv(i, h), GraphConv(h, o), p))
    try:
        run = tmp_path / "run"
        table = gflkit.train("tiny", encoder="graphconv", k_shot=2, steps=3, eval_every=3, run_dir=run, root=root,
                             progress=False)
        assert len(table) == 1
        model, meta = load_checkpoint(run)
        assert meta["model_config"]["encoder"] == "graphconv" and type(model.encoder.conv1).__name__ == "GraphConv"
    finally:
        _REGISTERED.pop("graphconv", None)
        REGISTERED_ENCODERS.discard("graphconv")
    with pytest.raises(GFLError, match="encoder='graphconv' is not valid"):
        load_checkpoint(run)


def test_only_gfl_models_are_placed_on_another_device():
    from gflkit.models import place
    from gflkit.models.baselines import TRANSFER

    model = place(GFL.from_config(GFLConfig(), 8), torch.device("meta"), "gfl")
    assert module_device(model).type == "meta"
    knn = TRANSFER["knn"](8, 2)
    assert place(knn, torch.device("cpu"), "knn") is knn
    with pytest.raises(GFLError, match="only GFL models .* run on a GPU; knn runs on the CPU"):
        place(knn, torch.device("cuda"), "knn")
