"""The CuPy backend's kernels, run on the CPU (no GPU needed): every pointwise op's C
expression, every helper of c_helpers.py, the hand-written regions and the generated
kernels of W1-W4 are compiled with the host C++ compiler through the target-neutral helper
layer and compared with the reference interpreter / the NumPy backend in float32 and
float64 (float16 where CuPy supports it). The whole test module is one translation unit."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import codegen
import eager
import static
from codegen import c_helpers, native_build

sys.path.insert(0, str(Path(__file__).parent))
import gm_workloads as W  # noqa: E402
from cuda_host import HostCupy  # noqa: E402
from graph_inputs import graph_inputs  # noqa: E402
from test_codegen_cupy import GRAPHS, REDUCTION_KERNELS, _pointwise_ops, _single_op_region  # noqa: E402
from test_codegen_regions import CASES  # noqa: E402

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no host C++ compiler: {native_build.availability()[1]}")

_EXTRA = {  # regions that reach the helpers no single-op kernel uses
    "amin_then_epilogue": """
func @f(%x: f32[6,5]) -> (f32[6,1], f32[6,1]) {
  %1, %2 = fused %x : f32[6,1], f32[6,1] {
    ^body(%a: f32[6,5]):
    %3 = neg %a : f32[6,5]
    %4 = amin %3 {dims = [1], keepdim = true} : f32[6,1]
    %5 = mul %4, 2.0 : f32[6,1]
    yield %4, %5
  }
  return %1, %2
}""",
    "nan_and_inf_literals": """
func @f(%x: f32[7]) -> (f32[7], f32[7]) {
  %1, %2 = fused %x : f32[7], f32[7] {
    ^body(%a: f32[7]):
    %3 = full_like %a {value = nan} : f32[7]
    %4 = add %a, %3 : f32[7]
    %5 = maximum %a, inf : f32[7]
    yield %4, %5
  }
  return %1, %2
}""",
}

DTYPES = {"f32": np.float32, "f64": np.float64}


def _op_graph(name: str, dt: str):
    return static.parse_ir(_single_op_region(name).replace("f32", dt))


def _workload_graphs(dtype):
    """The optimized graphs of W1-W4 (forward + gradients) at small sizes."""
    def ir(fn, arrays):
        return static.compile(fn, backend="numpy").ir(*[eager.tensor(a) for a in arrays])

    return {
        "w1": ir(static.value_and_grad(W.w1, argnums=(0, 1, 2, 3, 4)), W.w1_inputs(257, dtype)),
        "w2": ir(static.value_and_grad(W.w2, argnums=(0, 1)), W.w2_inputs(257, dtype)),
        "w3": ir(W.w3_step, W.w3_inputs(9, 7, 6, 4, dtype)),
        "w4": ir(lambda x: W.w4(x, 20), W.w4_inputs(dtype)),
    }


@pytest.fixture(scope="module")
def host():
    """Every graph's CuPy module loaded on the host; one translation unit for all kernels."""
    cp = HostCupy()
    graphs = {}
    for dt in DTYPES:
        for name in _pointwise_ops():
            graphs[f"op_{name}_{dt}"] = _op_graph(name, dt)
        for name, graph in _workload_graphs(DTYPES[dt]).items():
            graphs[f"{name}_{dt}"] = graph
    for name, text in {**GRAPHS, **_EXTRA, **REDUCTION_KERNELS}.items():
        graphs[f"g_{name}"] = static.parse_ir(text)
        graphs[f"g_{name}_f64"] = static.parse_ir(text.replace("f32", "f64"))
    graphs["f16_chain"] = static.parse_ir(CASES["chain_and_full_sum"][0].replace("f32", "f16"))
    modules = {}
    for name, graph in graphs.items():
        src = codegen.generate_source(graph, "cupy")[0]
        modules[name] = (graph, cp.load(src, name), src)
    cp.compile_pending()
    return cp, modules


def _run(host, name, arrays):
    cp, modules = host
    graph, namespace, _ = modules[name]
    return graph, [np.asarray(r) for r in namespace["forward"](*arrays)]


def _close(got, expected, dtype, ulps: float, msg: str):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype, msg
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, expected, err_msg=msg)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg=msg)
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(expected)], expected[~finite & ~np.isnan(expected)],
                                  err_msg=msg)
    spacing = np.spacing(np.abs(expected[finite]).astype(got.dtype)).astype(np.float64)
    err = np.abs(got[finite].astype(np.float64) - expected[finite].astype(np.float64))
    tiny = np.finfo(got.dtype).tiny
    assert np.all(err <= ulps * np.maximum(spacing, tiny) + 4 * tiny), \
        f"{msg}: {np.max(err / np.maximum(spacing, tiny)):.2f} ulp"


# a C math library and NumPy's own loops may differ by a few ulp in transcendental functions
_OP_ULPS = {"f32": 8.0, "f64": 8.0}


@pytest.mark.parametrize("kind", ["positive", "mixed"])
@pytest.mark.parametrize("dt", sorted(DTYPES))
@pytest.mark.parametrize("name", _pointwise_ops())
def test_op_kernel_on_host_matches_interpreter(host, name, dt, kind):
    graph = host[1][f"op_{name}_{dt}"][0]
    arrays = graph_inputs(graph, np.random.default_rng(3), kind)
    _, got = _run(host, f"op_{name}_{dt}", arrays)
    with np.errstate(all="ignore"):
        expected = static.run_graph(graph, arrays)
    for g, e in zip(got, expected):
        _close(g, np.asarray(e), g.dtype, _OP_ULPS[dt], f"{name} {dt} {kind}: {arrays}")


@pytest.mark.parametrize("name", sorted(set(GRAPHS) | set(_EXTRA) | set(REDUCTION_KERNELS)))
@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_region_kernels_on_host_match_interpreter(host, name, dt):
    key = f"g_{name}" + ("_f64" if dt == "f64" else "")
    graph = host[1][key][0]
    arrays = graph_inputs(graph, np.random.default_rng(1))
    _, got = _run(host, key, arrays)
    expected = static.run_graph(graph, arrays)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, np.asarray(e), rtol=2e-5 if dt == "f32" else 1e-12, atol=1e-6, err_msg=name)


def test_float16_chain_on_host(host):
    graph = host[1]["f16_chain"][0]
    arrays = graph_inputs(graph, np.random.default_rng(2))
    _, got = _run(host, "f16_chain", arrays)
    expected = static.run_graph(graph, arrays)
    for g, e in zip(got, expected):
        assert g.dtype == np.float16
        np.testing.assert_allclose(g.astype(np.float32), np.asarray(e, np.float32), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("dt", sorted(DTYPES))
@pytest.mark.parametrize("workload", ["w1", "w2", "w3", "w4"])
def test_workload_kernels_on_host_match_numpy_backend(host, workload, dt):
    graph = host[1][f"{workload}_{dt}"][0]
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(v.type.shape).astype(v.type.dtype.np) for v in graph.inputs]
    _, got = _run(host, f"{workload}_{dt}", arrays)
    expected = codegen.build(graph, "numpy").run(arrays)
    tol = dict(rtol=1e-4, atol=1e-5) if dt == "f32" else dict(rtol=1e-11, atol=1e-12)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, np.asarray(e), **tol, err_msg=workload)


def test_every_helper_is_compiled_and_run_on_host(host):
    """The kernels above call every helper of the shared layer, so each one is exercised."""
    cp, modules = host
    text = "\n".join(src for _, _, src in modules.values())
    kernel_text = text.replace(c_helpers.PREAMBLE, "")
    for helper in c_helpers.HELPERS:
        assert f"{helper}(" in kernel_text or f"{helper}<" in kernel_text, helper


def test_one_helper_text_for_both_targets(host):
    """The host translation unit holds the very preamble the CuPy modules embed, and that
    text names no CUDA-only intrinsic (bit casts go through a union)."""
    cp, modules = host
    assert all(c_helpers.PREAMBLE in src for _, _, src in modules.values())
    assert c_helpers.PREAMBLE in cp.sources[0]
    assert "#define GM_INLINE static inline" in c_helpers.PREAMBLE
    assert "__longlong_as_double" not in c_helpers.PREAMBLE
