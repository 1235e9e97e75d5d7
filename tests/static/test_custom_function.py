"""Custom autograd.Functions inside compiled code: forward traced, backward as the node's VJP."""
import numpy as np
import pytest
from autograd_functions import Exp

import eager
import static
from eager.autograd import Function


class ScaledCube(Function):
    """x**3 * k with a backward written by hand (3 x^2 k), saving the input."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * x * k

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x * ctx.k, None


class ClampedGrad(Function):
    """Identity whose gradient is clamped: differs from any op's own derivative."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad.clamp(-0.5, 0.5)


class TwoOutputs(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.set_materialize_grads(False)
        idx = (x > 0).to(eager.int64)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x, y)
        return x * y, x + y, idx

    @staticmethod
    def backward(ctx, g_prod, g_sum, g_idx):
        x, y = ctx.saved_tensors
        assert g_idx is None  # not differentiable: no gradient
        gx = g_prod * y if g_prod is not None else None
        gy = g_prod * x if g_prod is not None else None
        if g_sum is not None:
            gx = g_sum if gx is None else gx + g_sum
            gy = g_sum if gy is None else gy + g_sum
        return gx, gy


X = np.random.default_rng(0).standard_normal((3, 4))
Y = np.random.default_rng(1).standard_normal((3, 4))


def _eager_grad(fn, *arrays, create_graph=False):
    ts = [eager.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    return out, eager.autograd.grad(out, ts, create_graph=create_graph)


@pytest.mark.parametrize("fn", [
    lambda x: (Exp.apply(x) * 2).sum(),
    lambda x: ScaledCube.apply(x.sin(), 1.5).sum(),
    lambda x: (ClampedGrad.apply(x) * 3).sum(),
    lambda x: (Exp.apply(ClampedGrad.apply(x)) + Exp.apply(x)).sum(),
])
def test_first_order_gradient_inside_static_grad_equals_eager(fn):
    got = static.grad(fn)(eager.tensor(X))
    _, (expected,) = _eager_grad(fn, X)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)


def test_the_custom_backward_is_used_not_the_forward_ops_derivative():
    got = static.grad(lambda x: (ClampedGrad.apply(x) * 3).sum())(eager.tensor(X))
    np.testing.assert_allclose(got.numpy(), np.full(X.shape, 0.5))  # 3 clamped to 0.5, not d(3x)/dx = 3


def test_compiled_call_backward_runs_the_custom_backward_like_eager():
    f = static.compile(lambda x, y: (TwoOutputs.apply(x, y)[0] * 2 + ScaledCube.apply(y, 2.0)).sum())
    x, y = eager.tensor(X, requires_grad=True), eager.tensor(Y, requires_grad=True)
    f(x, y).backward()
    xe, ye = eager.tensor(X, requires_grad=True), eager.tensor(Y, requires_grad=True)
    (TwoOutputs.apply(xe, ye)[0] * 2 + ScaledCube.apply(ye, 2.0)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xe.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), ye.grad.numpy(), rtol=1e-12)


def test_unused_outputs_get_no_gradient_with_materialize_grads_off_and_non_differentiable_outputs_stay_so():
    def fn(x, y):
        prod, _, idx = TwoOutputs.apply(x, y)
        return (prod * idx).sum()

    got = static.grad(fn, argnums=(0, 1))(eager.tensor(X), eager.tensor(Y))
    _, expected = _eager_grad(fn, X, Y)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda x: (Exp.apply(x) * x).sum(),
    lambda x: ScaledCube.apply(x, 0.5).sum(),
])
def test_second_order_gradient_equals_eager_create_graph(fn):
    hess_diag = static.grad(lambda x: static.grad(fn)(x).sum())(eager.tensor(X))
    xe = eager.tensor(X, requires_grad=True)
    (g,) = eager.autograd.grad(fn(xe), [xe], create_graph=True)
    (expected,) = eager.autograd.grad(g.sum(), [xe])
    np.testing.assert_allclose(hess_diag.numpy(), expected.numpy(), rtol=1e-10)


def test_custom_function_gradient_matches_finite_differences():
    fn = lambda x: (ScaledCube.apply(x, 0.7) * x.cos()).sum()  # noqa: E731
    got = static.grad(fn)(eager.tensor(X)).numpy()
    eps = 1e-6
    num = np.zeros_like(X)
    for idx in np.ndindex(X.shape):
        d = np.zeros_like(X)
        d[idx] = eps
        num[idx] = (fn(eager.tensor(X + d)).item() - fn(eager.tensor(X - d)).item()) / (2 * eps)
    np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-8)


def test_custom_function_on_a_captured_parameter_in_a_compiled_module_call():
    w = eager.tensor(Y, requires_grad=True)
    f = static.compile(lambda x: Exp.apply(w * x).sum())
    f(eager.tensor(X)).backward()
    expected = X * np.exp(Y * X)
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-12)
