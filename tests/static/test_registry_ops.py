"""Every op in the registry through static: traced -> interpreted equals eager's forward,
static gradients equal eager's (float64), and the op's IR (traced and joint) prints and
parses back exactly. An op is covered as soon as it is declared with samples."""
from __future__ import annotations

import numpy as np
import pytest
from op_samples import OPS, differentiable_cases, eager_grads, outputs, sample_at, sample_programs, weighted_sum

import eager
import static


def _roundtrip(graph):
    text = str(graph)
    assert str(static.parse_ir(text)) == text


@pytest.mark.parametrize("name", OPS)
def test_traced_op_interprets_like_eager(name):
    for fn, inputs, attrs in sample_programs(name):
        tensors = [eager.tensor(a) for a in inputs]
        graph = static.trace(fn, *tensors)
        assert any(n.op == name for n in graph.nodes), str(graph)
        got = static.run_graph(graph, inputs)
        expected = outputs(fn(*tensors))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert np.asarray(g).dtype == e.numpy().dtype, (name, attrs)
            np.testing.assert_array_equal(g, e.numpy(), err_msg=f"{name} {attrs}")
        _roundtrip(graph)


@pytest.mark.parametrize("name", OPS)
def test_compiled_op_returns_eager_results(name, numpy_eager_kernels):
    """Bit for bit against eager's NumPy code: passes rewrite some ops (gelu into erf and
    friends) into the same NumPy calls, which eager's native kernels round differently."""
    for fn, inputs, _ in sample_programs(name):
        got = static.compile(fn, backend="interpret")(*[eager.tensor(a) for a in inputs])
        expected = fn(*[eager.tensor(a) for a in inputs])
        for g, e in zip(outputs(got), outputs(expected)):
            assert isinstance(g, eager.Tensor)
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(g.numpy(), e.numpy())


@pytest.mark.parametrize("name,k", list(differentiable_cases()))
def test_static_grad_equals_eager_grad(name, k):
    fn, inputs = sample_at(name, k)
    loss = weighted_sum(fn)
    wrt = tuple(i for i, a in enumerate(inputs) if a.dtype.kind == "f")
    expected = eager_grads(loss, inputs, wrt)

    g = static.grad(loss, argnums=wrt, backend="interpret")
    got = g(*[eager.tensor(a) for a in inputs])
    assert isinstance(got, tuple) and len(got) == len(wrt)
    for a, e, i in zip(got, expected, wrt):
        assert a.dtype == eager.tensor(inputs[i]).dtype
        np.testing.assert_allclose(a.numpy(), e, rtol=1e-10, atol=1e-12, err_msg=name)

    joint = static.trace(static.grad(loss, argnums=wrt), *[eager.tensor(a) for a in inputs])
    assert any(n.op == name for n in joint.nodes)
    _roundtrip(joint)
    _roundtrip(g.ir(*[eager.tensor(a) for a in inputs]))  # after the optimization passes


@pytest.mark.parametrize("name,k", list(differentiable_cases()))
def test_compiled_backward_equals_eager_backward(name, k):
    """Composition with eager autograd: the compiled function's grad_fn runs the compiled
    backward graph and produces eager's gradients."""
    fn, inputs = sample_at(name, k)
    loss = weighted_sum(fn)
    wrt = [i for i, a in enumerate(inputs) if a.dtype.kind == "f"]
    expected = eager_grads(loss, inputs, wrt)

    tensors = [eager.tensor(a, requires_grad=(i in wrt)) for i, a in enumerate(inputs)]
    out = static.compile(loss, backend="interpret")(*tensors)
    assert out.grad_fn is not None and out.grad_fn.name() == "CompiledFunctionBackward"
    out.backward()
    for i, e in zip(wrt, expected):
        np.testing.assert_allclose(tensors[i].grad.numpy(), e, rtol=1e-10, atol=1e-12, err_msg=name)
