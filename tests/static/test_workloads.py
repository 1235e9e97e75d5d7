"""The design's workloads W1-W4, written once as eager code and run three ways: eagerly,
traced and interpreted (forward and static.grad), and compiled inside eager autograd
(CompiledFunctionBackward). All must agree with eager (float32 as in design.md)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import eager
import static

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "workloads"))  # their one copy

from w1_seed import seed_loss as w1  # noqa: E402
from w2_gelu import gelu_loss as w2  # noqa: E402
from w3_mlp import mlp_loss as w3  # noqa: E402  (Y one-hot: mean softmax cross-entropy)
from w4_scalar import scalar_chain as w4  # noqa: E402  (100 steps)


def _w1_args(rng, n=100):
    return [rng.standard_normal(n).astype(np.float32) for _ in range(5)], (0, 1, 2, 3, 4)


def _w2_args(rng, n=1000):
    return [rng.standard_normal(n).astype(np.float32) for _ in range(2)], (0, 1)


def _w3_args(rng, B=32, D=64, H=64, C=10):
    X = rng.standard_normal((B, D)).astype(np.float32)
    Y = np.eye(C, dtype=np.float32)[rng.integers(0, C, B)]
    W1 = (rng.standard_normal((D, H)) / np.sqrt(D)).astype(np.float32)
    b1 = np.zeros(H, np.float32)
    W2 = (rng.standard_normal((H, C)) / np.sqrt(H)).astype(np.float32)
    b2 = np.zeros(C, np.float32)
    return [X, Y, W1, b1, W2, b2], (2, 3, 4, 5)


def _w4_args(rng):
    return [np.asarray(0.3, np.float32)], (0,)


WORKLOADS = {"W1": (w1, _w1_args), "W2": (w2, _w2_args), "W3": (w3, _w3_args), "W4": (w4, _w4_args)}


def _eager(fn, arrays, wrt):
    tensors = [eager.tensor(a, requires_grad=(i in wrt)) for i, a in enumerate(arrays)]
    out = fn(*tensors)
    out.backward()
    return out.detach().numpy(), [tensors[i].grad.numpy() for i in wrt]


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_traced_forward_and_gradients_equal_eager(name):
    fn, make = WORKLOADS[name]
    arrays, wrt = make(np.random.default_rng(0))
    value, grads = _eager(fn, arrays, wrt)

    graph = static.trace(fn, *arrays)
    static.verify(graph)
    if name == "W4":
        assert sum(n.op == "sin" for n in graph.nodes) == 100  # the loop is unrolled
    (out,) = static.run_graph(graph, arrays)
    np.testing.assert_allclose(out, value, rtol=1e-5, atol=1e-6)

    vg = static.value_and_grad(fn, argnums=wrt, backend="interpret")
    v, g = vg(*[eager.tensor(a) for a in arrays])
    np.testing.assert_allclose(v.numpy(), value, rtol=1e-5, atol=1e-6)
    for got, expected in zip(g, grads):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-4, atol=1e-6)

    joint = static.trace(static.grad(fn, argnums=wrt), *arrays)
    assert str(static.parse_ir(str(joint))) == str(joint)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_compiled_inside_eager_autograd_equals_eager(name):
    fn, make = WORKLOADS[name]
    arrays, wrt = make(np.random.default_rng(1))
    value, grads = _eager(fn, arrays, wrt)

    tensors = [eager.tensor(a, requires_grad=(i in wrt)) for i, a in enumerate(arrays)]
    out = static.compile(fn)(*tensors)
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    np.testing.assert_allclose(out.detach().numpy(), value, rtol=1e-5, atol=1e-6)
    out.backward()
    for i, expected in zip(wrt, grads):
        np.testing.assert_allclose(tensors[i].grad.numpy(), expected, rtol=1e-4, atol=1e-6)


def test_w3_sgd_update_compiled_matches_eager_training():
    """W3's full step: gradients and an in-place SGD update inside one compiled function,
    written back into the caller's parameters."""
    arrays, wrt = _w3_args(np.random.default_rng(2))
    lr = 0.1

    def step(X, y, W1, b1, W2, b2, lr):
        loss, grads = static.value_and_grad(w3, argnums=(2, 3, 4, 5))(X, y, W1, b1, W2, b2)
        with eager.no_grad():
            for p, g in zip((W1, b1, W2, b2), grads):
                p -= lr * g
        return loss

    compiled = static.compile(step)
    params = [eager.tensor(a) for a in arrays[2:]]
    reference = [eager.tensor(a, requires_grad=True) for a in arrays[2:]]
    X, y = eager.tensor(arrays[0]), eager.tensor(arrays[1])
    for _ in range(3):
        loss = compiled(X, y, *params, lr)
        ref_loss = w3(X, y, *reference)
        ref_loss.backward()
        with eager.no_grad():
            for p in reference:
                p -= lr * p.grad
                p.grad = None
        np.testing.assert_allclose(loss.numpy(), ref_loss.detach().numpy(), rtol=1e-5)
        for p, r in zip(params, reference):
            np.testing.assert_allclose(p.numpy(), r.detach().numpy(), rtol=1e-4, atol=1e-6)
    assert compiled.retraces == [] and len(compiled._cache) == 1
