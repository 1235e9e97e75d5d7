"""Batch norm's normalized output left unstored where its gradient region recomputes what
it read it for (native_gen/bn_recompute.py): the affine weight's gradient sum(a * xhat) as
rstd * (sum(a * d) - mean_d * sum(a)) from the input the gradient reads anyway. Checked
against eager on training steps (check=True; float32 and float64; a batch of one; the batch
norm's output returned too), and a step with no such sum (no affine part)."""
from __future__ import annotations

import numpy as np
import pytest
from cnn_step_compare import compiled_step_source  # (tests/codegen's shared check)

from codegen import native_build
from eager import nn
from eager.nn import functional as F

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")

RECOMPUTED = "sum(a xhat) from sum(a d) (bn_recompute.py)"


def _run(shape, dtype, affine: bool, read_bn: bool):
    def loss_of(model, t):
        conv, bn = model
        h = bn(conv(t))
        loss = F.max_pool2d(h.relu(), 2).square().mean()
        return (loss, h.detach()) if read_bn else loss
    x = np.random.default_rng(7).standard_normal(shape).astype(dtype)
    return compiled_step_source(
        lambda: nn.ModuleList([nn.Conv2d(shape[1], 3, 3, padding=1), nn.BatchNorm2d(3, affine=affine)]),
        loss_of, x, steps=2)


@pytest.mark.parametrize("shape, dtype, read_bn", [((1, 2, 6, 5), np.float32, True), ((2, 2, 4, 4), np.float64, False)])
def test_the_weight_gradient_from_the_input_equals_eager(shape, dtype, read_bn):
    # (read_bn: the step returns the batch norm's output too, the pointwise region's, made
    # from xhat in registers)
    text = _run(shape, dtype, affine=True, read_bn=read_bn)
    assert RECOMPUTED in text and "yp[k] = yv;" not in text  # xhat neither read back nor stored


def test_no_affine_part_no_recomputed_sum():
    assert RECOMPUTED not in _run((2, 2, 6, 6), np.float32, affine=False, read_bn=False)
