"""Every pass, and the whole pipeline, computes the same function: random programs over
the op set, interpreted before and after (float64), forward and gradients."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import eager
import static
from static.interpreter import run_graph
from static.passes import PASSES, run_pipeline
from static.passes.rewrite import clone

UNARY = ["exp_small", "tanh", "sin", "cos", "sigmoid", "neg", "square", "relu", "softplus", "log_abs1p"]
BINARY = ["add", "sub", "mul", "maximum", "div_safe"]
REDUCE = ["sum0", "sum1", "mean1", "amax1", "lse1", "softmax1", "logsoftmax1"]


def _apply(x, y, kind):
    if kind == "exp_small":
        return eager.exp(x * 0.1)
    if kind == "square":
        return x ** 2
    if kind == "log_abs1p":
        return eager.log(eager.abs(x) + 1.0)
    if kind == "softplus":
        return eager.softplus(x)
    if kind == "div_safe":
        return x / (y * y + 1.0)
    if kind in UNARY:
        return getattr(eager, kind)(x)
    if kind in BINARY:
        return getattr(eager, kind)(x, y)
    if kind == "sum0":
        return x.sum(0, keepdim=True) + y
    if kind == "sum1":
        return x.sum(1, keepdim=True) * y
    if kind == "mean1":
        return x - x.mean(1, keepdim=True)
    if kind == "amax1":
        return x - x.amax(1, keepdim=True)
    if kind == "lse1":
        return x - eager.logsumexp(x, 1, keepdim=True)
    if kind == "softmax1":
        return eager.softmax(x, 1) * y
    return eager.log_softmax(x, 1) + y


program = st.lists(st.tuples(st.sampled_from(UNARY + BINARY + REDUCE), st.integers(0, 5), st.integers(0, 5)),
                   min_size=1, max_size=10)


def _build(steps):
    def fn(a, b):
        values = [a, b, a * 0.5 + 1.0]
        for kind, i, j in steps:
            values.append(_apply(values[i % len(values)], values[j % len(values)], kind))
        return (values[-1] * values[-2]).sum() + values[-1].mean()
    return fn


@settings(max_examples=25, deadline=None)
@given(program, st.booleans())
def test_passes_preserve_forward_and_gradients(steps, fast):
    fn = _build(steps)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    g = static.trace(static.value_and_grad(fn, argnums=(0, 1)), a, b)
    expected = run_graph(g, [a, b])
    for name in PASSES:
        h = clone(g)
        PASSES[name](h, fast_math=False)
        static.verify(h)
        for e, r in zip(expected, run_graph(h, [a, b])):
            np.testing.assert_allclose(r, e, rtol=1e-10, atol=1e-12, err_msg=name)
    h = run_pipeline(g, [])
    for e, r in zip(expected, run_graph(h, [a, b])):
        np.testing.assert_allclose(r, e, rtol=1e-9, atol=1e-11)
    # and the parsed text of the optimized graph runs the same
    for e, r in zip(expected, run_graph(static.parse_ir(str(h)), [a, b])):
        np.testing.assert_allclose(r, e, rtol=1e-9, atol=1e-11)
