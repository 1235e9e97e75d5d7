"""dce, cse and constant folding, as text in / text out."""
from passcheck import check, run


def test_dce_removes_unused_chain():
    out, stats = run("dce", """
        func @f(%x: f32[4]) -> f32[4] {
          %0 = exp %x : f32[4]
          %1 = sin %0 : f32[4]
          %2 = cos %x : f32[4]
          return %2
        }""")
    check(out, """
        CHECK-NOT: exp
        CHECK-NOT: sin
        CHECK: cos %x
        CHECK: return""")
    assert stats["removed"] == 2


def test_cse_merges_commutative_operands():
    out, stats = run("cse", """
        func @f(%x: f32[4], %y: f32[4]) -> f32[4] {
          %0 = mul %x, %y : f32[4]
          %1 = mul %y, %x : f32[4]
          %2 = add %0, %1 : f32[4]
          return %2
        }""")
    check(out, """
        CHECK: %0 = mul %x, %y
        CHECK-NOT: mul %y, %x
        CHECK: add %0, %0""")
    assert stats["merged"] == 1


def test_cse_keeps_non_commutative_and_different_attributes():
    out, stats = run("cse", """
        func @f(%x: f32[4,2], %y: f32[4,2]) -> (f32[4,2], f32[4,2], f32[2], f32[4]) {
          %0 = sub %x, %y : f32[4,2]
          %1 = sub %y, %x : f32[4,2]
          %2 = sum %x {dims = [0], keepdim = false} : f32[2]
          %3 = sum %x {dims = [1], keepdim = false} : f32[4]
          return %0, %1, %2, %3
        }""")
    assert stats["merged"] == 0
    check(out, "CHECK: sub %x, %y\nCHECK: sub %y, %x")


def test_fold_full_like_no_longer_reads_its_operand():
    out, stats = run("fold", """
        func @f(%x: f32[3]) -> f32[3] {
          %0 = exp %x : f32[3]
          %1 = full_like %0 {value = 2.0} : f32[3]
          return %1
        }""")
    check(out, "CHECK: full {dtype = f32, shape = [3], value = 2.0}")
    assert stats["folded"] == 1


def test_fold_elementwise_of_splats_and_shape_ops():
    out, _ = run("fold", """
        func @f(%x: f32[2,3]) -> f32[2,3] {
          %0 = full {dtype = f32, shape = [3], value = 2.0} : f32[3]
          %1 = mul %0, 3.0 : f32[3]
          %2 = reshape %1 {shape = [1, 3]} : f32[1,3]
          %3 = expand %2 {shape = [2, 3]} : f32[2,3]
          %4 = add %x, %3 : f32[2,3]
          return %4
        }""")
    check(out, """
        CHECK: full {dtype = f32, shape = [2, 3], value = 6.0}
        CHECK: add %x""")


def test_fold_respects_float32_rounding():
    out, _ = run("fold", """
        func @f(%x: f32[2]) -> f32[2] {
          %0 = full {dtype = f64, shape = [2], value = 0.1} : f64[2]
          %1 = to_dtype %0 {dtype = f32} : f32[2]
          %2 = add %x, %1 : f32[2]
          return %2
        }""")
    check(out, "CHECK: value = 0.10000000149011612")
