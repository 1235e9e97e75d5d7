"""Shape ops (transpose, reshape, expand, slicing, gathers, cat/stack, matmul) chained at
random, in eager, compiled and value_and_grad, against PyTorch: values and gradients."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from programs import arrays, run_shape_program, shape_programs
from test_oracle_programs import check

import eager
import static

CASES = dict(program=shape_programs(), dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))


def _reference(torch, program, dtype, seed):
    """The input x, PyTorch's output, the loss weight and x's gradient."""
    shape, steps = program
    (x,) = arrays(seed, [shape], dtype)
    leaf = torch.tensor(x, requires_grad=True)
    out = run_shape_program(steps, torch, leaf)
    weight = np.random.default_rng(seed + 1).uniform(0.5, 1.5, size=tuple(out.shape)).astype(dtype)
    (out * torch.tensor(weight)).sum().backward()
    return x, out, weight, leaf.grad


@settings(max_examples=40)
@given(**CASES)
def test_shape_programs_match_pytorch(torch, program, dtype, seed):
    shape, steps = program
    x, t_out, weight, t_grad = _reference(torch, program, dtype, seed)
    what = " -> ".join(steps) + f" on {shape}"
    w = eager.tensor(weight)
    for mode, fn in (("eager", lambda t: run_shape_program(steps, eager, t)),
                     ("compiled", static.compile(lambda t: run_shape_program(steps, eager, t)))):
        leaf = eager.tensor(x, requires_grad=True)
        out = fn(leaf)
        check(out, t_out, dtype, f"{mode} forward of {what}")
        (out * w).sum().backward()
        check(leaf.grad, t_grad, dtype, f"{mode} gradient of {what}")
    value, grad = static.value_and_grad(lambda t: (run_shape_program(steps, eager, t) * w).sum())(eager.tensor(x))
    check(grad, t_grad, dtype, f"value_and_grad gradient of {what}")
