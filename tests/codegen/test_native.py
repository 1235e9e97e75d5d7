"""The native CPU backend: every pointwise op's C expression in float32 and float64 (and
the integer and bool ops), every shape of fused region, W1-W4 with their gradients, against
the interpreter and the NumPy backend; the generated source; threads and determinism;
the compiler probe, the shared-object cache and its checks; compile errors; fork safety.

Compiling costs ~0.1-1 s a translation unit, so the ops share one graph per dtype."""
from __future__ import annotations

import dataclasses
import multiprocessing
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import codegen
import eager
import static
from codegen import loader, native_build, runtime
from codegen.native_gen.driver import NativeModule
from codegen.native_gen.indexing import compose_index, index_expr

sys.path.insert(0, str(Path(__file__).parent))
import gm_workloads as W  # noqa: E402
from test_codegen_cupy import _op_text, _pointwise_ops  # noqa: E402
from test_codegen_regions import CASES  # noqa: E402

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")
ROOT = Path(__file__).resolve().parents[2]
_COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}


def _all_ops_ir(dt: str, n: int) -> str:
    """One graph holding one fused single-op region per pointwise op (n elements each)."""
    params, nodes, results, outs = [], [], [], []
    for j, name in enumerate(_pointwise_ops()):
        p, expr, result = (s.replace("f32", dt).replace("[8]", f"[{n}]") for s in _op_text(name))
        if name == "to_dtype":
            result = result.replace(dt, "f64" if dt == "f32" else "f32")
            expr = expr.replace("dtype = f64", f"dtype = {'f64' if dt == 'f32' else 'f32'}")
        names = [q.split(":")[0].strip() for q in p.split(",")]
        types = [q.split(":")[1].strip() for q in p.split(",")]
        outer = [f"%o{j}_{x[1:]}" for x in names]
        params += [f"{o}: {t}" for o, t in zip(outer, types)]
        body_params = ", ".join(f"%p{j}_{x[1:]}: {t}" for x, t in zip(names, types))
        op, _, rest = expr.partition(" ")
        for x in names:
            rest = rest.replace(x, f"%p{j}_{x[1:]}")
        nodes.append(f"  %r{j} = fused {', '.join(outer)} : {result} {{\n    ^body({body_params}):\n"
                     f"    %y{j} = {op} {rest} : {result}\n    yield %y{j}\n  }}")
        results.append(result)
        outs.append(f"%r{j}")
    return (f"func @all_ops_{dt}({', '.join(params)}) -> ({', '.join(results)}) {{\n" + "\n".join(nodes)
            + f"\n  return {', '.join(outs)}\n}}")


def _values(dtype, shape, rng, signed=True):
    if np.dtype(dtype) == np.bool_:
        return rng.standard_normal(shape) > 0
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50 if signed else 0, 50, shape).astype(dtype)
    v = rng.uniform(-3.0, 3.0, shape).astype(dtype)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 30.0, -30.0, 1e-30, 1e-40, 100.0, -100.0], dtype)
    v.reshape(-1)[: edges.size] = edges
    return v


def _same(got, expected, rtol, msg):
    """Equal up to rtol, or up to 4 ulp of 1.0 absolute: the formulas 1 + erf(x) and 1 + tanh(x)
    (gelu) cancel for x < -2, where two math libraries' 1-ulp errors in erf or tanh become
    large relative errors of the result (test_native_accuracy bounds both against float64)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, msg
    if got.dtype.kind == "f":
        atol = 4 * float(np.finfo(got.dtype).eps)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=msg)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=msg)


@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_every_pointwise_op_matches_interpreter(dt):
    """1003 elements: the vector loop and its remainder; signed values with ±0, ±inf, nan,
    subnormals and large arguments (the accuracy test states the ulp bounds)."""
    graph = static.parse_ir(_all_ops_ir(dt, 1003))
    rng = np.random.default_rng(0)
    arrays = [_values(v.type.dtype.np, v.type.shape, rng) for v in graph.inputs]
    exe = codegen.build(graph, "native")
    assert "0 op(s) or region(s) as NumPy library calls" in exe.source()
    got = exe.run(arrays)
    with np.errstate(all="ignore"):
        expected = static.run_graph(graph, arrays)
    names = _pointwise_ops()
    for name, g, e in zip(names, got, expected):
        _same(g, e, 4e-6 if dt == "f32" else 1e-14, f"{name} {dt}")


@pytest.mark.parametrize("dt", ["i32", "i64", "u8", "i16"])
def test_integer_ops(dt):
    ops = ["add", "sub", "mul", "maximum", "minimum", "neg", "abs", "sign", "lt", "eq"]
    params = ", ".join(f"%a{k}: {dt}[301], %b{k}: {dt}[301]" for k in range(len(ops)))
    nodes, results = [], []
    for k, op in enumerate(ops):
        result = "bool[301]" if op in _COMPARE else f"{dt}[301]"
        operands = f"%p{k}, %q{k}" if op not in ("neg", "abs", "sign") else f"%p{k}"
        nodes.append(f"  %r{k} = fused %a{k}, %b{k} : {result} {{\n    ^body(%p{k}: {dt}[301], %q{k}: {dt}[301]):\n"
                     f"    %y{k} = {op} {operands} : {result}\n    yield %y{k}\n  }}")
        results.append(result)
    text = (f"func @ints({params}) -> ({', '.join(results)}) {{\n" + "\n".join(nodes) +
            f"\n  return {', '.join(f'%r{k}' for k in range(len(ops)))}\n}}")
    if dt == "u8":
        text = text.replace("%y1 = sub", "%y1 = add").replace("%y5 = neg", "%y5 = abs")
    graph = static.parse_ir(text)
    rng = np.random.default_rng(1)
    arrays = [_values(v.type.dtype.np, v.type.shape, rng, signed=dt != "u8") for v in graph.inputs]
    got = codegen.build(graph, "native").run(arrays)
    with np.errstate(all="ignore"):
        expected = static.run_graph(graph, arrays)
    for op, g, e in zip(ops, got, expected):
        _same(g, e, 0, f"{op} {dt}")


def _region_inputs(graph, rng):
    return [_values(v.type.dtype.np, v.type.shape, rng) if v.type.dtype.np == np.bool_
            else rng.uniform(0.2, 2.0, v.type.shape).astype(v.type.dtype.np) for v in graph.inputs]


@pytest.mark.parametrize("name", sorted(CASES))
def test_region_matches_interpreter(name):
    graph = static.parse_ir(CASES[name][0])
    arrays = _region_inputs(graph, np.random.default_rng(2))
    got = codegen.build(graph, "native").run(arrays)
    expected = static.run_graph(graph, arrays)
    for g, e in zip(got, expected):
        e = np.asarray(e)
        assert np.asarray(g).dtype == e.dtype and np.shape(g) == e.shape
        np.testing.assert_allclose(g, e, rtol=2e-6 if e.dtype == np.float32 else 1e-13, err_msg=name)


def test_regions_that_fit_are_one_c_function_each():
    graph = static.parse_ir(CASES["bias_broadcast_and_column_sum"][0])
    exe = codegen.build(graph, "native")
    c = exe.c_source()
    assert c.count('extern "C" void gm_region') == 1
    assert "// L5: %6 = mul %5, 3.0 : f64[5]" in c  # the IR line above each statement
    # small static shapes: SIMD on the calling thread, no parallel region, no libgomp
    assert "#pragma omp simd" in c and "omp parallel" not in c and not native_build.uses_threads(c)
    assert "double acc" in c and "= (double)0" in c  # reductions accumulate in double, from the identity
    src = exe.source()
    assert "C_SOURCE" in src and "gm_region0" in src


def test_large_outputs_reuse_the_buffers_nobody_holds_any_more():
    """An output of 20000 float32 (above REUSE_MIN_BYTES) comes from the module's buffer
    slots: a buffer the caller dropped is written again by the next call; one the caller
    still holds (directly or through a view) is never handed out again."""
    n = 20_000
    assert 4 * n >= native_build.REUSE_MIN_BYTES
    exe = codegen.build(static.parse_ir(_SMALL.replace("[16]", f"[{n}]")), "native")
    assert "_nb.reuse(_B0" in exe.source()
    x = np.arange(n, dtype=np.float32)
    slots = exe._loaded.module._B0
    first = exe.run([x])[0]
    held = [first[::2], exe.run([x])[0]]  # a view of the first, the second
    assert len(slots) == 2 and slots[0] is first and slots[1] is held[1]
    third = exe.run([x + 1])[0]  # both earlier buffers are held: a new one
    assert not any(np.shares_memory(third, h) for h in held)
    np.testing.assert_array_equal(held[0], (2 * x + 1)[::2])
    np.testing.assert_array_equal(held[1], 2 * x + 1)
    np.testing.assert_array_equal(third, 2 * x + 3)
    assert slots[0] is first and slots[1] is third
    kept = id(slots[0])
    del first, held, third
    again = exe.run([x])[0]  # the first buffer, released with its view: written again
    assert id(again) == kept and again is slots[0]
    np.testing.assert_array_equal(again, 2 * x + 1)
    small = codegen.build(static.parse_ir(_SMALL), "native")
    assert "_nb.reuse" not in small.source()  # small outputs: np.empty is cheaper than the check


def test_only_loops_big_enough_to_share_get_a_parallel_region():
    """The parallel decision is taken from the static shapes: the 55500-element loops of
    this graph are OpenMP loops, its 70-output reduction of 1050 elements is not, and the
    translation unit (threads=True) then compiles with -fopenmp; both run the same bits for
    one and two threads."""
    graph = static.parse_ir(_COLUMNS)
    c = codegen.build(graph, "native").c_source()
    assert "#pragma omp parallel num_threads(gm_nt)" in c and "#pragma omp for schedule(static)" in c  # one team
    assert "// below GM_PARALLEL_MIN elements: the calling thread" in c
    assert native_build.uses_threads(c)
    tc = native_build.toolchain()
    if tc.openmp:
        assert "-fopenmp" in tc.compile_flags(threads=True) and "-fopenmp-simd" in tc.compile_flags(threads=False)
        assert "-fopenmp" not in tc.link_flags(threads=False)


@pytest.mark.parametrize("blas_threads, expected", [(1, ("GOMP_SPINCOUNT", str(native_build.WAIT_SPIN))),
                                                    (2, ("OMP_WAIT_POLICY", "PASSIVE")),
                                                    (None, ("OMP_WAIT_POLICY", "PASSIVE"))])
def test_wait_policy_spins_briefly_only_where_blas_runs_one_thread(monkeypatch, blas_threads, expected):
    """Workers spin briefly where BLAS runs one thread, sleep where BLAS's own threads would
    fight them (or their number is unknown); peers' child processes get neither."""
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.setenv(name, "")  # so that the test's end restores what was there
        monkeypatch.delenv(name)
    monkeypatch.setattr(native_build, "wait_policy_set", {})
    monkeypatch.setattr(runtime, "blas_threads", lambda: blas_threads)
    native_build._set_wait_policy()
    name, value = expected
    assert os.environ[name] == value and native_build.wait_policy_set == {name: value}
    assert name not in native_build.environ_for_peers()
    other = "GOMP_SPINCOUNT" if name == "OMP_WAIT_POLICY" else "OMP_WAIT_POLICY"
    assert other not in os.environ


@pytest.mark.parametrize("name, value", [("OMP_WAIT_POLICY", "ACTIVE"), ("GOMP_SPINCOUNT", "5")])
def test_wait_policy_the_user_set_is_kept(monkeypatch, name, value):
    for var in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)
    monkeypatch.setenv(name, value)
    monkeypatch.setattr(native_build, "wait_policy_set", {})
    monkeypatch.setattr(runtime, "blas_threads", lambda: 1)
    native_build._set_wait_policy()
    assert native_build.wait_policy_set == {} and native_build.environ_for_peers()[name] == value
    assert len({"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"} & set(os.environ)) == 1


def _grads(fn, argnums, arrays, backend):
    f = static.compile(static.value_and_grad(fn, argnums=argnums), backend=backend)
    value, grads = f(*[eager.tensor(a) for a in arrays])
    return [value.numpy()] + [g.numpy() for g in grads]


@pytest.mark.parametrize("n", [1000, 100_003])
def test_w1_w2_forward_and_gradients_match_numpy_backend(n):
    """n = 100003 runs the loops on two threads (above the parallel threshold)."""
    saved = runtime.CONFIG.threads
    runtime.CONFIG.threads = 2
    try:
        for fn, argnums, arrays in ((W.w1, (0, 1, 2, 3, 4), W.w1_inputs(n)), (W.w2, (0, 1), W.w2_inputs(n))):
            got = _grads(fn, argnums, arrays, "native")
            expected = _grads(fn, argnums, arrays, "numpy")
            exact = _grads(fn, argnums, [a.astype(np.float64) for a in arrays], "numpy")
            for g, e, x in zip(got, expected, exact):
                assert g.dtype == np.float32
                # as close to the float64 result as NumPy's float32 is (the sum in double: closer)
                err_native = np.max(np.abs(g - x)) / max(np.max(np.abs(x)), 1e-30)
                err_numpy = np.max(np.abs(e - x)) / max(np.max(np.abs(x)), 1e-30)
                assert err_native <= max(2 * err_numpy, 1e-6), (fn.__name__, err_native, err_numpy)
    finally:
        runtime.CONFIG.threads = saved


def test_reductions_are_deterministic_for_a_thread_count():
    saved = runtime.CONFIG.threads
    try:
        arrays = W.w2_inputs(200_001)
        results = {}
        for nt in (1, 2, 2, 1):
            runtime.CONFIG.threads = nt
            results.setdefault(nt, []).append(_grads(W.w2, (0, 1), arrays, "native")[0])
        for runs in results.values():
            assert all(r.tobytes() == runs[0].tobytes() for r in runs)
    finally:
        runtime.CONFIG.threads = saved


@pytest.mark.parametrize("transform", ["value_and_grad", "grad"])
def test_w1_w2_value_and_gradients_are_one_c_loop_without_residuals(transform):
    """The JAX-style transforms compile the value and its gradients as one graph: its fused
    region computes forward and backward in one loop (W2 at 8e6 is then one pass over memory:
    x and w read once, the gradients written once, no residual array written by a forward and
    read back by a backward), and the driver runs that one kernel and nothing else."""
    for fn, argnums, arrays in ((W.w1, (0, 1, 2, 3, 4), W.w1_inputs(100_003)), (W.w2, (0, 1), W.w2_inputs(100_003))):
        f = getattr(static, transform)(fn, argnums=argnums, backend="native")
        got = f(*arrays)
        c = f.source(*arrays)
        assert c.count('extern "C" void gm_region') == 1, fn.__name__
        assert len(re.findall(r"for \((?:int|long long) i\b", c)) == 1 and "omp parallel" in c, fn.__name__
        driver = c[c.index("def forward("):]
        assert driver.count("_call") == 2 and "np." not in driver.replace("np.float32", ""), driver
        # the kernel writes exactly the graph's outputs: values and gradients, nothing saved
        n_out = len(argnums) + (transform == "value_and_grad")
        region = c[c.index('extern "C" void gm_region0'):]
        assert region.count("float* __restrict__ out") == n_out, fn.__name__
        expected = getattr(static, transform)(fn, argnums=argnums, backend="numpy")(*arrays)
        flat = [got[0], *got[1]] if transform == "value_and_grad" else list(got)
        flat_expected = ([expected[0], *expected[1]] if transform == "value_and_grad" else list(expected))
        for g, e in zip(flat, flat_expected):
            np.testing.assert_allclose(g, e, rtol=2e-4, atol=2e-3)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_w3_step_matches_numpy_backend(dt):
    arrays = W.w3_inputs(33, 17, 24, 5, dt)
    t = [eager.tensor(a) for a in arrays]
    got = static.compile(W.w3_step, backend="native")(*t)
    expected = static.compile(W.w3_step, backend="numpy")(*t)
    tol = 2e-5 if dt == np.float32 else 1e-12
    np.testing.assert_allclose(got[0].numpy(), expected[0].numpy(), rtol=tol)
    for g, e in zip(got[1], expected[1]):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=tol, atol=tol)


def test_w4_is_one_straight_line_c_function():
    f = static.compile(lambda x: W.w4(x, 100), backend="native")
    x = eager.tensor(W.w4_inputs()[0])
    got = f(x)
    expected = static.compile(lambda x: W.w4(x, 100), backend="numpy")(x)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
    c = f.source(x)
    fn = c[c.index('extern "C" void gm_graph'):]
    assert c.count('extern "C" void') == 1
    assert "#pragma" not in fn and "for (" not in fn and fn.count("sin(") == 100


def test_library_ops_run_as_numpy_calls_in_the_driver():
    arrays = W.w3_inputs(8, 6, 5, 3)
    f = static.compile(W.w3_step, backend="native")
    src = f.source(*[eager.tensor(a) for a in arrays])
    assert "_rt.matmul(" in src and "= _call_new(_K0, _nt" in src


# -- index arithmetic -------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,space", [((5,), (9, 5)), ((9, 1), (9, 5)), ((1,), (4, 3)), ((3, 1, 5), (3, 4, 5)),
                                         ((4, 1), (2, 3, 4, 5)), ((2, 1, 4, 1), (2, 3, 4, 5)), ((), (7,)),
                                         ((6, 7), (6, 7))])
def test_broadcast_index_expressions(shape, space):
    expr = index_expr(shape, space).replace("LL", "")
    full = np.arange(int(np.prod(shape))).reshape(shape)
    want = np.broadcast_to(full, space).reshape(-1)
    got = [eval(expr.replace("/", "//"), {"i": i}) for i in range(int(np.prod(space)))]  # noqa: S307
    assert got == list(want)


@pytest.mark.parametrize("space,axes", [((4, 5), (0,)), ((4, 5), (1,)), ((2, 3, 4), (0, 2)), ((2, 3, 4), (1,)),
                                        ((3, 1, 4), (1, 2))])
def test_reduction_index_composition(space, axes):
    kept = tuple(a for a in range(len(space)) if a not in axes)
    expr = compose_index(space, kept, axes).replace("LL", "").replace("/", "//")
    flat = np.arange(int(np.prod(space))).reshape(space)
    want = np.transpose(flat, kept + axes).reshape(int(np.prod([space[a] for a in kept])), -1)
    for o in range(want.shape[0]):
        for r in range(want.shape[1]):
            assert eval(expr, {"o": o, "r": r}) == want[o, r]  # noqa: S307


# -- compiling, caching, loading ---------------------------------------------------------------------
_SMALL = """
func @small(%x: f32[16]) -> f32[16] {
  %1 = fused %x : f32[16] {
    ^body(%a: f32[16]):
    %2 = mul %a, 2.0 : f32[16]
    %3 = add %2, 1.0 : f32[16]
    yield %3
  }
  return %1
}"""


def _fresh_process_state():
    loader.forget()
    native_build._libraries.clear()


def test_shared_object_comes_from_the_disk_cache_second_time():
    graph = static.parse_ir(_SMALL.replace("2.0", "2.5"))
    first = codegen.build(graph, "native")
    _fresh_process_state()
    second = codegen.build(graph, "native")
    lib = second._loaded.module.LIBRARY
    assert lib.origin == "disk cache" and lib.path is not None and lib.path.exists()
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(second.run([x])[0], x * np.float32(2.5) + 1)
    assert first.c_source() == second.c_source()


def test_tampered_or_foreign_cache_files_are_not_loaded(tmp_path):
    graph = static.parse_ir(_SMALL.replace("2.0", "3.5"))
    codegen.build(graph, "native")
    lib = codegen.build(graph, "native")._loaded.module.LIBRARY
    path = lib.path
    key = path.name.split("_")[-1].split(".")[0]
    blob = path.read_bytes()
    header, _, data = blob.partition(b"\n")
    full_key = header.decode().split("key=")[1].split()[0]
    assert full_key.startswith(key)
    assert native_build.read_verified(path, full_key) == data
    # altered bytes: the hash check fails
    path.write_bytes(header + b"\n" + data[:-1] + bytes([data[-1] ^ 1]))
    assert native_build.read_verified(path, full_key) is None
    # a file for another key
    path.write_bytes(native_build.seal("0" * 64, data))
    assert native_build.read_verified(path, full_key) is None
    # writable by others: not trusted
    path.write_bytes(native_build.seal(full_key, data))
    os.chmod(path, 0o666)
    assert native_build.read_verified(path, full_key) is None
    os.chmod(path, 0o600)
    assert native_build.read_verified(path, full_key) == data
    # a damaged cache file is replaced by a fresh compile
    path.write_bytes(b"garbage")
    _fresh_process_state()
    again = codegen.build(graph, "native")
    assert again._loaded.module.LIBRARY.origin == "compiled"
    np.testing.assert_array_equal(again.run([np.ones(16, np.float32)])[0], np.full(16, 4.5, np.float32))


def test_cache_key_holds_compiler_flags_and_instruction_set():
    tc = native_build.toolchain()
    key = native_build.so_key("int x;", tc)
    assert native_build.so_key("int x;", dataclasses.replace(tc, isa="another-cpu")) != key
    assert native_build.so_key("int x;", dataclasses.replace(tc, version="another compiler")) != key
    assert native_build.so_key("int x;", tc, fast_math=True) != key
    assert native_build.so_key("int y;", tc) != key


def test_fast_math_is_never_a_link_flag():
    tc = native_build.toolchain()
    assert "-ffast-math" in tc.compile_flags(fast_math=True)
    assert not any("fast-math" in f for f in tc.link_flags())
    assert ("-fuse-ld=gold" in tc.link_flags()) == tc.gold  # the probe found whether gold links
    assert "-ffp-contract=off" in tc.compile_flags()  # no fused multiply-add: NumPy's roundings


def test_compile_errors_name_the_generated_file_and_show_the_compiler_message():
    with pytest.raises(native_build.NativeCompileError) as info:
        native_build.load_library('extern "C" void f(void* const* a, int n) { this is not C++; }', "gm_broken")
    text = str(info.value)
    assert "gm_broken_" in text and ".cpp" in text and "error" in text.lower()


def _run_code(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env})


def test_without_a_compiler_native_raises_and_numpy_runs():
    code = f"""
import numpy as np, codegen, static
from codegen import native_build
g = static.parse_ir({_SMALL!r})
print(native_build.availability())
try:
    codegen.build(g, "native")
except native_build.NoCompiler as e:
    print("NoCompiler:", e)
print(codegen.build(g, "auto").run([np.ones(16, np.float32)])[0][0])
"""
    out = _run_code(code, CXX="/nonexistent/c++")
    assert out.returncode == 0, out.stderr
    assert "(False, \"CXX='/nonexistent/c++' is not an executable\")" in out.stdout
    assert "NoCompiler: backend='native' needs a C++ compiler" in out.stdout and "backend='numpy'" in out.stdout
    assert out.stdout.strip().endswith("3.0")


def test_loading_kernels_leaves_subnormals_alone():
    """A library linked with -ffast-math would turn on flush-to-zero for the process."""
    code = f"""
import numpy as np, codegen, static
g = static.parse_ir({_SMALL!r})
print(codegen.build(g, "native").run([np.ones(16, np.float32)])[0][0])
print(np.float32(1e-39) * np.float32(1) != 0)
"""
    out = _run_code(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3.0", "True"]


def _child(q):
    arrays = W.w2_inputs(100_003)
    q.put(_grads(W.w2, (0, 1), arrays, "native")[0].item())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_runs_kernels_after_the_parent_did():
    saved = runtime.CONFIG.threads
    runtime.CONFIG.threads = 2
    try:
        arrays = W.w2_inputs(100_003)
        parent = _grads(W.w2, (0, 1), arrays, "native")[0].item()
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=_child, args=(q,))
        p.start()
        p.join(120)
        assert p.exitcode == 0, "the forked child hung or crashed"
        np.testing.assert_allclose(q.get(timeout=5), parent, rtol=1e-6)
    finally:
        runtime.CONFIG.threads = saved


def test_threads_follow_graphmode_threads():
    out = _run_code("from codegen import native_build; print(native_build.threads())", GRAPHMODE_THREADS="3")
    assert out.stdout.strip() == "3"


def test_static_compile_accepts_native_and_explains_it():
    f = static.compile(lambda x: (x * 2.0 + 1.0).sum(), backend="native")
    x = eager.tensor(np.arange(5, dtype=np.float32))
    assert f(x).item() == pytest.approx(25.0)
    text = f.explain(x)
    assert "backend: native" in text and "compiler:" in text and "OpenMP" in text


def test_strided_scalar_and_other_dtype_inputs_are_converted():
    graph = static.parse_ir(_SMALL)
    exe = codegen.build(graph, "native")
    base = np.arange(32, dtype=np.float32)
    np.testing.assert_array_equal(exe.run([base[::2]])[0], base[::2] * 2 + 1)  # a strided view
    np.testing.assert_array_equal(exe.run([base[:16].astype(np.float64)])[0], base[:16] * 2 + 1)
    assert exe.run([base[:16]])[0].dtype == np.float32


@pytest.mark.parametrize("path", ["extension", "ctypes"])
def test_call_path_checks_every_buffer(path):
    lib = codegen.build(static.parse_ir(_SMALL), "native")._loaded.module
    call = native_build.caller() if path == "extension" else native_build._ctypes_call
    addr, sizes, types = lib._K0, lib._K0_SIZES, lib._K0_FORMATS
    x, out = np.ones(16, np.float32), np.empty(16, np.float32)
    call(addr, 1, sizes, types, x, out)
    assert out[0] == 3.0
    with pytest.raises(ValueError, match="bytes"):
        call(addr, 1, sizes, types, np.ones(15, np.float32), out)
    with pytest.raises(ValueError, match="type"):
        call(addr, 1, sizes, types, np.ones(16, np.int32), out)
    with pytest.raises(TypeError, match="not a NumPy array"):
        call(addr, 1, sizes, types, bytearray(64), out)
    with pytest.raises(ValueError, match="C-contiguous"):
        call(addr, 1, sizes, types, np.ones(32, np.float32)[::2], out)
    with pytest.raises(ValueError, match="read-only"):
        call(addr, 1, sizes, types, x, np.frombuffer(bytes(64), np.float32))


@pytest.mark.parametrize("path", ["extension", "ctypes"])
def test_call_new_makes_the_small_outputs(path):
    """Small outputs are allocated by the call path (call_new) and returned by it; the
    driver passes only the inputs (and large, reused outputs)."""
    exe = codegen.build(static.parse_ir(_SMALL), "native")
    lib = exe._loaded.module
    assert lib._K0_SHAPES == ((16,),) and "= _call_new(_K0, _nt" in exe.source()
    call_new = native_build.caller_new() if path == "extension" else native_build._ctypes_call_new
    made = call_new(lib._K0, 1, lib._K0_SIZES, lib._K0_FORMATS, lib._K0_SHAPES, np.arange(16, dtype=np.float32))
    assert isinstance(made, tuple) and len(made) == 1
    assert made[0].dtype == np.float32 and made[0].shape == (16,) and made[0].flags.c_contiguous
    np.testing.assert_array_equal(made[0], 2 * np.arange(16, dtype=np.float32) + 1)
    with pytest.raises(ValueError, match="bytes"):
        call_new(lib._K0, 1, lib._K0_SIZES, lib._K0_FORMATS, lib._K0_SHAPES, np.ones(15, np.float32))
    with pytest.raises(ValueError, match="bytes"):  # a shape that does not match the kernel's size
        call_new(lib._K0, 1, lib._K0_SIZES, lib._K0_FORMATS, ((15,),), np.ones(16, np.float32))


def test_explain_of_auto_says_why_native_does_not_run_without_a_compiler():
    code = """
import numpy as np, eager, static
f = static.compile(lambda x: (x * 2.0 + 1.0).sum())
x = eager.tensor(np.arange(5, dtype=np.float32))
print(f(x).item())
print(f.explain(x))
"""
    out = _run_code(code, CXX="/nonexistent/c++")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("25.0")
    assert "native: not available (CXX='/nonexistent/c++' is not an executable); the NumPy module runs." in out.stdout


def test_fast_math_compiles_with_it_and_leaves_the_process_alone():
    """fast_math=True: -ffast-math when compiling (results close), never when linking (no
    flush-to-zero switched on for the whole process)."""
    code = f"""
import numpy as np, static
from codegen.native import NativeGraph
g = static.parse_ir({CASES["chain_and_full_sum"][0]!r})
x = np.linspace(0.2, 2.0, 37).astype(np.float32)
fast = NativeGraph(g, fast_math=True)
exact = NativeGraph(g)
print(fast._loaded.module.LIBRARY.path != exact._loaded.module.LIBRARY.path)  # another key: other flags
a, b = fast.run([x, x]), exact.run([x, x])
print(all(np.allclose(u, v, rtol=1e-5) for u, v in zip(a, b)))
print(np.float32(1e-39) * np.float32(1) != 0)
"""
    out = _run_code(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True"]


def _registry_program(dtype):
    """Every op of the registry on its samples, in one function (one graph, one compile)."""
    from op_samples import retyped_attrs  # noqa: PLC0415  (control-flow bodies are typed: cast them too)

    from eager.ops import REGISTRY  # noqa: PLC0415

    progs, inputs = [], []
    for name in sorted(REGISTRY):
        for arrays, attrs in REGISTRY[name].samples(np.random.default_rng(0)):
            arrays = tuple(a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in arrays)
            positions = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray)]
            progs.append((name, arrays, retyped_attrs(attrs, dtype), positions, len(inputs)))
            inputs += [arrays[i] for i in positions]

    def every_op(*xs):
        outs = []
        for name, arrays, attrs, positions, start in progs:
            operands = list(arrays)
            for k, i in enumerate(positions):
                operands[i] = xs[start + k]
            out = REGISTRY[name](*operands, **attrs)
            outs += list(out) if isinstance(out, (tuple, list)) else [out]
        return tuple(outs)

    return every_op, inputs, [p[0] for p in progs]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_every_registry_op_through_the_native_driver(dtype):
    """Ops outside fused regions run as NumPy library calls in the generated driver."""
    fn, inputs, names = _registry_program(dtype)
    tensors = [eager.tensor(a) for a in inputs]
    got = static.compile(fn, backend="native")(*tensors)
    expected = fn(*tensors)
    assert len(got) == len(expected)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-12)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and tuple(g.shape) == tuple(e.shape)
        np.testing.assert_allclose(g.numpy(), e.numpy(), **tol)


def test_float16_region_computes_in_float_and_stores_half():
    graph = static.parse_ir(CASES["chain_and_full_sum"][0].replace("f32", "f16"))
    arrays = _region_inputs(graph, np.random.default_rng(4))
    got = codegen.build(graph, "native").run(arrays)
    expected = static.run_graph(graph, arrays)
    for g, e in zip(got, expected):
        assert np.asarray(g).dtype == np.float16
        np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(e, np.float32), rtol=2e-3)


def test_auto_runs_native_when_a_compiler_is_found_unless_pinned_to_numpy(monkeypatch):
    """"auto" compiles the whole graph natively where a compiler is found; GRAPHMODE_NATIVE=0
    (which the test suite sets) keeps it on NumPy code; backend="native" still compiles."""
    from codegen import native  # noqa: PLC0415

    graph = static.parse_ir(_SMALL)
    monkeypatch.setenv("GRAPHMODE_NATIVE", "0")
    assert type(codegen.build(graph, "auto")).__name__ == "CompiledGraph"
    assert isinstance(codegen.build(graph, "native"), native.NativeGraph)
    monkeypatch.delenv("GRAPHMODE_NATIVE")
    exe = codegen.build(graph, "auto")
    assert isinstance(exe, native.NativeGraph) and exe.requested == "auto"
    assert "chosen by 'auto'" in exe.describe()
    np.testing.assert_array_equal(exe.run([np.ones(16, np.float32)])[0], np.full(16, 3.0, np.float32))


def test_static_compile_auto_runs_native_for_0d_graphs_too(monkeypatch):
    monkeypatch.delenv("GRAPHMODE_NATIVE", raising=False)
    f = static.compile(lambda x: x * 3.0 + eager.sin(x))
    x = eager.tensor(np.float32(0.5))
    got = f(x)
    assert "backend: native (chosen by 'auto'" in f.explain(x)
    np.testing.assert_allclose(got.numpy(), 1.5 + np.sin(np.float32(0.5)), rtol=1e-6)


def test_without_a_compiler_auto_runs_numpy_even_when_not_pinned():
    code = f"""
import numpy as np, codegen, static
g = static.parse_ir({_SMALL!r})
exe = codegen.build(g, "auto")
print(type(exe).__name__, exe.run([np.ones(16, np.float32)])[0][0])
"""
    env = {k: v for k, v in os.environ.items() if k != "GRAPHMODE_NATIVE"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**env, "PYTHONPATH": str(ROOT), "CXX": "/nonexistent/c++"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["CompiledGraph", "3.0"]


def test_fast_math_of_static_compile_reaches_the_native_compiler(monkeypatch):
    """static.compile(fast_math=True) builds its graphs with -ffast-math: the loaded shared
    object is the one compiled with those flags (another cache key than without)."""
    calls = []
    real = native_build.load_library

    def spy(source, stem="gm_native", fast_math=False):
        calls.append(fast_math)
        return real(source, stem, fast_math=fast_math)

    monkeypatch.setattr(native_build, "load_library", spy)
    loader.forget()  # import the driver modules afresh: each one loads its library
    x = eager.tensor(np.linspace(0.1, 2.0, 33).astype(np.float32), requires_grad=True)
    fast = static.compile(lambda x: (eager.tanh(x) * 1.25 + 0.5).sum(), backend="native", fast_math=True)
    exact = static.compile(lambda x: (eager.tanh(x) * 1.25 + 0.75).sum(), backend="native")
    a = fast(x)
    a.backward()  # forward and backward graphs, both built with the flag
    assert calls and all(calls)
    n_fast = len(calls)
    b = exact(x)
    b.backward()
    assert len(calls) > n_fast and not any(calls[n_fast:])
    np.testing.assert_allclose(a.item() + 0.25 * 33, b.item(), rtol=1e-5)


def test_a_cached_shared_object_loads_without_the_compiler(tmp_path):
    """A second process finds the driver module and the shared object (and the call path's
    extension, and the compiler probe's record) in the disk cache: the compiler never runs."""
    code = f"""
import os, sys, numpy as np, codegen, static
from codegen import native_build
if os.environ.get("NO_COMPILE"):
    def refuse(*args, **kwargs):
        sys.exit("the compiler ran")
    native_build.compile_shared = native_build._run_probe = refuse
g = static.parse_ir({_SMALL!r})
exe = codegen.build(g, "native")
print(exe.run([np.ones(16, np.float32)])[0][0], exe._loaded.module.LIBRARY.origin)
"""
    env = {"GRAPHMODE_CACHE_DIR": str(tmp_path), "GRAPHMODE_CACHE": "1"}
    first = _run_code(code, **env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["3.0", "compiled"]
    second = _run_code(code, NO_COMPILE="1", **env)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["3.0", "disk", "cache"]


_COLUMNS = """
func @columns(%x: f64[370,150], %y: f32[3,5,70]) -> (f64[150], f64[1,150], f32[70], f32[370,150]) {
  %1, %2, %3 = fused %x : f64[150], f64[1,150], f64[370,150] {
    ^body(%a: f64[370,150]):
    %4 = mul %a, %a : f64[370,150]
    %5 = sum %4 {dims = [0], keepdim = false} : f64[150]
    %6 = amax %a {dims = [0], keepdim = true} : f64[1,150]
    yield %5, %6, %4
  }
  %7 = fused %y : f32[70] {
    ^body(%b: f32[3,5,70]):
    %8 = exp %b : f32[3,5,70]
    %9 = mean %8 {dims = [0, 1], keepdim = false} : f32[70]
    yield %9
  }
  %10 = to_dtype %3 {dtype = f32} : f32[370,150]
  return %1, %2, %7, %10
}"""


def test_reductions_over_leading_axes_in_column_blocks():
    """150 and 70 outputs: two or three blocks of 64, the last one partial; sum, amax (NaN
    propagating) and mean over two leading axes; the same bits for one and two threads."""
    graph = static.parse_ir(_COLUMNS)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((370, 150))
    x[5, 140] = np.nan
    y = rng.standard_normal((3, 5, 70)).astype(np.float32)
    exe = codegen.build(graph, "native")
    assert "in column blocks" in exe.c_source()
    saved = runtime.CONFIG.threads
    try:
        results = []
        for nt in (1, 2):
            runtime.CONFIG.threads = nt
            results.append(exe.run([x, y]))
    finally:
        runtime.CONFIG.threads = saved
    expected = static.run_graph(graph, [x, y])
    for got in results:
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-13, equal_nan=True)
        np.testing.assert_array_equal(got[1], expected[1])
        assert np.isnan(got[1][0, 140])
        np.testing.assert_allclose(got[2], expected[2], rtol=2e-6)
    for a, b in zip(*results):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


_ROW_BROADCAST = """
func @rows(%x: f32[ROWS,10], %m: f32[ROWS,1]) -> (f32[ROWS,10], f32[]) {
  %1, %2 = fused %x, %m : f32[ROWS,10], f32[] {
    ^body(%a: f32[ROWS,10], %b: f32[ROWS,1]):
    %3 = sub %a, %b : f32[ROWS,10]
    %4 = exp %3 : f32[ROWS,10]
    %5 = sum %4 {dims = none, keepdim = false} : f32[]
    yield %4, %5
  }
  return %1, %2
}"""


def test_index_arithmetic_is_int_where_the_space_fits_and_64_bit_beyond():
    """A row-broadcast operand is read at i / 10. Loops over fewer than 2**31 elements use
    int indices (a vectorizable multiply-high on AVX2), bigger ones long long."""
    from codegen.native_gen.indexing import INT_INDEX_MAX, index_type  # noqa: PLC0415

    assert index_type(INT_INDEX_MAX) == ("int", "") and index_type(INT_INDEX_MAX + 1) == ("long long", "LL")
    small = NativeModule(static.parse_ir(_ROW_BROADCAST.replace("ROWS", "256"))).source()[1]
    assert "for (int i = c0; i < c1; ++i)" in small and "(i / 10)]" in small
    assert not re.search(r"\dLL\b", small[small.index("gm_region0"):])
    huge = NativeModule(static.parse_ir(_ROW_BROADCAST.replace("ROWS", "300000000"))).source()[1]
    assert "for (long long i = c0; i < c1; ++i)" in huge and "(i / 10LL)]" in huge
    x = np.random.default_rng(0).standard_normal((256, 10)).astype(np.float32)
    m = x.max(axis=1, keepdims=True)
    got = codegen.build(static.parse_ir(_ROW_BROADCAST.replace("ROWS", "256")), "native").run([x, m])
    np.testing.assert_allclose(got[0], np.exp(x - m), rtol=3e-7)
    np.testing.assert_allclose(got[1], np.exp(x - m).astype(np.float64).sum(), rtol=1e-6)


def _assembly(ir_text: str, name: str) -> str:
    """The assembly the backend's compiler, with the backend's flags, makes of the native
    module generated for `ir_text` (to check which instructions the loops became)."""
    from codegen.native_gen.driver import NativeModule  # noqa: PLC0415

    tc = native_build.toolchain()
    c = NativeModule(static.parse_ir(ir_text)).source()[1]
    src = Path(native_build._scratch()) / f"{name}.cpp"
    src.write_text(c)
    asm = src.with_suffix(".s")
    run = subprocess.run([*tc.command, *tc.compile_flags(threads=native_build.uses_threads(c)), "-S", str(src), "-o",
                          str(asm)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return asm.read_text()


_ISA_MACROS = (("__AVX512BW__", "avx512bw"), ("__AVX512F__", "avx512f"), ("__AVX2__", "avx2"), ("__AVX__", "avx"),
               ("__SSE2__", "sse2"))


def _target_isa() -> str:
    """The widest x86 vector extension the backend's compiler is asked to target with its own
    flags (-march=native on the build host): what the generated loops may use. Read from the
    macros the compiler predefines for those flags, not from the host's CPU: a test of the
    instructions the loops became must expect that target's forms."""
    tc = native_build.toolchain()
    run = subprocess.run([*tc.command, *tc.compile_flags(), "-dM", "-E", "-x", "c++", os.devnull],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    defined = set(re.findall(r"#define (\w+)", run.stdout))
    return next((name for macro, name in _ISA_MACROS if macro in defined), "none")


def _vex_target() -> str:
    """The target ISA where it has VEX-encoded (v-prefixed) vector instructions (AVX and up);
    skips the test with the reason where the compiler targets SSE only."""
    isa = _target_isa()
    if not (isa.startswith("avx")):
        pytest.skip(f"the compiler targets {isa} (no AVX): the loops use SSE forms, not the v-prefixed names checked")
    return isa


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="checks x86 vector math calls")
def test_row_broadcast_loop_calls_vector_exp():
    """The loop of a softmax-like region (exp of x minus a row's value) calls glibc's vector
    exp, not the scalar one per element: compiled to assembly with the backend's flags."""
    tc = native_build.toolchain()
    if not (tc.vector_math and tc.openmp):
        pytest.skip("no libmvec or no OpenMP: loops with exp stay scalar by design")
    text = _assembly(_ROW_BROADCAST.replace("ROWS", "256"), "rows_vector_exp")
    assert re.search(r"_ZGV\w*_expf", text), "the exp of the row-broadcast loop is not vectorized"


_EXTREMES_IR = """
func @extremes(%x: f32[ROWS,COLS]) -> (f32[], f32[], f32[ROWS], f32[ROWS]) {
  %1, %2 = fused %x : f32[], f32[] {
    ^body(%a: f32[ROWS,COLS]):
    %3 = mul %a, 2.0 : f32[ROWS,COLS]
    %4 = amax %3 {dims = none, keepdim = false} : f32[]
    %5 = amin %3 {dims = none, keepdim = false} : f32[]
    yield %4, %5
  }
  %6, %7 = fused %x : f32[ROWS], f32[ROWS] {
    ^body(%b: f32[ROWS,COLS]):
    %8 = amax %b {dims = [1], keepdim = false} : f32[ROWS]
    %9 = amin %b {dims = [1], keepdim = false} : f32[ROWS]
    yield %8, %9
  }
  return %1, %2, %6, %7
}"""


@pytest.mark.parametrize("rows,cols", [(3, 37), (300, 200)])
def test_max_and_min_reductions_propagate_nan_as_numpy(rows, cols):
    """amax/amin loops are OpenMP max/min reductions over the values that are not NaN plus
    a flag: a NaN anywhere in what an output reduces makes it NaN, infinities are values,
    on one thread and on two (300 x 200 is above the parallel threshold)."""
    graph = static.parse_ir(_EXTREMES_IR.replace("ROWS", str(rows)).replace("COLS", str(cols)))
    exe = codegen.build(graph, "native")
    assert "reduction(max:acc0)" in exe.c_source() and "reduction(min:acc" in exe.c_source()
    rng = np.random.default_rng(5)
    saved = runtime.CONFIG.threads
    try:
        for threads in (1, 2):
            runtime.CONFIG.threads = threads
            for case in ("plain", "nan", "inf", "all -inf"):
                x = rng.standard_normal((rows, cols)).astype(np.float32)
                if case == "nan":
                    x[1, cols // 2] = np.nan
                elif case == "inf":
                    x[0, 0], x[-1, -1] = np.inf, -np.inf
                elif case == "all -inf":
                    x[:] = -np.inf
                got = exe.run([x])
                expected = [np.max(2 * x), np.min(2 * x), np.max(x, axis=1), np.min(x, axis=1)]
                for g, e in zip(got, expected):
                    np.testing.assert_array_equal(g, e.astype(np.float32), err_msg=f"{case}, {threads} thread(s)")
    finally:
        runtime.CONFIG.threads = saved


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="checks x86 vector instructions")
def test_max_reduction_loop_is_vectorized():
    """The amax loop compiles to packed max instructions, not a scalar compare per element."""
    tc = native_build.toolchain()
    if not tc.openmp:
        pytest.skip("no OpenMP: the simd pragmas are ignored")
    text = _assembly(_EXTREMES_IR.replace("ROWS", "64").replace("COLS", "64"), "extremes_vector_max")
    assert re.search(r"\bv?maxp[sd]\b", text), "the amax loop is not vectorized"


_CHANNEL_SUMS_IR = """
func @channel_sums(%x: f32[N,C,H,W], %y: f32[N,C,H,W], %s: f32[1,C,1,1]) -> (f32[1,C,1,1], f32[C], f32[1,C,1,1]) {
  %1, %2, %3 = fused %x, %y, %s : f32[1,C,1,1], f32[C], f32[1,C,1,1] {
    ^body(%a: f32[N,C,H,W], %b: f32[N,C,H,W], %c: f32[1,C,1,1]):
    %4 = mul %a, %c : f32[N,C,H,W]
    %5 = relu %4 : f32[N,C,H,W]
    %6 = gt %5, 0.0 : bool[N,C,H,W]
    %7 = where %6, %b, 0.0 : f32[N,C,H,W]
    %8 = sum %7 {dims = [0, 2, 3], keepdim = true} : f32[1,C,1,1]
    %9 = mean %5 {dims = [0, 2, 3], keepdim = false} : f32[C]
    %10 = amax %7 {dims = [0, 2, 3], keepdim = true} : f32[1,C,1,1]
    yield %8, %9, %10
  }
  return %1, %2, %3
}"""


def _channel_sums(n, c, h, w):
    return _CHANNEL_SUMS_IR.replace("N", str(n)).replace("C", str(c)).replace("H", str(h)).replace("W", str(w))


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (32, 16, 28, 28), (1, 7, 1, 9)])
def test_reductions_over_trailing_axes_walk_runs_and_equal_numpy(shape):
    """Sums, means and maxima over N, H, W of an N, C, H, W array (a batch norm's statistics
    and gradients), with a comparison and a select in their prologue: one thread and two
    give NumPy's values."""
    exe = codegen.build(static.parse_ir(_channel_sums(*shape)), "native")
    assert "in runs of" in exe.c_source()
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    s = rng.standard_normal((1, shape[1], 1, 1)).astype(np.float32)
    t = np.where(np.maximum(x * s, 0) > 0, y, 0).astype(np.float64)
    expected = [t.sum((0, 2, 3), keepdims=True), np.maximum(x * s, 0).astype(np.float64).mean((0, 2, 3)),
                t.max((0, 2, 3), keepdims=True)]
    saved = runtime.CONFIG.threads
    try:
        for threads in (1, 2):
            runtime.CONFIG.threads = threads
            for g, e in zip(exe.run([x, y, s]), expected):
                np.testing.assert_allclose(g, e.astype(np.float32), rtol=2e-6, atol=1e-6)
    finally:
        runtime.CONFIG.threads = saved


_VIEW_CHANNEL_SUMS_IR = """
func @view_channel_sums(%x: f32[N,C,H,W], %g: f32[N,C,H,W], %w: f32[C], %b: f32[C]) -> (f32[1,C,1,1], f32[1,C,1,1]) {
  %1 = reshape %w {shape = [1, C, 1, 1]} : f32[1,C,1,1]
  %2 = reshape %b {shape = [1, C, 1, 1]} : f32[1,C,1,1]
  %3, %4 = fused %x, %1, %2, %g : f32[1,C,1,1], f32[1,C,1,1] {
    ^body(%a: f32[N,C,H,W], %s: f32[1,C,1,1], %t: f32[1,C,1,1], %d: f32[N,C,H,W]):
    %5 = mul %a, %s : f32[N,C,H,W]
    %6 = add %5, %t : f32[N,C,H,W]
    %7 = relu %6 : f32[N,C,H,W]
    %8 = le %7, 0.0 : bool[N,C,H,W]
    %9 = where %8, 0.0, %d : f32[N,C,H,W]
    %10 = sum %9 {dims = [0, 2, 3], keepdim = true} : f32[1,C,1,1]
    %11 = mul %9, %a : f32[N,C,H,W]
    %12 = mean %11 {dims = [0, 2, 3], keepdim = true} : f32[1,C,1,1]
    yield %10, %12
  }
  return %3, %4
}"""


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (32, 16, 28, 28)])
def test_channel_sums_reading_a_reshaped_parameter_walk_runs(shape):
    """Batch norm's affine + ReLU gradient: the weight and bias reach the region as views
    (reshaped to (1, C, 1, 1)) of the parameters. Broadcast along the whole run, each is one
    load per run, so the sums walk contiguous runs (a division per element before: 3.4x
    slower on W6's first batch norm) and give NumPy's values on one thread and two."""
    n, c, h, w = shape
    text = _VIEW_CHANNEL_SUMS_IR.replace("N", str(n)).replace("C", str(c)).replace("H", str(h)).replace("W", str(w))
    exe = codegen.build(static.parse_ir(text), "native")
    assert exe.c_source().count("in runs of") == 2
    rng = np.random.default_rng(5)
    x, g = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    wt, bs = (rng.standard_normal(c).astype(np.float32) for _ in range(2))
    a = np.maximum(x * wt.reshape(1, c, 1, 1) + bs.reshape(1, c, 1, 1), 0)
    d = np.where(a <= 0, 0, g).astype(np.float64)
    expected = [d.sum((0, 2, 3), keepdims=True), (d * x).mean((0, 2, 3), keepdims=True)]
    saved = runtime.CONFIG.threads
    try:
        for threads in (1, 2):
            runtime.CONFIG.threads = threads
            for got, e in zip(exe.run([x, g, wt, bs]), expected):
                np.testing.assert_allclose(got, e.astype(np.float32), rtol=2e-5, atol=1e-5)
    finally:
        runtime.CONFIG.threads = saved


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="checks x86 vector instructions")
def test_reduction_with_a_comparison_in_its_prologue_is_vectorized():
    """A float element with a comparison in it (relu, where) added to a double accumulator
    kept the whole loop scalar; staged through a buffer, both loops use packed instructions:
    packed float compares and packed double adds."""
    tc = native_build.toolchain()
    if not tc.openmp:
        pytest.skip("no OpenMP: the simd pragmas are ignored")
    isa = _vex_target()
    text = _assembly(_channel_sums(32, 16, 28, 28), "channel_sums_vector")
    assert re.search(r"\bvcmp\w*ps\b", text) or re.search(r"\bv?maxps\b", text), f"the element loop is scalar ({isa})"
    assert re.search(r"\bv?addpd\b", text), "the accumulating loop is scalar"


@pytest.mark.parametrize("dims,shape", [([1], (5, 6, 7)), ([0], (300, 40)), ([0, 2], (9, 4, 11))])
def test_reductions_with_a_comparison_over_any_axes_equal_numpy(dims, shape):
    """The middle-axis, leading-axis (column block) and mixed reductions stage their elements
    too: sum and max of a relu'd, masked value equal NumPy's on one thread and on two."""
    t = f"f32[{','.join(map(str, shape))}]"
    out_shape = [d for a, d in enumerate(shape) if a not in dims]
    o = f"f32[{','.join(map(str, out_shape))}]"
    ir = f"""func @f(%x: {t}, %y: {t}) -> ({o}, {o}) {{
  %1, %2 = fused %x, %y : {o}, {o} {{
    ^body(%a: {t}, %b: {t}):
    %3 = relu %a : {t}
    %4 = gt %3, 0.5 : bool[{','.join(map(str, shape))}]
    %5 = where %4, %b, %3 : {t}
    %6 = sum %5 {{dims = {dims}, keepdim = false}} : {o}
    %7 = amax %5 {{dims = {dims}, keepdim = false}} : {o}
    yield %6, %7
  }}
  return %1, %2
}}"""
    exe = codegen.build(static.parse_ir(ir), "native")
    rng = np.random.default_rng(4)
    x, y = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    r = np.maximum(x, 0)
    v = np.where(r > 0.5, y, r).astype(np.float64)
    expected = [v.sum(tuple(dims)), v.max(tuple(dims))]
    saved = runtime.CONFIG.threads
    try:
        for threads in (1, 2):
            runtime.CONFIG.threads = threads
            for g, e in zip(exe.run([x, y]), expected):
                np.testing.assert_allclose(g, e.astype(np.float32), rtol=2e-6, atol=1e-6)
    finally:
        runtime.CONFIG.threads = saved


_PERMUTED_IR = """
func @permuted(%x: f32[4,6,5], %w: f32[5,6], %s: f32[1,4,1]) -> (f32[6,4,5], f32[6], f32[6,5], f32[6], f32[5]) {
  %1 = permute %x {dims = [1, 0, 2]} : f32[6,4,5]
  %2 = transpose %w {dim0 = 0, dim1 = 1} : f32[6,5]
  %3, %4 = fused %1, %s : f32[6,4,5], f32[6] {
    ^body(%a: f32[6,4,5], %b: f32[1,4,1]):
    %5 = mul %a, %b : f32[6,4,5]
    %6 = relu %5 : f32[6,4,5]
    %7 = sum %6 {dims = [1, 2], keepdim = false} : f32[6]
    yield %6, %7
  }
  %8, %9, %13 = fused %2 : f32[6,5], f32[6], f32[5] {
    ^body(%c: f32[6,5]):
    %10 = exp %c : f32[6,5]
    %11 = amax %10 {dims = [1], keepdim = false} : f32[6]
    %12 = sum %c {dims = [0], keepdim = false} : f32[5]
    yield %10, %11, %12
  }
  return %3, %4, %8, %9, %13
}"""


def test_permuted_views_are_read_in_place_by_index_arithmetic():
    """A region input that is a permute or transpose of another value reads that value's
    memory with the view's strides (no contiguous copy first); results equal NumPy's on one
    thread and two."""
    exe = codegen.build(static.parse_ir(_PERMUTED_IR), "native")
    calls = [line for line in exe.source().split("def forward")[1].splitlines() if "_call" in line and "_c(" not in line]
    # x and w, not the views (the two small regions run as one call: native_gen/combine.py)
    assert len(calls) == 1 and not any(re.search(r"\bv[12]\b", c) for c in calls), calls
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 6, 5)).astype(np.float32)
    w = rng.standard_normal((5, 6)).astype(np.float32)
    s = rng.standard_normal((1, 4, 1)).astype(np.float32)
    xp, wt = x.transpose(1, 0, 2), w.T
    r = np.maximum(xp * s, 0)
    expected = [r, r.astype(np.float64).sum((1, 2)), np.exp(wt), np.exp(wt).max(1), wt.astype(np.float64).sum(0)]
    saved = runtime.CONFIG.threads
    try:
        for threads in (1, 2):
            runtime.CONFIG.threads = threads
            for g, e in zip(exe.run([x, w, s]), expected):
                np.testing.assert_allclose(g, np.asarray(e, np.float32), rtol=2e-6, atol=1e-6)
    finally:
        runtime.CONFIG.threads = saved


_VIEWS_IR = """
func @views(%x: f32[8,6], %y: f32[4,5], %z: f32[2,3,4]) -> (f32[4,5], f32[], f32[3,4,5], f32[6,4], f32[6], f32[3]) {
  %0 = index %x {key = [["slice", none, none, 2], ["slice", 1, none, none]], n_index = 0} : f32[4,5]
  %1 = transpose %x {dim0 = 0, dim1 = 1} : f32[6,8]
  %2 = index %1 {key = [["slice", none, none, 3], ["int", 2]], n_index = 0} : f32[2]
  %3 = unsqueeze %y {dim = 0} : f32[1,4,5]
  %4 = expand %3 {shape = [3, 4, 5]} : f32[3,4,5]
  %5 = reshape %z {shape = [6, 4]} : f32[6,4]
  %6 = permute %z {dims = [2, 1, 0]} : f32[4,3,2]
  %7 = reshape %6 {shape = [4, 6]} : f32[4,6]
  %8 = index %x {key = [["slice", 1, 7, 2]], n_index = 0} : f32[3,6]
  %9 = transpose %8 {dim0 = 0, dim1 = 1} : f32[6,3]
  %10 = index %9 {key = [["none"], ["slice", none, none, 2]], n_index = 0} : f32[1,3,3]
  %11 = squeeze %10 {dims = [0]} : f32[3,3]
  %20 = fused %0 : f32[4,5] {
    ^body(%a: f32[4,5]):
    %21 = exp %a : f32[4,5]
    yield %21
  }
  %22 = fused %2 : f32[] {
    ^body(%b: f32[2]):
    %23 = mul %b, 3.0 : f32[2]
    %24 = sum %23 {dims = none, keepdim = false} : f32[]
    yield %24
  }
  %25 = fused %4 : f32[3,4,5] {
    ^body(%c: f32[3,4,5]):
    %26 = mul %c, 2.0 : f32[3,4,5]
    yield %26
  }
  %27 = fused %5 : f32[6,4] {
    ^body(%d: f32[6,4]):
    %28 = add %d, 1.0 : f32[6,4]
    yield %28
  }
  %29 = fused %7 : f32[6] {
    ^body(%e: f32[4,6]):
    %30 = sum %e {dims = [0], keepdim = false} : f32[6]
    yield %30
  }
  %31 = fused %11 : f32[3] {
    ^body(%f: f32[3,3]):
    %32 = tanh %f : f32[3,3]
    %33 = sum %32 {dims = [1], keepdim = false} : f32[3]
    yield %33
  }
  return %20, %22, %25, %27, %29, %31
}"""


def test_views_of_every_kind_are_read_in_place_by_index_arithmetic():
    """Region inputs made by chains of views - step slices, integer indices, None, expand,
    squeeze/unsqueeze, permutes and reshapes NumPy can do as views - read the chain's first
    operand with the view's strides and offset, on one thread and two; a reshape that needs
    a copy (of a permute) leaves its input to a contiguous copy. Results equal the
    interpreter's bit for bit."""
    exe = codegen.build(static.parse_ir(_VIEWS_IR), "native")
    forward = exe.source().split("def forward")[1]
    calls = [line.split("_SHAPES, ")[1] for line in forward.splitlines() if "_call" in line and "_c(" not in line]
    # (the six small regions run as one call, native_gen/combine.py: each operand passed once)
    assert [re.findall(r"\b(?:x|y|z|v\d+)\b", c) for c in calls] == [["x", "y", "z", "v7"]], calls
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in ((8, 6), (4, 5), (2, 3, 4))]
    expected = static.run_graph(static.parse_ir(_VIEWS_IR), inputs)
    saved = runtime.CONFIG.threads
    try:
        for threads in (1, 2):
            runtime.CONFIG.threads = threads
            for got, want in zip(exe.run(inputs), expected):
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
            strided = [np.asfortranarray(a) for a in inputs]  # bases not C-contiguous: copied first
            for got, want in zip(exe.run(strided), expected):
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    finally:
        runtime.CONFIG.threads = saved


_MASKED_IR = """
func @masked(%m: bool[4096], %x: f32[4096], %y: f32[4096]) -> (f32[4096], bool[4096]) {
  %1, %2 = fused %m, %x, %y : f32[4096], bool[4096] {
    ^body(%a: bool[4096], %b: f32[4096], %c: f32[4096]):
    %3 = where %a, %b, 0.0 : f32[4096]
    %4 = mul %3, %c : f32[4096]
    %5 = gt %4, 0.0 : bool[4096]
    yield %4, %5
  }
  return %1, %2
}"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="checks x86 vector instructions")
def test_a_loop_reading_a_bool_mask_is_vectorized():
    """Bool arrays are declared as bytes: gcc cannot vectorize a load of C++ bool, so a loop
    reading a relu mask, a where condition or a dropout mask ran one element at a time."""
    tc = native_build.toolchain()
    if not tc.openmp:
        pytest.skip("no OpenMP: the simd pragmas are ignored")
    isa = _vex_target()
    text = _assembly(_MASKED_IR, "bool_mask_vector")
    # AVX and AVX2 widen the byte mask into lanes (vpmovzxbd, vpunpck*, vpcmpeqb); with
    # AVX-512BW targeted (what -march=native asks for on such a host) the compiler may instead
    # compare bytes into a mask register (vpcmpb, vptestmb) or load them as bytes (vmovdqu8)
    # and mask the float lanes with it, or keep the AVX2 forms (256-bit vectors preferred)
    vector_bool = r"\bvpmovzxbd\b|\bvpcmpeqb\b|\bvpunpck\w+\b|\bvpmovsxbd\b"
    if isa == "avx512bw":
        vector_bool += r"|\bvpcmpu?b\b|\bvptestn?mb\b|\bvmovdqu8\b"
    assert re.search(vector_bool, text), f"the bool loads stay scalar (target {isa})"
    assert re.search(r"\bv(mul|blendv|and)ps\b", text), "the element loop is scalar"
    assert "const unsigned char* __restrict__ in0" in NativeModule(static.parse_ir(_MASKED_IR)).source()[1]
    rng = np.random.default_rng(9)
    m = rng.random(4096) < 0.5
    x, y = rng.standard_normal(4096).astype(np.float32), rng.standard_normal(4096).astype(np.float32)
    got = codegen.build(static.parse_ir(_MASKED_IR), "native").run([m, x, y])
    want = static.run_graph(static.parse_ir(_MASKED_IR), [m, x, y])
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


_RELU_IR = """
func @relu_mask(%x: f32[4096], %w: f32[4096]) -> (f32[4096], bool[4096]) {
  %1, %2 = fused %x, %w : f32[4096], bool[4096] {
    ^body(%a: f32[4096], %b: f32[4096]):
    %3 = mul %a, %b : f32[4096]
    %4 = relu %3 : f32[4096]
    %5 = gt %4, 0.0 : bool[4096]
    yield %4, %5
  }
  return %1, %2
}"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="checks x86 vector instructions")
def test_a_relu_loop_is_vectorized():
    """relu keeps NaN (`x > 0 || x != x ? x : 0`); under the default -ftrapping-math gcc would
    not evaluate both sides of that select and left the loop scalar ("control flow in loop").
    The backend compiles with -fno-trapping-math, which changes no result."""
    tc = native_build.toolchain()
    if not tc.openmp:
        pytest.skip("no OpenMP: the simd pragmas are ignored")
    assert "-fno-trapping-math" in tc.compile_flags()
    isa = _vex_target()
    text = _assembly(_RELU_IR, "relu_vector")
    assert re.search(r"\bvcmp\w*ps\b", text) and re.search(r"\bvmulps\b", text), f"the relu loop is scalar (target {isa})"
    x = np.array([1.0, -1.0, 0.0, -0.0, np.nan, np.inf, -np.inf, 3.5] * 512, np.float32)
    w = np.ones(4096, np.float32)
    got = codegen.build(static.parse_ir(_RELU_IR), "native").run([x, w])
    want = static.run_graph(static.parse_ir(_RELU_IR), [x, w])
    for g, e in zip(got, want):
        np.testing.assert_array_equal(g, e)
        assert np.array_equal(np.signbit(g), np.signbit(e)) if g.dtype.kind == "f" else True


_LONE_IR = """
func @lone(%m: f32[16,2,3,5], %b: f32[1,16,1,1]) -> (f32[2,16,3,5], f32[2,16,3,5]) {
  %1 = permute %m {dims = [1, 0, 2, 3]} : f32[2,16,3,5]
  %2 = add %1, %b : f32[2,16,3,5]
  %3 = normalize %2 {dims = [0, 2, 3], eps = 1e-05} : f32[2,16,3,5]
  return %2, %3
}"""


def test_a_lone_pointwise_op_on_a_view_runs_as_a_kernel_with_a_contiguous_result():
    """A bias add the fusion pass leaves alone (its reader is a library op), on a permuted
    matmul output: as a NumPy ufunc it kept the view's layout and every kernel after it
    copied the result; as a one-op C loop it reads the view in place and writes C order."""
    exe = codegen.build(static.parse_ir(_LONE_IR), "native")
    forward = exe.source().split("def forward")[1]
    assert "np.add(" not in forward
    call = next(line for line in forward.splitlines() if "_call" in line and "_c(" not in line)
    assert re.findall(r"\b(?:m|b|v\d+)\b", call.split("_SHAPES, ")[-1].split("_FORMATS, ")[-1]) == ["m", "b"], call
    rng = np.random.default_rng(12)
    inputs = [rng.standard_normal((16, 2, 3, 5)).astype(np.float32), rng.standard_normal((1, 16, 1, 1)).astype(np.float32)]
    got = exe.run(inputs)
    want = static.run_graph(static.parse_ir(_LONE_IR), inputs)
    assert got[0].flags.c_contiguous
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)


_ROWS_IR = """
func @rowwise(%x: DT[A,B,C], %r: DT[C], %c: DT[A,B,1], %m: DT[A,1,C], %s: DT[]) -> DT[A,B,C] {
  %1 = fused %x, %r, %c, %m, %s : DT[A,B,C] {
    ^body(%a: DT[A,B,C], %b: DT[C], %d: DT[A,B,1], %e: DT[A,1,C], %f: DT[]):
    %2 = sub %a, %d : DT[A,B,C]
    %3 = exp %2 : DT[A,B,C]
    %4 = mul %3, %b : DT[A,B,C]
    %5 = add %4, %e : DT[A,B,C]
    %6 = mul %5, %f : DT[A,B,C]
    yield %6
  }
  return %1
}"""


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("dims", [(3, 5, 16), (4, 7, 37), (2, 300, 64), (1, 1, 16)])
def test_broadcast_operands_loop_by_rows_without_divisions(dt, dims):
    """Operands broadcast along the last axis, across rows, along a middle axis and 0-d: the
    region loops over rows of the last axis with a vector loop per row (no division or
    remainder per element, which made the vectorizer gather), for one and two threads,
    and gives the interpreter's values."""
    a, b, c = dims
    text = _ROWS_IR.replace("DT", dt).replace("A", str(a)).replace("B", str(b)).replace("C,", f"{c},")
    text = text.replace("[C]", f"[{c}]").replace(",C]", f",{c}]")
    graph = static.parse_ir(text)
    exe = codegen.build(graph, "native")
    source = exe.c_source()
    if a * b == 1:  # one row: every operand is read at i or at 0, the flat loop has no division
        assert "by rows of" not in source and " / " not in source[source.index("gm_region0"):]
    else:
        assert f"by rows of {c}" in source
        loop = source[source.index("by rows of"):]
        assert " / " not in loop[:loop.index("out")] and " % " not in loop[:loop.index("out")]
    np_dt = np.float32 if dt == "f32" else np.float64
    rng = np.random.default_rng(7)
    args = [rng.standard_normal(s).astype(np_dt) for s in ((a, b, c), (c,), (a, b, 1), (a, 1, c))]
    args.append(np.asarray(1.5, np_dt))
    expected = static.run_graph(graph, args)[0]
    saved = runtime.CONFIG.threads
    try:
        for nt in (1, 2):
            runtime.CONFIG.threads = nt
            got = exe.run(args)[0]
            # (exp(x - c) * r + m cancels here and there: an absolute floor of a few ulps of its terms)
            np.testing.assert_allclose(got, expected, rtol=1e-6 if dt == "f32" else 1e-13,
                                       atol=4e-6 if dt == "f32" else 1e-13)
    finally:
        runtime.CONFIG.threads = saved


def test_short_rows_keep_the_flat_loop():
    """A last axis shorter than ROW_MIN keeps one flat loop."""
    from codegen.native_gen.indexing import ROW_MIN  # noqa: PLC0415

    short = _ROWS_IR.replace("DT", "f32").replace("A", "4").replace("B", "6").replace("C,", f"{ROW_MIN - 1},")
    short = short.replace("[C]", f"[{ROW_MIN - 1}]").replace(",C]", f",{ROW_MIN - 1}]")
    assert "by rows of" not in codegen.build(static.parse_ir(short), "native").c_source()


_VIEWS = {
    "permuted": lambda x, b: eager.exp(x.permute(1, 0, 2) - 1.0) * b.unsqueeze(-1).expand(40, 8, 24),
    "last axes swapped": lambda x, b: x.transpose(1, 2) * 2.0 + x.transpose(1, 2).amax(-1, keepdim=True),
    "sliced with steps": lambda x, b: x[:, ::2, 4:20] * b[::2].t().unsqueeze(-1) + 1.0,
    "transposed": lambda x, b: eager.tanh(x.transpose(0, 1)) + b.unsqueeze(-1),
}


@pytest.mark.parametrize("view", list(_VIEWS))
def test_views_read_through_their_strides_loop_by_rows(view):
    """Operands read in place through a view's strides (permuted, sliced with steps,
    expanded) are indexed by row and column too, and give eager's values."""
    f = _VIEWS[view]
    rng = np.random.default_rng(10)
    x = eager.tensor(rng.standard_normal((8, 40, 24)).astype(np.float32))
    b = eager.tensor(rng.standard_normal((40, 8)).astype(np.float32))
    cf = static.compile(f, backend="native")
    np.testing.assert_allclose(cf(x, b).numpy(), f(x, b).numpy(), rtol=2e-6, atol=2e-6)
    assert "by rows of" in cf.source(x, b)


# -- the call path's batched copy (write-back of in-place updates) ----------------------------
def _copy_pairs():
    native_build.caller()  # loads the extension
    copy_pairs = native_build.loaded_copy_pairs()
    if copy_pairs is None:
        pytest.skip("the call-path extension could not be built (no Python headers)")
    return copy_pairs


def test_copy_pairs_copies_plain_pairs_and_leaves_the_rest_to_the_caller():
    copy_pairs = _copy_pairs()
    dst = [np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros((2, 2), np.float32),
           np.zeros((4, 2), np.float32)[:, 0], np.zeros(4, np.float64), np.zeros(3, np.float32)]
    src = [np.arange(4, dtype=np.float32), np.arange(4, dtype=np.float64), np.ones(4, np.float32),
           np.ones(4, np.float32), np.ones(4, np.float64), np.ones(1, np.float32)]
    left = copy_pairs(dst, src)
    # a cast, a reshape, a strided destination and a broadcast are np.copyto's business
    assert left == [1, 2, 3, 5]
    np.testing.assert_array_equal(dst[0], [0, 1, 2, 3])
    np.testing.assert_array_equal(dst[4], [1, 1, 1, 1])
    assert not dst[1].any() and not dst[2].any() and not dst[3].any() and not dst[5].any()


def test_copy_pairs_copies_nothing_when_a_destination_is_read_only():
    copy_pairs = _copy_pairs()
    first, frozen = np.zeros(3), np.zeros(3)
    frozen.flags.writeable = False
    assert copy_pairs([first, frozen], [np.ones(3), np.ones(3)]) is None
    assert not first.any()
    with pytest.raises(TypeError, match="two lists"):
        copy_pairs([first], [])


def test_write_back_keeps_the_order_of_writes_into_shared_memory():
    """A pair copy_pairs leaves (a cast) is written in its place in the sequence: a later
    update of the same memory still wins, as the writes in program order leave it."""
    _copy_pairs()

    def update(a, b):
        a.copy_(eager.tensor([1.0, 2.0], dtype=eager.float64))
        b.add_(10)
        return a.sum()

    base = eager.zeros(2)
    f = static.compile(update, backend="native")
    f(base, base)
    expected = eager.zeros(2)
    update(expected, expected)
    np.testing.assert_array_equal(base.numpy(), expected.numpy())
