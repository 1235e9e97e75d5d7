"""eager.special: values against NumPy formulas and PyTorch, gradients against finite
differences, and the compiled mode against eager."""
import numpy as np
import pytest
from finite_differences import central_difference_grad

import eager
import eager.special as sp
import static

X = np.linspace(-4.0, 4.0, 9)
P = np.array([0.0, 1e-3, 0.3, 0.5, 0.9, 1.0])


def test_values():
    np.testing.assert_allclose(sp.expit(eager.tensor(X)).numpy(), 1 / (1 + np.exp(-X)), rtol=1e-14)
    np.testing.assert_allclose(sp.exp2(eager.tensor(X)).numpy(), 2.0 ** X, rtol=1e-14)
    with np.errstate(divide="ignore"):
        expected = np.log(P) - np.log1p(-P)
    np.testing.assert_allclose(sp.logit(eager.tensor(P)).numpy(), expected, rtol=1e-14)
    clamped = np.clip(P, 1e-6, 1 - 1e-6)
    np.testing.assert_allclose(sp.logit(eager.tensor(P), eps=1e-6).numpy(), np.log(clamped / (1 - clamped)),
                               rtol=1e-12)
    x, y = np.array([0.0, 0.0, 1.0, 2.0, 0.0]), np.array([0.0, np.nan, 2.0, 0.0, 3.0])
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(sp.xlogy(eager.tensor(x), eager.tensor(y)).numpy(),
                                      [0.0, np.nan, np.log(2.0), -np.inf, 0.0])


@pytest.mark.parametrize("fn", [sp.expit, sp.exp2, lambda t: sp.logit(t, 1e-3),
                                lambda t: sp.xlogy(t, t * t + 1.0)])
def test_gradients_match_finite_differences_and_compile(fn):
    a = np.linspace(-0.9, 0.9, 7) if fn is not sp.exp2 else X
    t = eager.tensor(a, requires_grad=True)
    fn(t).sum().backward()
    fd = central_difference_grad(lambda v: float(fn(eager.tensor(v)).sum()), a)
    np.testing.assert_allclose(t.grad.numpy(), fd, rtol=1e-6, atol=1e-8)
    value, grad = static.value_and_grad(lambda v: fn(v).sum())(a)
    np.testing.assert_allclose(value, float(fn(eager.tensor(a)).sum()), rtol=1e-12)
    np.testing.assert_allclose(grad, t.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    ts = torch.special
    for name in ("expit", "exp2", "expm1", "log1p", "erf"):
        np.testing.assert_allclose(getattr(sp, name)(eager.tensor(X)).numpy(),
                                   getattr(ts, name)(torch.tensor(X)).numpy(), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(sp.logit(eager.tensor(P), 1e-6).numpy(), ts.logit(torch.tensor(P), 1e-6).numpy(),
                               rtol=1e-14)
    m = np.random.default_rng(0).standard_normal((3, 4))
    for name in ("softmax", "log_softmax"):
        np.testing.assert_allclose(getattr(sp, name)(eager.tensor(m), 1).numpy(),
                                   getattr(ts, name)(torch.tensor(m), 1).numpy(), rtol=1e-14)
    np.testing.assert_allclose(sp.logsumexp(eager.tensor(m), 1).numpy(), ts.logsumexp(torch.tensor(m), 1).numpy(),
                               rtol=1e-14)
