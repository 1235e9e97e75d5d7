"""The CuPy backend without a GPU: generation needs no CuPy, the source matches reviewed
snapshots, and every generated kernel compiles with nvcc (where installed). With CuPy and
a GPU (@pytest.mark.gpu) the generated code runs and agrees with the NumPy backend."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cuda_tu import kernels, translation_unit
from test_codegen_regions import CASES

import codegen
import eager
import static
from eager.ops import REGISTRY

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("GRAPHMODE_UPDATE_SNAPSHOTS") == "1"

W2_FUSED = """func @w2_grad(%x: f32[1000], %w: f32[1000]) -> (f32[], f32[1000], f32[1000]) {
  %25, %26, %27 = fused %x, %w : f32[1000], f32[], f32[1000] {
    ^body(%0: f32[1000], %1: f32[1000]):
    %2 = mul 0.5, %0 : f32[1000]
    %3 = pow %0, 3 : f32[1000]
    %4 = mul 0.044715, %3 : f32[1000]
    %5 = add %0, %4 : f32[1000]
    %6 = mul 0.7978845608, %5 : f32[1000]
    %7 = tanh %6 : f32[1000]
    %8 = add 1, %7 : f32[1000]
    %9 = mul %2, %8 : f32[1000]
    %10 = mul %9, %1 : f32[1000]
    %11 = sum %10 {dims = none, keepdim = false} : f32[]
    %12 = mul %1, %8 : f32[1000]
    %13 = mul %1, %2 : f32[1000]
    %14 = mul %7, %7 : f32[1000]
    %15 = rsub %14, 1.0 : f32[1000]
    %16 = mul %13, %15 : f32[1000]
    %17 = mul %16, 0.7978845608 : f32[1000]
    %18 = mul %17, 0.044715 : f32[1000]
    %19 = mul %0, %0 : f32[1000]
    %20 = mul %19, 3 : f32[1000]
    %21 = mul %18, %20 : f32[1000]
    %22 = add %17, %21 : f32[1000]
    %23 = mul %12, 0.5 : f32[1000]
    %24 = add %22, %23 : f32[1000]
    yield %9, %11, %24
  }
  return %26, %27, %25
}"""

GRAPHS = {"w2_grad": W2_FUSED, **{name: text for name, (text, _, _) in CASES.items()}}


def _cupy_source(text: str) -> str:
    return codegen.generate_source(static.parse_ir(text), "cupy")[0]


def test_generation_does_not_import_cupy():
    code = ("import sys, static, codegen\n"
            f"codegen.generate_source(static.parse_ir({W2_FUSED!r}), 'cupy')\n"
            "print('cupy' in sys.modules)")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(root)},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_cupy_source_snapshot(name):
    src = _cupy_source(GRAPHS[name])
    compile(src, f"<{name}>", "exec")  # valid Python
    path = SNAPSHOTS / f"cupy_{name}.py.txt"
    if UPDATE or not path.exists():
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(src)
        if not UPDATE:
            pytest.skip(f"wrote new snapshot {path.name}; review and commit it")
    assert src == path.read_text(), f"generated CuPy source changed; rerun with GRAPHMODE_UPDATE_SNAPSHOTS=1 " \
                                    f"after reviewing the difference ({path.name})"


def test_w2_is_one_elementwise_and_one_reduction_kernel():
    found = kernels(_cupy_source(W2_FUSED))
    assert [k for k, _, _ in found] == ["ElementwiseKernel", "ReductionKernel"]
    _, (in_params, out_params, body, name), _ = found[0]
    assert in_params == "float32 in0, float32 in1" and out_params == "float32 out0, float32 out1"
    assert "((float)0.7978845608)" in body and "// L9: %7 = tanh %6 : f32[1000]" in body


def test_every_pointwise_op_has_a_kernel_expression():
    """One fused kernel per pointwise op (float32), so the nvcc test compiles every expression."""
    for name in _pointwise_ops():
        src = _cupy_source(_single_op_region(name))
        assert "ElementwiseKernel" in src, name


def _pointwise_ops():
    return [n for n in sorted(REGISTRY) if codegen.TABLE.get(n) and codegen.TABLE[n].pointwise]


_OP_TEXT = {
    "where": ("%c: bool[8], %a: f32[8], %b: f32[8]", "where %c, %a, %b", "f32[8]"),
    "logical_and": ("%a: bool[8], %b: bool[8]", "logical_and %a, %b", "bool[8]"),
    "logical_not": ("%a: bool[8]", "logical_not %a", "bool[8]"),
    "bitwise_not": ("%a: i64[8]", "bitwise_not %a", "i64[8]"),  # integers and bools only
    **{n: ("%a: i64[8], %b: i64[8]", f"{n} %a, %b", "i64[8]") for n in ("bitwise_and", "bitwise_or", "bitwise_xor",
                                                                            "bitwise_left_shift", "bitwise_right_shift")},
    **{n: ("%a: f32[8], %b: bool[8]", f"{n} %a, %b", "bool[8]") for n in ("logical_or", "logical_xor")},
    **{n: ("%a: f32[8]", f"{n} %a", "bool[8]") for n in ("isnan", "isinf", "isfinite")},
    "to_dtype": ("%a: f32[8]", "to_dtype %a {dtype = f64}", "f64[8]"),
    "full": ("%a: f32[8]", "full {dtype = f32, shape = [8], value = 1.5}", "f32[8]"),
    "full_like": ("%a: f32[8]", "full_like %a {value = -inf}", "f32[8]"),
    "clamp": ("%a: f32[8]", "clamp %a {max = 0.5, min = -0.5}", "f32[8]"),
    "clamp_tensor": ("%a: f32[8], %b: f32[8], %c: f32[8]", "clamp_tensor %a, %b, %c", "f32[8]"),  # three operands
    "softplus": ("%a: f32[8]", "softplus %a {beta = 1.0, threshold = 20.0}", "f32[8]"),
    "gelu": ("%a: f32[8]", 'gelu %a {approximate = "none"}', "f32[8]"),
    "float_power": ("%a: f32[8], %b: f32[8]", "float_power %a, %b", "f64[8]"),  # float64 whatever its operands
}
_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


def _binary(name):
    """Two operands of one dtype: the record's arity says so (a new binary op needs no list here)."""
    return REGISTRY[name].arity == 2


def _op_text(name):
    """(parameters, expression, result type) of pointwise op `name` on f32[8] operands: its
    _OP_TEXT entry, else two operands for a binary op (a bool result for a comparison) or one."""
    if name in _OP_TEXT:
        return _OP_TEXT[name]
    if _binary(name):
        return "%a: f32[8], %b: f32[8]", f"{name} %a, %b", "bool[8]" if name in _COMPARISONS else "f32[8]"
    return "%a: f32[8]", f"{name} %a", "f32[8]"


def _single_op_region(name):
    params, expr, result = _op_text(name)
    names = [p.split(":")[0].strip() for p in params.split(",")]
    operands = ", ".join(names)
    op, _, rest = expr.partition(" ")
    return (f"func @{name}_k({params}) -> {result} {{\n"
            f"  %r = fused {operands} : {result} {{\n"
            f"    ^body({params.replace('%', '%p_')}):\n"
            f"    %y = {op} {rest.replace('%', '%p_')} : {result}\n"
            f"    yield %y\n  }}\n  return %r\n}}")


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_generated_kernels_compile_with_nvcc(tmp_path):
    sources = {f"g_{name}": _cupy_source(text) for name, text in GRAPHS.items()}
    sources.update({f"op_{name}": _cupy_source(_single_op_region(name)) for name in _pointwise_ops()})
    sources["f64_w2"] = _cupy_source(W2_FUSED.replace("f32", "f64"))
    sources["f16_chain"] = _cupy_source(CASES["chain_and_full_sum"][0].replace("f32", "f16"))
    cu = tmp_path / "kernels.cu"
    cu.write_text(translation_unit(sources))
    run = subprocess.run([NVCC, "-c", "-std=c++17", "-o", str(tmp_path / "kernels.o"), str(cu)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-4000:]


# -- on a GPU ------------------------------------------------------------------------------------
def _cupy_or_skip():
    cp = pytest.importorskip("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no usable CUDA device ({exc})")
    return cp


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_gpu_region_matches_numpy_backend(name):
    cp = _cupy_or_skip()
    graph = static.parse_ir(GRAPHS[name])
    from graph_inputs import graph_inputs  # noqa: PLC0415

    arrays = graph_inputs(graph, np.random.default_rng(1))
    expected = codegen.build(graph, "numpy").run(arrays)
    got = codegen.build(graph, "cupy").run([cp.asarray(a) for a in arrays])
    for g, e in zip(got, expected):
        tol = 1e-5 if np.asarray(e).dtype == np.float32 else 1e-12
        np.testing.assert_allclose(cp.asnumpy(g), np.asarray(e), rtol=tol, atol=tol)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_gpu_op_matches_numpy_backend(name):
    cp = _cupy_or_skip()
    for arrays, attrs in REGISTRY[name].samples(np.random.default_rng(0)):
        positions = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray)]

        def fn(*xs, arrays=arrays, attrs=attrs, positions=positions):
            operands = list(arrays)
            for i, x in zip(positions, xs):
                operands[i] = x
            return REGISTRY[name](*operands, **attrs)

        inputs = [arrays[i] for i in positions]
        graph = static.trace(fn, *[eager.tensor(a) for a in inputs])
        expected = codegen.build(graph, "numpy").run(inputs)
        got = codegen.build(graph, "auto").run([cp.asarray(a) for a in inputs])
        for g, e in zip(got, expected):
            np.testing.assert_allclose(cp.asnumpy(g), np.asarray(e), rtol=1e-10, atol=1e-12, err_msg=name)


REDUCTION_KERNELS = {
    "full_sum_of_squares": """func @f(%x: f32[4096]) -> (f32[]) {
  %1 = fused %x : f32[] {
    ^body(%a: f32[4096]):
    %2 = mul %a, %a : f32[4096]
    %3 = sum %2 {dims = none, keepdim = false} : f32[]
    yield %3
  }
  return %1
}""",
    "row_max_of_exp": """func @f(%x: f64[64, 128]) -> (f64[64]) {
  %1 = fused %x : f64[64] {
    ^body(%a: f64[64, 128]):
    %2 = exp %a : f64[64, 128]
    %3 = amax %2 {dims = [1], keepdim = false} : f64[64]
    yield %3
  }
  return %1
}""",
    "plain_column_mean": """func @f(%x: f32[128, 64]) -> (f32[64]) {
  %1 = fused %x : f32[64] {
    ^body(%a: f32[128, 64]):
    %2 = mean %a {dims = [0], keepdim = false} : f32[64]
    yield %2
  }
  return %1
}""",
    # several inputs, few outputs, many elements each: mapped into a temporary, then reduced
    "split_full_sum_with_epilogue": """func @f(%x: f32[131072], %w: f32[131072], %g: f32[1]) -> (f32[]) {
  %1 = fused %x, %w, %g : f32[] {
    ^body(%a: f32[131072], %b: f32[131072], %c: f32[1]):
    %2 = tanh %a : f32[131072]
    %3 = mul %2, %b : f32[131072]
    %4 = mul %3, %c : f32[131072]
    %5 = sum %4 {dims = none, keepdim = false} : f32[]
    %6 = mul %5, 0.5 : f32[]
    yield %6
  }
  return %1
}""",
    "split_column_mean": """func @f(%x: f64[65536, 4], %s: f64[1, 4]) -> (f64[1, 4]) {
  %1 = fused %x, %s : f64[1, 4] {
    ^body(%a: f64[65536, 4], %b: f64[1, 4]):
    %2 = sub %a, %b : f64[65536, 4]
    %3 = mul %2, %2 : f64[65536, 4]
    %4 = mean %3 {dims = [0], keepdim = true} : f64[1, 4]
    yield %4
  }
  return %1
}""",
}


@pytest.mark.parametrize("name", sorted(REDUCTION_KERNELS))
def test_reduction_kernels_leave_cupy_its_own_names(name):
    """A ReductionKernel of one input and one output may run through CuPy's CUB reduction,
    which compiles only when the kernel's output is not named out0 (see REDUCTION_OUT); a
    reduction of several inputs into few outputs is split so that it can (SPLIT_MIN_REDUCED)."""
    src = codegen.generate_source(static.parse_ir(REDUCTION_KERNELS[name]), "cupy")[0]
    outputs = re.findall(r"cp\.ReductionKernel\(\n\s+'[^']*',\n\s+'\w+ (\w+)'", src)
    assert outputs and set(outputs) == {"red_out"}, src
    if name.startswith("split"):  # the mapped values first, then a reduction of that one array
        assert "mapped = " in src and "'in0'," in src, src
    else:
        assert "mapped = " not in src, src


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(REDUCTION_KERNELS))
def test_gpu_reduction_kernels_match_numpy_backend(name):
    cp = _cupy_or_skip()
    graph = static.parse_ir(REDUCTION_KERNELS[name])
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal(v.type.shape).astype(v.type.dtype.np) for v in graph.inputs]
    (expected,) = codegen.build(graph, "numpy").run(xs)
    (got,) = codegen.build(graph, "cupy").run([cp.asarray(x) for x in xs])
    tol = 1e-5 if xs[0].dtype == np.float32 else 1e-12
    np.testing.assert_allclose(cp.asnumpy(got), np.asarray(expected), rtol=tol, atol=tol)
