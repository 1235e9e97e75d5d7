"""A pointwise op is one record: its Python surface (eager.<name>, Tensor.<name>, the in-place
form) and its lowerings (NumPy/CuPy ufunc, the native and CUDA kernels' C expression) are
generated from it. `reciprocal` was added that way; these tests check what the record gives
and that nothing else in the packages spells it (docs/architecture.md, "How to add an op")."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import eager
import static
from eager import _surface
from eager.autograd import gradcheck
from eager.ops import REGISTRY

ROOT = Path(__file__).resolve().parents[2]


def test_reciprocal_matches_pytorch_values_gradient_and_node_name():
    torch = pytest.importorskip("torch")
    data = [0.5, -2.0, 4.0, -0.25]
    x = eager.tensor(data, requires_grad=True)
    xt = torch.tensor(data, requires_grad=True)
    y, yt = eager.reciprocal(x), torch.reciprocal(xt)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    assert y.grad_fn.name() == yt.grad_fn.name() == "ReciprocalBackward0"
    ints = eager.tensor([1, 2, 4]).reciprocal()
    assert ints.dtype == eager.float32 and ints.tolist() == torch.tensor([1, 2, 4]).reciprocal().tolist()


def test_reciprocal_in_place_form_writes_the_tensor_and_its_gradient_flows():
    torch = pytest.importorskip("torch")
    a = eager.tensor([2.0, -4.0], requires_grad=True)
    at = torch.tensor([2.0, -4.0], requires_grad=True)
    b, bt = a * 1.0, at * 1.0
    assert b.reciprocal_() is b
    bt.reciprocal_()
    b.sum().backward()
    bt.sum().backward()
    assert b.tolist() == bt.tolist() and a.grad.tolist() == at.grad.tolist()
    with pytest.raises(RuntimeError, match="leaf"):
        a.reciprocal_()


def test_reciprocal_gradient_against_finite_differences():
    x = eager.tensor(np.random.default_rng(0).uniform(0.5, 2.0, (3, 4)), dtype=eager.float64, requires_grad=True)
    assert gradcheck(eager.reciprocal, (x,))
    assert gradcheck(lambda t: t.reciprocal(), (-x.detach().requires_grad_(),))


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_reciprocal_compiles_fused_like_any_pointwise_op(backend):
    a = eager.tensor(np.linspace(0.5, 3.0, 4096, dtype=np.float32))
    fn = static.compile(lambda t: (t.reciprocal() * 2.0 + 1.0).sum(), backend=backend)
    np.testing.assert_allclose(float(fn(a)), float((a.reciprocal() * 2.0 + 1.0).sum()), rtol=1e-5)
    if backend == "native":
        assert "1 fused kernel running 4 ops" in fn.explain(a)


def test_the_record_is_the_only_place_the_op_is_spelled():
    """The count docs/architecture.md gives for a new pointwise op: one file. Any source of the
    packages (Python, C++, templates, grammar) naming the op as code - a string or an
    identifier, not a word in a comment - counts."""
    spelled = re.compile(r"[\"']reciprocal[\"']|\.reciprocal\b|\bRECIPROCAL\b")
    files = sorted(str(p.relative_to(ROOT)) for pkg in ("gmbase", "gmnative", "gmops", "eager", "static", "codegen",
                                                        "graphmode")
                   for p in (ROOT / pkg).rglob("*") if p.suffix in (".py", ".cpp", ".h", ".j2", ".lark")
                   and spelled.search(p.read_text(encoding="utf-8")))
    assert files == ["gmops/unary.py"], files
    stated = re.search(r"A new pointwise op touches \*\*(\d+) files?\*\*",
                       (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    assert stated is not None and int(stated.group(1)) == len(files), "docs/architecture.md states another count"
    op = REGISTRY["reciprocal"]
    assert op.ufunc == "reciprocal" and op.c_expr and op.fusible and op.pointwise


def test_lowering_comes_from_the_record():
    from codegen.lowering import lowering_for

    low = lowering_for("reciprocal")
    assert low.pointwise and low.numpy.ufunc == "np.reciprocal" and low.cupy.call == "cp.reciprocal({0})"
    assert low.cupy.expr == REGISTRY["reciprocal"].c_expr


def test_generated_names_never_replace_hand_written_ones_and_bad_kinds_raise():
    assert eager.exp.__module__ != "eager" or eager.exp.__name__ == "exp"  # the hand-written function stays
    assert "reciprocal" in _surface.functions() and eager.reciprocal.__name__ == "reciprocal"
    namespace = {"reciprocal": "mine"}
    assert "reciprocal" not in _surface.export_functions(namespace) and namespace["reciprocal"] == "mine"
    op = REGISTRY["reciprocal"]
    saved = op.surface
    op.surface = ("function", "operator")
    try:
        with pytest.raises(ValueError, match="operator"):
            _surface.functions()
    finally:
        op.surface = saved


def test_c_expressions_live_in_the_records():
    """The native and CUDA kernels read an op's C expression from its record; the lowering
    table spells one itself only where the text depends on the node's attributes."""
    from codegen.lowering import TABLE

    table_only = sorted(op.name for op, low in TABLE.items() if low.cupy.expr and not op.c_expr)
    assert table_only == ["clamp", "full", "full_like", "gelu", "softplus"], table_only
    for op, low in TABLE.items():
        if op.c_expr:
            assert low.cupy.expr == op.c_expr, op.name
            assert set(low.cupy.helpers) == set(re.findall(r"\bgm_\w+", op.c_expr)), op.name


@pytest.mark.parametrize("name", ["log1p", "expm1", "rsqrt", "sign", "erf", "exp2", "reciprocal"])
def test_generated_in_place_forms_match_pytorch(name):
    """In-place forms made from the records' `surface` (PyTorch has them, eager lacked them)."""
    torch = pytest.importorskip("torch")
    data = [0.5, 1.5, 2.0]
    a, at = eager.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    b, bt = a * 1.0, at * 1.0
    assert getattr(b, name + "_")() is b
    getattr(bt, name + "_")()
    (b * b).sum().backward()
    (bt * bt).sum().backward()
    np.testing.assert_allclose(b.detach().numpy(), bt.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), at.grad.numpy(), rtol=1e-5)
    assert b.grad_fn.name() == bt.grad_fn.name()
    ints, ints_t = eager.tensor([1, -2]), torch.tensor([1, -2])
    if name == "sign":  # an integer result: in place on integers, as PyTorch
        assert getattr(ints, name + "_")().tolist() == getattr(ints_t, name + "_")().tolist()
    else:
        with pytest.raises(RuntimeError, match="can't be cast"):
            getattr(ints, name + "_")()


def test_exp2_is_a_function_and_a_method_as_in_pytorch():
    torch = pytest.importorskip("torch")
    assert eager.exp2(eager.tensor([1.0, 3.0])).tolist() == torch.exp2(torch.tensor([1.0, 3.0])).tolist()
    assert eager.tensor([2.0]).exp2().tolist() == [4.0]
