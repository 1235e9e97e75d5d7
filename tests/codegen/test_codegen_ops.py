"""Every op of the registry through the generated NumPy code: alone (exactly the
interpreter's results), compiled (eager's results) and differentiated (the interpreter's
gradients), in float64 and float32, with tiny blocks so fused regions run blocked."""
from __future__ import annotations

import numpy as np
import pytest
from op_samples import OPS, differentiable_cases, eager_grads, outputs, sample_at, sample_programs, weighted_sum

import codegen
import eager
import static

DTYPES = [np.float64, np.float32]


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("name", OPS)
def test_generated_op_equals_interpreter(name, dtype):
    for fn, inputs, attrs in sample_programs(name, dtype):
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
    for fn, inputs, attrs in sample_programs(name, dtype):
        got = static.compile(fn, backend="numpy")(*[eager.tensor(a) for a in inputs])
        expected = fn(*[eager.tensor(a) for a in inputs])
        for g, e in zip(outputs(got), outputs(expected)):
            assert g.dtype == e.dtype
            np.testing.assert_allclose(g.numpy(), e.numpy(), **_tol(dtype), err_msg=f"{name} {attrs}")


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("name,k", list(differentiable_cases(np.float64)))
def test_generated_gradients_equal_interpreter(name, k, dtype, small_blocks):
    fn, inputs = sample_at(name, k, dtype)
    loss = weighted_sum(fn)
    wrt = tuple(i for i, a in enumerate(inputs) if a.dtype.kind == "f")
    tensors = [eager.tensor(a) for a in inputs]
    expected = static.grad(loss, argnums=wrt, backend="interpret")(*tensors)
    got = static.grad(loss, argnums=wrt, backend="numpy")(*tensors)
    for g, e, i in zip(got, expected, wrt):
        assert g.dtype == eager.tensor(inputs[i]).dtype  # the interpreter may widen where(c, 1.0, 0.0)
        np.testing.assert_allclose(g.numpy(), e.numpy(), **_tol(dtype), err_msg=name)


@pytest.mark.parametrize("name,k", list(differentiable_cases(np.float64)))
def test_compiled_backward_composes_with_eager(name, k):
    fn, inputs = sample_at(name, k, np.float64)
    loss = weighted_sum(fn)
    wrt = [i for i, a in enumerate(inputs) if a.dtype.kind == "f"]
    expected = eager_grads(loss, inputs, wrt)
    tensors = [eager.tensor(a, requires_grad=(i in wrt)) for i, a in enumerate(inputs)]
    static.compile(loss, backend="numpy")(*tensors).backward()
    for i, e in zip(wrt, expected):
        np.testing.assert_allclose(tensors[i].grad.numpy(), e, rtol=1e-10, atol=1e-12)
