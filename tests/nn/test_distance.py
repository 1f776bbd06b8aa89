"""Distances and logits (gflkit.nn.distance): block logits and cross entropy."""
from __future__ import annotations

import pytest
import torch

from gflkit.nn import logits
from gflkit.nn.distance import block_logits


def test_distances():
    z = torch.tensor([[1.0, 0.0], [1.0, 2.0], [-3.0, 1.0]])
    c = torch.tensor([[2.0, 0.0], [0.0, -1.0]])
    inner = torch.tensor([[z[q] @ c[k] for k in range(2)] for q in range(3)])
    torch.testing.assert_close(logits(z, c), inner)
    cos = torch.tensor([[float(z[q] @ c[k] / (z[q].norm() * c[k].norm())) for k in range(2)] for q in range(3)])
    torch.testing.assert_close(logits(z, c, "cosine", cosine_scale=4.0), 4.0 * cos)
    sq = torch.tensor([[float(((z[q] - c[k]) ** 2).sum()) for k in range(2)] for q in range(3)])
    torch.testing.assert_close(logits(z, c, "euclidean"), -sq, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="unknown distance"):
        logits(z, c, "manhattan")


@pytest.mark.parametrize("kind", ["inner", "cosine"])
def test_block_logits_score_each_row_against_its_own_graphs_prototypes(kind):
    gen = torch.Generator().manual_seed(3)
    z = torch.randn(9, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    protos = torch.randn(2, 3, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    sizes = [4, 5]
    expected = torch.cat([logits(z[:4], protos[0], kind), logits(z[4:], protos[1], kind)])
    torch.testing.assert_close(block_logits(z, protos, sizes, kind), expected)
    assert torch.autograd.gradcheck(lambda x, p: block_logits(x, p, sizes, kind), (z, protos))


def test_block_logits_has_no_euclidean_form_and_checks_the_blocks():
    z, protos = torch.randn(9, 4), torch.randn(2, 3, 4)
    assert block_logits(z, protos, [4, 5], "euclidean") is None
    with pytest.raises(ValueError, match="do not fit"):
        block_logits(z, protos, [4, 4])
    with pytest.raises(ValueError, match="unknown distance"):
        block_logits(z, protos, [4, 5], "manhattan")


@pytest.mark.parametrize("classes", [2, 4, 40])
def test_cross_entropy_equals_torch_to_the_last_bit(classes):
    from gflkit.nn.distance import cross_entropy

    gen = torch.Generator().manual_seed(classes)
    scores = (5 * torch.randn(300, classes, generator=gen)).requires_grad_()
    labels = torch.randint(0, classes, (300,), generator=gen)
    ours, ref = cross_entropy(scores, labels), torch.nn.functional.cross_entropy(scores, labels)
    assert torch.equal(ours, ref)
    torch.testing.assert_close(torch.autograd.grad(ours, scores)[0], torch.autograd.grad(ref, scores)[0])
