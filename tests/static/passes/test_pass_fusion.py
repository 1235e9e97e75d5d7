"""Fusion: chains, siblings, reductions with prologue and epilogue, and the rejections."""
import numpy as np
from passcheck import check, run

import static
from static.interpreter import run_graph


def test_elementwise_chain_becomes_one_region():
    out, stats = run("fuse", """
        func @f(%x: f32[8], %w: f32[8]) -> f32[8] {
          %0 = mul %x, %x : f32[8]
          %1 = tanh %0 : f32[8]
          %2 = mul %1, %w : f32[8]
          return %2
        }""")
    assert stats["regions"] == 1 and stats["fused_ops"] == 3
    check(out, """
        CHECK: = fused %x, %w : f32[8] {
        CHECK: ^body(
        CHECK: mul
        CHECK: tanh
        CHECK: mul
        CHECK: yield
        CHECK: return""")


def test_siblings_sharing_an_input_fuse():
    out, stats = run("fuse", """
        func @f(%x: f32[8]) -> (f32[8], f32[8]) {
          %0 = sin %x : f32[8]
          %1 = cos %x : f32[8]
          return %0, %1
        }""")
    assert stats["regions"] == 1
    check(out, "CHECK: = fused %x : f32[8], f32[8] {\nCHECK: sin\nCHECK: cos\nCHECK: yield")


def test_producers_fuse_into_reduction_and_epilogue_after_it():
    out, stats = run("fuse", """
        func @f(%x: f32[4,8]) -> f32[4] {
          %0 = exp %x : f32[4,8]
          %1 = sum %0 {dims = [1], keepdim = false} : f32[4]
          %2 = log %1 : f32[4]
          return %2
        }""")
    assert stats["regions"] == 1 and stats["fused_ops"] == 3
    check(out, "CHECK: fused %x : f32[4] {\nCHECK: exp\nCHECK: sum\nCHECK: log\nCHECK: yield")


def test_cycle_is_refused_and_explained():
    # add(sin(exp(x)), sum(exp(x))): fusing exp with add through the reduction would
    # need the fused node to run both before and after the (unfusible-here) sum path.
    text = """
        func @f(%x: f32[8]) -> f32[8] {
          %0 = exp %x : f32[8]
          %1 = sin %0 : f32[8]
          %2 = sum %0 {dims = none, keepdim = false} : f32[]
          %3 = add %1, %2 : f32[8]
          return %3
        }"""
    out, stats = run("fuse", text)
    graph = static.parse_ir(out)
    x = np.linspace(-1, 1, 8).astype(np.float32)
    expected = np.sin(np.exp(x)) + np.exp(x).sum()
    assert np.allclose(run_graph(graph, [x])[0], expected, rtol=1e-6)
    assert any("cycle" in r or "reduced value" in r or "iteration" in r for r in stats["why_not_fused"])


def test_cycle_through_unfusible_op_is_refused():
    out, stats = run("fuse", """
        func @f(%x: f32[4,4]) -> f32[4,4] {
          %0 = exp %x : f32[4,4]
          %1 = matmul %0, %0 : f32[4,4]
          %2 = add %0, %1 : f32[4,4]
          return %2
        }""")
    # exp -> add would put matmul's operand and its consumer in one node: a cycle
    assert stats["regions"] == 0
    assert any("cycle" in r for r in stats["why_not_fused"])
    assert any("matmul (linalg) is not fusible" in r for r in stats["why_not_fused"])


def test_different_iteration_spaces_do_not_fuse():
    out, stats = run("fuse", """
        func @f(%x: f32[4,8], %y: f32[8]) -> (f32[4,8], f32[8]) {
          %0 = exp %y : f32[8]
          %1 = mul %x, %0 : f32[4,8]
          return %1, %0
        }""")
    assert stats["regions"] == 0
    assert any("iteration spaces differ" in r for r in stats["why_not_fused"])


def test_size_cap(monkeypatch):
    import static.passes.fusion as fusion

    monkeypatch.setattr(fusion, "MAX_FUSED_OPS", 2)
    out, stats = run("fuse", """
        func @f(%x: f32[8]) -> f32[8] {
          %0 = exp %x : f32[8]
          %1 = sin %0 : f32[8]
          %2 = cos %1 : f32[8]
          return %2
        }""")
    assert stats["fused_ops"] == 2
    assert any("size cap" in r for r in stats["why_not_fused"])


SCALAR_STEPS = """
    func @f(%s1: f64[], %s2: f64[], %s3: f64[], %lr: f64[], %x: f32[8]) -> (f64[], f64[], f64[], f64[], f64[], f64[], f32[8]) {
      %0 = add %s1, 1.0 : f64[]
      %1 = mul %0, %lr : f64[]
      %2 = add %s2, 1.0 : f64[]
      %3 = mul %2, %lr : f64[]
      %4 = add %s3, 1.0 : f64[]
      %5 = sum %x {dims = none, keepdim = false} : f32[]
      %6 = to_dtype %5 {dtype = f64} : f64[]
      %7 = mul %4, %6 : f64[]
      %8 = exp %x : f32[8]
      return %0, %1, %2, %3, %4, %7, %8
    }"""


def test_independent_scalar_chains_on_inputs_become_one_region():
    """An optimizer's per-parameter step counts and bias corrections (0-d arithmetic on graph
    inputs) are one region, not one per parameter; a 0-d chain that reads a computed value
    (%7 reads a reduction) and work over other spaces stay apart; the values are the bits of
    the unfused graph."""
    graph = static.parse_ir(SCALAR_STEPS)
    out, stats = run("fuse", SCALAR_STEPS)
    regions = [line for line in out.splitlines() if "= fused" in line]
    on_inputs = [r for r in regions if "%s1" in r or "%s2" in r]
    assert len(on_inputs) == 1 and "%s2" in on_inputs[0] and "%s1" in on_inputs[0] and "%lr" in on_inputs[0], out
    # %s3's chain joined %7, which reads the reduction: not a region of inputs alone
    assert not any("%s3" in r for r in on_inputs)
    fused = static.parse_ir(out)
    rng = np.random.default_rng(0)
    args = [np.array(rng.standard_normal()) for _ in range(4)] + [rng.standard_normal(8).astype(np.float32)]
    for want, got in zip(run_graph(graph, args), run_graph(fused, args)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_scalar_chains_that_depend_on_each_other_through_other_work_stay_apart():
    out, _ = run("fuse", """
        func @f(%s: f64[], %x: f64[8]) -> (f64[], f64[]) {
          %0 = add %s, 1.0 : f64[]
          %1 = mul %x, %0 : f64[8]
          %2 = sum %1 {dims = none, keepdim = false} : f64[]
          %3 = mul %2, 2.0 : f64[]
          return %0, %3
        }""")
    static.verify(static.parse_ir(out))  # no cycle: %3's chain reads %2, computed from %0
