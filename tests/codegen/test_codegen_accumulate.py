"""Generated code computes in the dtypes eager does where NumPy's defaults differ:
integer and bool sum/prod accumulate in int64 (NumPy gives uint64 for uint8), float16
sum/prod/mean accumulate in float32 and round once, and float16 mul/div with a Python
number compute in float32 (NumPy casts the number to float16 first: 70000 becomes inf).
Each in every place the NumPy generator spells it (a library call, a blocked region's
partials and its row-wise reductions, a small region op by op, 0-d NumPy-scalar code),
against eager; the native C backend too."""
from __future__ import annotations

import numpy as np
import pytest

import codegen
import eager
import static
from codegen import native_build, settings
from codegen.lowering import accumulate_dtype, half_in_float32


def _eager(graph, arrays):
    """The graph run op by op through eager's dispatch (the reference: PyTorch's dtypes)."""
    env = {v: eager.tensor(a) for v, a in zip(graph.inputs, arrays)}

    def run(g, env):
        for node in g.nodes:
            args = [env[v] if isinstance(v, static.Value) else v for v in node.inputs]
            if node.body is not None:
                outs = run(node.body, dict(zip(node.body.inputs, args)))
            else:
                outs = [_EAGER[node.op](*args, **node.attrs)]
            env.update(zip(node.outputs, outs))
        return [env[v] if isinstance(v, static.Value) else v for v in g.outputs]

    return [t.numpy() for t in run(graph, env)]


def _reduce(name):
    def fn(x, dims=None, keepdim=False):
        return getattr(x, name)() if dims is None else getattr(x, name)(dims[0], keepdim=keepdim)
    return fn


_EAGER = {"mul": lambda a, b: a * b, "div": lambda a, b: a / b, "add": lambda a, b: a + b,
          "sum": _reduce("sum"), "prod": _reduce("prod"), "mean": _reduce("mean")}


def _check(text, arrays, small_regions=False, monkeypatch=None, exact=False):
    graph = static.parse_ir(text)
    if small_regions:
        monkeypatch.setattr(settings, "INLINE_MAX_ELEMS", 1 << 30)
    exe = codegen.build(graph, "numpy")
    got = exe.run(arrays)
    want = _eager(graph, arrays)
    for g, w, v in zip(got, want, graph.outputs):
        g = np.asarray(g)
        assert g.dtype == v.type.dtype.np == w.dtype, exe.source()
        if exact:
            np.testing.assert_array_equal(g, w, err_msg=exe.source())
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=2e-3, err_msg=exe.source())
    return exe.source()


# -- integer sum/prod in int64 --------------------------------------------------------------
_INT_TYPES = {"u8": np.uint8, "i8": np.int8, "i16": np.int16, "bool": np.bool_}


def _ints(t, shape, seed=0):
    rng = np.random.default_rng(seed)
    if t == "bool":
        return rng.standard_normal(shape) > 0
    info = np.iinfo(_INT_TYPES[t])
    return rng.integers(max(info.min, -3), min(info.max, 250), shape).astype(_INT_TYPES[t])


@pytest.mark.parametrize("t", sorted(_INT_TYPES))
@pytest.mark.parametrize("op", ["sum", "prod"])
@pytest.mark.parametrize("dims, out", [("none", "i64[]"), ("[0]", "i64[5]"), ("[1]", "i64[40]")])
def test_integer_reductions_accumulate_in_int64(t, op, dims, out, small_blocks):
    """A library call and a fused region (integer reductions run op by op there, see
    regions.py): int64 data as the IR says, never uint64 (which eager has no dtype for)."""
    x = _ints(t, (40, 5))
    lib = f"""
func @f(%x: {t}[40,5]) -> {out} {{
  %1 = {op} %x {{dims = {dims}, keepdim = false}} : {out}
  return %1
}}"""
    src = _check(lib, [x])
    assert "dtype=np.int64" in src
    fused = f"""
func @f(%x: {t}[40,5], %y: {t}[40,5]) -> {out} {{
  %2 = fused %x, %y : {out} {{
    ^body(%a: {t}[40,5], %b: {t}[40,5]):
    %3 = mul %a, %b : {t}[40,5]
    %4 = {op} %3 {{dims = {dims}, keepdim = false}} : {out}
    yield %4
  }}
  return %2
}}"""
    src = _check(fused, [x, _ints(t, (40, 5), 1)])
    assert "dtype=np.int64" in src


def test_uint8_sum_does_not_wrap_or_widen_to_uint64(monkeypatch):
    x = np.full((300,), 255, np.uint8)
    text = """
func @f(%x: u8[300]) -> i64[] {
  %1 = sum %x {dims = none, keepdim = false} : i64[]
  return %1
}"""
    got = codegen.build(static.parse_ir(text), "numpy").run([x])[0]
    assert np.asarray(got).dtype == np.int64 and int(got) == 255 * 300


# -- float16 reductions in float32 ----------------------------------------------------------
@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("blocks", ["default", "small"])
def test_float16_full_reduction_of_many_elements(op, blocks, request):
    """100k squares: a float16 running mean of ones overflows at 65504 (nan) and a float16
    sum drifts from the float32 one; eager sums in float32 and rounds once."""
    if blocks == "small":
        request.getfixturevalue("small_blocks")
    n = 100_000
    text = f"""
func @f(%x: f16[{n}]) -> f16[] {{
  %2 = fused %x : f16[] {{
    ^body(%a: f16[{n}]):
    %3 = mul %a, %a : f16[{n}]
    %4 = {op} %3 {{dims = none, keepdim = false}} : f16[]
    yield %4
  }}
  return %2
}}"""
    x = np.ones(n, np.float16) if op == "mean" else np.random.default_rng(0).uniform(0, 0.8, n).astype(np.float16)
    exe = codegen.build(static.parse_ir(text), "numpy")
    got = np.asarray(exe.run([x])[0])
    want = _eager(static.parse_ir(text), [x])[0]
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_array_equal(got, want, err_msg=exe.source())
    assert "dtype=np.float32" in exe.source()


_F16_ROWS = """
func @f(%x: f16[6,3000]) -> ({out}, f16[6,3000]) {{
  %2, %3 = fused %x : {out}, f16[6,3000] {{
    ^body(%a: f16[6,3000]):
    %4 = mul %a, 0.1 : f16[6,3000]
    %5 = {op} %4 {{dims = [{dim}], keepdim = false}} : {out}
    yield %5, %4
  }}
  return %2, %3
}}"""


@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
@pytest.mark.parametrize("dim, out", [(1, "f16[6]"), (0, "f16[3000]")])
@pytest.mark.parametrize("path", ["blocked", "small"])
def test_float16_partial_reductions_round_once(op, dim, out, path, small_blocks, monkeypatch):
    """Row-wise (written into the result with out=) and column (block partials combined)
    reductions, blocked and op by op: exactly the values eager gives (float16 partial sums
    round at every step)."""
    x = np.random.default_rng(0).uniform(0.5, 1.5, (6, 3000)).astype(np.float16)
    if op == "prod":
        x = np.random.default_rng(0).uniform(9.5, 10.5, (6, 3000)).astype(np.float16)
    src = _check(_F16_ROWS.format(op=op, dim=dim, out=out), [x], small_regions=path == "small",
                 monkeypatch=monkeypatch, exact=True)
    assert ("def _region0" in src) == (path == "blocked")


def test_float16_library_sum():
    text = """
func @f(%x: f16[4,5000]) -> f16[4] {
  %1 = sum %x {dims = [1], keepdim = false} : f16[4]
  return %1
}"""
    x = np.full((4, 5000), 0.1, np.float16)
    src = _check(text, [x])
    assert "dtype=np.float32).astype(np.float16)" in src


def test_accumulate_dtype_follows_the_combiner():
    """max/min keep the operand's dtype; float32/int64 accumulate in themselves."""
    g = static.parse_ir("""
func @f(%x: f16[3], %y: u8[3], %z: f32[3]) -> (f16[], i64[], f32[], u8[]) {
  %1 = sum %x {dims = none, keepdim = false} : f16[]
  %2 = prod %y {dims = none, keepdim = false} : i64[]
  %3 = sum %z {dims = none, keepdim = false} : f32[]
  %4 = amax %y {dims = none, keepdim = false} : u8[]
  return %1, %2, %3, %4
}""")
    assert [getattr(accumulate_dtype(n), "name", None) for n in g.nodes] == ["float32", "int64", None, None]


# -- float16 with a Python number -------------------------------------------------------------
@pytest.mark.parametrize("expr", ["div %a, 70000.0", "div %a, 100000", "mul %a, 100000.0", "mul 1e-05, %a"])
@pytest.mark.parametrize("path", ["top", "blocked", "small", "scalar"])
def test_float16_with_a_number_beyond_its_range(expr, path, small_blocks, monkeypatch):
    """Eager computes these in float32 and rounds once (6e4 / 7e4 = 0.857, not 6e4 / inf = 0;
    6e4 * 1e5 = inf either way, but 1 * 1e-5 is not float16(1e-5) * 1 in every last bit)."""
    shape = "" if path == "scalar" else "3"
    t = f"f16[{shape}]"
    x = np.array(6e4 if path == "scalar" else [1.0, 2.0, 6e4], np.float16)
    if path == "top":
        text = f"func @f(%a: {t}) -> {t} {{\n  %1 = {expr} : {t}\n  %2 = add %1, 1.0 : {t}\n  return %2\n}}"
    else:
        body = expr.replace("%a", "%b")
        text = f"""
func @f(%a: {t}) -> {t} {{
  %1 = fused %a : {t} {{
    ^body(%b: {t}):
    %2 = {body} : {t}
    %3 = add %2, 1.0 : {t}
    yield %3
  }}
  return %1
}}"""
    src = _check(text, [x], small_regions=path == "small", monkeypatch=monkeypatch)
    assert "np.float32" in src


def test_half_in_float32_reads_eagers_table():
    g = static.parse_ir("""
func @f(%x: f16[3], %y: f32[3]) -> (f16[3], f16[3], f16[3], f32[3], f16[3]) {
  %1 = div %x, 70000.0 : f16[3]
  %2 = add %x, 70000.0 : f16[3]
  %3 = mul 3, %x : f16[3]
  %4 = mul %y, 70000.0 : f32[3]
  %5 = mul %x, %x : f16[3]
  return %1, %2, %3, %4, %5
}""")
    assert [half_in_float32(n) for n in g.nodes] == [True, False, True, False, False]


# -- the native backend ---------------------------------------------------------------------
@pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")
def test_native_backend_accumulates_in_double():
    """The C kernels sum in double: float16 means of many elements come out as eager's, and
    float16 times a number computes in float; uint8 sums (NumPy code there) in int64."""
    x = eager.tensor(np.ones(100_000, np.float16))
    u = eager.tensor(np.full((40, 5), 255, np.uint8))
    h = eager.tensor(np.full(5000, 6e4, np.float16))
    for fn, arg in [(lambda t: (t * t).mean(), x), (lambda t: (t * t).sum(0), u), (lambda t: (t + 0).sum(), u),
                    (lambda t: (t / 70000.0).mean(), h)]:
        compiled = static.compile(fn, backend="native")
        got, want = compiled(arg), fn(arg)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.numpy().astype(np.float64), rtol=1e-3)
        if arg is not u:  # integer reductions are not fused (regions.py): NumPy code runs them
            assert "_call_new(" in compiled.source(arg)  # a native kernel ran it


# -- the CuPy source (text: needs no GPU) -----------------------------------------------------
def test_cupy_library_calls_follow_the_same_rules():
    """CuPy's sum/mean/mul/div follow NumPy's dtypes: the generated calls say eager's."""
    from codegen import cupy_gen

    g = static.parse_ir("""
func @f(%x: f16[3], %y: u8[3]) -> (f16[3], i64[], f16[]) {
  %1 = div %x, 70000.0 : f16[3]
  %2 = sum %y {dims = none, keepdim = false} : i64[]
  %3 = mean %x {dims = none, keepdim = false} : f16[]
  return %1, %2, %3
}""")
    src = cupy_gen.generate(g)[0]
    assert "cp.true_divide(x.astype(cp.float32), 70000.0).astype(cp.float16)" in src
    assert "cp.sum(y, axis=None, keepdims=False, dtype=cp.int64)" in src
    assert "cp.mean(x, axis=None, keepdims=False, dtype=cp.float32).astype(cp.float16)" in src


@pytest.mark.parametrize("op, attrs, out", [("softmax", "{dim = 1}", "f16[4,1000]"),
                                            ("log_softmax", "{dim = 1}", "f16[4,1000]"),
                                            ("logsumexp", "{dims = [1], keepdim = false}", "f16[4]")])
def test_float16_softmax_family_computes_in_float32(op, attrs, out):
    """The library calls of the softmax family compute float16 in float32 and round once,
    exactly as eager's forwards."""
    text = f"""
func @f(%x: f16[4,1000]) -> {out} {{
  %1 = {op} %x {attrs} : {out}
  return %1
}}"""
    x = (np.random.default_rng(0).standard_normal((4, 1000)) * (1 if op == "logsumexp" else 4)).astype(np.float16)
    got = np.asarray(codegen.build(static.parse_ir(text), "numpy").run([x])[0])
    t = eager.tensor(x)
    want = (t.logsumexp(1) if op == "logsumexp" else getattr(t, op)(1)).numpy()
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_array_equal(got, want)
