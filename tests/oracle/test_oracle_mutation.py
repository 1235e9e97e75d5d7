"""Views and in-place writes, in eager and compiled, against PyTorch: values after the
writes and the gradient that flows through them."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from programs import arrays, mutation_programs, run_mutations
from test_oracle_programs import check

import eager
import static

CASES = dict(program=mutation_programs(), dtype=st.sampled_from([np.float32, np.float64]),
             seed=st.integers(0, 2**16))


def _loss(T, values, weights):
    total = 0
    for v, w in zip(values, weights):
        total = total + (v * T.tensor(w)).sum()
    return total


def _weights(values, seed, dtype):
    rng = np.random.default_rng(seed + 1)
    return [rng.uniform(0.5, 1.5, size=tuple(v.shape)).astype(dtype) for v in values]


def _describe(steps):
    return "; ".join(f"{kind} {name}({', '.join(f'v{a}' for a in args)})" for kind, name, *args in steps)


def _reference(torch, program, dtype, seed):
    """The input x, PyTorch's values, the loss weights and x's gradient; the gradient is the
    RuntimeError PyTorch raises when the backward pass needs a value that a write has changed."""
    shape, steps = program
    (x,) = arrays(seed, [shape], dtype)
    leaf = torch.tensor(x, requires_grad=True)
    values = run_mutations(steps, torch, leaf)
    weights = _weights(values, seed, dtype)
    try:
        _loss(torch, values, weights).backward()
    except RuntimeError as exc:
        assert "modified by an inplace operation" in str(exc)
        return x, values, weights, exc
    return x, values, weights, leaf.grad


@settings(max_examples=40)
@given(**CASES)
def test_eager_views_and_writes_match_pytorch(torch, program, dtype, seed):
    steps = program[1]
    x, t_values, weights, t_grad = _reference(torch, program, dtype, seed)
    leaf = eager.tensor(x, requires_grad=True)
    values = run_mutations(steps, eager, leaf)
    what = _describe(steps)
    assert len(values) == len(t_values)
    for k, (v, tv) in enumerate(zip(values, t_values)):
        check(v, tv, dtype, f"eager value {k} of {what}")
    if isinstance(t_grad, RuntimeError):  # a saved value was overwritten: eager refuses as PyTorch does
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            _loss(eager, values, weights).backward()
        return
    _loss(eager, values, weights).backward()
    check(leaf.grad, t_grad, dtype, f"eager gradient of {what}")


@settings(max_examples=25)
@given(**{**CASES, "program": mutation_programs(write_views=False)})
def test_compiled_views_and_writes_match_pytorch(torch, program, dtype, seed):
    steps = program[1]
    x, t_values, weights, t_grad = _reference(torch, program, dtype, seed)
    # inside a compiled function writes are functional: no saved value is ever overwritten,
    # so a program PyTorch's eager autograd refuses has no reference gradient here
    assume(not isinstance(t_grad, RuntimeError))
    what = _describe(steps)
    f = static.compile(lambda t: tuple(run_mutations(steps, eager, t)))
    leaf = eager.tensor(x, requires_grad=True)
    values = f(leaf)
    assert len(values) == len(t_values)
    for k, (v, tv) in enumerate(zip(values, t_values)):
        check(v, tv, dtype, f"compiled value {k} of {what}")
    _loss(eager, values, weights).backward()
    check(leaf.grad, t_grad, dtype, f"compiled gradient of {what}")
