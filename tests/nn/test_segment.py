"""Per-graph segment means (gflkit.nn.segment) against DGL."""
from __future__ import annotations

import dgl
import pytest
import torch

from gflkit.nn.segment import segment_mean


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
