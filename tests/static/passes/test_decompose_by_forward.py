"""Composites written once: the decompose pass gets an op's decomposition by running the op
record's own forward on IR values (static/passes/ir_namespace.py), so the formula lives in the
record only. These tests change a record's forward and watch the decomposition follow it, and
check the values are the forward's to the bit."""
from __future__ import annotations

import numpy as np
import pytest
from passcheck import check, run

import eager
import static
from gmops import REGISTRY
from static.passes import PASSES
from static.passes.ir_namespace import IRNamespace, NotDecomposable, decompose_by_forward

SOFTPLUS = """
func @f(%x: f32[8]) -> f32[8] {
  %0 = softplus %x {beta = 2.0, threshold = 3.0} : f32[8]
  return %0
}
"""


def test_softplus_decomposes_into_its_forwards_steps_in_order():
    out, stats = run("decompose", SOFTPLUS)
    assert stats["rules"] == {"softplus": 1}
    check(out, """
        CHECK: mul %x, 2.0
        CHECK: abs
        CHECK: neg
        CHECK: exp
        CHECK: log1p
        CHECK: maximum
        CHECK: add
        CHECK: div
        CHECK: gt
        CHECK: where
        CHECK-NOT: softplus
    """)


def test_the_decomposition_follows_the_records_forward(monkeypatch):
    """No second copy of the formula: a different forward gives a different decomposition."""
    op = REGISTRY["softplus"]

    def plain(xp, x, beta=1.0, threshold=20.0):  # the textbook formula (overflows: not the record's)
        return xp.log1p(xp.exp(x * beta)) / beta

    monkeypatch.setattr(op, "forward", plain)
    out, _ = run("decompose", SOFTPLUS)
    check(out, """
        CHECK: mul %x, 2.0
        CHECK: exp
        CHECK: log1p
        CHECK: div
        CHECK-NOT: abs
        CHECK-NOT: where
        CHECK-NOT: softplus
    """)


def test_a_forward_the_ir_cannot_spell_is_left_as_the_library_call(monkeypatch):
    op = REGISTRY["softplus"]
    monkeypatch.setattr(op, "forward", lambda xp, x, beta=1.0, threshold=20.0: xp.frobnicate(x))
    out, stats = run("decompose", SOFTPLUS)
    assert stats["rewritten"] == 0 and "softplus %x" in out
    monkeypatch.setattr(op, "forward", lambda xp, x, beta=1.0, threshold=20.0: x if x else x)  # branches on data
    out, stats = run("decompose", SOFTPLUS)
    assert stats["rewritten"] == 0 and "softplus %x" in out


def test_the_namespace_refuses_what_it_cannot_spell():
    ns = IRNamespace(ctx=None)
    with pytest.raises(NotDecomposable, match="frobnicate"):
        ns.frobnicate  # noqa: B018
    with pytest.raises(NotDecomposable, match="keywords"):
        ns.exp(1.0, where=True)
    assert decompose_by_forward  # (the rule's entry point, used by static/passes/decompose.py)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 3.0), (0.5, 1.0)])
def test_compiled_softplus_is_eagers_to_the_bit(dtype, beta, threshold):
    x = eager.tensor(np.linspace(-40.0, 40.0, 997).astype(dtype))

    def f(t):
        return eager.nn.functional.softplus(t, beta=beta, threshold=threshold) * 3.0

    compiled = static.compile(f, backend="numpy")
    np.testing.assert_array_equal(compiled(x).numpy(), f(x).numpy())
    assert "softplus" not in [n.op for n in compiled.ir(x).nodes]


def test_decomposed_softplus_gradient_matches_eager():
    x = eager.tensor(np.linspace(-5.0, 5.0, 33), dtype=eager.float64, requires_grad=True)

    def loss(t):
        return eager.nn.functional.softplus(t, beta=1.5, threshold=2.0).sum()

    g_compiled = static.grad(loss)(x.detach())
    loss(x).backward()
    np.testing.assert_allclose(g_compiled.numpy(), x.grad.numpy(), rtol=1e-12)
    assert PASSES["decompose"]  # the pass these graphs went through


REDUCTIONS = [
    ("softmax", "{dim = 1}", "f64[3,5]"),
    ("softmax", "{dim = 0}", "f64[3,5]"),
    ("log_softmax", "{dim = 1}", "f64[3,5]"),
    ("logsumexp", "{dims = [1], keepdim = false}", "f64[3]"),
    ("logsumexp", "{dims = [0, 1], keepdim = true}", "f64[1,1]"),
    ("logsumexp", "{dims = none, keepdim = false}", "f64[]"),
]


@pytest.mark.parametrize("op,attrs,out", REDUCTIONS)
def test_reductions_decompose_by_their_forward_to_the_bit(op, attrs, out):
    g = static.parse_ir(f"func @f(%x: f64[3,5]) -> {out} {{\n  %0 = {op} %x {attrs} : {out}\n  return %0\n}}")
    x = np.random.default_rng(3).standard_normal((3, 5)) * 4.0
    x[1, 2] = -np.inf  # amax's non-finite guard (where(m - m == 0, m, 0)) is the forward's isfinite
    expected = static.run_graph(g, [x])[0]
    stats = PASSES["decompose"](g)
    static.verify(g)
    assert stats["rules"] == {op: 1} and op not in [n.op for n in g.nodes]
    assert "isfinite" not in [n.op for n in g.nodes]  # spelled in fusible ops
    np.testing.assert_array_equal(static.run_graph(g, [x])[0], expected)


def test_no_decomposition_is_written_in_the_pass():
    """Every rule of the decompose pass runs a record's forward: the module builds no node."""
    import inspect

    from static.passes import decompose

    assert "emit(" not in inspect.getsource(decompose)
    assert {r.name for r in decompose.RULES} == {"softmax", "log_softmax", "logsumexp", "gelu", "softplus"}


LOG_SIGMOID = """
func @f(%x: f32[8]) -> f32[8] {
  %0 = sigmoid %x : f32[8]
  %1 = log %0 : f32[8]
  return %1
}
"""


def test_log_sigmoid_rule_is_eagers_composite_run_on_ir(monkeypatch):
    """The stability rule's replacement for log(sigmoid x) is eager's logsigmoid composite run
    on IR values (-softplus(-x)): change the composite and the rewrite follows it."""
    out, stats = run("stability", LOG_SIGMOID)
    assert stats["rules"] == {"log_sigmoid": 1}
    check(out, """
        CHECK: neg %x
        CHECK: softplus
        CHECK: neg
        CHECK-NOT: sigmoid %x
    """)
    import eager.nn.functional as EF

    monkeypatch.setattr(EF, "logsigmoid", lambda t: t - EF.softplus(t))  # log(sigmoid x) = x - softplus(x)
    out, _ = run("stability", LOG_SIGMOID)
    check(out, """
        CHECK: softplus %x
        CHECK: sub %x
        CHECK-NOT: neg
    """)


def test_log_sigmoid_rewrite_keeps_eagers_values():
    x = eager.tensor(np.linspace(-120.0, 120.0, 241).astype(np.float32))

    def f(t):
        return eager.log(eager.sigmoid(t))

    got = static.compile(f, backend="numpy")(x).numpy()
    assert np.isinf(f(x).numpy()).any()  # eager as written: sigmoid(-120) is 0 in float32, its log -inf
    np.testing.assert_allclose(got, eager.nn.functional.logsigmoid(x).numpy(), rtol=1e-6)  # the stable form
