"""The torch.* and Tensor conveniences of eager/_conveniences against PyTorch: values,
dtypes, shapes, named tuples, errors, gradients (finite differences) and static tracing."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import eager
from eager.autograd import gradcheck

torch = pytest.importorskip("torch")


def _t(values, dtype=None):
    """The same data as an eager and a torch tensor."""
    arr = np.asarray(values) if dtype is None else np.asarray(values, dtype=dtype)
    return eager.tensor(arr), torch.tensor(arr)


def _same(ours, theirs, exact=True):
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b, exact)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    a, b = np.asarray(ours.detach()), theirs.detach().numpy()
    if exact:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def _raises_like(fn_ours, fn_theirs):
    """Both raise, the same exception type."""
    with pytest.raises(Exception) as theirs:
        fn_theirs()
    with pytest.raises(type(theirs.value)):
        fn_ours()


def _f64(*shape, seed=0):
    return eager.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


# -- pointwise -------------------------------------------------------------------------------------------
def test_fmax_fmin_nan_and_promotion():
    a = [1.0, np.nan, 3.0, np.nan, -0.5]
    b = [np.nan, 2.0, 1.0, np.nan, -0.5]
    (ea, ta), (eb, tb) = _t(a, np.float32), _t(b, np.float64)
    _same(eager.fmax(ea, eb), torch.fmax(ta, tb))
    _same(eager.fmin(ea, eb), torch.fmin(ta, tb))
    _same(ea.fmax(eb), ta.fmax(tb))
    (ei, ti) = _t([[1, 5], [7, 2]], np.int32)
    (ej, tj) = _t([3, 4], np.int64)
    _same(eager.fmax(ei, ej), torch.fmax(ti, tj))
    _same(eager.fmin(ei, ej), torch.fmin(ti, tj))


def test_fmax_gradient_goes_to_input_on_ties():
    x = eager.tensor([1.0, 2.0, float("nan")], dtype=eager.float64, requires_grad=True)
    y = eager.tensor([1.0, 3.0, 0.5], dtype=eager.float64, requires_grad=True)
    eager.fmax(x, y).sum().backward()
    tx = torch.tensor([1.0, 2.0, float("nan")], dtype=torch.float64, requires_grad=True)
    ty = torch.tensor([1.0, 3.0, 0.5], dtype=torch.float64, requires_grad=True)
    torch.fmax(tx, ty).sum().backward()
    _same(x.grad, tx.grad)
    _same(y.grad, ty.grad)
    a, b = _f64(3, 4), _f64(3, 4, seed=1)
    assert gradcheck(eager.fmin, (a, b))


def test_isposinf_isneginf_isreal():
    vals = [1.0, np.inf, -np.inf, np.nan, 0.0]
    e, t = _t(vals, np.float32)
    _same(eager.isposinf(e), torch.isposinf(t))
    _same(eager.isneginf(e), torch.isneginf(t))
    _same(eager.isreal(e), torch.isreal(t))
    _same(e.isposinf(), t.isposinf())
    ei, ti = _t([1, -2], np.int64)
    _same(eager.isneginf(ei), torch.isneginf(ti))
    _same(eager.isreal(ei), torch.isreal(ti))


@pytest.mark.parametrize("fn", ["gcd", "lcm"])
def test_gcd_lcm(fn):
    a, ta = _t([[0, 6, -12, 7], [9, 0, 15, 8]], np.int64)
    b, tb = _t([0, 4, 18, -21], np.int32)
    _same(getattr(eager, fn)(a, b), getattr(torch, fn)(ta, tb))
    _same(getattr(a, fn)(b), getattr(ta, fn)(tb))
    c, tc = a.clone(), ta.clone()
    getattr(c, fn + "_")(b)
    getattr(tc, fn + "_")(tb)
    _same(c, tc)
    f, tf = _t([1.5], np.float32)
    _raises_like(lambda: getattr(eager, fn)(f, f), lambda: getattr(torch, fn)(tf, tf))
    _raises_like(lambda: getattr(eager, fn)(a, 4), lambda: getattr(torch, fn)(ta, 4))
    u, tu = _t([12, 7], np.uint8)
    _same(getattr(eager, fn)(u, u), getattr(torch, fn)(tu, tu))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64])
def test_gcd_lcm_trace_as_euclids_steps(dtype):
    import static

    rng = np.random.default_rng(0)
    low = 0 if dtype == np.uint8 else -100
    a, b = rng.integers(low, 100, 40).astype(dtype), rng.integers(low, 100, 40).astype(dtype)
    a[:3], b[1:4] = 0, 0
    for fn in ("gcd", "lcm"):
        got = static.compile(lambda x, y, fn=fn: getattr(eager, fn)(x, y))(eager.tensor(a), eager.tensor(b))
        _same(got, getattr(torch, fn)(torch.tensor(a), torch.tensor(b)))
    fib = eager.tensor([7540113804746346429]), eager.tensor([4660046610375530309])  # Euclid's worst case
    assert static.compile(eager.gcd)(*fib).tolist() == [1]


def test_complex_no_ops_of_real_tensors():
    e, t = _t([1.0, -2.0], np.float32)
    for name in ("conj", "resolve_conj", "resolve_neg", "conj_physical"):
        assert getattr(eager, name)(e) is e or name == "conj_physical"
        _same(getattr(e, name)(), getattr(t, name)())
    assert eager.real(e) is e and e.real is e
    _same(eager.real(e), torch.real(t))
    _raises_like(lambda: eager.imag(e), lambda: torch.imag(t))
    _raises_like(lambda: e.imag, lambda: t.imag)
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        eager.imag(e)


# -- shapes and selection ----------------------------------------------------------------------------
def test_ravel_swapdims_unflatten():
    e, t = _t(np.arange(24.0).reshape(2, 3, 4), np.float32)
    _same(eager.ravel(e), torch.ravel(t))
    _same(e.ravel(), t.ravel())
    _same(eager.swapdims(e, 0, -1), torch.swapdims(t, 0, -1))
    _same(e.swapdims(1, 2), t.swapdims(1, 2))
    _same(eager.unflatten(e, -1, (2, -1)), torch.unflatten(t, -1, (2, -1)))
    _same(e.unflatten(1, (3, 1)), t.unflatten(1, (3, 1)))
    _raises_like(lambda: e.unflatten(2, (3, 2)), lambda: t.unflatten(2, (3, 2)))
    _raises_like(lambda: e.unflatten(5, (3, 2)), lambda: t.unflatten(5, (3, 2)))
    x = _f64(2, 6)
    assert gradcheck(lambda v: eager.unflatten(v, 1, (3, 2)) * 2, (x,))


def test_take():
    e, t = _t(np.arange(12.0).reshape(3, 4), np.float64)
    ei, ti = _t([[0, -1], [5, 11]], np.int64)
    _same(eager.take(e, ei), torch.take(t, ti))
    _same(e.take(ei), t.take(ti))
    bad, tbad = _t([12], np.int64)
    _raises_like(lambda: eager.take(e, bad), lambda: torch.take(t, tbad))
    empty, tempty = _t(np.zeros((0,), np.int64))
    _same(eager.take(e, empty), torch.take(t, tempty))
    x = _f64(3, 4)
    assert gradcheck(lambda v: eager.take(v, eager.tensor([0, 3, 3, -2])), (x,))


def test_isin():
    e, t = _t([[1, 2, 3], [4, 5, 1]], np.int64)
    s, ts = _t([1, 5, 9], np.int64)
    _same(eager.isin(e, s), torch.isin(t, ts))
    _same(eager.isin(e, s, invert=True), torch.isin(t, ts, invert=True))
    _same(eager.isin(e, 2), torch.isin(t, 2))
    _same(eager.isin(3, s), torch.isin(3, ts))
    none, tnone = _t(np.zeros((0,), np.int64))
    _same(eager.isin(e, none), torch.isin(t, tnone))


def test_aminmax():
    e, t = _t([[3.0, -1.0, 2.0], [0.5, 7.0, -4.0]], np.float32)
    ours, theirs = eager.aminmax(e), torch.aminmax(t)
    _same(ours.min, theirs.min)
    _same(ours.max, theirs.max)
    for kw in ({"dim": 1}, {"dim": 0, "keepdim": True}, {"dim": -1, "keepdim": False}):
        o, th = e.aminmax(**kw), t.aminmax(**kw)
        _same(tuple(o), tuple(th))
        assert o._fields == ("min", "max")
    z, tz = _t(np.zeros((0, 3), np.float32))
    _raises_like(lambda: eager.aminmax(z), lambda: torch.aminmax(tz))
    _same(tuple(eager.aminmax(z, dim=1)), tuple(torch.aminmax(tz, dim=1)))
    s, ts = _t(2.5, np.float32)
    _same(tuple(eager.aminmax(s)), tuple(torch.aminmax(ts)))


def test_msort_diagflat_sum_to_size():
    e, t = _t([[3.0, 1.0], [0.0, 2.0], [-1.0, 5.0]], np.float32)
    _same(eager.msort(e), torch.msort(t))
    _same(e.msort(), t.msort())
    _same(eager.diagflat(e), torch.diagflat(t))
    _same(eager.diagflat(e, -2), torch.diagflat(t, -2))
    _same(e.diagflat(1), t.diagflat(1))
    big, tbig = _t(np.arange(24.0).reshape(2, 3, 4), np.float64)
    for size in ((3, 4), (1, 4), (3, 1), (2, 1, 1), (1,), (2, 3, 4)):
        _same(big.sum_to_size(size), tbig.sum_to_size(size))
        _same(big.sum_to_size(*size), tbig.sum_to_size(*size))
    _raises_like(lambda: big.sum_to_size(2, 4), lambda: tbig.sum_to_size(2, 4))
    x = _f64(2, 3, 4)
    assert gradcheck(lambda v: v.sum_to_size(3, 1), (x,))


def test_split_with_sizes_and_dsplit():
    e, t = _t(np.arange(30.0).reshape(5, 3, 2), np.float32)
    _same(eager.split_with_sizes(e, [2, 0, 3]), torch.split_with_sizes(t, [2, 0, 3]))
    _same(e.split_with_sizes([1, 2], dim=1), t.split_with_sizes([1, 2], dim=1))
    _raises_like(lambda: e.split_with_sizes([2, 2]), lambda: t.split_with_sizes([2, 2]))
    _raises_like(lambda: eager.split_with_sizes(e[0, 0, 0], [1]), lambda: torch.split_with_sizes(t[0, 0, 0], [1]))
    _same(eager.dsplit(e, 2), torch.dsplit(t, 2))
    _same(e.dsplit([1]), t.dsplit([1]))
    _raises_like(lambda: eager.dsplit(e[0], 1), lambda: torch.dsplit(t[0], 1))
    d, td = _t(np.zeros((2, 2, 3), np.float32))
    _raises_like(lambda: eager.dsplit(d, 2), lambda: torch.dsplit(td, 2))


def test_unravel_index():
    e, t = _t([[0, 5], [11, -1]], np.int64)
    _same(eager.unravel_index(e, (3, 4)), torch.unravel_index(t, (3, 4)))
    _same(eager.unravel_index(e, (2, 1, 6)), torch.unravel_index(t, (2, 1, 6)))
    _same(eager.unravel_index(eager.tensor(7), 12), torch.unravel_index(torch.tensor(7), 12))
    e32, t32 = _t([3, 7], np.int32)
    _same(eager.unravel_index(e32, (2, 4)), torch.unravel_index(t32, (2, 4)))
    f, tf = _t([1.0], np.float32)
    _raises_like(lambda: eager.unravel_index(f, (2,)), lambda: torch.unravel_index(tf, (2,)))
    _raises_like(lambda: eager.unravel_index(e, (2, -3)), lambda: torch.unravel_index(t, (2, -3)))
    _raises_like(lambda: eager.unravel_index(e, (2, 0)), lambda: torch.unravel_index(t, (2, 0)))
    _same(eager.unravel_index(eager.tensor(0), ()), torch.unravel_index(torch.tensor(0), ()))


@pytest.mark.parametrize("kw", [{}, {"return_inverse": True}, {"return_counts": True},
                                {"return_inverse": True, "return_counts": True}])
def test_unique_consecutive(kw):
    e, t = _t([[1, 1, 2], [2, 2, 3], [2, 2, 3], [1, 1, 2]], np.int64)
    _same(eager.unique_consecutive(e, **kw), torch.unique_consecutive(t, **kw))
    _same(eager.unique_consecutive(e, dim=0, **kw), torch.unique_consecutive(t, dim=0, **kw))
    _same(e.unique_consecutive(dim=1, **kw), t.unique_consecutive(dim=1, **kw))
    z, tz = _t(np.zeros((0,), np.float32))
    _same(eager.unique_consecutive(z, **kw), torch.unique_consecutive(tz, **kw))


def test_range_inclusive_with_deprecation_warning():
    for args, kw in (((1, 4), {}), ((0, 1, 0.25), {}), ((5, 1, -2), {}), ((1, 4), {"dtype": torch.int64}),
                     ((0.5, 2.0, 0.5), {"dtype": torch.float64})):
        ekw = {k: getattr(eager, str(v).split(".")[-1]) for k, v in kw.items()}
        with pytest.warns(UserWarning, match="torch.range is deprecated"):
            ours = eager.range(*args, **ekw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = torch.range(*args, **kw)
        _same(ours, theirs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _raises_like(lambda: eager.range(0, 3, 0), lambda: torch.range(0, 3, 0))
        _raises_like(lambda: eager.range(3, 0, 1), lambda: torch.range(3, 0, 1))
        _raises_like(lambda: eager.range(3), lambda: torch.range(3))
