"""eager/_conveniences' linear-algebra functions and in-place forms against PyTorch: values,
dtypes, errors, gradients (finite differences) and static tracing."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import eager
import static
from eager.autograd import gradcheck

torch = pytest.importorskip("torch")


def _pair(*shape, seed=0, dtype=np.float64):
    arr = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return eager.tensor(arr), torch.tensor(arr)


def _same(ours, theirs, tol=1e-6):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(np.asarray(ours.detach()), theirs.detach().numpy(), rtol=tol, atol=tol)


def _raises_like(fn_ours, fn_theirs):
    with pytest.raises(Exception) as theirs:
        fn_theirs()
    with pytest.raises(type(theirs.value)):
        fn_ours()


def _leaf(*shape, seed=0):
    return eager.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def test_mv_inner_vdot():
    (m, tm), (v, tv) = _pair(3, 4), _pair(4, seed=1)
    _same(eager.mv(m, v), torch.mv(tm, tv))
    _same(m.mv(v), tm.mv(tv))
    _raises_like(lambda: eager.mv(v, v), lambda: torch.mv(tv, tv))
    _raises_like(lambda: eager.mv(m, m), lambda: torch.mv(tm, tm))
    (a, ta), (b, tb) = _pair(2, 3, 4), _pair(5, 4, seed=2)
    _same(eager.inner(a, b), torch.inner(ta, tb))
    _same(a.inner(b), ta.inner(tb))
    s, ts = eager.tensor(2.0, dtype=eager.float64), torch.tensor(2.0, dtype=torch.float64)
    _same(eager.inner(s, b), torch.inner(ts, tb))
    _raises_like(lambda: eager.inner(a, v[:3]), lambda: torch.inner(ta, tv[:3]))
    (w, tw) = _pair(4, seed=3)
    _same(eager.vdot(v, w), torch.vdot(tv, tw))
    _same(v.vdot(w), tv.vdot(tw))
    _raises_like(lambda: eager.vdot(m, v), lambda: torch.vdot(tm, tv))
    _raises_like(lambda: eager.vdot(v, w.float()), lambda: torch.vdot(tv, tw.float()))
    _raises_like(lambda: eager.vdot(v, w[:3]), lambda: torch.vdot(tv, tw[:3]))
    assert gradcheck(eager.inner, (_leaf(2, 3), _leaf(4, 3, seed=1)))
    assert gradcheck(eager.mv, (_leaf(2, 3), _leaf(3, seed=1)))


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1)])
def test_addr_addbmm_and_inplace(beta, alpha):
    (i, ti), (v1, tv1), (v2, tv2) = _pair(3, 4), _pair(3, seed=1), _pair(4, seed=2)
    _same(eager.addr(i, v1, v2, beta=beta, alpha=alpha), torch.addr(ti, tv1, tv2, beta=beta, alpha=alpha))
    (r, tr) = _pair(4, seed=5)  # broadcast input
    _same(eager.addr(r, v1, v2, beta=beta, alpha=alpha), torch.addr(tr, tv1, tv2, beta=beta, alpha=alpha))
    c, tc = i.clone(), ti.clone()
    c.addr_(v1, v2, beta=beta, alpha=alpha)
    tc.addr_(tv1, tv2, beta=beta, alpha=alpha)
    _same(c, tc)
    (b1, tb1), (b2, tb2) = _pair(5, 3, 2, seed=3), _pair(5, 2, 4, seed=4)
    _same(eager.addbmm(i, b1, b2, beta=beta, alpha=alpha), torch.addbmm(ti, tb1, tb2, beta=beta, alpha=alpha))
    _same(i.addbmm(b1, b2), ti.addbmm(tb1, tb2))
    c, tc = i.clone(), ti.clone()
    c.addbmm_(b1, b2, beta=beta, alpha=alpha)
    tc.addbmm_(tb1, tb2, beta=beta, alpha=alpha)
    _same(c, tc)
    _raises_like(lambda: eager.addr(i, i, v2), lambda: torch.addr(ti, ti, tv2))
    _raises_like(lambda: eager.addbmm(i, i, b2), lambda: torch.addbmm(ti, ti, tb2))


def test_addmm_addmv_baddbmm_inplace():
    (i, ti), (a, ta), (b, tb) = _pair(3, 4), _pair(3, 2, seed=1), _pair(2, 4, seed=2)
    c, tc = i.clone(), ti.clone()
    assert c.addmm_(a, b, beta=0.5, alpha=2) is c
    tc.addmm_(ta, tb, beta=0.5, alpha=2)
    _same(c, tc)
    (y, ty), (v, tv) = _pair(3, seed=3), _pair(2, seed=4)
    c, tc = y.clone(), ty.clone()
    c.addmv_(a, v)
    tc.addmv_(ta, tv)
    _same(c, tc)
    (z, tz), (p, tp), (q, tq) = _pair(2, 3, 4, seed=5), _pair(2, 3, 5, seed=6), _pair(2, 5, 4, seed=7)
    c, tc = z.clone(), tz.clone()
    c.baddbmm_(p, q, alpha=-1)
    tc.baddbmm_(tp, tq, alpha=-1)
    _same(c, tc)
    # gradients flow through the written tensor, as PyTorch's
    leaf = _leaf(3, 4)
    out = leaf.clone()
    out.addmm_(_leaf(3, 2, seed=1), _leaf(2, 4, seed=2), beta=3)
    out.sum().backward()
    np.testing.assert_allclose(np.asarray(leaf.grad), 3.0)


@pytest.mark.parametrize("p", [2, 1, 3.5, float("inf"), 0])
def test_dist(p):
    (a, ta), (b, tb) = _pair(3, 4), _pair(4, seed=1)
    _same(eager.dist(a, b, p), torch.dist(ta, tb, p))
    _same(a.dist(b, p), ta.dist(tb, p))
    if p not in (0,):
        assert gradcheck(lambda x, y: eager.dist(x, y, p), (_leaf(3, 4), _leaf(4, seed=1)))


def test_renorm():
    a, ta = _pair(3, 4, 2)
    for p, dim, maxnorm in ((2, 0, 1.0), (1, -1, 2.5), (3, 1, 0.5), (2, 2, 100.0)):
        _same(eager.renorm(a, p, dim, maxnorm), torch.renorm(ta, p, dim, maxnorm))
        _same(a.renorm(p, dim, maxnorm), ta.renorm(p, dim, maxnorm))
        c, tc = a.clone(), ta.clone()
        c.renorm_(p, dim, maxnorm)
        tc.renorm_(p, dim, maxnorm)
        _same(c, tc)
    f32, tf32 = _pair(4, 3, dtype=np.float32)
    _same(eager.renorm(f32, 2, 0, 1.0), torch.renorm(tf32, 2, 0, 1.0))
    _raises_like(lambda: eager.renorm(a, -1, 0, 1.0), lambda: torch.renorm(ta, -1, 0, 1.0))
    _raises_like(lambda: eager.renorm(a, 2, 0, -1.0), lambda: torch.renorm(ta, 2, 0, -1.0))
    _raises_like(lambda: eager.renorm(a, 2, 3, 1.0), lambda: torch.renorm(ta, 2, 3, 1.0))
    assert gradcheck(lambda x: eager.renorm(x, 2, 0, 1.0), (_leaf(3, 4),))
    x = _leaf(3, 4)
    eager.renorm(x, 2, 1, 0.7).pow(2).sum().backward()
    tx = torch.tensor(np.asarray(x.detach()), requires_grad=True)
    torch.renorm(tx, 2, 1, 0.7).pow(2).sum().backward()
    _same(x.grad, tx.grad)


def test_diagflat_vander_matrix_power_chain_matmul():
    v, tv = _pair(3)
    for n, inc in ((None, False), (4, True), (1, False), (0, True)):
        _same(eager.vander(v, n, inc), torch.vander(tv, n, inc))
    iv = eager.tensor([1, 2, 3], dtype=eager.int32)
    _same(eager.vander(iv), torch.vander(torch.tensor([1, 2, 3], dtype=torch.int32)))
    _raises_like(lambda: eager.vander(eager.zeros(2, 2)), lambda: torch.vander(torch.zeros(2, 2)))
    b, tb = _pair(2, 3)
    _same(eager.linalg.vander(b), torch.linalg.vander(tb))
    _same(eager.linalg.vander(b, N=5), torch.linalg.vander(tb, N=5))
    _raises_like(lambda: eager.linalg.vander(b, N=1), lambda: torch.linalg.vander(tb, N=1))
    _same(eager.linalg.vander(v[0], N=3), torch.linalg.vander(tv[0], N=3))
    _raises_like(lambda: eager.linalg.vander(v[0]), lambda: torch.linalg.vander(tv[0]))
    assert gradcheck(lambda x: eager.vander(x, 4), (_leaf(3),))
    m, tm = _pair(3, 3)
    for n in (0, 1, 3, -2):
        _same(eager.matrix_power(m, n), torch.matrix_power(tm, n), tol=1e-5)
    _same(m.matrix_power(2), tm.matrix_power(2))
    (x, tx), (y, ty), (z, tz) = _pair(2, 3), _pair(3, 4, seed=1), _pair(4, 2, seed=2)
    with pytest.warns(UserWarning, match="chain_matmul is deprecated") if not eager._conveniences.linalg._CHAIN_WARNED[0] \
            else warnings.catch_warnings():
        ours = eager.chain_matmul(x, y, z)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(ours, torch.chain_matmul(tx, ty, tz))
        _same(eager.chain_matmul(x), torch.chain_matmul(tx))
        _raises_like(lambda: eager.chain_matmul(x, eager.zeros(3)), lambda: torch.chain_matmul(tx, torch.zeros(3)))


# -- in-place forms of existing functions ---------------------------------------------------------------
@pytest.mark.parametrize("name,args", [
    ("cumsum_", (1,)), ("cumprod_", (0,)), ("logit_", (0.1,)), ("sinc_", ()), ("deg2rad_", ()), ("rad2deg_", ()),
])
def test_unary_inplace_forms(name, args):
    base = np.random.default_rng(0).uniform(0.05, 0.95, (3, 4))
    e, t = eager.tensor(base), torch.tensor(base)
    assert getattr(e, name)(*args) is e
    getattr(t, name)(*args)
    _same(e, t)
    # recorded for autograd: the gradient through the in-place form is the out-of-place one's
    leaf = eager.tensor(base, requires_grad=True)
    y = leaf * 1.0
    getattr(y, name)(*args)
    y.sum().backward()
    tleaf = torch.tensor(base, requires_grad=True)
    ty = tleaf * 1.0
    getattr(ty, name)(*args)
    ty.sum().backward()
    _same(leaf.grad, tleaf.grad)


@pytest.mark.parametrize("name", ["hypot_", "copysign_", "xlogy_"])
def test_binary_inplace_forms(name):
    (a, ta), (b, tb) = _pair(3, 4), _pair(4, seed=1)
    b, tb = b.abs() + 0.1, tb.abs() + 0.1
    getattr(a, name)(b)
    getattr(ta, name)(tb)
    _same(a, ta)
    ints = eager.tensor([1, 2])
    _raises_like(lambda: getattr(ints, name)(eager.tensor([0.5, 1.5])),
                 lambda: getattr(torch.tensor([1, 2]), name)(torch.tensor([0.5, 1.5])))


# -- static tracing: the compositions trace to the same values ----------------------------------------
def test_compositions_trace_under_static():
    def f(x, y, v):
        a = eager.fmax(x, y) + eager.fmin(x, y).sum_to_size(1, 4)
        b = eager.addr(a, v, eager.ravel(y[0]), beta=0.5) + eager.renorm(x, 2, 0, 1.0)
        c = eager.unflatten(eager.inner(b, y), 1, (3, 1)).swapdims(0, 1)
        d = eager.take(x, eager.tensor([0, 5, -1])).sum() + eager.dist(x, y) + eager.vander(v, 3).sum()
        return c * d, eager.aminmax(x, dim=1).max, eager.isin(x, y[0])

    x, _ = _pair(3, 4)
    y, _ = _pair(3, 4, seed=1)
    v, _ = _pair(3, seed=2)
    expected = f(x, y, v)
    got = static.compile(f)(x, y, v)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6, atol=1e-9)


def test_data_dependent_ones_refuse_tracing():
    x = eager.tensor([1, 1, 2])

    def f(t):
        return eager.unique_consecutive(t)

    with pytest.raises(Exception, match="(?i)trace|data|concrete"):
        static.compile(f)(x)


def test_out_keyword_as_pytorch():
    (m, tm), (v, tv) = _pair(2, 3), _pair(3, seed=1)
    out, tout = eager.empty(2, dtype=eager.float64), torch.empty(2, dtype=torch.float64)
    assert eager.mv(m, v, out=out) is out
    torch.mv(tm, tv, out=tout)
    _same(out, tout)
    mn, mx = eager.empty(0, dtype=eager.float64), eager.empty(0, dtype=eager.float64)
    result = eager.aminmax(m, dim=1, out=(mn, mx))
    _same(result.max, torch.aminmax(tm, dim=1).max)
    assert result.min is mn


def test_inplace_forms_trace_under_static():
    def f(x, v):
        y = x.clone()
        y.cumsum_(1)
        y.hypot_(x)
        y.addmm_(x, x.t(), beta=0.5)
        y.addr_(v, v, alpha=2)
        y.renorm_(2, 0, 1.0)
        return y, eager.mv(x, v), eager.msort(x), eager.diagflat(v), eager.linalg.vander(v)

    x, _ = _pair(3, 3)
    v, _ = _pair(3, seed=1)
    for want, got in zip(f(x, v), static.compile(f)(x, v)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("fn,shapes", [
    ("addmm", [(2, 3), (2, 4), (4, 3)]), ("addmv", [(2,), (2, 4), (4,)]), ("baddbmm", [(2, 2, 3), (2, 2, 4), (2, 4, 3)]),
    ("addr", [(2, 3), (2,), (3,)]), ("addbmm", [(2, 3), (5, 2, 4), (5, 4, 3)]),
])
def test_beta_zero_gives_the_input_a_zero_gradient(fn, shapes):
    """beta = 0 does not read the input (its nan and inf do not reach the result), but the
    input's gradient is beta * grad: a tensor of zeros, as PyTorch's, not None."""
    arrays = [np.random.default_rng(k).standard_normal(s) for k, s in enumerate(shapes)]
    arrays[0].reshape(-1)[0] = np.nan
    ours = [eager.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, tout = getattr(eager, fn)(*ours, beta=0), getattr(torch, fn)(*theirs, beta=0)
    _same(out, tout)
    out.sum().backward()
    tout.sum().backward()
    for o, t in zip(ours, theirs):
        _same(o.grad, t.grad)
