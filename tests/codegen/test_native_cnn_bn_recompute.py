"""Batch norm's normalized output left unstored where its gradient region recomputes what
it read it for (native_gen/bn_recompute.py): the affine weight's gradient sum(a * xhat) as
rstd * (sum(a * d) - mean_d * sum(a)) from the input the gradient reads anyway. Checked
against eager on training steps (check=True; float32 and float64; a batch of one; the batch
norm's output returned too), and a step with no such sum (no affine part)."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from codegen import native_build
from eager import nn
from eager.nn import functional as F

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")

RECOMPUTED = "sum(a xhat) from sum(a d) (bn_recompute.py)"


def _run(shape, dtype, affine: bool, read_bn: bool):
    x = np.random.default_rng(7).standard_normal(shape).astype(dtype)
    runs = []
    for compiled in (False, True):
        eager.manual_seed(0)
        conv, bn = nn.Conv2d(shape[1], 3, 3, padding=1), nn.BatchNorm2d(3, affine=affine)
        model = nn.ModuleList([conv, bn])
        if dtype == np.float64:
            model = model.to(eager.float64)
        opt = eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(t, conv=conv, bn=bn, opt=opt):
            opt.zero_grad()
            h = bn(conv(t))
            loss = F.max_pool2d(h.relu(), 2).square().mean()
            loss.backward()
            opt.step()
            return (loss, h.detach()) if read_bn else loss
        f = static.compile(step, backend="native", check=True) if compiled else step
        outs = [f(eager.from_numpy(x * (k + 1))) for k in range(2)]
        runs.append((outs, [p.detach().numpy().copy() for p in model.parameters()], f))
    (want, want_p, _), (got, got_p, f) = runs
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    for a, b in zip(got, want):
        for u, v in zip(a if read_bn else (a,), b if read_bn else (b,)):
            np.testing.assert_allclose(u.detach().numpy(), v.detach().numpy(), **tol)
    for a, b in zip(got_p, want_p):
        np.testing.assert_allclose(a, b, **tol)
    return f._entry_for((eager.from_numpy(x),), {})[3].forward._loaded.source


@pytest.mark.parametrize("shape, dtype, read_bn", [((1, 2, 6, 5), np.float32, True), ((2, 2, 4, 4), np.float64, False)])
def test_the_weight_gradient_from_the_input_equals_eager(shape, dtype, read_bn):
    # (read_bn: the step returns the batch norm's output too, the pointwise region's, made
    # from xhat in registers)
    text = _run(shape, dtype, affine=True, read_bn=read_bn)
    assert RECOMPUTED in text and "yp[k] = yv;" not in text  # xhat neither read back nor stored


def test_no_affine_part_no_recomputed_sum():
    assert RECOMPUTED not in _run((2, 2, 6, 6), np.float32, affine=False, read_bn=False)
