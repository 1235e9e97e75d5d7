"""The C expressions of the pointwise records (OpDef.c_expr): tan, asinh, acosh, atanh (the C
library's functions) and i0, i0e, i1, i1e (gmnative/csrc/gm_helpers.h's series, the records'
forward in C) compiled by the native backend, computed by the NumPy backend and eagerly, against
SciPy / PyTorch in float32 and float64 over wide ranges and the edge values (0, -0, negatives,
large |x|, inf, nan); their gradients through a compiled graph; the CUDA kernel text carrying
the record's expression; and the audit of every pointwise record that has no C expression."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import codegen
import eager
import static
from codegen import native_build
from codegen.lowering import c_inlinable
from gmops import REGISTRY

sys.path.insert(0, str(Path(__file__).parent))
from test_codegen_cupy import _single_op_region  # noqa: E402

special = pytest.importorskip("scipy.special")

HAS_CXX = native_build.availability()[0]
needs_cxx = pytest.mark.skipif(not HAS_CXX, reason="no C++ compiler")

NEW_OPS = ("tan", "asinh", "acosh", "atanh", "i0", "i0e", "i1", "i1e", "log2", "log10", "sinh", "cosh", "asin",
           "acos", "atan")


def _eager_fn(name: str):
    fn = getattr(eager, name, None)
    return fn if fn is not None else getattr(eager.special, name)


def _reference(name: str, x: np.ndarray) -> np.ndarray:
    """SciPy's value in float64 (NumPy's for the C library's functions, SciPy's for Bessel)."""
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)
        table = {"tan": np.tan, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
                 "i0": special.i0, "i0e": special.i0e, "i1": special.i1, "i1e": special.i1e, "log2": np.log2,
                 "log10": np.log10, "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin, "acos": np.arccos,
                 "atan": np.arctan}
        ref = table[name](x64)
    if name in ("i0", "i0e", "i1", "i1e"):  # SciPy gives NaN at +-inf; the limits (PyTorch's values)
        limit = {"i0": np.inf, "i0e": 0.0, "i1": np.inf, "i1e": 0.0}[name]
        ref = np.where(np.isinf(x64), np.copysign(limit, x64) if name.startswith("i1") else limit, ref)
    return ref


_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-30, -1e-30, 8.0, -8.0, 29.9, 30.0, 30.1, -30.1,
          np.inf, -np.inf, np.nan]


def _arguments(name: str, dtype) -> np.ndarray:
    """Edge values, then a wide spread of magnitudes of both signs (the op's domain and outside)."""
    rng = np.random.default_rng(7)
    top = {"tan": 1e4, "asinh": 1e30, "acosh": 1e30, "atanh": 1.5, "i0": 700.0, "i0e": 1e30, "i1": 700.0,
           "i1e": 1e30, "log2": 1e30, "log10": 1e30, "sinh": 700.0, "cosh": 700.0, "asin": 1.5, "acos": 1.5,
           "atan": 1e30}[name]
    mags = np.exp(rng.uniform(np.log(1e-6), np.log(top), 600))
    if dtype == np.float32 and name in ("i0", "i1", "sinh", "cosh"):
        mags = mags[mags < 85.0]  # beyond, I(x) overflows float32: compared as inf below
    x = np.concatenate([_EDGES, mags * rng.choice([-1.0, 1.0], mags.size), rng.uniform(-1.0, 1.0, 100)])
    if name == "acosh":
        x = np.concatenate([x, 1.0 + mags[:100] * 1e-3])
    return x.astype(dtype)


def _check(name: str, got: np.ndarray, x: np.ndarray, dtype) -> None:
    ref = _reference(name, x)
    with np.errstate(all="ignore"):
        ref_rounded = ref.astype(dtype)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref_rounded), err_msg=f"{name} {dtype}: NaN where")
    inf = np.isinf(ref_rounded)
    np.testing.assert_array_equal(got[inf], ref_rounded[inf], err_msg=f"{name} {dtype}: infinities")
    finite = np.isfinite(ref_rounded)
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    if name == "tan":  # tan's condition number grows with |x| (the argument is rounded first)
        rtol *= 50
    tiny = np.finfo(dtype).tiny
    np.testing.assert_allclose(got[finite].astype(np.float64), ref[finite], rtol=rtol, atol=4 * tiny,
                               err_msg=f"{name} {dtype}")
    zeros = finite & (ref == 0)
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(ref_rounded[zeros]), err_msg=f"{name}: sign of 0")


def test_new_records_carry_c_expressions():
    """None of them is a library call in compiled code any more: each is inlined by the C backends."""
    for name in NEW_OPS:
        op = REGISTRY[name]
        assert op.c_expr, name
        assert op.fusible and c_inlinable(op), name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", NEW_OPS)
def test_eager_against_scipy(name, dtype):
    x = _arguments(name, dtype)
    got = _eager_fn(name)(eager.tensor(x)).numpy()
    assert got.dtype == dtype
    _check(name, got, x, dtype)


@needs_cxx
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_native_kernels_against_scipy(dtype):
    """One compiled function computes every new op (one fused region, so one build), each result
    checked against SciPy; the numpy backend computes the same graph."""
    xs = {name: _arguments(name, dtype) for name in NEW_OPS}
    n = max(a.size for a in xs.values())
    padded = [np.resize(xs[name], n) for name in NEW_OPS]  # equal lengths: one signature

    def f(*args):
        return tuple(_eager_fn(name)(a) for name, a in zip(NEW_OPS, args))

    for backend in ("native", "numpy"):
        compiled = static.compile(f, backend=backend)
        outs = compiled(*[eager.tensor(a) for a in padded])
        for name, a, out in zip(NEW_OPS, padded, outs):
            _check(name, out.numpy(), a, dtype)
    source = static.compile(f, backend="native").source(*[eager.tensor(a) for a in padded])
    for name in NEW_OPS:  # inlined: the record's C expression is in the kernel, not a library call
        assert REGISTRY[name].c_expr.format("x").split("(")[0] + "(" in source, name


def _grad_inputs(name: str, dtype) -> np.ndarray:
    lo, hi = {"tan": (-1.2, 1.2), "asinh": (-3.0, 3.0), "acosh": (1.2, 4.0), "atanh": (-0.8, 0.8), "log2": (0.1, 9.0),
              "log10": (0.1, 9.0), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9)}.get(name, (-5, 5))
    x = np.random.default_rng(11).uniform(lo, hi, 40)
    if name in ("i0", "i0e", "i1", "i1e"):
        x[:2] = (0.0, 40.0)  # the limits at 0 and the asymptotic branch
    return x.astype(dtype)


@needs_cxx
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", NEW_OPS)
def test_gradient_through_native_matches_torch(name, dtype):
    torch = pytest.importorskip("torch")
    x = _grad_inputs(name, dtype)
    fn = _eager_fn(name)
    grad = static.grad(lambda t: fn(t).sum(), backend="native")(eager.tensor(x)).numpy()
    tx = torch.tensor(x, requires_grad=True)
    getattr(torch.special, name, None)(tx).sum().backward() if name in ("i0e", "i1", "i1e") else \
        getattr(torch, name)(tx).sum().backward()
    rtol = 2e-5 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(grad, tx.grad.numpy(), rtol=rtol, atol=1e-6 if dtype == np.float32 else 1e-12,
                               err_msg=name)


@pytest.mark.parametrize("name", NEW_OPS)
def test_gradcheck(name):
    x = eager.tensor(_grad_inputs(name, np.float64)[2:12], requires_grad=True)
    assert eager.autograd.gradcheck(_eager_fn(name), (x,), eps=1e-6, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("name", (*NEW_OPS, "atan2"))
def test_cuda_kernel_text_carries_the_record_expression(name):
    """The CuPy module's ElementwiseKernel for the op inlines the record's C expression (the
    helpers it calls are in the preamble the kernels embed)."""
    src = codegen.generate_source(static.parse_ir(_single_op_region(name)), "cupy")[0]
    assert "ElementwiseKernel" in src
    arity = REGISTRY[name].arity or 1
    # the record's expression with each operand spelled as the kernel spells it (a parameter, a cast)
    pattern = re.escape(REGISTRY[name].c_expr.format(*(f"OPERAND{i}" for i in range(arity)), T="float"))
    for i in range(arity):
        pattern = pattern.replace(f"OPERAND{i}", r"[\w\[\]().]+?")
    line = next(line for line in src.splitlines() if re.search(r"\bt_y\b.*=", line))
    assert re.search(pattern, line), (name, line)
    helper = REGISTRY[name].c_expr.split("(")[0]
    if helper.startswith("gm_"):
        assert f"GM_INLINE T {helper}(" in src, f"{helper} is not in the kernels' preamble"


# -- the audit: pointwise records the C backends cannot inline ----------------------------------
# Each entry says why the op is not inlined by the native and CUDA generators. A new pointwise op
# must spell a C expression (OpDef.c_expr) or be added here with its reason.
_RAISES = ("an integer division by zero raises in eager, as PyTorch's ZeroDivisionError (gmops.math_ops."
           "_integer_division); a fused kernel cannot raise, and whether a backend inlines an op is decided "
           "per op, not per dtype (the native backend computes the op itself outside regions: native_gen "
           "divmod_op)")
NOT_INLINED = {
    "stop_gradient": "an alias of its operand (fusible=False): nothing to compute",
    **{name: _RAISES for name in ("floor_divide", "remainder", "fmod", "div_floor", "div_trunc")},
}
# pointwise records that still lack a C expression: each a gap to close, not a fact of the op
MISSING: set[str] = set()


def _not_inlined() -> set[str]:
    return {op.name for op in REGISTRY.values() if op.pointwise and not c_inlinable(op)}


def test_every_pointwise_record_is_inlined_or_listed():
    found = _not_inlined()
    new = found - set(NOT_INLINED) - MISSING
    assert not new, (f"pointwise records without a C expression: {sorted(new)}; spell OpDef.c_expr "
                     "(the native and CUDA kernels inline it) or list the op in NOT_INLINED with the reason")
    done = ((set(NOT_INLINED) | MISSING) & set(REGISTRY)) - found
    assert not done, f"{sorted(done)} are inlined now: take them off the lists"


@needs_cxx
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_atan2_native_matches_numpy_and_torch_gradient(dtype):
    """atan2's C expression (two operands, the quadrants, signed zeros, infinities) and its
    gradient through native code."""
    torch = pytest.importorskip("torch")
    edges = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan])
    a = np.concatenate([np.repeat(edges, edges.size), np.random.default_rng(3).standard_normal(200) * 1e3])
    b = np.concatenate([np.tile(edges, edges.size), np.random.default_rng(4).standard_normal(200) * 1e-2])
    a, b = a.astype(dtype), b.astype(dtype)
    got = static.compile(lambda x, y: eager.atan2(x, y) * 1.0, backend="native")(eager.tensor(a), eager.tensor(b))
    expected = np.arctan2(a, b)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6 if dtype == np.float32 else 1e-12)
    assert np.array_equal(np.signbit(got.numpy()), np.signbit(expected))
    x, y = a[-200:], b[-200:]
    gx, gy = static.grad(lambda p, q: eager.atan2(p, q).sum(), argnums=(0, 1), backend="native")(
        eager.tensor(x), eager.tensor(y))
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    torch.atan2(tx, ty).sum().backward()
    rtol = 2e-5 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), rtol=rtol, atol=1e-9)
    np.testing.assert_allclose(gy.numpy(), ty.grad.numpy(), rtol=rtol, atol=1e-9)


_SPECIALS = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e-40, 3e38, -3e38])


@needs_cxx
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8])
def test_classification_and_logic_inlined_match_numpy(dtype):
    """isnan/isinf/isfinite (one C expression for every dtype), logical_or/xor on truth values
    (NaN is true), and the bitwise ops on integers: compiled by the native backend and the numpy
    backend, equal to NumPy's."""
    if np.dtype(dtype).kind == "f":
        with np.errstate(over="ignore"):
            x = _SPECIALS.astype(dtype)
    else:
        x = np.array([0, 1, -1, 7, -128 if dtype == np.int8 else -2**62, 3, 0, 5, 127, -7], dtype)
    y = np.roll(x, 3)

    def f(a, b):
        out = [eager.isnan(a), eager.isinf(a), eager.isfinite(a), eager.logical_or(a, b), eager.logical_xor(a, b)]
        if np.dtype(dtype).kind == "i":
            out += [eager.bitwise_and(a, b), eager.bitwise_or(a, b), eager.bitwise_xor(a, b)]
        return tuple(out)

    expected = [np.isnan(x), np.isinf(x), np.isfinite(x), np.logical_or(x, y), np.logical_xor(x, y)]
    if np.dtype(dtype).kind == "i":
        expected += [x & y, x | y, x ^ y]
    for backend in ("native", "numpy"):
        compiled = static.compile(f, backend=backend)
        got = compiled(eager.tensor(x), eager.tensor(y))
        for g, e in zip(got, expected):
            assert g.numpy().dtype == e.dtype
            np.testing.assert_array_equal(g.numpy(), e, err_msg=f"{backend} {dtype}")
    source = static.compile(f, backend="native").source(eager.tensor(x), eager.tensor(y))
    assert "gm_isinf(" in source and "gm_isfinite(" in source and "_rt.forward" not in source


@needs_cxx
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_rounding_inlined_matches_numpy(dtype):
    """floor, ceil, trunc and round (half to even; with decimals as NumPy's around) compiled by
    the native and numpy backends: NumPy's bits, integers kept exactly (int64 beyond 2^53 too)."""
    if np.dtype(dtype).kind == "f":
        x = np.concatenate([[0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5, 1.25, -1.35, np.inf, -np.inf, np.nan, 1e30],
                            np.random.default_rng(5).uniform(-100, 100, 50)]).astype(dtype)
    else:
        x = np.array([0, 1, -1, 7, -7, 2**31 - 1, -2**31], dtype)
        if dtype == np.int64:
            x = np.concatenate([x, np.array([2**53 + 1, -(2**62) - 3], np.int64)])

    floats = np.dtype(dtype).kind == "f"

    def f(a):
        out = (eager.floor(a), eager.ceil(a), eager.trunc(a), eager.round(a))
        # (PyTorch refuses decimals on an integer tensor)
        return out + (eager.round(a, decimals=2), eager.round(a, decimals=-1)) if floats else out

    expected = [np.floor(x), np.ceil(x), np.trunc(x), np.round(x)] if floats else [x] * 4
    for backend in ("native", "numpy"):
        got = static.compile(f, backend=backend)(eager.tensor(x))
        eager_values = f(eager.tensor(x))
        for k, (g, e, ev) in enumerate(zip(got, expected, eager_values)):
            assert g.numpy().dtype == x.dtype, (backend, k)
            np.testing.assert_array_equal(g.numpy(), ev.numpy(), err_msg=f"{backend} {dtype} output {k} vs eager")
            if k < 4:
                np.testing.assert_array_equal(g.numpy(), e, err_msg=f"{backend} {dtype} output {k}")
    source = static.compile(f, backend="native").source(eager.tensor(x))
    assert "gm_round(" in source and "gm_floor(" in source and "_rt.forward" not in source


@needs_cxx
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_nan_to_num_inlined_matches_numpy(dtype):
    """nan_to_num's defaults are the result dtype's largest finite values (float16's too, though
    the kernel computes in float), given values replace NaN and the infinities; integers stay."""
    if np.dtype(dtype).kind == "f":
        x = np.array([0.0, -0.0, 1.5, np.nan, np.inf, -np.inf, -3.0], dtype)
    else:
        x = np.array([0, 5, -7, 2**31 - 1], dtype)

    def f(a):
        return eager.nan_to_num(a * 1), eager.nan_to_num(a * 1, nan=2.5, posinf=1e3, neginf=-1e3)

    expected = [np.nan_to_num(x), np.nan_to_num(x, nan=2.5, posinf=1e3, neginf=-1e3)]
    for backend in ("native", "numpy"):
        got = static.compile(f, backend=backend)(eager.tensor(x))
        for g, e in zip(got, expected):
            assert g.numpy().dtype == x.dtype
            np.testing.assert_array_equal(g.numpy(), e, err_msg=f"{backend} {dtype}")
    assert "gm_nan_to_num(" in static.compile(f, backend="native").source(eager.tensor(x))
