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
