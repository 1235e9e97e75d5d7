"""The dispatch hot path on 0-d float tensors: NumPy's scalar arithmetic stands in for a ufunc
call only where it gives the same bits, and the node it records inline is the one the general
path records (names, edges, saved values, version checks, anomaly traces, release)."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager import _dispatch
from eager.ops import elementwise as E

_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, 1.0001, 3.0, 1e-40, -1e-45, 1e-310, 3.4e38, -3.4e38, 1.7e308,
             float("inf"), float("-inf"), float("nan"), 7.0e-39, 2.0**-126, 1.0 / 3.0]


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _values(dt: type, n: int = 300) -> list[float]:
    rng = np.random.default_rng(0)
    mixed = np.concatenate([rng.standard_normal(n), rng.standard_normal(n) * 1e30, rng.standard_normal(n) * 1e-30])
    with np.errstate(over="ignore"):  # (float32 rounds the largest specials to inf)
        return [float(v) for v in np.asarray(mixed, dtype=dt)] + [float(np.asarray(v, dtype=dt)) for v in _SPECIALS]


_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
           "rsub": lambda a, b: np.subtract(b, a)}


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(_UFUNCS))
def test_zero_dim_arithmetic_is_bit_identical_to_the_ufunc(dt, name):
    op = getattr(E, name.upper())
    ufunc = _UFUNCS[name]
    values = _values(dt)
    rng = np.random.default_rng(1)
    pairs = list(zip(values, rng.permutation(values))) + [(v, w) for v in _SPECIALS[:8] for w in _SPECIALS]
    with np.errstate(all="ignore"):
        for v, w in pairs:
            a, b = np.asarray(v, dtype=dt), np.asarray(w, dtype=dt)
            expected = np.asarray(ufunc(a, b))
            got = op(eager.tensor(a), eager.tensor(b))._data
            assert got.dtype == expected.dtype and got.shape == ()
            assert _bits(got) == _bits(expected), (name, v, w, got, expected)
            got_number = op(eager.tensor(a), float(w))._data  # a Python number, rounded as NumPy rounds it
            assert _bits(got_number) == _bits(np.asarray(ufunc(a, float(w))))
    assert _dispatch._scalar_form(op) and op.scalar_form  # (the fast path was taken, not left to NumPy)


def test_the_scalar_result_is_a_fresh_writeable_array():
    x = eager.tensor(2.0)
    y = x * 3.0
    assert type(y._data) is np.ndarray and y._data.shape == () and y._data.flags.writeable
    assert not np.shares_memory(y._data, x._data)
    y.add_(1.0)
    assert float(y) == 7.0 and float(x * 3.0) == 6.0


def test_a_forward_needing_more_than_one_ufunc_has_no_scalar_form():
    from eager.ops import REGISTRY

    op = E.POW
    if op.scalar_as_array:
        assert float(op(eager.tensor(1.5), 2.5)) == float(np.power(np.float32(1.5), np.float32(2.5)))
    assert _dispatch._scalar_form(E.SIGMOID) is False  # several ufuncs and a where
    assert _dispatch._scalar_form(E.ABS) is False  # reads its operand's dtype
    assert _dispatch._scalar_form(E.EXP) is False  # reads its operand's size (a native kernel for large arrays)
    assert _dispatch._scalar_form(REGISTRY["isnan"]) is False  # a bool result
    assert _dispatch._scalar_form(E.SIN) is np.sin
    assert _dispatch._scalar_form(E.RSUB)(np.float32(1.0), np.float32(3.0)) == np.float32(2.0)


def _unary_forms() -> list[str]:
    from eager.ops import REGISTRY

    return sorted(name for name, op in REGISTRY.items() if op.arity == 1 and _dispatch._scalar_form(op))


def test_common_unary_ops_have_a_scalar_form():
    assert {"sin", "cos", "log", "sqrt", "neg"} <= set(_unary_forms())


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", _unary_forms())
def test_zero_dim_unary_ops_are_bit_identical_to_the_forward(dt, name):
    from eager.ops import REGISTRY

    op = REGISTRY[name]
    rng = np.random.default_rng(2)
    values = _values(dt, 2000) + [float(v) for v in rng.uniform(-10.0, 10.0, 2000).astype(dt)]
    values += [float(v) for v in rng.uniform(-1.0, 1.0, 2000).astype(dt)]
    with np.errstate(all="ignore"):
        for v in values:
            a = np.asarray(v, dtype=dt)
            expected = np.asarray(op.forward(np, a))
            got = op(eager.tensor(a))._data
            assert type(got) is np.ndarray and got.dtype == expected.dtype and got.shape == ()
            assert _bits(got) == _bits(expected), (name, v, got, expected)


def test_the_scalar_form_agrees_with_the_forward_on_whole_arrays():
    """Many values at once: the scalar form on each element against the forward on the array."""
    rng = np.random.default_rng(3)
    for dt in (np.float32, np.float64):
        arr = np.concatenate([rng.standard_normal(20000) * s for s in (1e-3, 1.0, 10.0, 1e4)]).astype(dt)
        for name in ("sin", "cos"):
            op = getattr(E, name.upper())
            expected = op.forward(np, arr)
            got = np.array([op.scalar_form(v) for v in arr], dtype=dt) if op.scalar_form else None
            if got is None:
                got = np.array([_dispatch._scalar_form(op)(v) for v in arr], dtype=dt)
            assert (_bits(got) == _bits(expected)).all(), (name, dt)


def test_a_nan_result_keeps_the_ufuncs_bits():
    a = np.asarray(np.float32("nan"))
    b = np.asarray(np.uint32(0x7FC00123).view(np.float32))
    with np.errstate(all="ignore"):
        expected = np.multiply(a, b)
    got = (eager.tensor(a) * eager.tensor(b))._data
    assert _bits(np.asarray(got)) == _bits(np.asarray(expected))


@pytest.mark.parametrize("dt", [eager.float32, eager.float64])
def test_fast_path_nodes_match_pytorchs_names_edges_and_gradients(dt):
    x = eager.tensor(0.5, dtype=dt, requires_grad=True)
    c = eager.tensor(2.0, dtype=dt)
    y = x * 1.0001
    z = 0.5 * eager.sin(y) + y * c - x / 3.0
    assert z.grad_fn.name() == "SubBackward0"
    assert y.grad_fn.name() == "MulBackward0"
    (f0, n0), (f1, n1) = y.grad_fn.next_functions
    assert f0 is x.grad_fn or f0.variable is x
    assert (f1, n1) == (None, 0)
    assert (0.5 * y).grad_fn.next_functions[0] == (None, 0)
    (g,) = eager.autograd.grad(z, [x])
    xv = 0.5
    expected = 1.0001 * 0.5 * np.cos(1.0001 * xv) + 1.0001 * 2.0 - 1.0 / 3.0
    assert abs(float(g) - expected) < (1e-5 if dt == eager.float32 else 1e-12)
    assert g.dtype == dt


def test_fast_path_nodes_check_versions_and_free_their_saved_values():
    x = eager.tensor(0.5, requires_grad=True)
    y = x * 2.0
    w = y * y  # saves y twice
    with eager.no_grad():
        y.mul_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.backward()
    z = (x * 3.0) * x
    z.backward()
    assert z.grad_fn._freed
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        z.backward()
    assert float(x.grad) == pytest.approx(3.0)


def test_fast_path_nodes_keep_the_forward_stack_in_anomaly_mode():
    x = eager.tensor(0.5, requires_grad=True)
    with eager.autograd.detect_anomaly():
        y = x * 2.0
    assert y.grad_fn._trace is not None
    assert (x * 2.0).grad_fn._trace is None


def test_the_engine_runs_hooks_and_retains_graphs_as_before():
    x = eager.tensor(0.5, requires_grad=True)
    y = x * 2.0
    seen = []
    y.register_hook(lambda g: seen.append(float(g)))
    z = y * 3.0
    z.backward(retain_graph=True)
    z.backward()
    assert seen == [3.0, 3.0] and float(x.grad) == 12.0
