"""static.grad and static.value_and_grad: JAX's conventions (argnums, has_aux, pytrees),
zeros for unused inputs, nesting for higher order, compiled callables with the same cache
and introspection as @static.compile, and a joint graph that prints and parses back."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static


def f(x, y):
    return (eager.sin(x) * y).sum()


X = np.array([0.1, 0.5, -0.3], np.float64)
Y = np.array([2.0, -1.0, 0.5], np.float64)


def test_default_argnum_is_zero_and_gives_one_gradient():
    g = static.grad(f)(eager.tensor(X), eager.tensor(Y))
    assert isinstance(g, eager.Tensor)
    np.testing.assert_allclose(g.numpy(), np.cos(X) * Y)


def test_int_argnums_gives_one_gradient_and_tuple_gives_a_tuple():
    gy = static.grad(f, argnums=1)(eager.tensor(X), eager.tensor(Y))
    np.testing.assert_allclose(gy.numpy(), np.sin(X))
    both = static.grad(f, argnums=(0, 1))(eager.tensor(X), eager.tensor(Y))
    assert isinstance(both, tuple) and len(both) == 2
    np.testing.assert_allclose(both[0].numpy(), np.cos(X) * Y)
    np.testing.assert_allclose(both[1].numpy(), np.sin(X))
    single = static.grad(f, argnums=(1,))(eager.tensor(X), eager.tensor(Y))
    assert isinstance(single, tuple) and len(single) == 1


def test_value_and_grad_returns_the_value_too():
    value, grads = static.value_and_grad(f, argnums=(0, 1))(eager.tensor(X), eager.tensor(Y))
    assert value.item() == pytest.approx(float((np.sin(X) * Y).sum()))
    np.testing.assert_allclose(grads[1].numpy(), np.sin(X))


def test_has_aux():
    def loss(x):
        return (x * x).sum(), {"mean": x.mean(), "note": "aux"}

    g, aux = static.grad(loss, has_aux=True)(eager.tensor(X))
    np.testing.assert_allclose(g.numpy(), 2 * X)
    assert aux["mean"].item() == pytest.approx(X.mean()) and aux["note"] == "aux"
    # JAX's documented order: ((value, aux), grads)
    (value, aux2), g2 = static.value_and_grad(loss, has_aux=True)(eager.tensor(X))
    assert value.item() == pytest.approx(float((X * X).sum()))
    assert aux2["mean"].item() == pytest.approx(X.mean()) and aux2["note"] == "aux"
    np.testing.assert_allclose(g2.numpy(), 2 * X)


def test_has_aux_needs_a_pair():
    with pytest.raises(TypeError, match="pair"):
        static.grad(lambda x: (x * x).sum(), has_aux=True)(eager.tensor(X))


def test_gradients_of_pytree_arguments_have_the_same_structure():
    def loss(params, x):
        return ((x @ params["w"] + params["b"][0]) ** 2).sum()

    params = {"w": eager.ones(3, 2, dtype=eager.float64), "b": [eager.zeros(2, dtype=eager.float64)]}
    g = static.grad(loss)(params, eager.tensor(X))
    assert set(g) == {"w", "b"} and isinstance(g["b"], list)
    ref = {"w": eager.ones(3, 2, dtype=eager.float64, requires_grad=True),
           "b": [eager.zeros(2, dtype=eager.float64, requires_grad=True)]}
    loss(ref, eager.tensor(X)).backward()
    np.testing.assert_allclose(g["w"].numpy(), ref["w"].grad.numpy())
    np.testing.assert_allclose(g["b"][0].numpy(), ref["b"][0].grad.numpy())


def test_unused_inputs_get_zeros_of_their_shape_and_dtype():
    g = static.grad(lambda x, z: (x * x).sum(), argnums=(0, 1))(eager.tensor(X), eager.ones(2, 2))
    assert tuple(g[1].shape) == (2, 2) and g[1].dtype is eager.float32
    assert np.all(g[1].numpy() == 0)


def test_only_requested_inputs_are_differentiated():
    graph = static.trace(static.grad(f, argnums=1), eager.tensor(X), eager.tensor(Y))
    assert "cos" not in str(graph)  # d/dx would need cos(x); only d/dy = sin(x) is built


def test_numpy_in_numpy_out_and_python_numbers():
    g = static.grad(f)(X, Y)
    assert type(g) is np.ndarray
    np.testing.assert_allclose(g, np.cos(X) * Y)
    d = static.grad(lambda a: a * a * a)(2.0)
    assert d.item() == pytest.approx(12.0)


def test_output_must_be_a_scalar_float():
    with pytest.raises(TypeError, match="scalar"):
        static.grad(lambda x: x * 2)(eager.tensor(X))


def test_integer_argument_cannot_be_differentiated():
    with pytest.raises(TypeError, match="floating point"):
        static.grad(lambda x, i: (x * i).sum(), argnums=1)(eager.tensor(X), eager.tensor([1, 2, 3]))


# -- higher order --------------------------------------------------------------------------------------
def test_grad_of_grad_for_a_scalar_function():
    def cube(x):
        return x ** 3 + eager.sin(x)

    d2 = static.grad(static.grad(cube))
    for x0 in (0.3, -1.2, 2.0):
        assert d2(eager.tensor(x0, dtype=eager.float64)).item() == pytest.approx(6 * x0 - np.sin(x0))
    d3 = static.grad(static.grad(static.grad(cube)))
    assert d3(eager.tensor(0.5, dtype=eager.float64)).item() == pytest.approx(6 - np.cos(0.5))


def test_hessian_vector_product_through_eager_autograd():
    """A compiled gradient called on tensors that require grad composes with eager autograd:
    its own backward is the second derivative."""
    x = eager.tensor(X, requires_grad=True)
    g = static.grad(lambda x: (x ** 3).sum())(x)
    assert g.grad_fn.name() == "CompiledFunctionBackward"
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * X)


# -- compiled callables ---------------------------------------------------------------------------------
def test_grad_returns_a_compiled_callable_with_cache_and_introspection():
    g = static.grad(f, argnums=(0, 1))
    assert isinstance(g, static.Compiled)
    g(eager.tensor(X), eager.tensor(Y))
    g(eager.tensor(Y), eager.tensor(X))
    assert len(g._cache) == 1 and g.retraces == []
    assert isinstance(g.ir(eager.tensor(X), eager.tensor(Y)), static.Graph)
    assert "== traced ==" in g.explain(eager.tensor(X), eager.tensor(Y))
    assert isinstance(g.source(eager.tensor(X), eager.tensor(Y)), str)


def test_compile_of_grad_is_not_compiled_twice():
    g = static.grad(f)
    assert static.compile(g) is g
    c = static.compile(g, backend="interpret")
    assert c._traceable is g._traceable  # the same transform, not a compiled function of a compiled function
    np.testing.assert_allclose(c(eager.tensor(X), eager.tensor(Y)).numpy(), np.cos(X) * Y)


def test_grad_of_a_compiled_function_inherits_its_options():
    cf = static.compile(f, backend="interpret", static_argnums=())
    g = static.grad(cf)
    assert g.backend == "interpret"
    np.testing.assert_allclose(g(eager.tensor(X), eager.tensor(Y)).numpy(), np.cos(X) * Y)


def test_joint_graph_prints_and_parses_back():
    joint = static.trace(static.value_and_grad(f, argnums=(0, 1)), eager.tensor(X), eager.tensor(Y))
    text = str(joint)
    assert "cos" in text and len(joint.outputs) == 3
    assert str(static.parse_ir(text)) == text
    final = static.value_and_grad(f, argnums=(0, 1)).ir(eager.tensor(X), eager.tensor(Y))
    assert str(static.parse_ir(str(final))) == str(final)


def test_grad_outside_a_trace_needs_the_compiled_wrapper():
    transform = static.grad(f)._traceable
    with pytest.raises(static.TraceError):
        transform(eager.tensor(X), eager.tensor(Y))
