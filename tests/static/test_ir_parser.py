"""The IR text form: the design's example parses, bad text is an IRParseError (a ValueError)
with line, column and what was expected, a well-formed but wrong graph is a ValueError
naming the value and line, and nothing in the text is ever evaluated as Python."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static

GOOD = """func @loss(%x: f32[1024], %w: f32[1024]) -> f32[] {
  %0 = mul %x, %x : f32[1024]
  %1 = tanh %0 : f32[1024]
  %2 = mul %1, %w : f32[1024]
  %3 = sum %2 {dims = [0], keepdim = false} : f32[]
  return %3
}"""


def test_design_example_parses_runs_and_prints_back():
    g = static.parse_ir(GOOD)
    assert isinstance(g, static.Graph)
    assert str(g) == GOOD
    x, w = np.linspace(-1, 1, 1024, dtype=np.float32), np.ones(1024, np.float32)
    (out,) = static.run_graph(g, [x, w])
    np.testing.assert_allclose(out, (np.tanh(x * x) * w).sum(), rtol=1e-5)


def test_literals_and_attributes_round_trip():
    text = """func @lits(%x: f64[2,3], %i: i64[2]) -> (f64[2,3], f64[2,3], f64[3], bool[2,3]) {
  %0 = add %x, -2.5e-07 : f64[2,3]
  %1 = clamp %0 {max = inf, min = -inf} : f64[2,3]
  %2 = index %1, %i {key = [["tensor", 0], ["slice", none, 3, 1]], n_index = 1} : f64[2,3]
  %3 = sum %2 {dims = [0], keepdim = false} : f64[3]
  %4 = gt %2, 0 : bool[2,3]
  return %0, %2, %3, %4
}"""
    g = static.parse_ir(text)
    assert str(g) == text
    assert g.nodes[0].inputs[1] == -2.5e-07
    assert g.nodes[1].attrs == {"max": float("inf"), "min": float("-inf")}
    assert g.nodes[2].attrs["key"] == (("tensor", 0), ("slice", None, 3, 1))


def test_comments_and_whitespace_are_ignored():
    text = GOOD.replace("{\n", "{  // the loss\n", 1).replace("  %1", "\n\n  # a comment\n  %1")
    assert str(static.parse_ir(text)) == GOOD


def _parse_error(text) -> static.IRParseError:
    with pytest.raises(static.IRParseError) as info:
        static.parse_ir(text)
    assert isinstance(info.value, ValueError)
    return info.value


def test_missing_result_type_reports_line_column_and_what_was_expected():
    err = _parse_error("func @f(%x: f32[3]) -> f32[3] {\n  %0 = exp %x\n  return %0\n}")
    assert (err.line, err.column) == (3, 3)
    msg = str(err)
    assert msg.startswith("line 3:3:")
    assert "unexpected 'return'" in msg and "':'" in msg and "expected" in msg
    assert "  return %0\n    ^" in msg  # the offending line, with a pointer under the column


def test_unknown_dtype_is_a_parse_error():
    err = _parse_error("func @f(%x: f33[3]) -> f32[3] {\n  return %x\n}")
    assert (err.line, err.column) == (1, 13)
    assert "f33" in str(err) and "dtype" in str(err)


def test_truncated_text_is_unexpected_end_of_input():
    err = _parse_error("func @f(%x: f32[3]) -> f32[3] {\n  %0 = exp %x : f32[3]\n")
    assert err.line == 2
    assert "end of input" in str(err) and "'return'" in str(err)


def test_stray_character_is_reported_with_its_column():
    err = _parse_error("func @f(%x: f32[3]) -> f32[3] { $ }")
    assert (err.line, err.column) == (1, 33)
    assert "'$'" in str(err)


@pytest.mark.parametrize("text", [
    "__import__('os').system('touch pwned')",
    "func @f(%x: f32[3]) -> f32[3] {\n  %0 = exp %x {a = __import__('os').system('touch pwned')} : f32[3]\n"
    "  return %0\n}",
    "func @f(%x: f32[3]) -> f32[3] {\n  %0 = exp %x {a = (lambda: 1)()} : f32[3]\n  return %0\n}",
])
def test_python_in_the_text_is_only_a_parse_error(text, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = _parse_error(text)
    assert err.line is not None and err.column is not None
    assert not (tmp_path / "pwned").exists()


def test_a_string_attribute_stays_a_string_and_is_refused_by_the_op():
    text = 'func @f(%x: f32[3]) -> f32[3] {\n  %0 = exp %x {a = "__import__(\'os\')"} : f32[3]\n  return %0\n}'
    with pytest.raises(ValueError, match=r"line 2: exp producing %0: .*unexpected keyword argument 'a'"):
        static.parse_ir(text)


def _verify_error(text, *fragments):
    with pytest.raises(static.IRVerifyError) as info:
        static.parse_ir(text)
    assert isinstance(info.value, ValueError)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_unknown_op_names_the_op_value_and_line():
    _verify_error("func @f(%x: f32[3]) -> f32[3] {\n  %0 = exp %x : f32[3]\n  %1 = frobnicate %0 : f32[3]\n"
                  "  return %1\n}", "line 3", "unknown op 'frobnicate'", "%1")


def test_undefined_value_names_the_value_and_line():
    _verify_error("func @f(%x: f32[3]) -> f32[3] {\n  %0 = exp %y : f32[3]\n  return %0\n}", "line 2", "%y")


def test_use_before_definition_is_an_error():
    _verify_error("func @f(%x: f32[3]) -> f32[3] {\n  %0 = exp %1 : f32[3]\n  %1 = exp %x : f32[3]\n  return %0\n}",
                  "line 2", "%1")


def test_shape_mismatch_names_the_value_and_line():
    _verify_error("func @f(%x: f32[3]) -> f32[4] {\n  %0 = exp %x : f32[4]\n  return %0\n}",
                  "line 2", "%0", "f32[4]", "f32[3]")


def test_dtype_mismatch_names_the_value_and_line():
    _verify_error("func @f(%x: f32[3]) -> f64[3] {\n  %0 = exp %x : f64[3]\n  return %0\n}", "line 2", "%0", "f64[3]")


def test_declared_results_must_match_the_returned_values():
    _verify_error("func @f(%x: f32[3]) -> f64[3] {\n  %0 = exp %x : f32[3]\n  return %0\n}", "line 3", "%0", "f64[3]")


def test_redefinition_breaks_ssa():
    _verify_error("func @f(%x: f32[3]) -> f32[3] {\n  %0 = exp %x : f32[3]\n  %0 = exp %0 : f32[3]\n  return %0\n}",
                  "line 3", "%0", "twice")
    _verify_error("func @f(%x: f32[3], %x: f32[3]) -> f32[3] {\n  return %x\n}", "%x", "twice")


def test_wrong_operand_count_or_bad_attribute_is_an_error():
    _verify_error("func @f(%x: f32[3]) -> f32[3] {\n  %0 = add %x : f32[3]\n  return %0\n}", "line 2", "add", "%0")
    _verify_error("func @f(%x: f32[3,4]) -> f32[] {\n  %0 = sum %x {dims = [5], keepdim = false} : f32[]\n"
                  "  return %0\n}", "line 2", "sum", "%0", "out of range")


def test_verifier_checks_graphs_built_in_python_too():
    g = static.trace(lambda x: eager.exp(x) * 2, eager.ones(3))
    static.verify(g)
    g.nodes[0].outputs[0].type = eager.ops.TensorSpec((4,), eager.float32)
    with pytest.raises(static.IRVerifyError, match="declared f32.4. but exp gives f32.3."):
        static.verify(g)
