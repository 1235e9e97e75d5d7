"""Every op in the registry, checked the same way: forward against its abstract rule, VJP
against central finite differences (float64), and second order for elementwise ops.
A new op is covered as soon as it is declared; one without samples fails here."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.ops import REGISTRY, TensorSpec

OPS = sorted(REGISTRY)


def _samples(op):
    rng = np.random.default_rng(0)
    return op.samples(rng)


def _to_operands(arrays, requires_grad):
    out = []
    for a in arrays:
        if isinstance(a, np.ndarray):
            t = eager.tensor(a)
            if requires_grad and t.is_floating_point():
                t.requires_grad_(True)
            out.append(t)
        else:
            out.append(a)
    return out


@pytest.mark.parametrize("name", OPS)
def test_op_declares_samples(name):
    assert REGISTRY[name].samples is not None, f"op {name} has no samples: it cannot be checked"


@pytest.mark.parametrize("name", OPS)
def test_forward_matches_abstract_rule(name):
    op = REGISTRY[name]
    for arrays, attrs in _samples(op):
        operands = _to_operands(arrays, requires_grad=False)
        out = op(*operands, **attrs)
        specs = [TensorSpec(tuple(o.shape), o.dtype) if isinstance(o, eager.Tensor) else o for o in operands]
        expected = op.abstract(*specs, **attrs)
        outs = out if isinstance(out, tuple) else (out,)
        exp = (expected,) if isinstance(expected, TensorSpec) else expected
        for o, e in zip(outs, exp):
            assert tuple(o.shape) == tuple(e.shape), (name, attrs)
            assert o.dtype == e.dtype, (name, attrs)


def _differentiable(op):
    return op.vjp is not None and op.differentiable_order > 0 and op.name not in ("to_device",)


@pytest.mark.parametrize("name", [n for n in OPS if _differentiable(REGISTRY[n])])
def test_vjp_matches_finite_differences(name):
    op = REGISTRY[name]
    for arrays, attrs in _samples(op):
        operands = _to_operands(arrays, requires_grad=True)
        wrt = [o for o in operands if isinstance(o, eager.Tensor) and o.requires_grad]

        def fn(*xs, _ops=operands, _wrt=wrt, _attrs=attrs):
            it = iter(xs)
            args = [next(it) if (isinstance(o, eager.Tensor) and o.requires_grad) else o for o in _ops]
            out = op(*args, **_attrs)
            if isinstance(out, tuple):
                return tuple(o for o in out if o.is_floating_point())
            return out

        tol = dict(atol=1e-4, rtol=1e-3) if name == "to_dtype" else {}
        assert eager.autograd.gradcheck(fn, tuple(wrt), eps=1e-6 if not tol else 1e-2, **tol), (name, attrs)


SECOND_ORDER = [n for n in OPS if REGISTRY[n].kind == "elementwise" and _differentiable(REGISTRY[n])
                and n not in ("to_dtype", "sign")]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_matches_finite_differences(name):
    op = REGISTRY[name]
    arrays, attrs = _samples(op)[0]
    operands = _to_operands(arrays, requires_grad=True)
    wrt = [o for o in operands if isinstance(o, eager.Tensor) and o.requires_grad]

    def fn(*xs):
        it = iter(xs)
        args = [next(it) if (isinstance(o, eager.Tensor) and o.requires_grad) else o for o in operands]
        return op(*args, **attrs)

    assert eager.autograd.gradgradcheck(fn, tuple(wrt)), name


# -- the facts passes and generators ask the record ------------------------------------------
def _positional_operands(op):
    return {len(arrays) for arrays, _ in _samples(op)}


@pytest.mark.parametrize("name", OPS)
def test_op_declares_complete_facts(name):
    """Every fact has a value of its type, and the facts agree with the op's samples."""
    import math

    from eager.ops._registry import KINDS, Reduction

    op = REGISTRY[name]
    assert op.kind in KINDS
    assert op.arity is None or (isinstance(op.arity, int) and op.arity >= 0)
    if op.arity is not None:
        assert _positional_operands(op) == {op.arity}, f"{name}: samples disagree with arity={op.arity}"
    for fact in ("commutative", "fusible", "batchable", "aliases_operand", "random", "stateful",
                 "data_dependent_shape"):
        assert isinstance(getattr(op, fact), bool), (name, fact)
    assert op.differentiable_order == math.inf or (float(op.differentiable_order).is_integer()
                                                   and op.differentiable_order >= 0)
    assert all(isinstance(i, int) and 0 <= i < (op.arity or 99) for i in op.mask_operands)
    if op.commutative:
        assert op.arity == 2 and op.pointwise
    if op.batchable:
        assert op.arity == 1 and op.pointwise
    if op.reduction is not None:
        assert isinstance(op.reduction, Reduction) and op.kind == "reduction"
        combiner = REGISTRY[op.reduction.combiner]
        assert combiner.arity == 2 and combiner.commutative and combiner.pointwise
    if op.is_view:
        assert op.aliases_operand


@pytest.mark.parametrize("name", [n for n in OPS if REGISTRY[n].commutative])
def test_commutative_ops_commute(name):
    op = REGISTRY[name]
    for arrays, attrs in _samples(op):
        a, b = _to_operands(arrays, requires_grad=False)
        np.testing.assert_array_equal(op(a, b, **attrs).numpy(), op(b, a, **attrs).numpy())


@pytest.mark.parametrize("name", [n for n in OPS if REGISTRY[n].reduction is not None])
def test_reduction_facts_recompose_the_reduction(name):
    """Reducing two halves and combining them with the declared combiner (then dividing by
    the count, for a mean) gives the op's result; the identity is neutral for the combiner."""
    op = REGISTRY[name]
    facts = op.reduction
    combiner = REGISTRY[facts.combiner]
    x = np.random.default_rng(1).standard_normal((6, 5))
    whole = op.forward(np, x, dims=(0,), keepdim=False)
    parts = [op.forward(np, x[:3], dims=(0,), keepdim=False), op.forward(np, x[3:], dims=(0,), keepdim=False)]
    if facts.divide_by_count:
        parts = [p * 3 for p in parts]
    combined = combiner.forward(np, *parts)
    if facts.divide_by_count:
        combined = combined / 6
    np.testing.assert_allclose(combined, whole, rtol=1e-12)
    np.testing.assert_array_equal(combiner.forward(np, x, np.full_like(x, facts.identity)), x)


def test_every_op_has_a_lowering():
    from codegen import missing_ops

    assert missing_ops() == []


@pytest.mark.parametrize("name", [n for n in OPS if REGISTRY[n].pointwise and REGISTRY[n].fusible and REGISTRY[n].arity])
def test_pointwise_ops_have_kernel_spellings(name):
    """A pointwise op is fusible, a fact of the op; a backend inlines it in fused kernels where
    it has the spelling the backend declares it needs (static.executable.Capabilities): a NumPy
    ufunc/into form for NumPy, a C expression as well for the native and CuPy kernels. An op
    spelled only as a library call is inlined by none of them."""
    from codegen.lowering import c_inlinable, inlinable, lowering_for

    low, op = lowering_for(name), REGISTRY[name]
    if not low.pointwise:
        assert not (low.numpy.ufunc or low.numpy.into or low.cupy.expr), name
        assert not inlinable(op) and not c_inlinable(op), name
        return
    assert low.numpy.ufunc or low.numpy.into, name
    assert low.cupy.expr and inlinable(op) and c_inlinable(op), name


def test_exp2_is_an_op_added_by_one_declaration_and_its_lowering():
    """The worked example of docs/architecture.md: its facts come from the declaration, and
    compiled code fuses it with its neighbours."""
    import static
    from eager.ops.elementwise import EXP2

    assert EXP2.pointwise and EXP2.fusible and EXP2.batchable and EXP2.arity == 1
    x = np.random.default_rng(2).standard_normal((64, 80)).astype(np.float32)

    def f(t):
        return (EXP2(t * 0.5) + 1.0).sum()

    compiled = static.compile(f, backend="numpy")
    got = compiled(eager.tensor(x))
    np.testing.assert_allclose(got.numpy(), np.sum(np.exp2(x * np.float32(0.5)) + np.float32(1.0)), rtol=1e-5)
    src = compiled.source(eager.tensor(x))
    assert "np.exp2(" in src and "_rt.forward" not in src


def test_a_step_declared_not_differentiable_raises_when_differentiated():
    """An op declared with differentiable_order=0 gets a VJP that raises naming the op when a
    gradient really flows through it: never zeros. (An unregistered record: the registry's
    own ops are all differentiable to the order their VJPs allow.)"""
    from eager.ops._registry import OpDef

    step = OpDef(name="staircase", forward=lambda xp, x: xp.floor(x), abstract=lambda x: x,
                 differentiable_order=0, doc="a test step")
    x = eager.tensor([1.5, 2.0, -0.5], requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for staircase is not implemented"):
        step(x * 2.0).sum().backward()


def test_prod_has_true_second_derivatives_in_both_modes():
    """prod's VJP goes through prod_except_self, whose own VJP is written in ops: the hessian
    is exact (PyTorch and JAX give it), zeros included, in eager and in static."""
    import static

    x = eager.tensor([1.5, 2.0, -0.5, 0.0], dtype=eager.float64, requires_grad=True)
    (g,) = eager.autograd.grad(x.prod(), x, create_graph=True)
    (h0,) = eager.autograd.grad(g[0], x)
    # d/dx_j of x1*x2*x3: 0 for j = 0, x2*x3 = 0, x1*x3 = 0, x1*x2 = -1
    np.testing.assert_allclose(h0.numpy(), [0.0, 0.0, 0.0, -1.0])
    hess_static = static.grad(lambda t: static.grad(lambda u: u.prod())(t)[0])(eager.tensor(x.detach().numpy()))
    np.testing.assert_allclose(np.asarray(hess_static), h0.numpy())


@pytest.mark.parametrize("name", [n for n in OPS if REGISTRY[n].differentiable_order == 0])
def test_ops_declared_not_differentiable_raise_when_differentiated(name):
    import static

    op = REGISTRY[name]
    for arrays, attrs in _samples(op):
        operands = _to_operands(arrays, requires_grad=True)
        out = op(*operands, **attrs)
        out = out[-1] if isinstance(out, tuple) else out  # (a multi-output op: its last result)
        if not out.requires_grad:  # (an integer sample: floor_divide's; nothing to differentiate)
            continue
        with pytest.raises(RuntimeError, match=f"derivative for {name} is not implemented"):
            out.sum().backward()

        def loss(*xs):
            out = op(*xs, **attrs)  # noqa: B023  (called within this iteration)
            return (out[-1] if isinstance(out, tuple) else out).sum()

        with pytest.raises(RuntimeError, match=name):
            static.grad(loss)(*_to_operands(arrays, requires_grad=False))
