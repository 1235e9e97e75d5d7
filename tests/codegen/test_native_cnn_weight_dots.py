"""A first layer's weight gradient as K dot products in batch norm's gradient region
(native_gen/bn_product.py dot_runs and dot_chunk): the channel's gradient values kept on the
thread's stack (in the pooled gradient's planes, or an array of their own without a pooling)
and dotted with the columns after the pass in runs across images, or staged chunk by chunk
where they do not fit (batchnorm_grad.KEPT_PLANES_BYTES). Each form checked against eager (a
training step with check=True), with the form asserted from the generated source."""
from __future__ import annotations

import numpy as np
import pytest
from cnn_step_compare import compiled_step_source  # (tests/codegen's shared check)

from codegen import native_build
from codegen.native_gen import batchnorm_grad, bn_product
from eager import nn

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")


def _source(shape: tuple, dtype, pool: bool) -> str:
    def loss_of(model, t):
        conv, bn, head = model
        h = bn(conv(t)).relu()
        if pool:
            h = nn.functional.max_pool2d(h, 2)
        return head(h).square().mean()  # a full gradient into the block (a second layer's)
    x = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    return compiled_step_source(
        lambda: nn.ModuleList([nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.Conv2d(4, 2, 3)]),
        loss_of, x, steps=2)


@pytest.mark.parametrize("shape, dtype, pool, kept", [
    ((3, 1, 64, 64), np.float32, True, "gplanes"),  # 12288 values a channel: two runs
    ((2, 1, 10, 12), np.float64, False, "oplanes"),  # no pooling: an array of their own
    ((5, 1, 120, 120), np.float32, False, None),  # 72000 floats a channel: over the stack's share
])
def test_weight_gradient_dot_products_equal_eager(shape, dtype, pool, kept):
    src = _source(shape, dtype, pool)
    assert "dot products of this channel" in src
    T = "float" if dtype == np.float32 else "double"
    if kept is None:
        assert shape[0] * shape[2] * shape[3] * np.dtype(dtype).itemsize > batchnorm_grad.KEPT_PLANES_BYTES
        assert "ostage[k - k0] = o;" in src and "const float* o_ =" not in src
    else:
        assert f"const {T}* o_ = {kept} + t0;" in src and "ostage" not in src
    runs = src.count(f"t0 += {bn_product.DOT_RUN}LL")
    assert runs == (1 if kept is not None else 0)


def test_muladd_macros_keep_a_multiply_and_an_add_without_fma():
    lines = bn_product.muladd_macros()
    fused = lines.index("#ifdef __FMA__")
    assert "__builtin_fmaf" in lines[fused + 1] and lines[lines.index("#else") + 1].endswith("((a) * (b) + (c))")
    assert bn_product.muladd("float") == "GM_MULADD_F" and bn_product.muladd("double") == "GM_MULADD_D"
