"""Every op of the registry through the generated NumPy code: alone (exactly the
interpreter's results), compiled (eager's results) and differentiated (the interpreter's
gradients), in float64 and float32, with tiny blocks so fused regions run blocked."""
from __future__ import annotations

import numpy as np
import pytest

import codegen
import eager
import static
from eager.ops import REGISTRY

OPS = sorted(REGISTRY)
DTYPES = [np.float64, np.float32]


def _cases(name, dtype):
    cases = []
    for arrays, attrs in REGISTRY[name].samples(np.random.default_rng(0)):
        arrays = tuple(a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in arrays)
        cases.append((arrays, attrs))
    return cases


def _program(op, arrays, attrs):
    positions = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray)]

    def fn(*xs):
        operands = list(arrays)
        for i, x in zip(positions, xs):
            operands[i] = x
        return op(*operands, **attrs)

    fn.__name__ = op.name
    return fn, [arrays[i] for i in positions]


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-12)


def _tuple(x):
    return x if isinstance(x, (tuple, list)) else (x,)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("name", OPS)
def test_generated_op_equals_interpreter(name, dtype):
    op = REGISTRY[name]
    for arrays, attrs in _cases(name, dtype):
        fn, inputs = _program(op, arrays, attrs)
        graph = static.trace(fn, *[eager.tensor(a) for a in inputs])
        exe = codegen.build(graph, "numpy")
        got = exe.run(list(inputs))
        expected = static.run_graph(graph, list(inputs))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            g, e = np.asarray(g), np.asarray(e)
            assert g.dtype == e.dtype and g.shape == e.shape, (name, attrs)
            if name == "pow":  # x**2 and x**3 are multiplied out (see lowering.small_power)
                np.testing.assert_allclose(g, e, rtol=4e-7 if dtype == np.float32 else 1e-15)
            else:
                np.testing.assert_array_equal(g, e, err_msg=f"{name} {attrs}\n{exe.source()}")


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("name", OPS)
def test_compiled_op_equals_eager(name, dtype):
    op = REGISTRY[name]
    for arrays, attrs in _cases(name, dtype):
        fn, inputs = _program(op, arrays, attrs)
        got = static.compile(fn, backend="numpy")(*[eager.tensor(a) for a in inputs])
        expected = fn(*[eager.tensor(a) for a in inputs])
        for g, e in zip(_tuple(got), _tuple(expected)):
            assert g.dtype == e.dtype
            np.testing.assert_allclose(g.numpy(), e.numpy(), **_tol(dtype), err_msg=f"{name} {attrs}")


def _weighted_sum(fn):
    def loss(*xs):
        total = 0.0
        for k, o in enumerate(_tuple(fn(*xs))):
            if o.is_floating_point():
                w = np.cos(np.arange(o.numel()) * 0.7 + k).reshape(tuple(o.shape))
                total = total + (o * eager.tensor(w, dtype=o.dtype)).sum()
        return total

    loss.__name__ = "loss_" + fn.__name__
    return loss


def _differentiable():
    for name in OPS:
        if REGISTRY[name].vjp is None or REGISTRY[name].differentiable_order == 0:
            continue
        for k, (arrays, attrs) in enumerate(_cases(name, np.float64)):
            fn, inputs = _program(REGISTRY[name], arrays, attrs)
            out = fn(*[eager.tensor(a) for a in inputs])
            if any(a.dtype.kind == "f" for a in inputs) and any(o.is_floating_point() for o in _tuple(out)):
                yield pytest.param(name, k, id=f"{name}-{k}")


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("name,k", list(_differentiable()))
def test_generated_gradients_equal_interpreter(name, k, dtype, small_blocks):
    arrays, attrs = _cases(name, dtype)[k]
    fn, inputs = _program(REGISTRY[name], arrays, attrs)
    loss = _weighted_sum(fn)
    wrt = tuple(i for i, a in enumerate(inputs) if a.dtype.kind == "f")
    tensors = [eager.tensor(a) for a in inputs]
    expected = static.grad(loss, argnums=wrt, backend="interpret")(*tensors)
    got = static.grad(loss, argnums=wrt, backend="numpy")(*tensors)
    for g, e, i in zip(got, expected, wrt):
        assert g.dtype == eager.tensor(inputs[i]).dtype  # the interpreter may widen where(c, 1.0, 0.0)
        np.testing.assert_allclose(g.numpy(), e.numpy(), **_tol(dtype), err_msg=name)


@pytest.mark.parametrize("name,k", list(_differentiable()))
def test_compiled_backward_composes_with_eager(name, k):
    arrays, attrs = _cases(name, np.float64)[k]
    fn, inputs = _program(REGISTRY[name], arrays, attrs)
    loss = _weighted_sum(fn)
    wrt = [i for i, a in enumerate(inputs) if a.dtype.kind == "f"]
    ref = [eager.tensor(a, requires_grad=(i in wrt)) for i, a in enumerate(inputs)]
    loss(*ref).backward()
    tensors = [eager.tensor(a, requires_grad=(i in wrt)) for i, a in enumerate(inputs)]
    static.compile(loss, backend="numpy")(*tensors).backward()
    for i in wrt:
        np.testing.assert_allclose(tensors[i].grad.numpy(), ref[i].grad.numpy(), rtol=1e-10, atol=1e-12)
