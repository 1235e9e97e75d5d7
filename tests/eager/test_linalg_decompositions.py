"""eager.linalg's decompositions (cholesky, qr, eigh, svd, slogdet, pinv, matrix_rank,
cholesky_solve, lstsq) against PyTorch: values, dtypes, named results, batching, errors, and
gradients against finite differences (eager.autograd.gradcheck, float64)."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd import gradcheck

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _pair(*shape: int) -> tuple:
    a = RNG.standard_normal(shape)
    return eager.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _spd(*shape: int) -> np.ndarray:
    a = RNG.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _close(e: object, t: object, atol: float = 1e-8) -> None:
    np.testing.assert_allclose(np.asarray(e.detach().numpy()), t.detach().numpy(), atol=atol, rtol=1e-6)


def test_cholesky_values_upper_batched_and_grad() -> None:
    a = _spd(2, 3, 3)
    for upper in (False, True):
        _close(eager.linalg.cholesky(eager.tensor(a), upper=upper), torch.linalg.cholesky(torch.tensor(a), upper=upper))
    _close(eager.cholesky(eager.tensor(a)), torch.linalg.cholesky(torch.tensor(a)))
    x = eager.tensor(RNG.standard_normal((3, 3)), requires_grad=True)
    assert gradcheck(lambda m: eager.linalg.cholesky(m @ m.mT + 3 * eager.eye(3, dtype=eager.float64)), (x,))
    assert gradcheck(lambda m: eager.linalg.cholesky(m @ m.mT + 3 * eager.eye(3, dtype=eager.float64),
                                                     upper=True), (x,))


def test_cholesky_not_positive_definite_raises_runtime_error() -> None:
    with pytest.raises(RuntimeError, match="positive-definite"):
        eager.linalg.cholesky(eager.tensor([[1.0, 2.0], [2.0, 1.0]]))
    assert issubclass(eager.linalg.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError, match="square"):
        eager.linalg.cholesky(eager.ones(2, 3))
    res = eager.linalg.cholesky_ex(eager.tensor([[1.0, 2.0], [2.0, 1.0]]))
    assert int(res.info) != 0


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr_matches_torch_and_differentiates(shape: tuple, mode: str) -> None:
    e, t = _pair(*shape)
    q, r = eager.linalg.qr(e, mode=mode)
    tq, tr = torch.linalg.qr(t, mode=mode)
    _close(q, tq)
    _close(r, tr)
    _close(eager.linalg.qr(e, mode="r").R, torch.linalg.qr(t, mode="r").R)
    if mode == "complete" and shape[-2] > shape[-1]:
        with pytest.raises(RuntimeError, match="complete"):
            q.sum().backward()
        return
    x = eager.tensor(RNG.standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda m: tuple(eager.linalg.qr(m, mode=mode)), (x,))


def test_qr_mode_r_does_not_differentiate() -> None:
    e, _ = _pair(3, 3)
    with pytest.raises(RuntimeError, match="mode='r'"):
        eager.linalg.qr(e, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match="unrecognized mode"):
        eager.linalg.qr(e, mode="bad")


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_values_vectors_and_grad(uplo: str) -> None:
    a = RNG.standard_normal((2, 4, 4))
    w, v = eager.linalg.eigh(eager.tensor(a), UPLO=uplo)
    tw, tv = torch.linalg.eigh(torch.tensor(a), UPLO=uplo)
    _close(w, tw)
    _close(abs(v), tv.abs())  # eigenvectors up to sign
    _close(eager.linalg.eigvalsh(eager.tensor(a), UPLO=uplo), torch.linalg.eigvalsh(torch.tensor(a), UPLO=uplo))
    assert eager.linalg.eigh(eager.tensor(a)).eigenvalues.dtype == eager.float64
    x = eager.tensor(RNG.standard_normal((4, 4)), requires_grad=True)
    # eigenvector signs are fixed by LAPACK continuously near x; the loss uses v v^T and v^4 to be sign-free
    assert gradcheck(lambda m: eager.linalg.eigh(m + m.mT, UPLO=uplo).eigenvalues, (x,))
    assert gradcheck(lambda m: eager.linalg.eigh(m + m.mT, UPLO=uplo).eigenvectors ** 2, (x,))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 3, 2)])
def test_svd_matches_torch_and_differentiates(shape: tuple) -> None:
    a = RNG.standard_normal(shape)
    for full in (True, False):
        u, s, vh = eager.linalg.svd(eager.tensor(a), full_matrices=full)
        tu, ts, tvh = torch.linalg.svd(torch.tensor(a), full_matrices=full)
        assert tuple(u.shape) == tuple(tu.shape) and tuple(vh.shape) == tuple(tvh.shape)
        _close(s, ts)
        k = min(shape[-2:])
        _close((u[..., :k] * s.unsqueeze(-2)) @ vh[..., :k, :], torch.tensor(a))
    _close(eager.linalg.svdvals(eager.tensor(a)), torch.linalg.svdvals(torch.tensor(a)))
    x = eager.tensor(a, requires_grad=True)
    assert gradcheck(lambda m: eager.linalg.svdvals(m), (x,))
    # U diag(S) Vh and |U|, |V| are sign-invariant functions of the singular vectors
    assert gradcheck(lambda m: tuple(t ** 2 for t in eager.linalg.svd(m, full_matrices=False)), (x,))
    legacy = eager.svd(eager.tensor(a))
    tl = torch.svd(torch.tensor(a))
    assert tuple(legacy.V.shape) == tuple(tl.V.shape)
    _close(abs(legacy.V), tl.V.abs())


def test_svdvals_gradient_of_repeated_singular_values_is_finite() -> None:
    x = eager.eye(3, dtype=eager.float64).requires_grad_()
    eager.linalg.svdvals(x).sum().backward()
    _close(x.grad, torch.eye(3, dtype=torch.float64))


def test_slogdet_logdet_and_grad() -> None:
    a = RNG.standard_normal((3, 4, 4))
    sign, logabs = eager.linalg.slogdet(eager.tensor(a))
    ts, tl = torch.linalg.slogdet(torch.tensor(a))
    _close(sign, ts)
    _close(logabs, tl)
    _close(eager.logdet(eager.tensor(a)), torch.logdet(torch.tensor(a)))
    x = eager.tensor(a, requires_grad=True)
    assert gradcheck(lambda m: eager.linalg.slogdet(m).logabsdet, (x,))
    spd = eager.tensor(_spd(4, 4), requires_grad=True)
    assert gradcheck(lambda m: eager.logdet(m), (spd,))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_pinv_matrix_rank_lstsq(shape: tuple) -> None:
    a = RNG.standard_normal(shape)
    _close(eager.linalg.pinv(eager.tensor(a)), torch.linalg.pinv(torch.tensor(a)))
    x = eager.tensor(a, requires_grad=True)
    assert gradcheck(lambda m: eager.linalg.pinv(m), (x,))
    r = eager.linalg.matrix_rank(eager.tensor(a))
    assert r.dtype == eager.int64
    assert r.tolist() == torch.linalg.matrix_rank(torch.tensor(a)).tolist()
    low = np.outer(np.arange(1.0, 5.0), np.arange(1.0, 4.0))
    assert int(eager.linalg.matrix_rank(eager.tensor(low))) == int(torch.linalg.matrix_rank(torch.tensor(low))) == 1
    b = RNG.standard_normal((*shape[:-1], 2))
    if shape[-2] >= shape[-1]:
        _close(eager.linalg.lstsq(eager.tensor(a), eager.tensor(b)).solution,
               torch.linalg.lstsq(torch.tensor(a), torch.tensor(b)).solution)


def test_cholesky_solve_values_and_grad() -> None:
    a = _spd(2, 3, 3)
    b = RNG.standard_normal((2, 3, 2))
    tl = torch.linalg.cholesky(torch.tensor(a))
    el = eager.linalg.cholesky(eager.tensor(a))
    for upper in (False, True):
        _close(eager.cholesky_solve(eager.tensor(b), el.mT if upper else el, upper=upper),
               torch.cholesky_solve(torch.tensor(b), tl.mT if upper else tl, upper=upper))
    bl = eager.tensor(b, requires_grad=True)
    ll = el.detach().requires_grad_()
    assert gradcheck(lambda x, y: eager.cholesky_solve(x, y), (bl, ll))


def test_tensor_methods() -> None:
    a = eager.tensor(_spd(3, 3))
    ta = torch.tensor(a.numpy())
    _close(a.cholesky(), ta.cholesky())
    _close(a.logdet(), ta.logdet())
    _close(a.pinverse(), ta.pinverse())
    _close(a.slogdet().logabsdet, ta.slogdet().logabsdet)
    _close(a.qr().R, ta.qr().R)


def test_traced_decompositions_say_they_run_eagerly_and_fall_back() -> None:
    static = pytest.importorskip("static")
    a = eager.tensor(RNG.standard_normal((3, 3)))
    with pytest.raises(RuntimeError, match="eagerly only"):
        static.compile(lambda m: eager.linalg.svdvals(m).sum())(a)
    with pytest.warns(RuntimeWarning, match="eagerly"):
        got = static.compile(lambda m: eager.linalg.slogdet(m).logabsdet + eager.erfinv(m * 0.1).sum(),
                             fallback="eager")(a)
    want = eager.linalg.slogdet(a).logabsdet + eager.erfinv(a * 0.1).sum()
    assert float(got) == float(want)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
def test_solve_triangular_matches_torch_and_differentiates(upper: bool, left: bool) -> None:
    a = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = RNG.standard_normal((2, 3, 2) if left else (2, 2, 3))
    for unit in (False, True):
        _close(eager.linalg.solve_triangular(eager.tensor(a), eager.tensor(b), upper=upper, left=left,
                                             unitriangular=unit),
               torch.linalg.solve_triangular(torch.tensor(a), torch.tensor(b), upper=upper, left=left,
                                             unitriangular=unit))
    ea, eb = eager.tensor(a, requires_grad=True), eager.tensor(b, requires_grad=True)
    assert gradcheck(lambda x, y: eager.linalg.solve_triangular(x, y, upper=upper, left=left), (ea, eb))
    eager.linalg.solve_triangular(ea, eb, upper=upper, left=left).sum().backward()
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    torch.linalg.solve_triangular(ta, tb, upper=upper, left=left).sum().backward()
    _close(ea.grad, ta.grad)  # triangular, as PyTorch's


def test_cholesky_inverse_and_svd_without_uv() -> None:
    a = _spd(2, 3, 3)
    tl = torch.linalg.cholesky(torch.tensor(a))
    el = eager.linalg.cholesky(eager.tensor(a))
    for upper in (False, True):
        _close(eager.cholesky_inverse(el.mT if upper else el, upper=upper),
               torch.cholesky_inverse(tl.mT if upper else tl, upper=upper))
    low = el.detach().requires_grad_()
    assert gradcheck(lambda m: eager.cholesky_inverse(m), (low,))
    m = RNG.standard_normal((4, 2))
    got, want = eager.svd(eager.tensor(m), compute_uv=False), torch.svd(torch.tensor(m), compute_uv=False)
    assert tuple(got.U.shape) == tuple(want.U.shape) and tuple(got.V.shape) == tuple(want.V.shape)
    _close(got.S, want.S)


@pytest.mark.parametrize("order", ["nuc", 2, -2, 1, float("inf")])
def test_matrix_norm_and_cond_gradients(order: object) -> None:
    x = eager.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(lambda m: eager.linalg.matrix_norm(m, order), (x,))
    sq = eager.tensor(RNG.standard_normal((3, 3)))
    _close(eager.linalg.cond(sq, order), torch.linalg.cond(torch.tensor(sq.numpy()), order))


def test_matrix_exp_matches_torch_and_differentiates() -> None:
    for scale in (0.1, 3.0):
        a = RNG.standard_normal((2, 4, 4)) * scale
        got = eager.linalg.matrix_exp(eager.tensor(a)).numpy()
        want = torch.linalg.matrix_exp(torch.tensor(a)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    x = eager.tensor(RNG.standard_normal((3, 3)), requires_grad=True)
    assert gradcheck(eager.linalg.matrix_exp, (x,))
    with pytest.raises(RuntimeError, match="square"):
        eager.linalg.matrix_exp(eager.ones(2, 3))
