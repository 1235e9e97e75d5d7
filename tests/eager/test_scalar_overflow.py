"""A Python number stored into a tensor whose dtype cannot hold it: PyTorch raises
`RuntimeError: value cannot be converted to type int8_t without overflow` (fill_, full,
full_like, new_full, masked_fill, where, scatter's value, x[mask] = v) where NumPy would wrap
300 to 44 in int8 or raise its own OverflowError. Each case is compared with PyTorch (same
exception type, or the same values), and compiled code (numpy backend) with eager."""
from __future__ import annotations

import pytest

import eager
import static

torch = pytest.importorskip("torch")

# op name -> f(module, x, value): the same call in eager and torch (x: a 1-d tensor of two elements)
OPS = {
    "fill_": lambda m, x, v: x.clone().fill_(v),
    "full": lambda m, x, v: m.full((2,), v, dtype=x.dtype),
    "full_like": lambda m, x, v: m.full_like(x, v),
    "new_full": lambda m, x, v: x.new_full((2,), v),
    "masked_fill": lambda m, x, v: x.masked_fill(m.tensor([True, False]), v),
    "where": lambda m, x, v: m.where(m.tensor([True, False]), x, v),
    "scatter": lambda m, x, v: x.scatter(0, m.tensor([0]), v),
    "setitem": lambda m, x, v: _setitem(m, x, v),
    "clamp": lambda m, x, v: x.clamp(min=v),
    "clamp_max": lambda m, x, v: m.clamp_max(x, v),
}
DTYPES = ["int8", "uint8", "int16", "int32", "int64", "bool", "float16", "float32"]
# in range, at the edges, just past them, far out; ints and floats (uint8 takes -255..255 from an int)
VALUES = [1, 127, 128, -128, -129, 255, 256, -1, -255, -256, 300, 2**31, 2**40, 1.5, -0.5, 127.5, 255.5,
          65504.0, 65520.0, 1e6, 1e39, 1e300, float("inf"), True]


def _setitem(m, x, v):
    y = x.clone()
    y[m.tensor([True, False])] = v
    return y


def _outcome(m, op, dtype, value):
    x = m.tensor([1, 2], dtype=getattr(m, dtype))
    try:
        out = OPS[op](m, x, value)
    except (RuntimeError, OverflowError, TypeError, ValueError) as exc:
        return type(exc), str(exc)
    return "ok", out.tolist(), str(out.dtype).split(".")[-1]


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_storing_a_number_matches_pytorch(op, dtype):
    if op.startswith("clamp") and dtype == "bool":
        pytest.skip("clamp of a bool tensor is not a storing question")
    for value in VALUES:
        want = _outcome(torch, op, dtype, value)
        got = _outcome(eager, op, dtype, value)
        assert got[0] == want[0], (op, dtype, value, got, want)
        if want[0] == "ok":
            assert got[1:] == want[1:], (op, dtype, value, got, want)
        elif "without overflow" in want[1]:
            # PyTorch's message, with the C++ element type it names (int8_t, int, c10::Half, ...)
            assert want[1].split(" without")[0] in got[1], (op, dtype, value, got[1], want[1])


def test_the_message_names_the_op_dtype_and_what_to_do():
    with pytest.raises(RuntimeError, match=r"masked_fill: value cannot be converted to type int8_t without "
                                           r"overflow \(300 into a int8 tensor\).*wider dtype"):
        eager.tensor([1, 2], dtype=eager.int8).masked_fill(eager.tensor([True, False]), 300)


@pytest.mark.parametrize("value", [300, -1, 1e6])
def test_a_tensor_value_is_cast_by_fill_and_checked_by_masked_fill_as_pytorch(value):
    # fill_(0-d tensor) casts the tensor (300 -> 44 in int8); masked_fill takes its number as a scalar
    for op in (lambda m, x, v: x.clone().fill_(m.tensor(v)),
               lambda m, x, v: x.masked_fill(m.tensor([True, False]), m.tensor(v))):
        for dtype in ("int8", "uint8", "float16"):
            want = _outcome_of(torch, op, dtype, value)
            got = _outcome_of(eager, op, dtype, value)
            assert got[0] == want[0] and (want[0] != "ok" or got[1] == want[1]), (dtype, value, got, want)


def _outcome_of(m, op, dtype, value):
    try:
        return "ok", op(m, m.tensor([1, 2], dtype=getattr(m, dtype)), value).tolist()
    except RuntimeError as exc:
        return RuntimeError, str(exc)


@pytest.mark.parametrize("data", [[300], [[1, -129]], [2**31], 1000, [-1], [[-255, 2]], [-256], [1, 1e300]])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "bool", "float16"])
def test_tensor_from_python_integers_matches_pytorch(data, dtype):
    # (float data into an integer dtype: PyTorch also refuses 127.5 for int8, which NumPy
    # truncates; not covered here)
    want = _outcome_of(torch, lambda m, x, v: m.tensor(v, dtype=x.dtype), dtype, data)
    got = _outcome_of(eager, lambda m, x, v: m.tensor(v, dtype=x.dtype), dtype, data)
    assert got[0] == want[0] and (want[0] != "ok" or got[1] == want[1]), (dtype, data, got, want)


def test_arithmetic_with_a_large_number_still_wraps_as_pytorch():
    # x + 300 is arithmetic, not a store: PyTorch wraps in int8 and so does eager
    x = [1, 2]
    want = (torch.tensor(x, dtype=torch.int8) + 300).tolist()
    assert (eager.tensor(x, dtype=eager.int8) + 300).tolist() == want


@pytest.mark.parametrize("fn", [
    lambda m, x: m.where(x > 1, x, 300),
    lambda m, x: x.masked_fill(x > 1, 300),
    lambda m, x: m.full_like(x, 300),
    lambda m, x: x.clone().fill_(1e6),
    lambda m, x: _setitem(m, x, 300),
    lambda m, x: x.clamp(max=-129),
    lambda m, x: m.clamp_min(x, 300),
])
def test_compiled_code_raises_as_eager(fn):
    x = eager.tensor([1, 2], dtype=eager.int8)
    with pytest.raises(RuntimeError, match="without overflow"):
        fn(eager, x)
    with pytest.raises(RuntimeError, match="without overflow"):
        static.compile(lambda x: fn(eager, x), backend="numpy")(x)


def test_compiled_code_stores_numbers_that_fit_as_eager():
    def fn(x):
        return eager.where(x > 1, x, 100) + eager.full_like(x, -1) + x.masked_fill(x > 1, -128)

    x = eager.tensor([1, 2, 3], dtype=eager.int8)
    assert static.compile(fn, backend="numpy")(x).tolist() == fn(x).tolist()
    u = eager.tensor([1, 2], dtype=eager.uint8)
    assert static.compile(lambda u: eager.full_like(u, -1), backend="numpy")(u).tolist() == [255, 255]
    assert static.compile(lambda u: _setitem(eager, u, -1), backend="numpy")(u).tolist() == [255, 2]
    assert static.compile(lambda u: eager.clamp_min(u, -128), backend="numpy")(u).tolist() == [128, 128]
    assert static.compile(lambda x: x + 300, backend="numpy")(x).tolist() == (x + 300).tolist()
