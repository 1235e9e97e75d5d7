"""The IR text form: the design's example parses, bad text is an IRParseError (a ValueError)
with line, column and what was expected, a well-formed but wrong graph is a ValueError
naming the value and line, and nothing in the text is ever evaluated as Python."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_texts import LITERALS, LOSS

import eager
import static

GOOD = LOSS


def test_design_example_parses_runs_and_prints_back():
    g = static.parse_ir(GOOD)
    assert isinstance(g, static.Graph)
    assert str(g) == GOOD
    x, w = np.linspace(-1, 1, 1024, dtype=np.float32), np.ones(1024, np.float32)
    (out,) = static.run_graph(g, [x, w])
    np.testing.assert_allclose(out, (np.tanh(x * x) * w).sum(), rtol=1e-5)


def test_literals_and_attributes_round_trip():
    text = LITERALS
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


# -- the contract: only ValueErrors with a position, for any text ------------------------------
_H = "func @f(%x: f32[3]) -> f32[3] {\n"


def _fused_nest(depth: int) -> str:
    body = ""
    for i in range(depth):
        body += "{\n ^body(%a" + str(i) + ": f32[3]):\n %b" + str(i) + " = fused %a" + str(i) + " : f32[3] "
    body += "{\n ^body(%z: f32[3]):\n yield %z\n}"
    for i in reversed(range(depth)):
        body += "\n yield %b" + str(i) + "\n}"
    return _H + "  %0 = fused %x : f32[3] " + body + "\n  return %0\n}"


ESCAPES = {  # each raised something other than a ValueError before
    "3000-deep list literal": (_H + "  %0 = sum %x {dims = " + "[" * 3000 + "]" * 3000
                               + ", keepdim = false} : f32[]\n  return %0\n}", "nested"),
    "400-deep fused nesting": (_fused_nest(400), "nested"),
    "5000-digit integer": (_H + "  %0 = add %x, " + "9" * 5000 + " : f32[3]\n  return %0\n}", "digits"),
    "5000-digit dimension": ("func @f(%x: f32[" + "9" * 5000 + "]) -> f32[3] {\n  return %x\n}", "digits"),
    "bad string escape": (_H + '  %0 = gelu %x {approximate = "\\q"} : f32[3]\n  return %0\n}', "string"),
    "dtype given as a number": (_H + "  %0 = to_dtype %x {dtype = 3} : f32[3]\n  return %0\n}", "dtype"),
    "literal where a tensor is required": (_H + "  %0 = exp 3 : f32[3]\n  return %0\n}", "literal"),
    "literal first operand of index": ("func @f(%i: i64[2]) -> f32[2] {\n  %0 = index 3, %i {key = [[\"tensor\", 0]], "
                                       "n_index = 1} : f32[2]\n  return %0\n}", "operand 0 is the literal 3"),
    "fused body yielding a literal": (_H + "  %0 = fused %x : f32[3] {\n    ^body(%a: f32[3]):\n    yield 3\n  }\n"
                                      "  return %0\n}", "yields the literal"),
    "returning a literal": (_H + "  return 3\n}", "returns the literal"),
    "slice bound 1e20": ("func @f(%x: f32[4]) -> f32[3] {\n  %0 = index %x {key = [[\"slice\", none, 1e20, 1]], "
                         "n_index = 0} : f32[3]\n  return %0\n}", "slice"),
    "slice bound 10**20": ("func @f(%x: f32[4]) -> f32[4] {\n  %0 = index %x {key = [[\"slice\", none, "
                           "100000000000000000000, 1]], n_index = 0} : f32[4]\n  return %0\n}", None),
    "more elements than int64 counts": ("func @f(%x: f32[4294967296,4294967296]) -> f32[3] {\n  return %x\n}",
                                        "int64"),
    "malformed index key": ("func @f(%x: f32[4]) -> f32[] {\n  %0 = index %x {key = [[\"frob\"]], n_index = 0} : "
                            "f32[]\n  return %0\n}", "index"),
}


@pytest.mark.parametrize("name", list(ESCAPES))
def test_bad_text_raises_only_value_errors_with_line_and_column(name):
    text, fragment = ESCAPES[name]
    try:
        static.parse_ir(text)
    except (static.IRParseError, static.IRVerifyError) as exc:
        assert exc.line is not None and exc.column is not None, str(exc)
        assert str(exc).startswith(f"line {exc.line}")
        if fragment is not None:
            assert fragment in str(exc), str(exc)
    else:
        assert fragment is None, f"{name} parsed"


@pytest.mark.parametrize("operand, fragment", [
    ('"abc"', 'literal "abc"'), ("none", "literal none"), ("[1, 2]", "literal [1, 2]"), ("f32", "literal f32"),
])
def test_literal_operands_must_be_numbers(operand, fragment):
    for op in ("mul", "add"):
        _verify_error(f"{_H}  %0 = {op} %x, {operand} : f32[3]\n  return %0\n}}", "line 2", op, fragment, "number")


@pytest.mark.parametrize("attrs, fragment", [
    ('{dtype = f32, shape = [3], value = "x"}', 'value = "x" must be a number'),
    ("{dtype = f32, shape = [3], value = none}", "value = none must be a number"),
    ("{dtype = f32, shape = 3, value = 1.0}", "shape = 3 must be a list of integers"),
    ("{dtype = 1.0, shape = [3], value = 1.0}", "dtype = 1.0 must be a dtype"),
])
def test_attributes_must_hold_their_kind(attrs, fragment):
    _verify_error(f"func @f() -> f32[3] {{\n  %0 = full {attrs} : f32[3]\n  return %0\n}}", "line 2", "full", fragment)


def test_return_count_or_types_differing_from_the_signature_is_a_verify_error():
    _verify_error(_H + "  return %x, %x\n}", "line 2", "declares results (f32[3])", "returns (%x: f32[3], %x: f32[3])")
    _verify_error("func @f(%x: f32[3]) -> (f32[3], f32[3]) {\n  return %x\n}", "declares results (f32[3], f32[3])")
    _verify_error("func @f(%x: f32[3]) -> f64[3] {\n  return %x\n}", "declares results (f64[3])")


def test_verifier_refuses_a_graph_returning_a_literal():
    g = static.trace(lambda x: eager.exp(x), eager.ones(3))
    g.outputs = [3.0]
    with pytest.raises(static.IRVerifyError, match="returns the literal 3.0"):
        static.verify(g)


@pytest.mark.parametrize("s", ["plain", 'quo"te', "back\\slash", "new\nline", "tab\t", "\x00\x1f", "é ü 中",
                               "\ud800", "\\q", "\\u12"])
def test_printed_strings_parse_back(s):
    """A string literal prints with escapes the parser reads back to the same string; the
    verifier's refusal shows the exact string it read."""
    g = static.trace(lambda x: eager.exp(x), eager.ones(3))
    g.nodes[0].inputs = [g.inputs[0]]
    g.nodes[0].attrs = {}
    text = str(g).replace("exp %x", f"mul %x, {static.ir.core.format_literal(s)}")
    with pytest.raises(static.IRVerifyError) as info:
        static.parse_ir(text)
    assert f"literal {static.ir.core.format_literal(s)};" in str(info.value)
    assert static.parse_ir(text.replace(static.ir.core.format_literal(s), "2.0")).nodes[0].inputs[1] == 2.0


def test_escaped_string_attribute_round_trips():
    text = _H + '  %0 = gelu %x {approximate = "t\\u0061nh"} : f32[3]\n  return %0\n}'
    g = static.parse_ir(text)
    assert g.nodes[0].attrs["approximate"] == "tanh"
    assert str(static.parse_ir(str(g))) == str(g)


def test_huge_index_operand_is_verified_without_allocating():
    """A 200-byte text declaring an index operand of 10^10 elements: the verifier works on
    shapes. Run in a subprocess under a 3 GiB address-space limit, so that a regression
    fails this test instead of exhausting the machine's memory."""
    import subprocess
    import sys
    from pathlib import Path

    text = ("func @f(%x: f32[3], %i: i64[100000,100000]) -> f32[100000,100000] {\n"
            "  %0 = index %x, %i {key = [[\"tensor\", 0]], n_index = 1} : f32[100000,100000]\n  return %0\n}")
    script = ("import resource, sys\n"
              "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
              "import static\n"
              f"g = static.parse_ir({text!r})\n"
              "print(g.outputs[0].type.shape)\n")
    root = Path(__file__).resolve().parents[2]
    env = {"PYTHONPATH": str(root), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split("\n")[0] == "(100000, 100000)"


_entry = st.one_of(
    st.tuples(st.just("int"), st.integers(-4, 4)),
    st.tuples(st.just("slice"), *[st.sampled_from([None, -7, -1, 0, 1, 2, 9])] * 2,
              st.sampled_from([None, 1, 2, -1, 3])),
    st.just(("none",)), st.just(("ellipsis",)), st.tuples(st.just("tensor"), st.integers(0, 2)),
)


@settings(max_examples=300, deadline=None)
@given(shape=st.lists(st.sampled_from([0, 1, 2, 3, 5]), max_size=4), key=st.lists(_entry, max_size=5),
       index_shapes=st.lists(st.lists(st.integers(0, 3), max_size=2), min_size=3, max_size=3))
def test_index_rule_gives_numpys_shape_without_arrays(shape, key, index_shapes):
    """The abstract rule of `index` computes the shape NumPy's indexing gives, from shapes only."""
    from eager.ops.shape_ops import build_key, index_shape

    probe = np.broadcast_to(np.empty((), np.float32), tuple(shape))
    arrays = [np.zeros(s, np.int64) for s in index_shapes]
    try:
        expected = probe[build_key(key, arrays)].shape
    except (IndexError, ValueError, TypeError) as exc:
        with pytest.raises(type(exc) if not isinstance(exc, ValueError) else (ValueError, IndexError)):
            index_shape(tuple(shape), key, [tuple(s) for s in index_shapes])
        return
    assert index_shape(tuple(shape), key, [tuple(s) for s in index_shapes]) == expected
