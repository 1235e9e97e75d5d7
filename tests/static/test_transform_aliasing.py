"""JAX-style transforms give every argument position its own gradient, even when the same
array or tensor is passed twice, one argument is a view of another, or a pytree holds the
same leaf twice (jax.grad's value semantics: d f / d a and d f / d b at a = b = x, never
their sum). static.compile keeps eager's semantics instead: backward through f(x, x)
accumulates both uses into x.grad, as PyTorch does. Checked against the derivatives written
out by hand, finite differences and torch.func.grad when PyTorch is installed."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static

X = np.random.default_rng(3).standard_normal(4)


def f(a, b):
    """Not symmetric in a and b, so the two partial derivatives differ at a = b."""
    return (eager.sin(a) * b * b + a * b).sum()


def df_da(a, b):
    return np.cos(a) * b * b + b


def df_db(a, b):
    return 2 * np.sin(a) * b + a


def _value(a, b):
    return float((np.sin(a) * b * b + a * b).sum())


def _fd(fn, args, i, eps=1e-6):
    """d fn / d args[i] by central differences, the other arguments held fixed: the gradient
    of argument position i alone."""
    out = np.zeros_like(args[i])
    for k in range(args[i].size):
        step = np.zeros_like(args[i])
        step.flat[k] = eps
        hi = [a + step if j == i else a for j, a in enumerate(args)]
        lo = [a - step if j == i else a for j, a in enumerate(args)]
        out.flat[k] = (fn(*hi) - fn(*lo)) / (2 * eps)
    return out


def _np(v):
    return v.numpy() if isinstance(v, eager.Tensor) else np.asarray(v)


def test_fd_reference_is_per_position():
    # the oracle itself: at a = b the two partial derivatives differ, and neither is the sum
    ga, gb = _fd(_value, [X, X], 0), _fd(_value, [X, X], 1)
    np.testing.assert_allclose(ga, df_da(X, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, df_db(X, X), rtol=1e-6, atol=1e-8)
    assert not np.allclose(ga, gb)


def test_same_array_twice_gives_each_position_its_gradient():
    ga, gb = static.grad(f, argnums=(0, 1))(X, X)
    np.testing.assert_allclose(_np(ga), df_da(X, X), rtol=1e-10)
    np.testing.assert_allclose(_np(gb), df_db(X, X), rtol=1e-10)
    np.testing.assert_allclose(_np(ga), _fd(_value, [X, X], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_np(gb), _fd(_value, [X, X], 1), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("argnums, which", [(0, df_da), (1, df_db), (-1, df_db)])
def test_one_argnum_of_an_array_passed_twice_is_that_position_only(argnums, which):
    g = static.grad(f, argnums=argnums)(X, X)
    np.testing.assert_allclose(_np(g), which(X, X), rtol=1e-10)


def test_repeated_argnums_each_get_their_position():
    g1, g0, g1_again = static.grad(f, argnums=(1, 0, 1))(X, X)
    np.testing.assert_allclose(_np(g0), df_da(X, X), rtol=1e-10)
    np.testing.assert_allclose(_np(g1), df_db(X, X), rtol=1e-10)
    np.testing.assert_allclose(_np(g1_again), df_db(X, X), rtol=1e-10)


def test_same_eager_tensor_twice():
    t = eager.tensor(X)
    ga, gb = static.grad(f, argnums=(0, 1))(t, t)
    assert isinstance(ga, eager.Tensor)
    np.testing.assert_allclose(ga.numpy(), df_da(X, X), rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), df_db(X, X), rtol=1e-10)


def test_value_and_grad_with_aux_of_a_tensor_passed_twice():
    def g(a, b):
        return f(a, b), a * 2

    t = eager.tensor(X)
    (value, aux), (ga, gb) = static.value_and_grad(g, argnums=(0, 1), has_aux=True)(t, t)
    assert value.item() == pytest.approx(_value(X, X))
    np.testing.assert_allclose(aux.numpy(), 2 * X)
    np.testing.assert_allclose(ga.numpy(), df_da(X, X), rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), df_db(X, X), rtol=1e-10)


def test_a_tensor_and_an_overlapping_view_of_it():
    base = eager.tensor(np.concatenate([X, [0.5]]))

    def h(a, b):  # a: (5,), b: a view of a's first four elements
        return (eager.sin(a[1:]) * b * b).sum()

    def h_np(a, b):
        return float((np.sin(a[1:]) * b * b).sum())

    a_np, b_np = base.numpy().copy(), base.numpy()[:4].copy()
    ga, gb = static.grad(h, argnums=(0, 1))(base, base[:4])
    expected_a = np.concatenate([[0.0], np.cos(a_np[1:]) * b_np * b_np])
    np.testing.assert_allclose(ga.numpy(), expected_a, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(gb.numpy(), 2 * np.sin(a_np[1:]) * b_np, rtol=1e-10)
    np.testing.assert_allclose(ga.numpy(), _fd(h_np, [a_np, b_np], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb.numpy(), _fd(h_np, [a_np, b_np], 1), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("make", [lambda x: {"a": x, "b": x}, lambda x: [x, x], lambda x: (x, x)],
                         ids=["dict", "list", "tuple"])
def test_a_pytree_holding_the_same_leaf_twice(make):
    def g(p):
        if isinstance(p, dict):
            return f(p["a"], p["b"])
        return f(p[0], p[1])

    grads = static.grad(g)(make(X))
    ga, gb = (grads["a"], grads["b"]) if isinstance(grads, dict) else grads
    np.testing.assert_allclose(_np(ga), df_da(X, X), rtol=1e-10)
    np.testing.assert_allclose(_np(gb), df_db(X, X), rtol=1e-10)


def test_aliased_then_distinct_arguments_share_no_stale_trace():
    y = X[::-1].copy()
    g = static.grad(f, argnums=(0, 1))
    for a, b in [(X, y), (X, X), (y, y), (X, y)]:
        ga, gb = g(a, b)
        np.testing.assert_allclose(_np(ga), df_da(a, b), rtol=1e-10)
        np.testing.assert_allclose(_np(gb), df_db(a, b), rtol=1e-10)


def test_grad_inside_a_compiled_function_of_one_value_used_twice():
    g = static.grad(f, argnums=(0, 1))

    @static.compile
    def both(z):
        return g(z, z)

    ga, gb = both(eager.tensor(X))
    np.testing.assert_allclose(ga.numpy(), df_da(X, X), rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), df_db(X, X), rtol=1e-10)


def test_an_in_place_write_inside_grad_does_not_reach_the_caller():
    # value semantics: the function sees its own copy of each differentiated argument
    def g(a, b):
        a.mul_(2)
        return (a * b).sum()

    t = eager.tensor(X)
    ga, gb = static.grad(g, argnums=(0, 1))(t, t)
    np.testing.assert_array_equal(t.numpy(), X)
    np.testing.assert_allclose(ga.numpy(), 2 * X, rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), 2 * X, rtol=1e-12)


def test_vjp_and_jvp_of_an_array_passed_twice():
    _, vjp_fn = static.vjp(f, X, X)
    ga, gb = vjp_fn(1.0)
    np.testing.assert_allclose(_np(ga), df_da(X, X), rtol=1e-10)
    np.testing.assert_allclose(_np(gb), df_db(X, X), rtol=1e-10)
    _, tangent = static.jvp(f, (X, X), (np.ones_like(X), np.zeros_like(X)))
    assert float(_np(tangent)) == pytest.approx(df_da(X, X).sum())


def test_compile_and_backward_accumulate_both_uses_as_eager():
    t = eager.tensor(X, requires_grad=True)
    static.compile(f)(t, t).backward()
    ref = eager.tensor(X, requires_grad=True)
    f(ref, ref).backward()
    np.testing.assert_allclose(t.grad.numpy(), ref.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(t.grad.numpy(), df_da(X, X) + df_db(X, X), rtol=1e-10)


def test_non_scalar_output_points_to_vjp():
    with pytest.raises(TypeError, match=r"must return a scalar floating point value \(got \[4\]\).*static\.vjp"):
        static.grad(lambda a: a * 2)(X)


# torch.func's transforms script helpers with torch.jit.script, which PyTorch 2.13 deprecates
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_against_torch_func_grad_with_argnums():
    torch = pytest.importorskip("torch")
    tx = torch.tensor(X)
    t_ga, t_gb = torch.func.grad(lambda a, b: (torch.sin(a) * b * b + a * b).sum(), argnums=(0, 1))(tx, tx)
    ga, gb = static.grad(f, argnums=(0, 1))(eager.tensor(X), eager.tensor(X))
    np.testing.assert_allclose(ga.numpy(), t_ga.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), t_gb.numpy(), rtol=1e-10)


def test_vjp_and_jvp_differentiate_the_input_of_an_in_place_write():
    def g(a, b):
        a.mul_(2)
        return (a * b).sum()

    _, vjp_fn = static.vjp(g, X, X)
    ga, gb = vjp_fn(1.0)
    np.testing.assert_allclose(_np(ga), 2 * X, rtol=1e-12)
    np.testing.assert_allclose(_np(gb), 2 * X, rtol=1e-12)
    _, tangent = static.jvp(g, (X, X), (np.ones_like(X), np.zeros_like(X)))
    assert float(_np(tangent)) == pytest.approx(2 * X.sum())


def test_per_position_gradients_of_a_tensor_that_requires_grad_differentiate_again_in_eager():
    # the two gradients are functions of the one tensor: backward through them reaches it
    # along both, as differentiating d f / d a + 3 d f / d b at a = b = t in eager does
    t = eager.tensor(X, requires_grad=True)
    ga, gb = static.grad(f, argnums=(0, 1))(t, t)
    (ga.sum() + 3 * gb.sum()).backward()
    r = eager.tensor(X, requires_grad=True)
    ((eager.cos(r) * r * r + r).sum() + 3 * (2 * eager.sin(r) * r + r).sum()).backward()
    np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-10)


def test_two_overlapping_views_of_one_tensor():
    base = eager.tensor(np.concatenate([X, [0.5]]))
    b_np = base.numpy()
    ga, gb = static.grad(lambda a, b: (a * b * b).sum(), argnums=(0, 1))(base[1:], base[:-1])
    np.testing.assert_allclose(ga.numpy(), b_np[:-1] ** 2, rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), 2 * b_np[1:] * b_np[:-1], rtol=1e-12)
