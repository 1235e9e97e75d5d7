"""A narrow convolution's product made in batch norm's first pass (native_gen/bn_product.py):
a first layer's (C, K) x (K, N*H*W) product computed element by element while the
normalization's statistics are summed, the product never written. Checked against eager
(a training step with check=True, float32 and float64, K of 9 and 27), and the cases that
keep the library product (K above bn_product.MAX_K, the product's value read elsewhere)."""
from __future__ import annotations

import numpy as np
import pytest
from cnn_step_compare import compiled_step_source  # (tests/codegen's shared check)

from codegen import native_build
from eager import nn

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")

DIRECT = "multiply-adds an element (bn_product.py)"


def _step_and_source(c_in: int, shape: tuple, dtype, also_conv: bool):
    def loss_of(model, t):
        conv, bn = model
        h = conv(t)
        return bn(h).relu().square().mean() + (h.mean() if also_conv else 0.0)
    x = np.random.default_rng(5).standard_normal(shape).astype(dtype)
    return compiled_step_source(lambda: nn.ModuleList([nn.Conv2d(c_in, 4, 3, padding=1), nn.BatchNorm2d(4)]),
                                loss_of, x, steps=2)


@pytest.mark.parametrize("c_in, shape, dtype, also_conv, direct", [
    (1, (3, 1, 7, 9), np.float32, False, True),  # K = 9
    (3, (2, 3, 6, 6), np.float64, False, True),  # K = 27
    (4, (2, 4, 5, 5), np.float32, False, False),  # K = 36: the library product
    (1, (2, 1, 6, 6), np.float32, True, False),  # the convolution's output read elsewhere too
])
def test_first_layer_product_in_the_normalization_equals_eager(c_in, shape, dtype, also_conv, direct):
    assert (DIRECT in _step_and_source(c_in, shape, dtype, also_conv)) == direct
