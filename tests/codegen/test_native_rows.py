"""Row regions: a region that reduces along its last axis and reads the result back over
the whole space (a softmax's max, exp(x - max), sum and division) is one C function walking
each row in passes (fusion with `rows`, regions.analyze_rows, native_gen's _row_passes).
Checked here: which regions fusion makes, the passes' numbers against the interpreter
(NaN, -inf, rows longer than a stage buffer, float64, one row), and that a value is computed
once (the elements an amax gradient compares with the max are the max's own bits)."""
from __future__ import annotations

import numpy as np
import pytest

import codegen
import eager
import static
from codegen import native_build
from codegen.regions import analyze, analyze_rows
from static.passes import PASSES

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")

SOFTMAX = """
func @f(%x: {T}[{R},{W}], %keep: bool[{W}]) -> {T}[{R},{W}] {{
  %0 = mul %x, 0.5 : {T}[{R},{W}]
  %1 = where %keep, %0, -inf : {T}[{R},{W}]
  %2 = softmax %1 {{dim = 1}} : {T}[{R},{W}]
  return %2
}}"""

LOG_SOFTMAX_AND_LSE = """
func @f(%x: {T}[{R},{W}]) -> ({T}[{R},{W}], {T}[{R},1], {T}[{R},{W}]) {{
  %0 = amax %x {{dims = [1], keepdim = true}} : {T}[{R},1]
  %1 = sub %x, %0 : {T}[{R},{W}]
  %2 = exp %1 : {T}[{R},{W}]
  %3 = sum %2 {{dims = [1], keepdim = true}} : {T}[{R},1]
  %4 = log %3 : {T}[{R},1]
  %5 = add %4, %0 : {T}[{R},1]
  %6 = sub %x, %5 : {T}[{R},{W}]
  %7 = eq %x, %0 : bool[{R},{W}]
  %8 = to_dtype %7 {{dtype = {T}}} : {T}[{R},{W}]
  return %6, %5, %8
}}"""


def _lowered(text: str, rows: bool):
    graph = static.parse_ir(text)
    PASSES["decompose"](graph)
    PASSES["fuse"](graph, row_regions=rows)
    PASSES["dce"](graph)
    static.verify(graph)
    return graph


def _fused(graph) -> list:
    return [n for n in graph.nodes if n.op == "fused"]


def test_fusion_makes_one_row_region_of_a_softmax_only_when_asked():
    text = SOFTMAX.format(T="f32", R=8, W=40)
    with_rows = _fused(_lowered(text, rows=True))
    without = _fused(_lowered(text, rows=False))
    assert len(with_rows) == 1 and len(without) >= 2
    region = analyze(with_rows[0], scalar_code=False)
    assert region.kind == "unfused"  # the blocked kinds cannot run it ...
    rows = analyze_rows(with_rows[0])
    assert rows is not None and rows.kind == "rows"  # ... the row passes can
    assert max(rows.levels.values()) == 2  # max, then sum: a third pass divides


def test_a_reduction_over_another_axis_is_no_row_region():
    graph = static.parse_ir("""
        func @f(%x: f32[8,40]) -> f32[8,40] {
          %0 = amax %x {dims = [0], keepdim = true} : f32[1,40]
          %1 = sub %x, %0 : f32[8,40]
          return %1
        }""")
    PASSES["fuse"](graph, row_regions=True)
    for node in _fused(graph):
        assert analyze_rows(node) is None


def _inputs(graph, rng, dt):
    out = []
    for v in graph.inputs:
        if v.type.dtype.np == np.bool_:
            keep = rng.random(v.type.shape) < 0.7
            keep[0] = True
            out.append(keep)
        else:
            out.append((rng.standard_normal(v.type.shape) * 4).astype(dt))
    return out


@pytest.mark.parametrize("T, dt", [("f32", np.float32), ("f64", np.float64)])
@pytest.mark.parametrize("R, W", [(1, 7), (64, 40), (512, 32), (9, 300)])  # 300: more than one stage buffer
def test_row_regions_match_the_interpreter(T, dt, R, W):
    rng = np.random.default_rng(R * W)
    for text in (SOFTMAX, LOG_SOFTMAX_AND_LSE):
        graph = _lowered(text.format(T=T, R=R, W=W), rows=True)
        arrays = _inputs(graph, rng, dt)
        if len(arrays) == 1:
            arrays[0][0, :3] = np.nan if R > 1 else arrays[0][0, :3]  # a NaN row propagates
        exe = codegen.build(graph, "native")
        assert "reduction(s) along the row" in exe.c_source()
        got = exe.run(arrays)
        expected = static.run_graph(graph, arrays)
        rtol = 3e-6 if dt == np.float32 else 1e-13
        scale = float(np.nanmax(np.abs(arrays[0])))  # x - logsumexp(x) cancels: error relative to |x|
        for g, e in zip(got, expected):
            e = np.asarray(e)
            assert np.asarray(g).dtype == e.dtype and np.shape(g) == e.shape
            np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * scale)


def test_the_max_and_the_elements_compared_with_it_are_the_same_bits():
    """eq(x, amax(x)) marks exactly the maxima: the row's values are computed once (pass 0)
    and read back, never recomputed in a later pass where they could round otherwise."""
    graph = _lowered("""
        func @f(%x: f32[256,50]) -> f32[256,50] {
          %0 = exp %x : f32[256,50]
          %1 = sin %0 : f32[256,50]
          %2 = amax %1 {dims = [1], keepdim = true} : f32[256,1]
          %3 = eq %1, %2 : bool[256,50]
          %4 = to_dtype %3 {dtype = f32} : f32[256,50]
          %5 = sub %1, %2 : f32[256,50]
          %6 = mul %4, %5 : f32[256,50]
          %7 = add %6, %4 : f32[256,50]
          return %7
        }""", rows=True)
    x = np.random.default_rng(0).standard_normal((256, 50)).astype(np.float32) * 3
    got = np.asarray(codegen.build(graph, "native").run([x])[0])
    assert ((got == 1.0).sum(axis=1) >= 1).all()  # every row has its maximum marked
    assert set(np.unique(got)) <= {0.0, 1.0}
    # where the row's largest value leads the next by more than rounding, the same one
    values = np.sin(np.exp(x.astype(np.float64)))
    top2 = np.sort(values, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-5
    np.testing.assert_array_equal(got[clear].argmax(axis=1), values[clear].argmax(axis=1))


def test_compiled_attention_softmax_and_its_gradient_equal_eager():
    def attention_weights(scores, mask):
        return eager.softmax(scores.masked_fill(mask, float("-inf")) * 0.25, dim=-1)

    rng = np.random.default_rng(1)
    scores = eager.tensor(rng.standard_normal((4, 2, 16, 16)).astype(np.float32), requires_grad=True)
    mask = eager.tensor(np.triu(np.ones((16, 16), bool), 1))
    g = eager.tensor(rng.standard_normal((4, 2, 16, 16)).astype(np.float32))
    compiled = static.compile(attention_weights, backend="native")
    y = compiled(scores, mask)
    (y * g).sum().backward()
    grad = scores.grad.numpy().copy()
    scores.grad = None
    y_eager = attention_weights(scores, mask)
    (y_eager * g).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), y_eager.detach().numpy(), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(grad, scores.grad.numpy(), rtol=2e-5, atol=1e-6)
    assert "reduction(s) along the row" in compiled.source(scores, mask)


def test_other_backends_get_no_row_regions():
    from static.executable import row_regions

    assert row_regions("native") and not row_regions("numpy") and not row_regions("cupy")
