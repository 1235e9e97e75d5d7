"""The shift ops (`bitwise_left_shift`, `bitwise_right_shift`, `<<`, `>>` and their forms) and
Python's augmented assignments that PyTorch runs in place, against PyTorch: values in every
integer dtype (counts negative and beyond the bit width included, where C's shift is undefined),
promotion, scalars on either side, out=, in-place forms, errors, and compiled (NumPy and native
backends) equal to eager."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from codegen import native_build

torch = pytest.importorskip("torch")

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8"]
SHIFTS = {"bitwise_left_shift": lambda a, b: a << b, "bitwise_right_shift": lambda a, b: a >> b}
needs_cxx = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")


def _pair(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Values over the dtype's range (negative ones where signed) and counts from -3 to 70: below
    zero, inside, at and beyond every bit width."""
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    a = rng.integers(max(info.min, -(2**40)), min(info.max, 2**40), (6, 75), endpoint=True).astype(dtype)
    b = np.broadcast_to(np.arange(-3, 72), (6, 75)).astype(dtype)  # (uint8: -3..-1 wrap to 253..255)
    return a, b


def _same(got, want) -> None:
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (got.dtype, want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", list(SHIFTS))
def test_values_match_torch_in_every_integer_dtype(name, dtype):
    a, b = _pair(dtype)
    want = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(b))
    _same(getattr(eager, name)(eager.tensor(a), eager.tensor(b)), want)
    _same(SHIFTS[name](eager.tensor(a), eager.tensor(b)), want)
    _same(getattr(eager.tensor(a), name)(eager.tensor(b)), want)


@pytest.mark.parametrize("name", list(SHIFTS))
def test_promotion_broadcasting_and_scalars_on_either_side(name):
    op = SHIFTS[name]
    i8 = [[64, -64, 5], [1, -1, 127]]
    cases = [
        lambda m: op(m.tensor([True, False, True]), 1),  # bool with an int: int64
        lambda m: op(m.tensor(i8, dtype=m.int8), m.tensor([1, 2, 9], dtype=m.int32)),  # promoted to int32
        lambda m: op(m.tensor(i8, dtype=m.int8), m.tensor([[1], [7]], dtype=m.int8)),  # broadcast
        lambda m: op(m.tensor(i8, dtype=m.int8), 260),  # the number wraps into int8 (4)
        lambda m: op(m.tensor(i8, dtype=m.int8), -1),
        lambda m: op(3, m.tensor([1, 2, 7, 8], dtype=m.int8)),  # __rlshift__ / __rrshift__: int8
        lambda m: op(200, m.tensor([0, 1, 9], dtype=m.uint8)),
        lambda m: op(m.tensor([3, 4]), True),
        lambda m: getattr(m, name)(5, m.tensor([1, 2], dtype=m.int16)),
        lambda m: op(m.tensor(7, dtype=m.int16), m.tensor([1, 15, 16])),  # 0-d with a dimensioned tensor
    ]
    for case in cases:
        _same(case(eager), case(torch))


def test_uint8_wraps_and_out_of_range_counts():
    u8 = eager.tensor([5, 255, 1], dtype=eager.uint8)
    assert (u8 << 7).tolist() == [128, 128, 128]
    assert (eager.tensor([5, -5]) << eager.tensor([-1, 64])).tolist() == [0, 0]
    assert (eager.tensor([5, -5]) >> eager.tensor([-1, 64])).tolist() == [0, -1]
    assert (eager.tensor([-128, 127], dtype=eager.int8) >> 8).tolist() == [-1, 0]


@pytest.mark.parametrize("name", list(SHIFTS))
def test_out_and_in_place_forms(name):
    a, b = _pair("int16")
    want = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(b))
    out = eager.empty(a.shape, dtype=eager.int16)
    got = getattr(eager, name)(eager.tensor(a), eager.tensor(b), out=out)
    assert got is out
    _same(out, want)
    x = eager.tensor(a)
    alias = x
    assert getattr(x, name + "_")(eager.tensor(b)) is x
    _same(alias, want)
    x = eager.tensor(a)
    alias = x
    if name == "bitwise_left_shift":
        x <<= eager.tensor(b)
    else:
        x >>= eager.tensor(b)
    _same(alias, want)


@pytest.mark.parametrize("name", list(SHIFTS))
@pytest.mark.parametrize("make", [
    lambda m: (m.tensor([1.0, 2.0]), 1),
    lambda m: (m.tensor([1, 2]), 1.5),
    lambda m: (m.tensor([1, 2]), m.tensor([1.0, 2.0])),
    lambda m: (m.tensor([True]), m.tensor([True])),
    lambda m: (m.tensor([True]), True),
], ids=["float-tensor", "float-number", "float-other", "bool-bool", "bool-number"])
def test_non_integers_raise_as_torch(name, make):
    with pytest.raises(NotImplementedError) as want:
        getattr(torch, name)(*make(torch))
    with pytest.raises(NotImplementedError) as got:
        getattr(eager, name)(*make(eager))
    kind = str(want.value).split("'")[1]  # 'Float' / 'Bool'
    assert str(want.value).split(" ")[0] in str(got.value) and f"'{kind}'" in str(got.value)


AUGMENTED = ["//=", "%=", "&=", "|=", "^=", "<<=", ">>="]


@pytest.mark.parametrize("operator", AUGMENTED)
def test_augmented_assignments_write_in_place_as_torch(operator):
    """`y = x; x op= v` changes y in PyTorch: eager writes the same tensor, not a new one."""
    def run(m, values, dtype, other):
        x = m.tensor(values, dtype=dtype)
        y = x
        scope = {"x": x, "v": other}
        exec(f"x {operator} v", scope)  # noqa: S102  (the operator under test, spelled as users do)
        return scope["x"] is y, y

    cases = [([5, -7, 3, 12], "int32", 3), ([5, -7, 3, 12], "int64", [1, 2, 3, 4])]
    if operator in ("//=", "%="):
        cases.append(([5.5, -7.0, 3.0, -0.5], "float32", 2.0))
    if operator in ("&=", "|=", "^="):
        cases.append(([True, False, True, False], "bool", [True, True, False, False]))
    for values, dtype, other in cases:
        for_torch = torch.tensor(other) if isinstance(other, list) else other
        for_eager = eager.tensor(other) if isinstance(other, list) else other
        same_t, want = run(torch, values, getattr(torch, dtype), for_torch)
        same_e, got = run(eager, values, getattr(eager, dtype), for_eager)
        assert same_e == same_t is True
        _same(got, want)


def test_matmul_assignment_rebinds_as_torch():
    """PyTorch has no __imatmul__: `a @= b` is `a = a @ b`, the old tensor untouched."""
    a = eager.ones(2, 2)
    b = a
    a @= eager.full((2, 2), 2.0)
    assert a is not b and b.tolist() == [[1.0, 1.0], [1.0, 1.0]] and a.tolist() == [[4.0, 4.0], [4.0, 4.0]]


def _program(x, s):
    y = x * 3
    z = y
    y //= 2  # on an intermediate: the tracer names the new value, z keeps following it
    z <<= 1
    w = (y >> s) ^ (y << s)
    w %= 7
    w |= 1
    w &= 0x3F
    return w + z, (x << s) >> 1, 3 << s, 100 >> s, eager.bitwise_right_shift(x, 2)


@pytest.mark.parametrize("backend", ["numpy", pytest.param("native", marks=needs_cxx)])
def test_compiled_equals_eager(backend):
    rng = np.random.default_rng(3)
    for dtype in INT_DTYPES:
        x = eager.tensor(rng.integers(0, 100, (5, 7)).astype(dtype))
        s = eager.tensor(rng.integers(-3, 70, (7,)).astype(dtype))
        want = _program(x, s)
        got = static.compile(_program, backend=backend)(x, s)
        for g, w in zip(got, want):
            _same(g, w)
    if backend == "native":  # fused: the records' C expressions are in the kernel
        source = static.compile(_program, backend="native").source(x, s)
        assert "<<" in source and ">>" in source and "sizeof" in source


def test_traced_augmented_assignment_on_an_intermediate_matches_eager():
    def f(x):
        y = x + 1
        alias = y
        y //= 2
        y %= 3
        return alias * 10 + y

    x = eager.tensor([[5.0, -7.5], [3.25, 12.0]])
    _same(static.compile(f, backend="interpret")(x), f(x))
    _same(static.compile(f, backend="numpy")(x), f(x))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_remainder_zero_keeps_the_dividends_sign_as_torch_eager_and_compiled(dtype):
    """remainder(-0.0, 1.0) and remainder(-2.0, -1.0) are -0.0 in PyTorch (fmod's zero; NumPy
    gives the divisor's sign): eager, the NumPy backend and the native one (one-op and in a C
    loop) agree with it bit for bit."""
    a = np.array([-0.0, 0.0, -2.0, 2.0, -3.5, 3.5, 5.0, -5.0, 1.0, np.inf, -1.0, 7.0], dtype=dtype)
    b = np.array([1.0, -1.0, -1.0, -1.0, 1.75, -1.75, 2.5, 2.5, 0.0, 2.0, np.inf, -np.inf], dtype=dtype)
    cases = [(lambda x, y: (x * 1.0) % y, (a, b)), (lambda x, y: (x * 1.0) % -1.0 + y * 0, (a, b)),
             (lambda x, y: 3.0 % (y * 1.0), (a, b))]
    for fn, (x, y) in cases:
        want = fn(torch.from_numpy(x), torch.from_numpy(y)).numpy()
        runs = [fn(eager.tensor(x), eager.tensor(y))]
        runs += [static.compile(fn, backend=be)(eager.tensor(x), eager.tensor(y)) for be in ("numpy", "native")
                 if be == "numpy" or native_build.availability()[0]]
        for got in runs:
            got = got.numpy()
            assert np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want))


@needs_cxx
def test_remainder_in_a_c_loop_matches_torch():
    xs = np.array([[-0.0, 0.0, -2.0, 2.0], [-4.0, 4.0, -1.0, 3.0]])

    def model(xs):
        return static.scan(lambda c, x: (c + 1.0, (x * 1.0) % -1.0), eager.tensor(0.0), xs)

    got = static.compile(model, backend="native")(eager.tensor(xs))[1].numpy()
    want = torch.remainder(torch.from_numpy(xs), -1.0).numpy()
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))


def test_threshold_as_torch_node_name_dtype_inplace_and_gradient():
    from eager.autograd import gradcheck
    from eager.nn import functional as F

    tf = torch.nn.functional
    x = np.array([-2.0, 0.5, 1.0, 1.5, 3.0, np.nan])
    for m, fn in ((eager, F.threshold), (torch, tf.threshold)):
        t = m.tensor(x, requires_grad=True)
        out = fn(t, 1.0, -7.0)
        out.sum().backward()
        if m is eager:
            got = (out, t.grad, type(out.grad_fn).__name__)
        else:
            want = (out, t.grad, type(out.grad_fn).__name__)
    np.testing.assert_array_equal(got[0].detach().numpy(), want[0].detach().numpy())
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
    assert got[2] == want[2] == "ThresholdBackward0"
    at = eager.tensor([-1.0, 0.1, 0.7, 2.0], dtype=eager.float64, requires_grad=True)
    assert gradcheck(lambda t: F.threshold(t, 0.3, -1.0), (at,))
    ints = [-2, -1, 0, 1]
    for dtype, t, v in (("int64", -1.5, 7.9), ("int8", 1.5, -3)):  # numbers truncated into the dtype
        _same(F.threshold(eager.tensor(ints, dtype=getattr(eager, dtype)), t, v),
              tf.threshold(torch.tensor(ints, dtype=getattr(torch, dtype)), t, v))
    y = eager.tensor([0.5, 2.0])
    assert F.threshold(y, 1.0, -1.0, inplace=True) is y and y.tolist() == [-1.0, 2.0]
    with pytest.raises(NotImplementedError, match="threshold_cpu"):
        F.threshold(eager.tensor([True, False]), 0.5, 0.0)
    f = lambda t: F.threshold(t * 2.0, 1.0, -3.0)  # noqa: E731
    xs = eager.tensor(np.linspace(-2, 2, 9))
    for backend in ("numpy", "native") if native_build.availability()[0] else ("numpy",):
        _same(static.compile(f, backend=backend)(xs), f(xs))
