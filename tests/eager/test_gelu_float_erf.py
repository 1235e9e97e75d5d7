"""Exact GELU's float32 kernels (erf and the exponential computed in float, inline:
gmnative/csrc/eager_kernels.cpp, gm_eager_erf) against GELU and its derivative computed in
float64 from math.erf, densely over the range where erf is not +-1, its seam at |x / sqrt 2| = 1
and the special values. The bound is the one eager's NumPy code is held to (ulps of the result,
at least one ulp of max(|x|, 1): where 1 + erf cancels no float32 computation keeps relative
accuracy)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gmnative import build as native_build
from gmnative import kernels as eager_kernels

pytestmark = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")

_ERF = np.vectorize(math.erf, otypes=[np.float64])


def _reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GELU and its derivative in float64 from the correctly rounded erf."""
    d = x.astype(np.float64)
    phi_cdf = 0.5 * (1.0 + _ERF(d / math.sqrt(2.0)))
    with np.errstate(invalid="ignore", over="ignore"):
        pdf = np.exp(-0.5 * d * d) / math.sqrt(2.0 * math.pi)
        return d * phi_cdf, phi_cdf + d * pdf


def _ulps(got: np.ndarray, want: np.ndarray, x: np.ndarray) -> float:
    got, want = got.astype(np.float64), want.astype(np.float64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    unit = np.maximum(np.spacing(np.abs(want).astype(np.float32)).astype(np.float64),
                      np.spacing(np.maximum(np.abs(x), 1.0).astype(np.float32)).astype(np.float64))
    with np.errstate(invalid="ignore"):
        err = np.where(same, 0.0, np.abs(got - want) / unit)
    return float(np.max(np.where(np.isnan(err), np.inf, err)))


def _dense() -> np.ndarray:
    seam = math.sqrt(2.0)  # |x| / sqrt(2) = 1: where the kernel's two formulas meet
    parts = [np.linspace(-8.0, 8.0, 200001), np.linspace(seam - 1e-3, seam + 1e-3, 2001),
             np.linspace(-seam - 1e-3, -seam + 1e-3, 2001), np.geomspace(1e-38, 1e-2, 2000),
             -np.geomspace(1e-38, 1e-2, 2000), np.linspace(5.6, 5.7, 1001), np.linspace(-5.7, -5.6, 1001)]
    return np.concatenate(parts).astype(np.float32)


def test_float32_gelu_and_its_derivative_are_within_two_ulps_of_float64():
    x = _dense()
    gelu, grad = eager_kernels.gelu(x, "none"), eager_kernels.gelu_grad(x)
    assert gelu is not None and grad is not None  # the kernels ran
    assert gelu.dtype == grad.dtype == np.float32
    want_gelu, want_grad = _reference(x)
    assert _ulps(gelu, want_gelu, x) <= 2.0
    assert _ulps(grad, want_grad, x) <= 2.0


def test_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 20.0, -20.0, 200.0, -200.0, 3e38, -3e38],
                 np.float32)
    gelu, grad = eager_kernels.gelu(x, "none"), eager_kernels.gelu_grad(x)
    assert gelu is not None and grad is not None
    with np.errstate(all="ignore"):
        want = 0.5 * x * (1.0 + np.sign(x) * (np.abs(x) > 10))  # erf is +-1 there, exactly 0 at 0
    np.testing.assert_array_equal(gelu[[2, 3, 7, 8, 9, 10, 11, 12]], want[[2, 3, 7, 8, 9, 10, 11, 12]])
    assert np.signbit(gelu[1]) and gelu[1] == 0 and gelu[0] == 0 and not np.signbit(gelu[0])
    assert np.isnan(gelu[4]) and np.isnan(grad[4])
    np.testing.assert_array_equal(grad[[7, 9, 11]], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(grad[[8, 10, 12]], [0.0, 0.0, 0.0])
    assert grad[0] == grad[1] == 0.5
    assert np.isnan(grad[2]) and np.isnan(grad[3])  # inf * exp(-inf) = inf * 0, as the NumPy code


def test_float64_keeps_the_double_erf():
    x = np.linspace(-6.0, 6.0, 4001)
    gelu, grad = eager_kernels.gelu(x, "none"), eager_kernels.gelu_grad(x)
    assert gelu is not None and grad is not None
    want_gelu, want_grad = _reference(x)
    np.testing.assert_allclose(gelu, want_gelu, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 63, 64, 65, 4097])
def test_the_one_pass_backward_gives_the_two_steps_bits(dtype, n):
    """gelu_kernels.gelu_backward: g * gelu_grad(x) rounded once, whatever the length (the tail
    block is padded), and eager's GELU backward through it."""
    from gmnative import gelu_kernels

    rng = np.random.default_rng(n)
    x, g = (rng.standard_normal(n) * 3).astype(dtype), rng.standard_normal(n).astype(dtype)
    got = gelu_kernels.gelu_backward(g, x)
    assert got is not None
    want = np.multiply(g, eager_kernels.gelu_grad(x))
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    assert gelu_kernels.gelu_backward(g[::2], x[::2]) is None or n == 1  # not contiguous: the caller's two steps
    import eager  # noqa: PLC0415

    t = eager.tensor(x, requires_grad=True)
    eager.nn.functional.gelu(t).backward(eager.tensor(g))
    np.testing.assert_array_equal(t.grad.numpy().view(np.uint8), want.view(np.uint8))


def test_a_float32_forward_keeps_the_derivative_until_its_backward():
    """The derivative made with the forward (gelu_and_grad) gives the bits of the separate
    passes; retain_graph runs it twice, the node lets it go after a plain backward, and an
    in-place change of the input is still refused."""
    import eager  # noqa: PLC0415

    rng = np.random.default_rng(3)
    x = (rng.standard_normal((16, 300)) * 3).astype(np.float32)
    g = rng.standard_normal((16, 300)).astype(np.float32)
    t = eager.tensor(x, requires_grad=True)
    y = eager.nn.functional.gelu(t)
    np.testing.assert_array_equal(y.detach().numpy().view(np.uint32), eager_kernels.gelu(x, "none").view(np.uint32))
    assert y.grad_fn.name() == "GeluBackward0" and y.grad_fn.deriv is not None
    y.backward(eager.tensor(g), retain_graph=True)
    want = np.multiply(g, eager_kernels.gelu_grad(x))
    np.testing.assert_array_equal(t.grad.numpy().view(np.uint32), want.view(np.uint32))
    t.grad = None
    y.backward(eager.tensor(g))
    np.testing.assert_array_equal(t.grad.numpy().view(np.uint32), want.view(np.uint32))
    assert y.grad_fn.deriv is None  # released with the saved input
    h = eager.tensor(x, requires_grad=True) * 1.0
    z = eager.nn.functional.gelu(h)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    with eager.no_grad():
        assert eager.nn.functional.gelu(t).grad_fn is None


def test_second_derivative_through_the_fused_node():
    import eager  # noqa: PLC0415
    from eager.autograd import gradgradcheck  # noqa: PLC0415

    x = eager.tensor(np.random.default_rng(4).standard_normal((3, 5)), requires_grad=True)
    assert gradgradcheck(lambda t: eager.nn.functional.gelu(t), (x,))
    xf = eager.tensor(np.linspace(-3, 3, 7, dtype=np.float32), requires_grad=True)
    (g,) = eager.autograd.grad(eager.nn.functional.gelu(xf).sum(), xf, create_graph=True)
    (gg,) = eager.autograd.grad(g.sum(), xf)
    d = xf.detach().numpy().astype(np.float64)
    np.testing.assert_allclose(gg.numpy(), np.exp(-0.5 * d * d) / np.sqrt(2 * np.pi) * (2 - d * d), rtol=1e-4,
                               atol=1e-5)
