"""Max-pooling taken into batch norm's normalization (native_gen/pool_fusion.py): the pooled
maxima and their index written in the normalization's second pass from a plane on the
thread's stack, the ReLU's output never stored. Checked against eager (the forward's values
bit for bit, the gradients and a training step with check=True) on windows that leave cells
over, overlapping windows, float64, NaN in the input, and the cases that keep the pooling's
own functions (padding; windows sharing cells for the gradient). The pooling's gradient
is taken into batch norm's gradient region the same way (scattered per image into a plane
on the stack), checked on the training step."""
from __future__ import annotations

import numpy as np
import pytest
from cnn_step_compare import compiled_step_source  # (tests/codegen's shared check)

import eager
import static
from codegen import native_build
from eager import nn

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")

FUSED = "in the normalization's pass"


def _block(c_in: int, c_out: int, pool: nn.Module, dtype) -> nn.Module:
    eager.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(), pool)
    return m.to(eager.float64) if dtype == np.float64 else m


def _source(f, *args) -> str:
    entry = f._entry_for(args, {})[3]
    return entry.forward._loaded.source


CASES = [  # (input shape, out channels, pooling, dtype, fused)
    ((3, 2, 9, 7), 3, nn.MaxPool2d(2), np.float32, True),  # a row and a column left over
    ((2, 1, 10, 10), 2, nn.MaxPool2d(3, stride=2), np.float32, True),  # overlapping windows
    ((2, 2, 8, 8), 2, nn.MaxPool2d(2, padding=1), np.float32, False),  # padded: the pooling's own function
]


@pytest.mark.parametrize("shape, c_out, pool, dtype, fused", CASES)
def test_pooled_block_forward_and_gradients_equal_eager(shape, c_out, pool, dtype, fused):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(dtype)
    grads, outs = [], []
    for compiled in (False, True):
        model = _block(shape[1], c_out, pool, dtype)

        def loss(t, model=model):
            y = model(t)
            return (y * y).sum(), y
        f = static.compile(loss, backend="native") if compiled else loss
        t = eager.from_numpy(x)
        value, y = f(t)
        value.backward()
        outs.append(y.detach().numpy().copy())
        grads.append([p.grad.numpy().copy() for p in model.parameters()])
        if compiled:
            assert (FUSED in _source(f, t)) == fused
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(outs[1], outs[0], **tol)  # (the normalization rounds as eager's to within this)
    for a, b in zip(grads[1], grads[0]):
        np.testing.assert_allclose(a, b, **tol)


GRAD_FUSED = "max-pooling's gradient, image nn's plane"


@pytest.mark.parametrize("pool, shape, dtype, grad_fused", [
    (nn.MaxPool2d(2), (2, 1, 7, 6), np.float32, True),  # a row left over: its gradient zero
    (nn.MaxPool2d(2), (2, 2, 6, 4), np.float64, True),
    (nn.MaxPool2d(3, stride=2), (2, 1, 9, 9), np.float32, False),  # windows share cells: the fold's own function
])
def test_the_step_with_fused_poolings_equals_eager(pool, shape, dtype, grad_fused):
    x = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    text = compiled_step_source(lambda: _block(shape[1], 2, pool, dtype), lambda model, t: model(t).square().mean(),
                                x, steps=3)
    assert FUSED in text and (GRAD_FUSED in text) == grad_fused


def test_a_fused_pooling_keeps_nans():
    x = np.random.default_rng(3).standard_normal((2, 1, 6, 6)).astype(np.float32)
    model = _block(1, 2, nn.MaxPool2d(2), np.float32)
    # NaN in the input: the training normalization spreads it over its channel, and the
    # pooled values are NaN where eager's are
    bad = x.copy()
    bad[1, 0, 2, 3] = np.nan

    def fwd(t):
        return model(t)
    got = static.compile(fwd, backend="native")(eager.from_numpy(bad)).detach().numpy()
    want = model(eager.from_numpy(bad)).detach().numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(got)], want[~np.isnan(want)])


@pytest.mark.parametrize("pool, shape, dtype, grad_fused", [
    (nn.MaxPool2d(2), (2, 1, 7, 6), np.float32, True),  # a row left over: its gradient zero
    (nn.MaxPool2d(2), (3, 2, 6, 4), np.float64, True),
    (nn.MaxPool2d(3, stride=2), (2, 1, 9, 9), np.float32, False),  # windows share cells: the fold's own function
])
def test_a_drop_in_module_scatters_the_saved_pooling_mask_in_the_gradient_region(pool, shape, dtype, grad_fused):
    """A module compiled as a drop-in splits into a forward and a backward graph: the
    backward receives the pooling's mask (C, kh*kw, N, oh, ow) from the forward, and batch
    norm's gradient region scatters the pooled gradient through it per image (the full-size
    gradient never written); the gradients equal eager's."""
    x = np.random.default_rng(4).standard_normal(shape).astype(dtype)
    grads = []
    for compiled in (False, True):
        model = _block(shape[1], 2, pool, dtype)
        f = static.compile(model, backend="native") if compiled else model
        for k in range(2):
            model.zero_grad()
            (f(eager.from_numpy(x * (k + 1))) ** 2).mean().backward()
        grads.append([p.grad.numpy().copy() for p in model.parameters()])
        if compiled:
            entry = f._entry_for((eager.from_numpy(x),), {})[3]
            text = entry.grad.backward._loaded.source
            assert (GRAD_FUSED in text) == grad_fused
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    for a, b in zip(grads[1], grads[0]):
        np.testing.assert_allclose(a, b, **tol)


GATED = "the ReLU's mask at each chosen cell from the window's maximum"


@pytest.mark.parametrize("shape, dtype", [((3, 2, 8, 6), np.float32), ((2, 1, 7, 6), np.float64)])
def test_the_relu_mask_is_read_from_the_pooled_maxima_not_stored(shape, dtype):
    """In the one-graph step the ReLU's mask meets the pooling's gradient only at each window's
    chosen cell, where it is the sign of the pooled maximum: the forward stores no mask (no
    boolean buffer in the driver) and the step equals eager's, windows whose maximum is a
    ReLU zero (their gradient +0) included."""
    x = np.random.default_rng(5).standard_normal(shape).astype(dtype)

    def model():
        m = _block(shape[1], 2, nn.MaxPool2d(2), dtype)
        with eager.no_grad():
            m[1].bias.fill_(-1.0)  # most ReLU outputs zero: many windows' maximum is 0
        return m
    text = compiled_step_source(model, lambda model, t: model(t).square().mean(), x, steps=3)
    assert GATED in text and "np.bool_" not in text


@pytest.mark.parametrize("shape, kept", [((3, 1, 8, 6), True), ((5, 1, 128, 128), False)])
def test_the_pooled_gradient_planes_are_kept_for_the_second_pass_where_they_fit(shape, kept):
    """Batch norm's gradient region scatters each image's pooled gradient once and keeps the
    channel's planes for its second pass where they fit on the thread's stack
    (batchnorm_grad.KEPT_PLANES_BYTES), else scatters again in the second pass: the same step."""
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    text = compiled_step_source(lambda: _block(shape[1], 2, nn.MaxPool2d(2), np.float32),
                                lambda model, t: model(t).square().mean(), x, steps=2)
    assert GRAD_FUSED in text and ("gplanes" in text) == kept
