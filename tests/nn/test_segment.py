"""Per-graph segment operations (gflkit.nn.segment) against per-block loops and DGL."""
from __future__ import annotations

import dgl
import pytest
import torch

from gflkit.nn.segment import segment_gram, segment_mean, segment_tmm


def test_segment_tmm_matches_per_block_products_and_gradients():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(9, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    b = torch.randn(9, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    sizes = [4, 2, 3]
    expected = torch.stack([x.t() @ y for x, y in zip(a.split(sizes), b.split(sizes))])
    torch.testing.assert_close(segment_tmm(a, b, sizes), expected)
    assert torch.autograd.gradcheck(lambda x, y: segment_tmm(x, y, sizes), (a, b))
    assert torch.autograd.gradcheck(lambda x: segment_tmm(x, x, sizes), (a,))  # D^T D
    with pytest.raises(ValueError, match="sum to 8"):
        segment_tmm(a, b, [4, 4])


def test_segment_mean_matches_dgl_and_its_gradient():
    gen = torch.Generator().manual_seed(2)
    a = torch.randn(9, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    sizes = [4, 0, 5]  # an empty block has mean 0, as in DGL
    expected = dgl.ops.segment_reduce(torch.tensor(sizes), a, "mean")
    torch.testing.assert_close(segment_mean(a, sizes), expected)
    assert torch.equal(segment_mean(a, sizes)[1], torch.zeros(3, dtype=torch.float64))
    assert torch.autograd.gradcheck(lambda x: segment_mean(x, sizes), (a,))
    with pytest.raises(ValueError, match="sum to 8"):
        segment_mean(a, [4, 4])


def test_segment_gram_equals_segment_tmm_with_itself():
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(9, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    sizes = [4, 2, 3]
    torch.testing.assert_close(segment_gram(a, sizes), segment_tmm(a, a, sizes))
    weight = torch.randn(3, 3, 3, dtype=torch.float64, generator=gen)  # not symmetric
    grad = torch.autograd.grad((segment_gram(a, sizes) * weight).sum(), a)[0]
    expected = torch.autograd.grad((segment_tmm(a, a, sizes) * weight).sum(), a)[0]
    torch.testing.assert_close(grad, expected)
    assert torch.autograd.gradcheck(lambda x: segment_gram(x, sizes), (a,))
    with pytest.raises(ValueError, match="sum to 8"):
        segment_gram(a, [4, 4])
