"""cumprod's gradient and its own gradient are exact with any number of zeros in a slice
(none, one, two, three), checked against finite differences in float64 and against
PyTorch's first, second and third derivatives when it is installed."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd.gradcheck import gradcheck, gradgradcheck

SLICES = {
    0: [0.7, 1.2, -1.3, 0.8, 0.9, 1.1],
    1: [1.1, -0.9, 0.0, 0.6, 1.4, 0.7],
    2: [0.0, 1.2, 0.6, 0.0, -1.1, 1.3],
    3: [0.0, 1.3, 0.0, 0.9, 0.0, 0.8],
}


def _inputs(zeros: int, dim: int) -> np.ndarray:
    rng = np.random.default_rng(zeros)
    rows = np.array([rng.permutation(SLICES[zeros]) for _ in range(3)])
    assert (rows == 0).sum(axis=1).tolist() == [zeros] * 3
    return rows if dim in (1, -1) else rows.T.copy()


@pytest.mark.parametrize("zeros", [0, 1, 2, 3])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_first_and_second_order_match_finite_differences(zeros, dim):
    x = eager.tensor(_inputs(zeros, dim), requires_grad=True)
    assert gradcheck(lambda a: a.cumprod(dim), (x,))
    assert gradgradcheck(lambda a: a.cumprod(dim), (x,))


@pytest.mark.parametrize("zeros", [2, 3])
def test_second_order_in_a_middle_dimension(zeros):
    base = _inputs(zeros, 1)  # (3, 6): slices along dim 1
    x = eager.tensor(np.stack([base, base[::-1] * 0.5], axis=-1), requires_grad=True)  # (3, 6, 2)
    assert gradgradcheck(lambda a: a.cumprod(1), (x,))


def _derivatives(lib, x: np.ndarray, dim: int):
    rng = np.random.default_rng(7)
    w = lib.tensor(rng.standard_normal(x.shape))
    h = lib.tensor(rng.standard_normal(x.shape))
    k = lib.tensor(rng.standard_normal(x.shape))
    t = lib.tensor(x, requires_grad=True)
    (g1,) = lib.autograd.grad((t.cumprod(dim) * w).sum(), t, create_graph=True)
    (g2,) = lib.autograd.grad((g1 * h).sum(), t, create_graph=True)
    (g3,) = lib.autograd.grad((g2 * k).sum(), t)
    return [g.detach().numpy() for g in (g1, g2, g3)]


@pytest.mark.parametrize("zeros", [0, 1, 2, 3])
@pytest.mark.parametrize("dim", [0, 1])
def test_three_orders_match_pytorch(zeros, dim):
    torch = pytest.importorskip("torch")
    x = _inputs(zeros, dim)
    for ours, theirs in zip(_derivatives(eager, x, dim), _derivatives(torch, x, dim)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_second_derivative_of_a_slice_with_two_zeros_is_not_zero():
    """The terms holding both zeros: d/dx0 of d out_4/d x2 for x = (0, a, 0, b, c) is a * b."""
    x = eager.tensor([0.0, 1.5, 0.0, 2.0, 3.0], requires_grad=True)
    w = eager.tensor([0.0, 0.0, 0.0, 1.0, 0.0])  # picks out_3 = x0 x1 x2 x3
    (g,) = eager.autograd.grad((x.cumprod(0) * w).sum(), x, create_graph=True)
    (h,) = eager.autograd.grad(g[2], x)  # d/dx of (x0 x1 x3)
    np.testing.assert_allclose(h.numpy(), [1.5 * 2.0, 0.0, 0.0, 0.0, 0.0])


def test_grad_fn_names_and_first_order_at_zeros():
    x = eager.tensor(_inputs(2, 1), requires_grad=True)
    y = x.cumprod(1)
    assert y.grad_fn.name() == "CumprodBackward0"
    w = np.random.default_rng(3).standard_normal(x.shape)
    (y * eager.tensor(w)).sum().backward()
    xn = x.detach().numpy()
    expected = np.zeros_like(xn)
    for r in range(xn.shape[0]):
        for i in range(xn.shape[1]):
            for j in range(i, xn.shape[1]):
                expected[r, i] += w[r, j] * np.prod(np.delete(xn[r, : j + 1], i))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12, atol=1e-12)
