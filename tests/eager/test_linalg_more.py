"""linalg's LU family, solve_ex / inv_ex, tensorinv / tensorsolve and householder_product
against PyTorch, with gradients checked by finite differences."""
import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")
gradcheck = eager.autograd.gradcheck


def _e(a):
    return eager.tensor(np.asarray(a))


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy(), dtype=np.float64),
                               np.asarray(b.detach().numpy(), dtype=np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (5, 3), (3, 5)])
def test_lu_factor_and_lu_match_torch_and_differentiate(shape):
    a = np.random.default_rng(0).standard_normal(shape)
    lu, piv = eager.linalg.lu_factor(_e(a))
    tlu, tpiv = torch.linalg.lu_factor(torch.tensor(a))
    _close(lu, tlu)
    assert piv.dtype == eager.int32 and (piv.numpy() == tpiv.numpy()).all()
    for mine, theirs in zip(eager.linalg.lu(_e(a)), torch.linalg.lu(torch.tensor(a)), strict=True):
        _close(mine, theirs)
    x = _e(a).requires_grad_(True)
    assert gradcheck(lambda t: eager.linalg.lu_factor(t)[0], (x,))
    assert gradcheck(lambda t: eager.linalg.lu(t)[1:], (x,))
    res = eager.linalg.lu_factor_ex(_e(a))
    assert res.info.dtype == eager.int32 and int(res.info.sum()) == 0


def test_lu_of_singular_reports_info():
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    res = eager.linalg.lu_factor_ex(_e(s))
    assert int(res.info) == int(torch.linalg.lu_factor_ex(torch.tensor(s)).info) == 2
    with pytest.raises(RuntimeError):
        eager.linalg.lu_factor_ex(_e(s), check_errors=True)
    inv, info = eager.linalg.inv_ex(_e(s))
    tinv, tinfo = torch.linalg.inv_ex(torch.tensor(s))
    assert int(info) == int(tinfo) and np.isinf(inv.numpy()).all()
    with pytest.raises(RuntimeError, match="singular"):
        eager.linalg.inv_ex(_e(s), check_errors=True)
    res = eager.linalg.solve_ex(_e(s), _e(np.ones((2, 1))))
    assert int(res.info) == 2


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve_matches_torch(left, adjoint):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 2) if left else (2, 2, 3))
    x = eager.linalg.lu_solve(*eager.linalg.lu_factor(_e(a)), _e(b), left=left, adjoint=adjoint)
    tx = torch.linalg.lu_solve(*torch.linalg.lu_factor(torch.tensor(a)), torch.tensor(b), left=left, adjoint=adjoint)
    _close(x, tx, 1e-9)
    ta, tb = _e(a).requires_grad_(True), _e(b).requires_grad_(True)
    assert gradcheck(lambda p, q: eager.linalg.lu_solve(*eager.linalg.lu_factor(p), q, left=left, adjoint=adjoint),
                     (ta, tb))


def test_solve_ex_inv_ex_regular():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((3, 3)), rng.standard_normal((3, 2))
    res = eager.linalg.solve_ex(_e(a), _e(b))
    _close(res.result, torch.linalg.solve(torch.tensor(a), torch.tensor(b)))
    assert int(res.info) == 0 and res.info.dtype == eager.int32
    _close(eager.linalg.inv_ex(_e(a)).inverse, torch.linalg.inv(torch.tensor(a)))


def test_tensorinv_tensorsolve():
    rng = np.random.default_rng(3)
    t = rng.standard_normal((4, 6, 8, 3))
    _close(eager.linalg.tensorinv(_e(t), ind=2), torch.linalg.tensorinv(torch.tensor(t), ind=2), 1e-8)
    a, b = rng.standard_normal((2, 3, 6)), rng.standard_normal((2, 3))
    _close(eager.linalg.tensorsolve(_e(a), _e(b)), torch.linalg.tensorsolve(torch.tensor(a), torch.tensor(b)))
    a = rng.standard_normal((6, 2, 3))
    _close(eager.linalg.tensorsolve(_e(a), _e(b), dims=(0,)),
           torch.linalg.tensorsolve(torch.tensor(a), torch.tensor(b), dims=(0,)))
    with pytest.raises(RuntimeError, match="ind"):
        eager.linalg.tensorinv(_e(t), ind=0)
    with pytest.raises(RuntimeError, match="prod"):
        eager.linalg.tensorinv(_e(rng.standard_normal((2, 3))), ind=1)


def test_householder_product():
    rng = np.random.default_rng(4)
    h, tau = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 2))
    _close(eager.linalg.householder_product(_e(h), _e(tau)),
           torch.linalg.householder_product(torch.tensor(h), torch.tensor(tau)))
    assert gradcheck(eager.linalg.householder_product, (_e(h).requires_grad_(True), _e(tau).requires_grad_(True)))
    with pytest.raises(RuntimeError, match="greater than or equal"):
        eager.linalg.householder_product(_e(h).mT, _e(tau))


def test_ldl_factor_and_solve_match_lapack_pivots():
    rng = np.random.default_rng(6)
    for trial in range(40):
        n = int(rng.integers(1, 8))
        a = rng.standard_normal((n, n))
        a = a + a.T
        if trial % 2:
            a[np.diag_indices(n)] *= 0.01  # small diagonal: 2x2 pivots
        t = torch.linalg.ldl_factor_ex(torch.tensor(a))
        e = eager.linalg.ldl_factor_ex(eager.tensor(a))
        assert (t.pivots.numpy() == e.pivots.numpy()).all() and int(e.info) == int(t.info) == 0
        _close(e.LD, t.LD, 1e-12)
        b = rng.standard_normal((n, 2))
        x = eager.linalg.ldl_solve(e.LD, e.pivots, _e(b))
        np.testing.assert_allclose(a @ x.numpy(), b, atol=1e-9)
    a = rng.standard_normal((2, 5, 5))
    a = a + np.swapaxes(a, -1, -2)
    e, t = eager.linalg.ldl_factor(_e(a)), torch.linalg.ldl_factor(torch.tensor(a))
    _close(e.LD, t.LD, 1e-12)
    assert e.pivots.dtype == eager.int32


def test_ldl_factor_singular():
    res = eager.linalg.ldl_factor_ex(eager.zeros(3, 3))
    assert int(res.info) == 1 and res.pivots.tolist() == [1, 2, 3]
    with pytest.raises(RuntimeError, match="singular"):
        eager.linalg.ldl_factor(eager.zeros(3, 3))
    with pytest.raises(RuntimeError, match="square"):
        eager.linalg.ldl_factor(eager.zeros(2, 3))
