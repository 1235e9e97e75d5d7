"""Dtype promotion and integer/low-precision arithmetic against PyTorch: tensors of every
dtype with each other and with Python scalars, elementwise and reduced, in eager and
compiled. Result dtypes must be PyTorch's exactly."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import eager
import static

DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"]
BINARY = {
    "add": lambda T, a, b: a + b,
    "sub": lambda T, a, b: a - b,
    "mul": lambda T, a, b: a * b,
    "div": lambda T, a, b: a / b,
    "maximum": lambda T, a, b: T.maximum(a, b),
    "gt": lambda T, a, b: a > b,
    "eq": lambda T, a, b: a == b,
    "where": lambda T, a, b: T.where(a > 0, a, b),
}
REDUCE = {
    "sum": lambda t: t.sum(),
    "sum0": lambda t: t.sum(0),
    "prod": lambda t: t.prod(),
    "amax": lambda t: t.amax(0),
    "mean": lambda t: t.mean(),
}
SCALARS = st.sampled_from([2, -3, 0.5, True, 1e-3])


def _array(rng, dtype, shape):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith(("int", "uint")):
        return rng.integers(1 if dtype == "uint8" else -5, 6, size=shape).astype(dtype)
    return rng.uniform(-2, 2, size=shape).astype(dtype)


def _compare(ours, theirs, what):
    assert str(ours.dtype).rsplit(".", 1)[-1] == str(theirs.dtype).rsplit(".", 1)[-1], \
        f"{what}: dtype {ours.dtype}, PyTorch {theirs.dtype}"
    assert tuple(ours.shape) == tuple(theirs.shape), what
    want = theirs.numpy().astype(np.float64)
    tol = dict(rtol=2e-3, atol=2e-3) if "float16" in str(theirs.dtype) else dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.numpy().astype(np.float64), want, err_msg=what, **tol)


@settings(max_examples=60)
@given(a=st.sampled_from(DTYPES), b=st.sampled_from(DTYPES + ["scalar"]), op=st.sampled_from(sorted(BINARY)),
       scalar=SCALARS, seed=st.integers(0, 2**16), compiled=st.booleans())
def test_binary_ops_promote_as_pytorch(torch, a, b, op, scalar, seed, compiled):
    assume(not (op in ("maximum", "where") and b == "scalar"))
    assume(not (op == "sub" and "bool" in (a, b)) and not (op == "sub" and b == "scalar" and isinstance(scalar, bool)))
    rng = np.random.default_rng(seed)
    xa = _array(rng, a, (2, 3))
    xb = scalar if b == "scalar" else _array(rng, b, (3,))
    what = f"{op}({a}, {b if b != 'scalar' else repr(scalar)})"
    fn = BINARY[op]
    ta, tb = torch.tensor(xa), (xb if b == "scalar" else torch.tensor(xb))
    try:
        want = fn(torch, ta, tb)
    except RuntimeError:  # PyTorch refuses it: so must we
        with pytest.raises((RuntimeError, TypeError)):
            fn(eager, eager.tensor(xa), xb if b == "scalar" else eager.tensor(xb))
        return
    ea = eager.tensor(xa)
    if b == "scalar":
        got = (static.compile(lambda p: fn(eager, p, xb)) if compiled else (lambda p: fn(eager, p, xb)))(ea)
    else:
        got = (static.compile(lambda p, q: fn(eager, p, q)) if compiled else (lambda p, q: fn(eager, p, q)))(
            ea, eager.tensor(xb))
    _compare(got, want, ("compiled " if compiled else "eager ") + what)


@settings(max_examples=40)
@given(dtype=st.sampled_from(DTYPES), op=st.sampled_from(sorted(REDUCE)), seed=st.integers(0, 2**16),
       compiled=st.booleans())
def test_reductions_give_pytorchs_dtype_and_values(torch, dtype, op, seed, compiled):
    assume(not (dtype == "uint8" and op in ("sum", "sum0", "prod")))  # known: see below
    x = _array(np.random.default_rng(seed), dtype, (3, 4))
    what = f"{op} of {dtype}"
    try:
        want = REDUCE[op](torch.tensor(x))
    except RuntimeError:
        with pytest.raises((RuntimeError, TypeError)):
            REDUCE[op](eager.tensor(x))
        return
    fn = static.compile(REDUCE[op]) if compiled else REDUCE[op]
    _compare(fn(eager.tensor(x)), want, ("compiled " if compiled else "eager ") + what)


@pytest.mark.parametrize("op", ["sum", "sum0", "prod"])
@pytest.mark.parametrize("compiled", [pytest.param(False, id="eager"), pytest.param(True, id="compiled")])
def test_uint8_reductions_give_pytorchs_dtype(torch, op, compiled):
    x = _array(np.random.default_rng(0), "uint8", (3, 4))
    fn = static.compile(REDUCE[op]) if compiled else REDUCE[op]
    _compare(fn(eager.tensor(x)), REDUCE[op](torch.tensor(x)), f"{op} of uint8")


@pytest.mark.parametrize("compiled", [pytest.param(False, id="eager"), pytest.param(True, id="compiled")])
@pytest.mark.parametrize("scalar", [100000, 70000.0])
def test_float16_with_a_scalar_beyond_its_range(torch, scalar, compiled):
    x = np.array([1.0, 2.0, 6e4], np.float16)
    fn = static.compile(lambda t: t / scalar) if compiled else (lambda t: t / scalar)
    _compare(fn(eager.tensor(x)), torch.tensor(x) / scalar, f"float16 / {scalar!r}")


@pytest.mark.parametrize("compiled", [pytest.param(False, id="eager"), pytest.param(True, id="compiled")])
def test_float16_mean_of_many_elements(torch, compiled):
    x = np.ones(100_000, np.float16)

    def fn(t):
        return (t * t).mean()

    _compare((static.compile(fn) if compiled else fn)(eager.tensor(x)), fn(torch.tensor(x)), "float16 mean of 100k")
