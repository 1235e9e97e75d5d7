"""eager.autograd.functional: jacobian, hessian, vjp and jvp against analytic derivatives,
with PyTorch's signatures and return structures (tensor vs tuple vs tuple of tuples)."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd.functional import hessian, jacobian, jvp, vjp

X = np.array([0.5, -1.0, 2.0])
Y = np.array([1.5, 0.25, -0.75])


def t(a) -> eager.Tensor:
    return eager.tensor(np.asarray(a, dtype=np.float64))


def close(tensor: eager.Tensor, expected) -> None:
    assert isinstance(tensor, eager.Tensor), type(tensor)
    np.testing.assert_allclose(np.asarray(tensor.detach()), expected, rtol=1e-12, atol=1e-12)


# -- jacobian ------------------------------------------------------------------------------------
def test_jacobian_single_input_single_output_is_a_tensor():
    J = jacobian(lambda x: x ** 3, t(X))
    assert tuple(J.shape) == (3, 3)
    close(J, np.diag(3 * X ** 2))


def test_jacobian_shape_is_output_shape_then_input_shape():
    A = np.arange(6.0).reshape(2, 3)
    J = jacobian(lambda m: m @ t(X), t(A))  # d(A x)_i / dA_jk = delta_ij x_k
    assert tuple(J.shape) == (2, 2, 3)
    expected = np.zeros((2, 2, 3))
    for i in range(2):
        expected[i, i] = X
    close(J, expected)


def test_jacobian_tuple_inputs_gives_a_tuple():
    Jx, Jy = jacobian(lambda x, y: x * y.exp(), (t(X), t(Y)))
    close(Jx, np.diag(np.exp(Y)))
    close(Jy, np.diag(X * np.exp(Y)))


def test_jacobian_tuple_outputs_and_inputs_gives_tuple_of_tuples():
    result = jacobian(lambda x, y: (x * y, (x + y).sum()), (t(X), t(Y)))
    assert isinstance(result, tuple) and len(result) == 2 and all(len(r) == 2 for r in result)
    (d0x, d0y), (d1x, d1y) = result
    close(d0x, np.diag(Y))
    close(d0y, np.diag(X))
    close(d1x, np.ones(3))
    close(d1y, np.ones(3))


def test_jacobian_tuple_outputs_single_input_gives_a_tuple_of_tensors():
    a, b = jacobian(lambda x: (x.sin(), x.sum()), t(X))
    close(a, np.diag(np.cos(X)))
    close(b, np.ones(3))


def test_jacobian_results_are_detached_unless_create_graph():
    x = t(X).requires_grad_()
    J = jacobian(lambda v: v ** 2, x)
    assert not J.requires_grad and x.grad is None
    Jg = jacobian(lambda v: v ** 2, x, create_graph=True)
    assert Jg.requires_grad
    Jg.sum().backward()  # d/dx sum(diag(2x)) = 2
    close(x.grad, 2 * np.ones(3))


# -- hessian -------------------------------------------------------------------------------------
def test_hessian_of_a_scalar_function():
    H = hessian(lambda x: (x ** 3).sum() + (x[0] * x[1]), t(X))
    expected = np.diag(6 * X)
    expected[0, 1] = expected[1, 0] = 1.0
    close(H, expected)


def test_hessian_tuple_inputs_gives_tuple_of_tuples():
    H = hessian(lambda x, y: (x * x * y).sum(), (t(X), t(Y)))
    (hxx, hxy), (hyx, hyy) = H
    close(hxx, np.diag(2 * Y))
    close(hxy, np.diag(2 * X))
    close(hyx, np.diag(2 * X))
    close(hyy, np.zeros((3, 3)))


def test_hessian_refuses_non_scalar_functions():
    with pytest.raises(RuntimeError, match="single element"):
        hessian(lambda x: x ** 2, t(X))


# -- vjp / jvp -----------------------------------------------------------------------------------
def test_vjp_returns_output_and_vector_jacobian_product():
    v = np.array([1.0, -2.0, 0.5])
    out, grad = vjp(lambda x: x ** 2, t(X), t(v))
    close(out, X ** 2)
    close(grad, 2 * X * v)
    assert not out.requires_grad and not grad.requires_grad


def test_vjp_of_a_scalar_function_needs_no_vector():
    out, grad = vjp(lambda x: (x.exp()).sum(), t(X))
    close(out, np.exp(X).sum())
    close(grad, np.exp(X))


def test_vjp_tuple_inputs():
    out, (gx, gy) = vjp(lambda x, y: x * y, (t(X), t(Y)), t(np.ones(3)))
    close(out, X * Y)
    close(gx, Y)
    close(gy, X)


def test_jvp_returns_output_and_jacobian_vector_product():
    v = np.array([1.0, -2.0, 0.5])
    out, jv = jvp(lambda x: x.sin(), t(X), t(v))
    close(out, np.sin(X))
    close(jv, np.cos(X) * v)
    assert not jv.requires_grad


def test_jvp_tuple_inputs_sum_their_directions():
    vx, vy = np.array([1.0, 0.0, 2.0]), np.array([0.5, 1.0, -1.0])
    out, jv = jvp(lambda x, y: x * y, (t(X), t(Y)), (t(vx), t(vy)))
    close(out, X * Y)
    close(jv, Y * vx + X * vy)


def test_jvp_matches_jacobian_times_vector_on_a_mixing_function():
    A = np.array([[1.0, 2.0, 0.0], [0.5, -1.0, 3.0]])
    v = np.array([0.3, -0.7, 1.1])
    f = lambda x: (t(A) @ x).tanh()  # noqa: E731
    _, jv = jvp(f, t(X), t(v))
    J = np.asarray(jacobian(f, t(X)))
    close(jv, J @ v)
