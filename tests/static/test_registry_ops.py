"""Every op in the registry through static: traced -> interpreted equals eager's forward,
static gradients equal eager's (float64), and the op's IR (traced and joint) prints and
parses back exactly. An op is covered as soon as it is declared with samples."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from eager.ops import REGISTRY

OPS = sorted(REGISTRY)


def _cases(name):
    op = REGISTRY[name]
    return op.samples(np.random.default_rng(0))


def _program(op, arrays, attrs):
    """fn(*tensors) applying `op`; non-array operands of the sample stay fixed (attributes)."""
    positions = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray)]

    def fn(*xs):
        operands = list(arrays)
        for i, x in zip(positions, xs):
            operands[i] = x
        return op(*operands, **attrs)

    fn.__name__ = op.name
    return fn, [arrays[i] for i in positions]


def _weighted_sum(fn):
    """A scalar of every floating output, each weighted differently so that the gradient of
    every output element is checked, not only of their sum."""

    def loss(*xs):
        out = fn(*xs)
        total = 0.0
        for k, o in enumerate(out if isinstance(out, tuple) else (out,)):
            if o.is_floating_point():
                w = np.cos(np.arange(o.numel()) * 0.7 + k).reshape(tuple(o.shape))
                total = total + (o * eager.tensor(w, dtype=o.dtype)).sum()
        return total

    loss.__name__ = "loss_" + fn.__name__
    return loss


def _roundtrip(graph):
    text = str(graph)
    assert str(static.parse_ir(text)) == text


@pytest.mark.parametrize("name", OPS)
def test_traced_op_interprets_like_eager(name):
    op = REGISTRY[name]
    for arrays, attrs in _cases(name):
        fn, inputs = _program(op, arrays, attrs)
        tensors = [eager.tensor(a) for a in inputs]
        graph = static.trace(fn, *tensors)
        assert any(n.op == name for n in graph.nodes), str(graph)
        got = static.run_graph(graph, inputs)
        expected = fn(*tensors)
        expected = expected if isinstance(expected, tuple) else (expected,)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert np.asarray(g).dtype == e.numpy().dtype, (name, attrs)
            np.testing.assert_array_equal(g, e.numpy(), err_msg=f"{name} {attrs}")
        _roundtrip(graph)


@pytest.mark.parametrize("name", OPS)
def test_compiled_op_returns_eager_results(name):
    op = REGISTRY[name]
    for arrays, attrs in _cases(name):
        fn, inputs = _program(op, arrays, attrs)
        got = static.compile(fn, backend="interpret")(*[eager.tensor(a) for a in inputs])
        expected = fn(*[eager.tensor(a) for a in inputs])
        for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
            assert isinstance(g, eager.Tensor)
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(g.numpy(), e.numpy())


def _differentiable_cases():
    for name in OPS:
        op = REGISTRY[name]
        if op.vjp is None or op.differentiable_order == 0:
            continue
        for k, (arrays, attrs) in enumerate(_cases(name)):
            fn, inputs = _program(op, arrays, attrs)
            if any(a.dtype.kind == "f" for a in inputs) and _has_float_output(fn, inputs):
                yield pytest.param(name, k, id=f"{name}-{k}")


def _has_float_output(fn, inputs):
    out = fn(*[eager.tensor(a) for a in inputs])
    return any(o.is_floating_point() for o in (out if isinstance(out, tuple) else (out,)))


def _eager_grads(loss, inputs, wrt):
    tensors = [eager.tensor(a, requires_grad=(i in wrt)) for i, a in enumerate(inputs)]
    loss(*tensors).backward()
    return [tensors[i].grad.numpy() for i in wrt]


@pytest.mark.parametrize("name,k", list(_differentiable_cases()))
def test_static_grad_equals_eager_grad(name, k):
    arrays, attrs = _cases(name)[k]
    fn, inputs = _program(REGISTRY[name], arrays, attrs)
    loss = _weighted_sum(fn)
    wrt = tuple(i for i, a in enumerate(inputs) if a.dtype.kind == "f")
    expected = _eager_grads(loss, inputs, wrt)

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


@pytest.mark.parametrize("name,k", list(_differentiable_cases()))
def test_compiled_backward_equals_eager_backward(name, k):
    """Composition with eager autograd: the compiled function's grad_fn runs the compiled
    backward graph and produces eager's gradients."""
    arrays, attrs = _cases(name)[k]
    fn, inputs = _program(REGISTRY[name], arrays, attrs)
    loss = _weighted_sum(fn)
    wrt = [i for i, a in enumerate(inputs) if a.dtype.kind == "f"]
    expected = _eager_grads(loss, inputs, wrt)

    tensors = [eager.tensor(a, requires_grad=(i in wrt)) for i, a in enumerate(inputs)]
    out = static.compile(loss, backend="interpret")(*tensors)
    assert out.grad_fn is not None and out.grad_fn.name() == "CompiledFunctionBackward"
    out.backward()
    for i, e in zip(wrt, expected):
        np.testing.assert_allclose(tensors[i].grad.numpy(), e, rtol=1e-10, atol=1e-12, err_msg=name)
