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
    return op.vjp is not None and op.name not in ("to_device",)


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
