"""Algebraic simplification: value-preserving by default, more under fast_math."""
import pytest
from passcheck import check, run


@pytest.mark.parametrize("expr", ["mul %x, 1", "mul 1.0, %x", "add %x, -0.0", "sub %x, 0.0", "div %x, 1", "pow %x, 1"])
def test_identities_fold_away(expr):
    out, stats = run("algebraic", f"""
        func @f(%x: f32[4]) -> f32[4] {{
          %0 = {expr} : f32[4]
          %1 = exp %0 : f32[4]
          return %1
        }}""")
    check(out, "CHECK: exp %x")
    assert stats["rewritten"] == 1


@pytest.mark.parametrize("expr", ["add %x, 0", "add 0.0, %x", "sub %x, -0.0"])
def test_adding_positive_zero_is_kept_for_floats_unless_fast_math(expr):
    """-0.0 + 0.0 is +0.0: folding x + 0 to x would turn the sign of negative zeros."""
    text = f"""
        func @f(%x: f32[4]) -> f32[4] {{
          %0 = {expr} : f32[4]
          %1 = exp %0 : f32[4]
          return %1
        }}"""
    _, stats = run("algebraic", text)
    assert stats["rewritten"] == 0
    out, stats = run("algebraic", text, fast_math=True)
    check(out, "CHECK: exp %x")
    assert stats["rewritten"] == 1


def test_integer_zero_is_an_identity_for_integers():
    out, stats = run("algebraic", """
        func @f(%x: i64[4]) -> i64[4] {
          %0 = add %x, 0 : i64[4]
          %1 = mul %0, 2 : i64[4]
          return %1
        }""")
    check(out, "CHECK: mul %x, 2")


@pytest.mark.parametrize("name", ["add_zero", "mul_by_one", "neg_neg", "log1p", "expm1"])
def test_each_rule_is_testable_alone(name):
    """A rule applied alone rewrites its pattern and nothing else."""
    import static
    from static.passes import algebraic, stability
    from static.passes.rules import apply_rules

    rule = {**algebraic.RULE_TABLE, **stability.RULE_TABLE}[name]
    body = {
        "add_zero": "%0 = add %x, -0.0 : f32[4]\n  %1 = neg %0 : f32[4]\n  %2 = neg %1 : f32[4]",
        "mul_by_one": "%0 = mul %x, 1 : f32[4]\n  %1 = neg %0 : f32[4]\n  %2 = neg %1 : f32[4]",
        "neg_neg": "%0 = mul %x, 1 : f32[4]\n  %1 = neg %x : f32[4]\n  %2 = neg %1 : f32[4]",
        "log1p": "%0 = mul %x, 1 : f32[4]\n  %1 = add %0, 1.0 : f32[4]\n  %2 = log %1 : f32[4]",
        "expm1": "%0 = mul %x, 1 : f32[4]\n  %1 = exp %0 : f32[4]\n  %2 = sub %1, 1 : f32[4]",
    }[name]
    g = static.parse_ir(f"func @f(%x: f32[4]) -> f32[4] {{\n  {body}\n  return %2\n}}")
    stats = apply_rules(g, [rule])
    assert stats["rewritten"] == 1 and stats["rules"] == {name: 1}


def test_broadcasting_identity_is_kept_when_it_changes_the_shape():
    out, stats = run("algebraic", """
        func @f(%x: f32[4]) -> f32[3,4] {
          %0 = full {dtype = f32, shape = [3, 4], value = 1.0} : f32[3,4]
          %1 = mul %x, %0 : f32[3,4]
          return %1
        }""")
    assert stats["rewritten"] == 0


def test_double_negation_transpose_and_reshape_chains():
    out, _ = run("algebraic", """
        func @f(%x: f32[2,3]) -> (f32[2,3], f32[2,3], f32[6]) {
          %0 = neg %x : f32[2,3]
          %1 = neg %0 : f32[2,3]
          %2 = transpose %x {dim0 = 0, dim1 = 1} : f32[3,2]
          %3 = transpose %2 {dim0 = 1, dim1 = 0} : f32[2,3]
          %4 = reshape %x {shape = [3, 2]} : f32[3,2]
          %5 = reshape %4 {shape = [6]} : f32[6]
          return %1, %3, %5
        }""")
    check(out, """
        CHECK: reshape %x {shape = [6]}
        CHECK: return %x, %x""")


def test_square_becomes_multiply():
    out, _ = run("algebraic", """
        func @f(%x: f32[4]) -> f32[4] {
          %0 = pow %x, 2 : f32[4]
          return %0
        }""")
    check(out, "CHECK: mul %x, %x\nCHECK-NOT: pow")


def test_sum_over_size_one_axes_is_a_reshape():
    out, _ = run("algebraic", """
        func @f(%x: f32[3,1]) -> f32[3] {
          %0 = sum %x {dims = [1], keepdim = false} : f32[3]
          return %0
        }""")
    check(out, "CHECK: reshape %x {shape = [3]}\nCHECK-NOT: sum")


def test_expand_then_sum_folds_only_under_fast_math():
    # summing n equal terms in NumPy's order can round differently from one product, even
    # for n a power of two, so the rewrite is value-changing
    ir = """
        func @f(%x: f32[1,3]) -> f32[1,3] {
          %0 = expand %x {shape = [4, 3]} : f32[4,3]
          %1 = sum %0 {dims = [0], keepdim = true} : f32[1,3]
          return %1
        }"""
    out, stats = run("algebraic", ir)
    assert stats["rewritten"] == 0
    check(out, "CHECK: sum")
    out, _ = run("algebraic", ir, fast_math=True)
    check(out, "CHECK: mul %x, 4.0\nCHECK-NOT: sum")


def test_broadcast_of_scalar_is_dropped():
    out, _ = run("algebraic", """
        func @f(%x: f32[2,3], %s: f32[]) -> f32[2,3] {
          %0 = expand %s {shape = [2, 3]} : f32[2,3]
          %1 = mul %x, %0 : f32[2,3]
          return %1
        }""")
    check(out, "CHECK: mul %x, %s")


def test_value_changing_rewrites_need_fast_math():
    ir = """
        func @f(%x: f32[4]) -> (f32[4], f32[4]) {
          %0 = mul %x, 0.0 : f32[4]
          %1 = sub %x, %x : f32[4]
          return %0, %1
        }"""
    _, stats = run("algebraic", ir)
    assert stats["rewritten"] == 0  # x*0 is nan for x = inf; x-x too
    out, stats = run("algebraic", ir, fast_math=True)
    assert stats["rewritten"] == 2
    check(out, "CHECK: full {dtype = f32, shape = [4], value = 0.0}")


def test_transpose_of_matmul_is_computed_in_the_transposed_layout():
    """A weight's gradient, (x^T @ g)^T, becomes g^T @ x: the product lands in the weight's
    own layout and the transposes of the operands cancel."""
    out, stats = run("algebraic", """
        func @f(%x: f32[5,3], %g: f32[5,4]) -> f32[4,3] {
          %0 = transpose %x {dim0 = 1, dim1 = 0} : f32[3,5]
          %1 = matmul %0, %g : f32[3,4]
          %2 = transpose %1 {dim0 = 0, dim1 = 1} : f32[4,3]
          return %2
        }""")
    check(out, """
        CHECK: transpose %g {dim0 = 0, dim1 = 1} : f32[4,5]
        CHECK: matmul %0, %x : f32[4,3]
        CHECK: return %1""")
    assert stats["rules"] == {"transpose_of_matmul": 1}


def test_transpose_of_matmul_values_and_what_it_leaves_alone():
    """Batched products swap too (same values); a transpose of batch axes, or a product
    that broadcasts a lower-rank operand, is left as it is."""
    import numpy as np

    import static

    text = """
        func @f(%a: f32[2,3,5], %b: f32[2,5,4], %w: f32[5,4]) -> (f32[2,4,3], f32[3,2,4], f32[2,4,3]) {
          %0 = matmul %a, %b : f32[2,3,4]
          %1 = transpose %0 {dim0 = -1, dim1 = -2} : f32[2,4,3]
          %2 = transpose %0 {dim0 = 0, dim1 = 1} : f32[3,2,4]
          %3 = matmul %a, %w : f32[2,3,4]
          %4 = transpose %3 {dim0 = 1, dim1 = 2} : f32[2,4,3]
          return %1, %2, %4
        }"""
    out, stats = run("algebraic", text)
    assert stats["rules"] == {"transpose_of_matmul": 1}
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 5), (2, 5, 4), (5, 4))]
    before = static.run_graph(static.parse_ir(text), args)
    after = static.run_graph(static.parse_ir(out), args)
    for x, y in zip(before, after):
        np.testing.assert_allclose(y, x, rtol=1e-6, atol=1e-6)
