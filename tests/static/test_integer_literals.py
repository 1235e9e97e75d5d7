"""A Python int beyond an integer tensor's range is wrapped into its dtype, as PyTorch casts
it (int8 & 255 ands with -1, uint8 + 300 adds 44, int8 < 300 compares with 44), for every
binary op: eager equals PyTorch, and compiled code (NumPy and native backends) equals eager;
the trace once kept the literal as a constant of the tensor's dtype, an OverflowError in the
generated code."""
from __future__ import annotations

import operator as O

import numpy as np
import pytest

import eager
import static

OPS = {
    "add": O.add, "sub": O.sub, "mul": O.mul, "and": O.and_, "or": O.or_, "xor": O.xor,
    "lshift": O.lshift, "rshift": O.rshift, "remainder": O.mod, "floor_divide": O.floordiv,
    "lt": O.lt, "le": O.le, "gt": O.gt, "ge": O.ge, "eq": O.eq, "ne": O.ne,
    "radd": lambda a, b: b + a, "rsub": lambda a, b: b - a, "rmul": lambda a, b: b * a,
    "rand": lambda a, b: b & a, "ror": lambda a, b: b | a,
}
DTYPES = ["int8", "uint8", "int16", "int32"]
LITERALS = [255, 300, -129, 2**40]
VALUES = {"uint8": [7, 0, 3, 200, 255]}
DEFAULT_VALUES = [-7, 0, 3, 100, -128]


def _cases():
    """(op name, literal) pairs whose wrapped divisor is not zero (those raise, tested below)."""
    return [(name, lit) for name in OPS for lit in LITERALS
            if not (name in ("remainder", "floor_divide") and lit == 2**40)]


def _input(mod, dtype: str):
    return mod.tensor(VALUES.get(dtype, DEFAULT_VALUES), dtype=getattr(mod, dtype))


def _all(mod, x):
    return [OPS[name](x, lit) for name, lit in _cases()]


@pytest.mark.parametrize("dtype", DTYPES)
def test_eager_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    got = _all(eager, _input(eager, dtype))
    want = _all(torch, _input(torch, dtype))
    for (name, lit), g, w in zip(_cases(), got, want):
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1], (name, lit)
        assert g.tolist() == w.tolist(), (dtype, name, lit)


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_matches_eager(dtype, backend):
    def f(x):
        h = x + 0  # an intermediate, written in place below
        h += 300
        h &= 255
        return (*_all(eager, x), h)

    x = _input(eager, dtype)
    want = f(x)
    got = static.compile(f, backend=backend)(x)
    for case, g, w in zip([*_cases(), "in-place"], got, want):
        assert g.dtype == w.dtype, case
        np.testing.assert_array_equal(g.numpy(), w.numpy(), err_msg=f"{dtype} {case}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    results = []
    for mod in (eager, torch):
        x = _input(mod, dtype)
        x += 300
        x ^= -129
        x *= 255
        results.append(x.tolist())
    assert results[0] == results[1]


def test_literal_wrapping_to_zero_divides_by_zero():
    x = _input(eager, "int8")
    for fn in (lambda t: t % 2**40, lambda t: t // 2**40):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn(x)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        static.compile(lambda t: t % 2**40, backend="numpy")(x)
