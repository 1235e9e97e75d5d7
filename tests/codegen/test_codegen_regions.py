"""Fused regions written by hand as IR text: every shape of region the NumPy generator
blocks (collapsed axes, broadcasting operands, partial and row-wise reductions, epilogues,
invariants computed once) and the ones it runs op by op, against the interpreter, with
sizes that are not multiples of the block size."""
from __future__ import annotations

import numpy as np
import pytest
from graph_inputs import graph_inputs

import codegen
import static
from codegen.regions import analyze

CASES = {
    "chain_and_full_sum": ("""
func @f(%x: f32[37], %w: f32[37]) -> (f32[37], f32[]) {
  %2, %3 = fused %x, %w : f32[37], f32[] {
    ^body(%a: f32[37], %b: f32[37]):
    %4 = mul %a, %b : f32[37]
    %5 = tanh %4 : f32[37]
    %6 = sum %5 {dims = none, keepdim = false} : f32[]
    yield %4, %6
  }
  return %2, %3
}""", "blocked", 1),
    "collapsed_axes_with_scalar_operand": ("""
func @f(%x: f32[5,6,7], %s: f32[]) -> (f32[5,6,7], f32[1,1,1]) {
  %2, %3 = fused %x, %s : f32[5,6,7], f32[1,1,1] {
    ^body(%a: f32[5,6,7], %b: f32[]):
    %4 = mul %a, %b : f32[5,6,7]
    %5 = add %4, 2.5 : f32[5,6,7]
    %6 = amax %5 {dims = none, keepdim = true} : f32[1,1,1]
    yield %5, %6
  }
  return %2, %3
}""", "blocked", 3),
    "bias_broadcast_and_column_sum": ("""
func @f(%x: f64[9,5], %b: f64[5], %c: f64[9,1]) -> (f64[9,5], f64[5], f64[9]) {
  %2, %3, %4 = fused %x, %b, %c : f64[9,5], f64[5], f64[9] {
    ^body(%p: f64[9,5], %q: f64[5], %r: f64[9,1]):
    %5 = neg %q : f64[5]
    %6 = mul %5, 3.0 : f64[5]
    %7 = add %p, %6 : f64[9,5]
    %8 = mul %7, %r : f64[9,5]
    %9 = sum %8 {dims = [0], keepdim = false} : f64[5]
    %10 = mean %8 {dims = [1], keepdim = false} : f64[9]
    yield %8, %9, %10
  }
  return %2, %3, %4
}""", "blocked", 1),
    "rowwise_max_with_epilogue": ("""
func @f(%x: f32[11,4]) -> (f32[11,1], f32[11,1]) {
  %1, %2 = fused %x : f32[11,1], f32[11,1] {
    ^body(%a: f32[11,4]):
    %3 = exp %a : f32[11,4]
    %4 = amax %3 {dims = [1], keepdim = true} : f32[11,1]
    %5 = log %4 : f32[11,1]
    %6 = mul %5, -1.0 : f32[11,1]
    yield %4, %6
  }
  return %1, %2
}""", "blocked", 1),
    "mean_over_everything_then_epilogue": ("""
func @f(%x: f32[3,7], %y: f32[3,7]) -> (f32[], f32[3,7]) {
  %2, %3 = fused %x, %y : f32[], f32[3,7] {
    ^body(%a: f32[3,7], %b: f32[3,7]):
    %4 = sub %a, %b : f32[3,7]
    %5 = mul %4, %4 : f32[3,7]
    %6 = mean %5 {dims = none, keepdim = false} : f32[]
    %7 = sqrt %6 : f32[]
    %8 = where %n, %4, 0.0 : f32[3,7]
    yield %7, %8
  }
  return %2, %3
}""", None, None),
    "pointwise_helpers_and_literal_operand": ("""
func @f(%x: f32[23], %c: bool[23]) -> (f32[23], f32[23]) {
  %2, %3 = fused %x, %c, 0.25 : f32[23], f32[23] {
    ^body(%a: f32[23], %k: bool[23], %h: f32[]):
    %4 = sigmoid %a : f32[23]
    %5 = where %k, %4, %h : f32[23]
    %6 = clamp %5 {max = 0.7, min = none} : f32[23]
    %7 = gelu %6 {approximate = "tanh"} : f32[23]
    %8 = to_dtype %7 {dtype = f64} : f64[23]
    %9 = to_dtype %8 {dtype = f32} : f32[23]
    %10 = rsqrt %4 : f32[23]
    yield %9, %10
  }
  return %2, %3
}""", "blocked", 1),
    "epilogue_reading_full_shape_runs_op_by_op": ("""
func @f(%x: f32[6,5]) -> f32[6,5] {
  %1 = fused %x : f32[6,5] {
    ^body(%a: f32[6,5]):
    %4 = exp %a : f32[6,5]
    %2 = amax %4 {dims = [1], keepdim = true} : f32[6,1]
    %3 = sub %4, %2 : f32[6,5]
    yield %3
  }
  return %1
}""", "unfused", None),
    "non_pointwise_op_runs_op_by_op": ("""
func @f(%x: f32[4,6], %w: f32[6,3]) -> f32[4,3] {
  %1 = fused %x, %w : f32[4,3] {
    ^body(%a: f32[4,6], %b: f32[6,3]):
    %2 = tanh %a : f32[4,6]
    %3 = matmul %2, %b : f32[4,3]
    yield %3
  }
  return %1
}""", "unfused", None),
    "zero_d_region_on_scalars": ("""
func @f(%x: f32[], %y: f32[]) -> (f32[], f32[]) {
  %2, %3 = fused %x, %y : f32[], f32[] {
    ^body(%a: f32[], %b: f32[]):
    %4 = mul %a, 1.0001 : f32[]
    %5 = sin %b : f32[]
    %6 = add %4, %5 : f32[]
    yield %6, %a
  }
  return %2, %3
}""", "scalar", None),
    "yields_an_input_and_one_value_twice": ("""
func @f(%x: f32[10]) -> (f32[10], f32[10], f32[10]) {
  %1, %2, %3 = fused %x : f32[10], f32[10], f32[10] {
    ^body(%a: f32[10]):
    %4 = exp %a : f32[10]
    yield %4, %a, %4
  }
  return %1, %2, %3
}""", "blocked", 1),
}
# the mean case needs a condition value: write it in
CASES["mean_over_everything_then_epilogue"] = (CASES["mean_over_everything_then_epilogue"][0].replace(
    "%8 = where %n, %4, 0.0", "%9 = gt %4, 0.0 : bool[3,7]\n    %8 = where %9, %4, 0.0"), "blocked", 2)


@pytest.mark.parametrize("name", sorted(CASES))
def test_region_kind(name):
    text, kind, k = CASES[name]
    graph = static.parse_ir(text)
    region = analyze(graph.nodes[0])
    assert region.kind == kind, region.reason
    if k is not None:
        assert region.k == k


@pytest.mark.parametrize("blocks", ["default", "small"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_region_matches_interpreter(name, blocks, request):
    if blocks == "small":
        request.getfixturevalue("small_blocks")
    graph = static.parse_ir(CASES[name][0])
    arrays = graph_inputs(graph, np.random.default_rng(1))
    exe = codegen.build(graph, "numpy")
    got = exe.run(arrays)
    expected = static.run_graph(graph, arrays)
    for g, e in zip(got, expected):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype
        tol = 1e-6 if g.dtype == np.float32 else 1e-13
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol, err_msg=exe.source())


def test_invariants_are_computed_once_before_the_blocks():
    graph = static.parse_ir(CASES["bias_broadcast_and_column_sum"][0])
    src = codegen.build(graph, "numpy").source()
    driver = src[src.index("def forward"):]
    assert "# L4: %5 = neg %q : f64[5]\n        v5 = np.negative(b)" in driver
    assert "def _region0(lo, hi, p, r, v6," in src  # the hoisted %6 is passed in whole


def test_generated_lines_cite_the_ir():
    graph = static.parse_ir(CASES["chain_and_full_sum"][0])
    src = codegen.build(graph, "numpy").source()
    lines = str(graph).splitlines()
    assert f"# L4: {lines[3].strip()}" in src
    assert "# L2: %2, %3 = fused %x, %w : f32[37], f32[]" in src


def test_in_place_reuse_of_dead_buffers():
    text = """
func @f(%x: f32[64]) -> f32[64] {
  %1 = exp %x : f32[64]
  %2 = tanh %1 : f32[64]
  %3 = mul %2, 2.0 : f32[64]
  return %3
}"""
    graph = static.parse_ir(text)
    exe = codegen.build(graph, "numpy")
    src = exe.source()
    assert "out=v1" in src  # %2 and %3 write over %1's dead buffer
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    np.testing.assert_array_equal(exe.run([x])[0], static.run_graph(graph, [x])[0])


def test_views_keep_their_base_alive():
    text = """
func @f(%x: f32[8]) -> (f32[2,4], f32[8]) {
  %1 = exp %x : f32[8]
  %2 = reshape %1 {shape = [2, 4]} : f32[2,4]
  %3 = neg %x : f32[8]
  %4 = mul %3, 2.0 : f32[8]
  return %2, %4
}"""
    graph = static.parse_ir(text)
    exe = codegen.build(graph, "numpy")
    assert "out=v1" not in exe.source()
    x = np.arange(8, dtype=np.float32)
    for g, e in zip(exe.run([x]), static.run_graph(graph, [x])):
        np.testing.assert_array_equal(g, e)


def test_small_regions_run_op_by_op(monkeypatch):
    """Below INLINE_MAX_ELEMS a region's ops run one by one (no block function), with the
    same results; the threshold is part of the cache key."""
    from codegen import settings

    text = CASES["bias_broadcast_and_column_sum"][0]
    graph = static.parse_ir(text)
    blocked = codegen.build(graph, "numpy")
    monkeypatch.setattr(settings, "INLINE_MAX_ELEMS", 4096)
    small = codegen.build(static.parse_ir(text), "numpy")
    assert "def _region0" in blocked.source()
    assert "def _region0" not in small.source() and "# small region (" in small.source()
    assert "small region(s)" in small.source()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(tuple(v.type.shape)).astype(v.type.dtype.np) for v in graph.inputs]
    for a, b in zip(blocked.run(arrays), small.run(arrays)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("dims", [(1,), (0,), None])
def test_prod_fuses_like_the_other_reductions(small_blocks, dims):
    """prod's record declares its combiner (mul) and identity (1): fusion takes it with its
    prologue, and blocks combine their partial products."""
    import eager
    import static

    x = eager.tensor(np.random.default_rng(4).uniform(0.9, 1.1, (6, 5)).astype(np.float64))

    def f(t):
        y = t * 1.01 + 0.001
        return y.prod() if dims is None else y.prod(dims[0])

    compiled = static.compile(f, backend="numpy")
    got = compiled(x)
    np.testing.assert_allclose(got.numpy(), f(x).numpy(), rtol=1e-12)
    fused = [m.op for n in compiled.ir(x).nodes if n.body is not None for m in n.body.nodes]
    assert "prod" in fused
