"""create_graph=True and eager.autograd.grad: returned gradients, higher order, allow_unused."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd import grad

UNUSED = ("One of the differentiated Tensors appears to not have been used in the graph. "
          "Set allow_unused=True if this is the desired behavior.")


def test_grad_returns_gradients_without_touching_dot_grad():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    w = eager.tensor([3.0, 4.0], requires_grad=True)
    gx, gw = grad((x * w).sum(), (x, w))
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0]
    assert x.grad is None and w.grad is None
    assert not gx.requires_grad and gx.grad_fn is None


def test_grad_accepts_a_single_tensor_and_returns_a_tuple():
    x = eager.tensor(2.0, requires_grad=True)
    out = grad(x ** 2, x)
    assert isinstance(out, tuple) and len(out) == 1 and out[0].item() == 4.0


def test_grad_outputs_weight_a_non_scalar_output():
    x = eager.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (g,) = grad(x * x, x, grad_outputs=eager.tensor([1.0, 0.0, 2.0]))
    assert g.tolist() == [2.0, 0.0, 12.0]
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        grad(x * x, x)


@pytest.mark.parametrize("xv", [-1.5, 0.5, 2.0])
def test_second_and_third_derivative_of_cube(xv):
    x = eager.tensor(xv, dtype=eager.float64, requires_grad=True)
    y = x ** 3
    (d1,) = grad(y, x, create_graph=True)
    assert d1.requires_grad and d1.grad_fn is not None
    (d2,) = grad(d1, x, create_graph=True)
    (d3,) = grad(d2, x)
    assert d1.item() == pytest.approx(3 * xv ** 2)
    assert d2.item() == pytest.approx(6 * xv)
    assert d3.item() == pytest.approx(6.0)


def test_second_derivative_of_tanh():
    xs = np.array([-2.0, -0.3, 0.0, 0.7, 1.5])
    x = eager.tensor(xs, requires_grad=True)
    (d1,) = grad(x.tanh().sum(), x, create_graph=True)
    (d2,) = grad(d1.sum(), x)
    t = np.tanh(xs)
    np.testing.assert_allclose(d1.detach().numpy(), 1 - t ** 2, rtol=1e-12)
    np.testing.assert_allclose(d2.numpy(), -2 * t * (1 - t ** 2), rtol=1e-12, atol=1e-15)


def test_backward_with_create_graph_builds_a_differentiable_grad():
    x = eager.tensor([1.0, 2.0], dtype=eager.float64, requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad and g.tolist() == [3.0, 12.0]
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


def test_gradient_penalty_style_double_backward():
    """d/dw of |d(loss)/dx|^2, the pattern of a gradient penalty, against a closed form."""
    x = eager.tensor([0.5, -1.0], dtype=eager.float64, requires_grad=True)
    w = eager.tensor([2.0, 3.0], dtype=eager.float64, requires_grad=True)
    loss = (w * x * x).sum()               # dloss/dx = 2 w x
    (gx,) = grad(loss, x, create_graph=True)
    penalty = (gx * gx).sum()              # 4 w^2 x^2
    penalty.backward()
    xs, ws = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    np.testing.assert_allclose(w.grad.numpy(), 8 * ws * xs ** 2)
    np.testing.assert_allclose(x.grad.numpy(), 8 * ws ** 2 * xs)


def test_hessian_vector_product_through_matmul():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 3))
    A = A + A.T
    x = eager.tensor(rng.standard_normal(3), requires_grad=True)
    v = eager.tensor(rng.standard_normal(3))
    At = eager.tensor(A)
    f = 0.5 * (x @ (At @ x))
    (g,) = grad(f, x, create_graph=True)
    (hv,) = grad(g, x, grad_outputs=v)
    np.testing.assert_allclose(hv.numpy(), A @ v.numpy(), rtol=1e-12)


def test_allow_unused():
    x = eager.tensor([1.0], requires_grad=True)
    unused = eager.tensor([1.0], requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(RuntimeError) as info:
        grad(y, (x, unused), retain_graph=True)
    assert str(info.value) == UNUSED
    gx, gu = grad(y, (x, unused), allow_unused=True)
    assert gx.tolist() == [2.0] and gu is None
    (gz,) = grad((x * 3).sum(), unused, allow_unused=True, materialize_grads=True)
    assert gz.tolist() == [0.0]


def test_grad_of_an_input_that_does_not_require_grad():
    x = eager.tensor([1.0], requires_grad=True)
    c = eager.tensor([1.0])
    with pytest.raises(RuntimeError, match="^One of the differentiated Tensors does not require grad$"):
        grad((x * c).sum(), c)


def test_grad_with_respect_to_an_intermediate_tensor():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    y = (h * h).sum()
    gh, gx = grad(y, (h, x))
    assert gh.tolist() == [6.0, 12.0] and gx.tolist() == [18.0, 36.0]


def test_retain_graph_defaults_to_create_graph():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp()).sum()
    grad(y, x, create_graph=True)
    grad(y, x)  # the graph was retained by create_graph=True
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        grad(y, x)


def test_grad_does_not_run_unrelated_branches():
    x = eager.tensor([1.0], requires_grad=True)
    w = eager.tensor([2.0], requires_grad=True)
    z = w.exp()
    y = (x * 3 + z).sum()
    (gx,) = grad(y, x)
    assert gx.tolist() == [3.0] and w.grad is None
    z.sum().backward()  # ExpBackward0 was not run (not freed): only x's branch was needed
    assert w.grad.item() == pytest.approx(np.exp(2.0))


def test_functional_jacobian_and_hessian_agree_with_closed_forms():
    from eager.autograd.functional import hessian, jacobian

    x = eager.tensor([0.3, -0.4], dtype=eager.float64)
    J = jacobian(lambda t: t ** 3, x)
    np.testing.assert_allclose(J.numpy(), np.diag(3 * x.numpy() ** 2))
    H = hessian(lambda t: (t ** 3).sum(), x)
    np.testing.assert_allclose(H.numpy(), np.diag(6 * x.numpy()))
