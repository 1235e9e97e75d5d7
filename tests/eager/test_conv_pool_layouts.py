"""Convolution, pooling and unfold results are row-major (N, C, ...) as PyTorch's, for
batches of one and more: the CNN idiom `pool(conv(x)).view(N, -1)` needs it."""
from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

CASES = {
    "conv1d": lambda F, lib, x: F.conv1d(x[:, :, 0], lib.ones(4, 3, 2, dtype=x.dtype)),
    "conv2d": lambda F, lib, x: F.conv2d(x, lib.ones(4, 3, 3, 2, dtype=x.dtype), lib.ones(4, dtype=x.dtype)),
    "conv2d-groups": lambda F, lib, x: F.conv2d(x, lib.ones(6, 1, 2, 2, dtype=x.dtype), groups=3, stride=2),
    "conv3d": lambda F, lib, x: F.conv3d(x.unsqueeze(2).expand(-1, -1, 3, -1, -1), lib.ones(2, 3, 2, 2, 2,
                                                                                             dtype=x.dtype)),
    "max_pool1d": lambda F, lib, x: F.max_pool1d(x[:, :, 0], 2),
    "max_pool2d": lambda F, lib, x: F.max_pool2d(x, 2),
    "max_pool2d-indices": lambda F, lib, x: F.max_pool2d(x, 3, 2, 1, return_indices=True)[1],
    "avg_pool1d": lambda F, lib, x: F.avg_pool1d(x[:, :, 0], 2),
    "avg_pool2d": lambda F, lib, x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
    "max_pool3d": lambda F, lib, x: F.max_pool3d(x.unsqueeze(2).expand(-1, -1, 4, -1, -1), 2),
    "avg_pool3d": lambda F, lib, x: F.avg_pool3d(x.unsqueeze(2).expand(-1, -1, 4, -1, -1), 2),
    "adaptive_avg_pool2d": lambda F, lib, x: F.adaptive_avg_pool2d(x, (3, 5)),
    "adaptive_max_pool2d": lambda F, lib, x: F.adaptive_max_pool2d(x, (3, 5)),
    "unfold": lambda F, lib, x: F.unfold(x, 2),
}


@pytest.mark.parametrize("batch", [1, 2, 5])
@pytest.mark.parametrize("name", sorted(CASES))
def test_result_layout_matches_pytorch(name, batch):
    a = np.random.default_rng(0).standard_normal((batch, 3, 6, 5))
    got = []
    for lib in (eager, torch):
        y = CASES[name](lib.nn.functional, lib, lib.tensor(a))
        got.append((tuple(y.shape), y.is_contiguous(), tuple(s for s, n in zip(y.stride(), y.shape) if n > 1)))
        assert tuple(y.view(batch, -1).shape) == (batch, y.numel() // batch)
    assert got[0] == got[1]


def test_lenet_style_flatten_with_view():
    conv, pool = eager.nn.Conv2d(3, 6, 5), eager.nn.MaxPool2d(2, 2)
    x = pool(eager.relu(conv(eager.randn(4, 3, 32, 32))))
    assert x.view(-1, 6 * 14 * 14).shape == (4, 6 * 14 * 14)
