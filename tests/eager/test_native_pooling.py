"""Eager's 2-d max-pooling op and im2col on NCHW images (gmops.pooling, gmnative.conv_kernels):
the native kernels give the NumPy code's results (values and im2col bit for bit, gradients to
rounding where windows overlap), PyTorch's values, gradients and tie rule, and the op
differentiates twice."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd import gradcheck, gradgradcheck
from gmops import conv as C
from gmops import pooling as P

F = eager.nn.functional

# (shape, kernel, stride, padding (top, bottom, left, right), dilation)
GEOMETRIES = [((4, 3, 8, 8), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1)),
              ((2, 3, 9, 7), (3, 3), (2, 2), (1, 2, 1, 1), (1, 1)),  # ceil_mode's extra row
              ((2, 2, 9, 9), (3, 2), (2, 1), (1, 1, 0, 0), (2, 1)),
              ((1, 2, 5, 7), (2, 2), (2, 2), (0, 1, 0, 1), (1, 1))]


def _native_or_skip():
    native = C.conv_native()
    if native is None or native.max_pool2d(np.zeros((1, 1, 2, 2), np.float32), (2, 2), (1, 1), (2, 2), (0, 0),
                                           (1, 1)) is None:
        pytest.skip("eager's native kernels cannot be built here (no C++ compiler)")
    return native


def _image(rng, shape, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    x[0, 0, 0, 0] = np.nan  # a NaN wins its window
    x[-1, -1, 1, :] = 2.5  # ties along a row
    x[0, -1] = np.maximum(x[0, -1], 0)  # ReLU's zeros: whole windows of ties
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_native_pooling_matches_numpy_code(geometry, dtype, monkeypatch):
    native = _native_or_skip()
    shape, kernel, stride, padding, dilation = geometry
    rng = np.random.default_rng(0)
    x = _image(rng, shape, dtype)
    attrs = dict(kernel=kernel, stride=stride, padding=padding, dilation=dilation)
    out = P._max_pool2d(np, x, **attrs)
    g = rng.standard_normal(out.shape).astype(dtype)
    gx = P._max_pool2d_backward(np, g, x, **attrs)
    cols = C._unfold(np, x, kernel, stride, padding, dilation, -np.inf)
    monkeypatch.setattr(C, "_conv_kernels", False)  # the NumPy code from here on
    assert C.conv_native() is None
    np.testing.assert_array_equal(out, P._max_pool2d(np, x, **attrs))
    np.testing.assert_array_equal(cols, C._unfold(np, x, kernel, stride, padding, dilation, -np.inf))
    np.testing.assert_allclose(gx, P._max_pool2d_backward(np, g, x, **attrs), rtol=1e-6, atol=1e-6)
    values, where = native.max_pool2d(x, kernel, out.shape[2:], stride, padding[::2], dilation, True)
    np.testing.assert_array_equal(values, out)
    plane = x.reshape(shape[0], shape[1], -1)
    np.testing.assert_array_equal(np.take_along_axis(plane, where.reshape(shape[0], shape[1], -1), 2).ravel(),
                                  out.ravel())


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize(("kernel", "stride", "padding", "dilation"),
                         [(2, None, 0, 1), (3, 2, 1, 1), ((3, 2), (2, 1), (1, 0), (2, 1))])
def test_max_pool2d_matches_pytorch(kernel, stride, padding, dilation, ceil_mode):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = _image(rng, (2, 3, 9, 8), np.float32)
    x[0, 0, 0, 0] = 0.0  # PyTorch's gradient at a NaN differs in which NaN wins: no NaN here
    ours = eager.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    y = F.max_pool2d(ours, kernel, stride, padding, dilation, ceil_mode)
    t = torch.nn.functional.max_pool2d(theirs, kernel, stride, padding, dilation, ceil_mode)
    assert y.grad_fn.name() == t.grad_fn.name()
    np.testing.assert_array_equal(y.detach().numpy(), t.detach().numpy())
    g = rng.standard_normal(tuple(t.shape)).astype(np.float32)
    y.backward(eager.tensor(g))
    t.backward(torch.tensor(g))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_max_pool2d_unbatched_and_nan():
    x = eager.tensor([[[1.0, float("nan")], [3.0, 2.0]]], requires_grad=True)
    y = F.max_pool2d(x, 2)
    assert y.shape == (1, 1, 1) and np.isnan(y.item())
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[0.0, 1.0], [0.0, 0.0]]])


def test_max_pool2d_gradients_twice():
    x = eager.tensor(np.random.default_rng(2).standard_normal((2, 2, 7, 6)), requires_grad=True)
    assert gradcheck(lambda t: F.max_pool2d(t, 3, 2, 1), (x,))
    assert gradgradcheck(lambda t: F.max_pool2d(t, 3, 2, 1), (x,))
    assert gradcheck(lambda t: F.max_pool2d(t, 2, ceil_mode=True), (x,))


def test_max_pool2d_refuses_what_pytorch_refuses():
    with pytest.raises(RuntimeError, match="max_pool2d"):
        F.max_pool2d(eager.zeros(2, 2), 2)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(eager.zeros(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(RuntimeError, match="max_pool2d"):
        F.max_pool2d(eager.zeros(1, 1, 2, 2), 3)
