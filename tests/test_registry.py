"""The models answer ``class_scores`` themselves, and the model names come from one registry."""
from __future__ import annotations

import dgl
import pytest
import torch

from gflkit import names
from gflkit.graphs import prepare_graph
from gflkit.config import PRESETS
from gflkit.errors import GFLError
from gflkit.models.baselines import PER_GRAPH, TRANSFER, TransferBaseline
from gflkit.models.gfl import GFL
from gflkit.prediction.class_scores import class_scores, shared_embeddings

#: Scores of nodes 2, 3 and 5 (rows) for the three classes of :func:`_case`, as gflkit.prediction.class_scores
#: computed them before each model answered ``class_scores`` itself (seeded initial weights, no training).
PINNED = {
    "gfl": [0.7312, 0.6463, 0.8405, 0.6336, 0.7323, 0.3613, 0.5347, 0.6036, 0.5691],
    "protonet": [0.7898, 0.6974, 0.9002, 0.6803, 0.7859, 0.3843, 0.574, 0.6451, 0.6072],
    "knn": [-0.9163, -1.6094, -0.9163, -0.9163, -1.6094, -0.9163, -0.9163, -1.6094, -0.9163],
    "matchingnet": [-2.0279, -3.6892, 999.8297, -0.9534, 999.431, -3.0274, -1.4573, -1.6076, 999.4322],
    "maml": [-0.1789, -0.3122, -0.0791, -0.0961, -0.1308, 0.0918, -0.1773, -0.2152, 0.038],
    "agf": [-0.2712, -6.9695, 3.6782, 0.8647, 1.8969, -1.7343, -0.9469, -0.4297, 0.7745],
}


def _case():
    """An 8-node ring with chords, 6 seeded features, and ragged support sets of 3 classes."""
    gen = torch.Generator().manual_seed(0)
    src = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 0, 2, 4, 6])
    dst = torch.tensor([1, 2, 3, 4, 5, 6, 7, 0, 4, 6, 0, 2])
    g = dgl.graph((torch.cat([src, dst]), torch.cat([dst, src])), num_nodes=8)
    g.ndata["feat"] = torch.randn(8, 6, generator=gen)
    return prepare_graph(g), [torch.tensor([0, 1]), torch.tensor([4]), torch.tensor([6, 7])]


def _model(name: str):
    torch.manual_seed(0)
    if name in PRESETS:
        return GFL(6, PRESETS[name]).eval()
    return TRANSFER[name](6, 3).eval()


@pytest.mark.parametrize("name", sorted(PINNED))
def test_each_predicting_model_answers_class_scores_as_before(name):
    g, support = _case()
    model = _model(name)
    scores = model.class_scores(g, support)
    assert scores.shape == (8, 3)
    assert torch.allclose(scores[[2, 3, 5]].flatten(), torch.tensor(PINNED[name]), atol=2e-4)
    # gflkit.prediction.class_scores only dispatches: the same numbers, bit for bit (MAML and AGF restart from the
    # same weights)
    assert torch.equal(class_scores(_model(name), g, support), scores)
    z = shared_embeddings(model, g)
    if name in ("maml", "agf"):  # they adapt their encoder to each support set
        assert z is None
    else:
        assert torch.equal(model.class_scores(g, support, z), scores)


def test_a_model_that_does_not_read_the_support_cannot_predict():
    g, support = _case()
    head = TRANSFER["transfer-head"](6, 3)
    assert not head.uses_support and shared_embeddings(head, g) is None
    with pytest.raises(GFLError, match="transfer-head cannot predict on a new graph"):
        class_scores(head, g, support)
    with pytest.raises(GFLError, match="3-class head; it cannot predict 4 classes"):
        _model("agf").class_scores(g, support + [torch.tensor([3])])


class ToyBaseline(TransferBaseline):
    """A transfer baseline in one file: every node scores each class by its mean feature distance."""

    name = "toy"

    def class_scores(self, g, support, z=None, *, nodes=None):
        x = g.ndata["feat"]
        scores = -torch.cdist(x, torch.stack([x[s].mean(0) for s in support]))
        return scores if nodes is None else scores[nodes]


def test_a_baseline_registered_with_one_line_is_a_model(monkeypatch):
    from gflkit import api

    monkeypatch.setitem(names.TRANSFER_BASELINES, "toy", f"{__name__}:ToyBaseline")  # the one line
    assert "toy" in names.model_names() and "toy" in names.trainable_names()
    assert api.model_names() == names.model_names() and api.trainable_names() == names.trainable_names()
    assert TRANSFER["toy"] is ToyBaseline and "toy" in TRANSFER and "toy" not in PER_GRAPH
    g, support = _case()
    assert class_scores(TRANSFER["toy"](6, 3), g, support).argmax(1)[[0, 4, 7]].tolist() == [0, 1, 2]


def test_the_registry_names_what_implements_each_model():
    assert tuple(TRANSFER) == names.TRANSFER_MODELS and tuple(PER_GRAPH) == names.PER_GRAPH_MODELS
    for name, cls in TRANSFER.items():
        assert issubclass(cls, TransferBaseline) and cls.name == name
    assert all(callable(fit) for fit in PER_GRAPH.values())
    assert names.model_names() == tuple(PRESETS) + names.TRANSFER_MODELS + names.PER_GRAPH_MODELS
    with pytest.raises(KeyError):
        TRANSFER["nonexistent"]
