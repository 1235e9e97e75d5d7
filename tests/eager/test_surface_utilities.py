"""isclose, meshgrid, the stacking helpers, movedim, tile, diff, count_nonzero and
addcmul/addcdiv: values against PyTorch (skipped when it is absent), gradients against
finite differences, PyTorch's errors, and each one traced by static.compile equal to eager."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static

RNG = np.random.default_rng(0)


def _fd_check(fn, arrays, eps=1e-6):
    """Gradients of sum(fn(*xs) * w) against central finite differences, in float64."""
    xs = [eager.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*xs)
    w = RNG.standard_normal(tuple(out.shape))
    (out * eager.tensor(w)).sum().backward()

    def f(*arrs):
        return float((fn(*[eager.tensor(a) for a in arrs]).numpy() * w).sum())

    for i, a in enumerate(arrays):
        num = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            hi = [b.copy() for b in arrays]
            lo = [b.copy() for b in arrays]
            hi[i][idx] += eps
            lo[i][idx] -= eps
            num[idx] = (f(*hi) - f(*lo)) / (2 * eps)
        np.testing.assert_allclose(xs[i].grad.numpy(), num, rtol=1e-5, atol=1e-7)


def _compiled_equals_eager(fn, arrays):
    args = [eager.tensor(a) for a in arrays]
    want = fn(*args)
    got = static.compile(fn)(*args)
    wants = want if isinstance(want, tuple) else (want,)
    gots = got if isinstance(got, tuple) else (got,)
    for g, w in zip(gots, wants):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(np.asarray(g.numpy()), w.numpy())


A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
V = RNG.standard_normal(4)
W = RNG.standard_normal(5)

# name -> (eager function of tensors, float64 inputs); PyTorch's function has the same spelling on `torch`.
CASES = {
    "meshgrid_ij": (lambda m, x, y: list(m.meshgrid(x, y, indexing="ij")), [V, W]),
    "meshgrid_xy": (lambda m, x, y: list(m.meshgrid(x, y, indexing="xy")), [V, W]),
    "hstack_1d": (lambda m, x, y: m.hstack([x, y]), [V, W]),
    "hstack_2d": (lambda m, a, b: m.hstack((a, b)), [A, B]),
    "vstack": (lambda m, a, v: m.vstack([a, v]), [A, V]),
    "dstack": (lambda m, a, b: m.dstack([a, b]), [A, B]),
    "dstack_1d": (lambda m, x, y: m.dstack([x, y * 2]), [V, V]),
    "column_stack": (lambda m, x, a: m.column_stack([x[:3], a]), [V, A]),
    "movedim": (lambda m, a: m.movedim(a.reshape(3, 2, 2), 0, -1), [A]),
    "movedim_tuple": (lambda m, a: m.movedim(a.reshape(3, 2, 2), (0, 1), (2, 0)), [A]),
    "moveaxis": (lambda m, a: m.moveaxis(a, 1, 0), [A]),
    "tile": (lambda m, a: m.tile(a, (2,)), [A]),
    "tile_more": (lambda m, x: m.tile(x, (2, 1, 3)), [V]),
    "diff": (lambda m, a: m.diff(a), [A]),
    "diff_n2_dim0": (lambda m, a: m.diff(a, n=2, dim=0), [A]),
    "diff_prepend_append": (lambda m, a, b: m.diff(a, dim=1, prepend=b[:, :1], append=b), [A, B]),
    "addcmul": (lambda m, a, b, v: m.addcmul(a, b, v, value=0.5), [A, B, V]),
    "addcdiv": (lambda m, a, b, v: m.addcdiv(a, b, v + 3.0, value=-2), [A, B, V]),
}


def _flat(out):
    if isinstance(out, list):
        return out
    return [out]


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_pytorch(name):
    torch = pytest.importorskip("torch")
    fn, arrays = CASES[name]
    E = [eager.tensor(a, requires_grad=True) for a in arrays]
    T = [torch.tensor(a, requires_grad=True) for a in arrays]
    oe, ot = _flat(fn(eager, *E)), _flat(fn(torch, *T))
    for e, t in zip(oe, ot):
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12)
    w = [RNG.standard_normal(tuple(t.shape)) for t in ot]
    sum((e * eager.tensor(wi)).sum() for e, wi in zip(oe, w)).backward()
    sum((t * torch.tensor(wi)).sum() for t, wi in zip(ot, w)).backward()
    for a, b in zip(E, T):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_finite_differences(name):
    fn, arrays = CASES[name]

    def one(*xs):
        out = _flat(fn(eager, *xs))
        return out[0] if len(out) == 1 else eager.stack(out)

    _fd_check(one, arrays)


@pytest.mark.parametrize("name", sorted(CASES))
def test_static_compile_traces_and_equals_eager(name):
    fn, arrays = CASES[name]
    _compiled_equals_eager(lambda *xs: tuple(_flat(fn(eager, *xs))), arrays)


def test_meshgrid_outputs_are_expanded_grids():
    x, y = eager.tensor([1, 2, 3]), eager.tensor([4, 5])
    gx, gy = eager.meshgrid(x, y, indexing="ij")
    assert tuple(gx.shape) == (3, 2) and gx[:, 0].tolist() == [1, 2, 3] and gy[0].tolist() == [4, 5]
    gx, gy = eager.meshgrid([x, y], indexing="xy")
    assert tuple(gx.shape) == (2, 3) and gx[0].tolist() == [1, 2, 3] and gy[:, 0].tolist() == [4, 5]
    with pytest.raises(ValueError, match="indexing must be one of"):
        eager.meshgrid(x, y, indexing="ji")
    with pytest.raises(RuntimeError, match="0D or 1D"):
        eager.meshgrid(eager.zeros(2, 2), y)


def test_isclose_against_pytorch_including_inf_nan_and_ints():
    torch = pytest.importorskip("torch")
    a = [1.0, float("inf"), float("nan"), -float("inf"), 1e-9, 100.0, 2.0]
    b = [1.0 + 1e-6, float("inf"), float("nan"), float("inf"), 0.0, 100.001, float("nan")]
    for kw in ({}, {"equal_nan": True}, {"rtol": 1e-3, "atol": 0.0}, {"rtol": 0.0, "atol": 0.0}):
        for dt_e, dt_t in ((eager.float64, torch.float64), (eager.float32, torch.float32)):
            got = eager.isclose(eager.tensor(a, dtype=dt_e), eager.tensor(b, dtype=dt_e), **kw)
            want = torch.isclose(torch.tensor(a, dtype=dt_t), torch.tensor(b, dtype=dt_t), **kw)
            assert got.dtype is eager.bool and got.tolist() == want.tolist(), kw
    ia, ib = [1, 5, 10, -3], [2, 5, 12, -3]
    got = eager.isclose(eager.tensor(ia), eager.tensor(ib), atol=1, rtol=0.1)
    assert got.tolist() == torch.isclose(torch.tensor(ia), torch.tensor(ib), atol=1, rtol=0.1).tolist()
    x = eager.tensor(a)
    assert x.allclose(x.clone(), equal_nan=True) and not x.allclose(x.clone())


def test_isclose_refuses_mixed_dtypes_and_negative_tolerances():
    with pytest.raises(RuntimeError, match="Float did not match Double|float32 did not match float64"):
        eager.isclose(eager.zeros(2), eager.zeros(2, dtype=eager.float64))
    with pytest.raises(RuntimeError, match="non-negative"):
        eager.isclose(eager.zeros(2), eager.zeros(2), rtol=-1.0)


def test_isclose_compiles():
    _compiled_equals_eager(lambda a, b: eager.isclose(a, b, rtol=0.5), [A, A + 0.6 * B])


def test_count_nonzero_against_pytorch_and_compiled():
    torch = pytest.importorskip("torch")
    a = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])
    for dim in (None, 0, 1, -1, (0, 1)):
        got = eager.count_nonzero(eager.tensor(a), dim=dim)
        want = torch.count_nonzero(torch.tensor(a), dim=dim)
        assert got.dtype is eager.int64 and got.tolist() == want.tolist()
    assert eager.tensor([True, False, True]).count_nonzero().item() == 2
    _compiled_equals_eager(lambda x: eager.count_nonzero(x, dim=1), [a])


def test_diff_of_bool_is_xor_and_its_errors():
    torch = pytest.importorskip("torch")
    m = [True, True, False, True]
    assert eager.diff(eager.tensor(m)).tolist() == torch.diff(torch.tensor(m)).tolist()
    assert eager.diff(eager.tensor([1, 4, 9, 16]), n=2).tolist() == [2, 2]
    assert tuple(eager.diff(eager.zeros(3), n=5).shape) == (0,)
    with pytest.raises(RuntimeError, match="at least one-dimensional"):
        eager.diff(eager.tensor(1.0))
    with pytest.raises(RuntimeError, match="order must be non-negative"):
        eager.diff(eager.zeros(3), n=-1)
    with pytest.raises(RuntimeError, match="same dimension as input"):
        eager.diff(eager.zeros(2, 3), prepend=eager.zeros(3))


def test_movedim_and_stack_errors():
    x = eager.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match="movedim: Invalid source or destination dims"):
        eager.movedim(x, (0, 1), 2)
    with pytest.raises(RuntimeError, match="repeated dim in `source`"):
        eager.movedim(x, (0, 0), (1, 2))
    with pytest.raises(IndexError):
        eager.movedim(x, 3, 0)
    with pytest.raises(TypeError, match="must be tuple of Tensors"):
        eager.hstack(x)
    with pytest.raises(RuntimeError, match="non-empty"):
        eager.vstack([])
    assert tuple(x.movedim(2, 0).shape) == (4, 2, 3) and tuple(x.moveaxis(-1, 1).shape) == (2, 4, 3)
    assert tuple(eager.tile(x, (2, 1, 1, 1)).shape) == (2, 2, 3, 4) and tuple(x.tile(2).shape) == (2, 3, 8)


def test_addcdiv_refuses_integer_division_and_grad_fn_names():
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        eager.addcdiv(eager.zeros(2), eager.tensor([1, 2]), eager.tensor([1, 2]))
    x = eager.ones(3, requires_grad=True)
    assert eager.addcmul(x, x, x).grad_fn.name() == "AddcmulBackward0"
    assert eager.addcdiv(x, x, x).grad_fn.name() == "AddcdivBackward0"


def test_inplace_addcmul_addcdiv_as_pytorch():
    torch = pytest.importorskip("torch")
    e, t = eager.tensor(A.copy()), torch.tensor(A.copy())
    e.addcmul_(eager.tensor(B), eager.tensor(V), value=3).addcdiv_(eager.tensor(B), eager.tensor(V + 4.0))
    t.addcmul_(torch.tensor(B), torch.tensor(V), value=3).addcdiv_(torch.tensor(B), torch.tensor(V + 4.0))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)
    # through a leaf's use: the in-place write is recorded and gradients flow to the operands
    p = eager.tensor(B, requires_grad=True)
    y = eager.tensor(A).clone()
    y.addcmul_(p, p, value=0.5)
    y.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), B, rtol=1e-12)


def test_inplace_forms_compile():
    def step(a, b, v):
        out = a.clone()
        out.addcmul_(b, v, value=0.1)
        out.addcdiv_(b, v + 3.0)
        return out

    _compiled_equals_eager(step, [A, B, V])
