"""Explicit compile stages (static/stages.py), as jax.jit(f).lower(x).compile(): each stage
looked at apart, cached per signature, and the executable's values the function's."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn as nn
import static


def _f(x, w):
    return (eager.tanh(x @ w) * 2).sum(1)


@pytest.mark.parametrize("backend", ["numpy", "interpret"])
def test_lower_compile_and_call_give_the_function_s_values(backend):
    c = static.compile(_f, backend=backend)
    x, w = eager.randn(4, 3), eager.randn(3, 5)
    lowered = c.lower(x, w)
    text = lowered.as_text()
    assert text.startswith("func @_f(") and "matmul" in text and "tanh" in text
    run = lowered.compile()
    np.testing.assert_allclose(run(x, w).numpy(), _f(x, w).numpy(), rtol=1e-6)
    src = run.as_text()
    assert (src == "") == (backend == "interpret")
    if backend == "numpy":
        assert "def " in src


def test_each_stage_is_cached():
    c = static.compile(_f, backend="numpy")
    x, w = eager.randn(4, 3), eager.randn(3, 5)
    lowered = c.lower(x, w)
    assert c.lower(eager.randn(4, 3), eager.randn(3, 5)) is lowered  # same signature, other values
    assert lowered.compile() is lowered.compile()
    other = c.lower(eager.randn(6, 3), w)
    assert other is not lowered and "f32[6,3]" in other.as_text()


def test_the_executable_refuses_another_signature():
    c = static.compile(_f, backend="numpy")
    x, w = eager.randn(4, 3), eager.randn(3, 5)
    run = c.lower(x, w).compile()
    with pytest.raises(TypeError, match=r"compiled for arguments .*4, 3.*called with .*5, 3"):
        run(eager.randn(5, 3), w)
    with pytest.raises(TypeError, match="float64"):
        run(x.double(), w)


def test_a_module_s_parameters_are_read_at_each_call():
    lin = nn.Linear(3, 2)
    c = static.compile(lin, backend="numpy")
    x = eager.randn(5, 3)
    run = c.lower(x).compile()
    with eager.no_grad():
        np.testing.assert_allclose(run(x).numpy(), lin(x).numpy(), rtol=1e-6)
        lin.weight.mul_(2.0)  # an update between calls: the executable reads the new values
        np.testing.assert_allclose(run(x).numpy(), lin(x).numpy(), rtol=1e-6)
    assert not run(x).requires_grad  # the staged path is the forward


def test_a_function_the_forward_cannot_stand_for_is_refused():
    def step(x, buf):
        buf.add_(x)
        return buf.sum()

    c = static.compile(step, backend="numpy")
    with pytest.raises(ValueError, match="writes to its inputs"):
        c.lower(eager.ones(3), eager.zeros(3))
