"""More of `eager.linalg`, as torch.linalg: the LU family (lu_factor, lu_factor_ex, lu,
lu_solve), solve_ex, inv_ex, tensorinv, tensorsolve, householder_product, and geqrf.

The LU factorization is LAPACK's getrf algorithm (partial pivoting, the first largest
magnitude in a column taken as pivot, 1-based int32 pivots) written on NumPy arrays,
vectorized over the batch; its backward is PyTorch's linalg_lu_backward (square, wide and
tall). lu_solve, tensorinv, tensorsolve and householder_product are compositions of
differentiable eager ops, so they differentiate as those do."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import return_types
from ._linalg_decompositions import LinAlgError, _array, _check_matrix, _wrap
from .autograd.function import Function

_LUFactorResult = return_types.make("linalg_lu_factor", ("LU", "pivots"))
_LUFactorExResult = return_types.make("linalg_lu_factor_ex", ("LU", "pivots", "info"))
_LUResult = return_types.make("linalg_lu", ("P", "L", "U"))
_SolveExResult = return_types.make("linalg_solve_ex", ("result", "info"))
_InvExResult = return_types.make("linalg_inv_ex", ("inverse", "info"))
_GeqrfResult = return_types.make("geqrf", ("a", "tau"))


def _getrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(LU packed, pivots (1-based int32), info) of each matrix of a (..., m, n)."""
    batch = a.shape[:-2]
    m, n = a.shape[-2:]
    k = min(m, n)
    lu = np.array(a, copy=True).reshape(-1, m, n)
    nb = lu.shape[0]
    piv = np.zeros((nb, k), dtype=np.int32)
    info = np.zeros(nb, dtype=np.int32)
    rows = np.arange(nb)
    for j in range(k):
        p = j + np.argmax(np.abs(lu[:, j:, j]), axis=1) if nb else np.zeros(0, dtype=np.intp)
        piv[:, j] = p + 1
        row_j = lu[rows, j].copy()
        lu[rows, j] = lu[rows, p]
        lu[rows, p] = row_j
        pivot = lu[:, j, j]
        zero = pivot == 0
        info[(info == 0) & zero] = j + 1
        safe = np.where(zero, 1, pivot)
        lu[:, j + 1:, j] /= safe[:, None]
        lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j:j + 1] * lu[:, j:j + 1, j + 1:]
    return lu.reshape(*batch, m, n), piv.reshape(*batch, k), info.reshape(batch)


def _permutation(piv: np.ndarray, m: int) -> np.ndarray:
    """perm with A[perm] = L U for each batch entry (the row swaps applied in order)."""
    batch = piv.shape[:-1]
    p2 = piv.reshape(-1, piv.shape[-1]).astype(np.intp) - 1
    perm = np.broadcast_to(np.arange(m), (p2.shape[0], m)).copy()
    rows = np.arange(p2.shape[0])
    for j in range(p2.shape[1]):
        t = perm[rows, j].copy()
        perm[rows, j] = perm[rows, p2[:, j]]
        perm[rows, p2[:, j]] = t
    return perm.reshape(*batch, m)


def _perm_matrix(perm: np.ndarray, dtype: Any) -> np.ndarray:
    """P with P[perm[i], i] = 1, so A = P L U."""
    m = perm.shape[-1]
    eye = np.eye(m, dtype=dtype)
    return np.swapaxes(eye[perm], -1, -2)


def _unpack(lu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m, n = lu.shape[-2:]
    k = min(m, n)
    low = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype)
    up = np.triu(lu[..., :k, :])
    return low, up


def _tri_solve_left(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.linalg.solve(a, b)


def _tri_solve_right(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """X with X a = b."""
    return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def _lu_backward(low: np.ndarray, up: np.ndarray, perm_m: np.ndarray, g: np.ndarray) -> np.ndarray:
    """PyTorch's linalg_lu_backward from the packed gradient g (its strict lower part is L's,
    its upper part U's)."""
    m, n = g.shape[-2:]
    k = min(m, n)
    mT = lambda x: np.swapaxes(x, -1, -2)  # noqa: E731, N806
    gl = np.tril(g[..., :, :k], -1)
    gu = np.triu(g[..., :k, :])
    if m == n:
        ga = np.tril(mT(low) @ gl, -1) + np.triu(gu @ mT(up))
        ga = _tri_solve_right(mT(up), ga)
        ga = _tri_solve_left(mT(low), ga)
    elif m < n:
        u1 = up[..., :, :k]
        ga = mT(low) @ gl - gu @ mT(up)
        ga = _tri_solve_right(mT(u1), np.tril(ga, -1))
        ga = np.concatenate([ga + np.triu(gu[..., :, :k]), gu[..., :, k:]], axis=-1)
        ga = _tri_solve_left(mT(low), ga)
    else:
        l1 = low[..., :k, :]
        ga = gu @ mT(up) - mT(low) @ gl
        ga = _tri_solve_left(mT(l1), np.triu(ga))
        ga = np.concatenate([ga + np.tril(gl[..., :k, :], -1), gl[..., k:, :]], axis=-2)
        ga = _tri_solve_right(mT(up), ga)
    return perm_m @ ga


class _LUFactor(Function):
    @staticmethod
    def forward(ctx: Any, A: Any) -> Any:  # noqa: N803
        lu, piv, info = _getrf(_array(A))
        ctx.lu, ctx.piv = lu, piv
        outs = _wrap(lu), _wrap(piv), _wrap(info)
        ctx.mark_non_differentiable(outs[1], outs[2])
        return outs

    @staticmethod
    def backward(ctx: Any, g_lu: Any, *_: Any) -> Any:
        lu = ctx.lu
        low, up = _unpack(lu)
        perm_m = _perm_matrix(_permutation(ctx.piv, lu.shape[-2]), lu.dtype)
        return _wrap(_lu_backward(low, up, perm_m, np.asarray(g_lu._data)))


def _check_lu_input(name: str, A: Any) -> None:  # noqa: N803
    _check_matrix(name, A, square=False)


def lu_factor_ex(A: Any, *, pivot: bool = True, check_errors: bool = False) -> Any:  # noqa: N803
    """(LU, pivots, info): the packed factors of A = P L U (L unit lower triangular, its
    diagonal not stored), the 1-based row swaps, and info > 0 where U has a zero pivot."""
    _check_lu_input("linalg.lu_factor_ex", A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu, piv, info = _LUFactor.apply(A)
    if check_errors and bool((info != 0).any()):
        raise LinAlgError(f"linalg.lu_factor_ex: The factorization could not be completed because the input is "
                          f"not invertible (U has a zero diagonal element at {int(info.max())}).")
    return _LUFactorExResult(lu, piv, info)


def lu_factor(A: Any, *, pivot: bool = True) -> Any:  # noqa: N803
    """(LU, pivots) of A = P L U; a singular A factors fine (as PyTorch), its U has a zero."""
    _check_lu_input("linalg.lu_factor", A)
    lu, piv, _ = lu_factor_ex(A, pivot=pivot)
    return _LUFactorResult(lu, piv)


def lu(A: Any, *, pivot: bool = True) -> Any:  # noqa: N803
    """(P, L, U) with A = P L U; L (m, k) unit lower, U (k, n) upper, k = min(m, n)."""
    from . import _functional as _F  # noqa: PLC0415
    from ._factories import eye  # noqa: PLC0415

    _check_lu_input("linalg.lu", A)
    packed, piv, _ = lu_factor_ex(A, pivot=pivot)
    m, n = A.shape[-2:]
    k = min(m, n)
    low = _F.tril(packed[..., :, :k], -1) + eye(m, k, dtype=A.dtype)
    up = _F.triu(packed[..., :k, :])
    perm = _wrap(_perm_matrix(_permutation(np.asarray(piv._data), m), np.asarray(packed._data).dtype))
    return _LUResult(perm, low, up)


def lu_unpack(LU_data: Any, LU_pivots: Any, unpack_data: bool = True, unpack_pivots: bool = True) -> Any:  # noqa: N803
    """(P, L, U) from lu_factor's packed form (torch.lu_unpack)."""
    from . import _functional as _F  # noqa: PLC0415
    from ._factories import eye  # noqa: PLC0415

    m, n = LU_data.shape[-2:]
    k = min(m, n)
    low = _F.tril(LU_data[..., :, :k], -1) + eye(m, k, dtype=LU_data.dtype)
    up = _F.triu(LU_data[..., :k, :])
    perm = _wrap(_perm_matrix(_permutation(np.asarray(LU_pivots._data), m), np.asarray(LU_data._data).dtype))
    return return_types.make("lu_unpack", ("P", "L", "U"))(perm, low, up)


def lu_solve(LU: Any, pivots: Any, B: Any, *, left: bool = True, adjoint: bool = False) -> Any:  # noqa: N803
    """X with A X = B (left=False: X A = B; adjoint: A^H in place of A) from lu_factor's
    output; composed of triangular solves, differentiable in LU and B."""
    from . import _functional as _F  # noqa: PLC0415
    from ._linalg_decompositions import solve_triangular  # noqa: PLC0415

    _check_matrix("linalg.lu_solve", LU)
    n = LU.shape[-1]
    if B.dim() < 2 or (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({LU.shape[-2]}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    perm_m = _wrap(_perm_matrix(_permutation(np.asarray(pivots._data), n), np.asarray(LU._data).dtype))
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return lu_solve(LU, pivots, B.mT, left=True, adjoint=not adjoint).mT
    if not adjoint:  # P L U X = B
        y = solve_triangular(LU, _F.matmul(perm_m.mT, B), upper=False, unitriangular=True)
        return solve_triangular(LU, y, upper=True)
    # U^T L^T P^T X = B
    y = solve_triangular(LU.mT, B, upper=False)
    y = solve_triangular(LU.mT, y, upper=True, unitriangular=True)
    return _F.matmul(perm_m, y)


def _info_of(A: Any) -> Any:  # noqa: N803
    return _wrap(_getrf(np.asarray(_array(A)))[2])


def _substitute(A: Any, B: Any) -> Any:  # noqa: N803
    """A^-1 B by LU and plain forward/back substitution, letting a zero pivot give inf/NaN as
    LAPACK's getrs does (the result *_ex functions return with info > 0); not differentiable."""
    a = np.asarray(_array(A))
    lu_arr, piv, _ = _getrf(a)
    n = a.shape[-1]
    perm = _permutation(piv, n)
    b = np.asarray(_array(B))
    b = np.broadcast_to(b, (*lu_arr.shape[:-2], *b.shape[-2:])) if b.ndim == lu_arr.ndim else b
    y = np.take_along_axis(np.array(b, dtype=lu_arr.dtype), perm[..., None], axis=-2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in range(n):
            y[..., i, :] -= np.einsum("...j,...jk->...k", lu_arr[..., i, :i], y[..., :i, :])
        for i in range(n - 1, -1, -1):
            y[..., i, :] -= np.einsum("...j,...jk->...k", lu_arr[..., i, i + 1:], y[..., i + 1:, :])
            y[..., i, :] /= lu_arr[..., i, i:i + 1]
    return _wrap(y)


def solve_ex(A: Any, B: Any, *, left: bool = True, check_errors: bool = False) -> Any:  # noqa: N803
    """(result, info) of linalg.solve: info > 0 where A is singular (result then NaN-filled)
    instead of raising, unless check_errors."""
    from .linalg import solve  # noqa: PLC0415

    _check_matrix("linalg.solve_ex", A)
    info = _info_of(A)
    if bool((info != 0).any()):
        if check_errors:
            raise LinAlgError("linalg.solve_ex: The solver failed because the input matrix is singular.")
        if left:
            return _SolveExResult(_substitute(A, B), info)
        return _SolveExResult(_substitute(A.mT, B.mT).mT, info)
    return _SolveExResult(solve(A, B, left=left), info)


def inv_ex(A: Any, *, check_errors: bool = False) -> Any:  # noqa: N803
    """(inverse, info) of linalg.inv: info > 0 where A is singular instead of raising."""
    from ._factories import eye  # noqa: PLC0415
    from .linalg import inv  # noqa: PLC0415

    _check_matrix("linalg.inv_ex", A)
    info = _info_of(A)
    if bool((info != 0).any()):
        if check_errors:
            raise LinAlgError("linalg.inv_ex: The diagonal element "
                              f"{int(info.max())} is zero, the inversion could not be completed because the "
                              "input matrix is singular.")
        return _InvExResult(_substitute(A, eye(A.shape[-1], dtype=A.dtype).expand(*A.shape)), info)
    return _InvExResult(inv(A), info)


def tensorinv(A: Any, ind: int = 2) -> Any:  # noqa: N803
    """The inverse of A read as a linear map from its first `ind` dims' space (output) to the
    rest (input): shape A.shape[ind:] + A.shape[:ind]."""
    from .linalg import inv  # noqa: PLC0415

    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape_out, shape_in = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows, cols = math.prod(shape_out), math.prod(shape_in)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(*shape_in, *shape_out)


def tensorsolve(A: Any, B: Any, dims: Any = None) -> Any:  # noqa: N803
    """X with tensordot(A, X, X.ndim) = B (dims: A's dims moved to the end first)."""
    from .linalg import solve  # noqa: PLC0415

    if dims is not None:
        nd = A.dim()
        moved = [d % nd for d in dims]
        A = A.permute(*[d for d in range(nd) if d not in moved], *moved)  # noqa: N806
    res_shape = tuple(A.shape[B.dim():])
    rows, cols = B.numel(), math.prod(res_shape)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return solve(A.reshape(rows, cols), B.reshape(rows, 1)).reshape(*res_shape)


def householder_product(A: Any, tau: Any) -> Any:  # noqa: N803
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T, v_i = A's column i
    below the diagonal with a 1 on it (LAPACK's orgqr); differentiable in A and tau."""
    from . import _functional as _F  # noqa: PLC0415
    from ._factories import eye  # noqa: PLC0415

    _check_matrix("linalg.householder_product", A, square=False)
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if k > n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"torch.linalg.householder_product: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {tuple(tau.shape[:-1])}")
    vs = _F.tril(A, -1) + eye(m, n, dtype=A.dtype)
    q = eye(m, n, dtype=A.dtype).expand(*A.shape).clone() if A.dim() > 2 else eye(m, n, dtype=A.dtype)
    for i in range(k - 1, -1, -1):  # Q = H_1 (H_2 (... (H_k I)))
        v = vs[..., :, i:i + 1]
        q = q - tau[..., i:i + 1].unsqueeze(-1) * _F.matmul(v, _F.matmul(v.mT, q))
    return q


def geqrf(A: Any) -> Any:  # noqa: N803
    """(a, tau) of LAPACK's geqrf: R on and above the diagonal, the Householder vectors below
    (not differentiable, as PyTorch's)."""
    a = np.asarray(_array(A))
    if a.ndim < 2:
        raise RuntimeError(f"geqrf: input must have at least 2 dimensions, got {a.ndim}")
    batch = a.shape[:-2]
    flat = a.reshape(-1, *a.shape[-2:])
    outs, taus = [], []
    for mat in flat:
        h, tau = np.linalg.qr(mat, mode="raw")
        outs.append(h.T)
        taus.append(tau)
    m, n = a.shape[-2:]
    out = np.stack(outs).reshape(*batch, m, n) if outs else np.zeros(a.shape, a.dtype)
    tau_arr = np.stack(taus).reshape(*batch, min(m, n)) if taus else np.zeros((*batch, min(m, n)), a.dtype)
    return _GeqrfResult(_wrap(np.ascontiguousarray(out.astype(a.dtype))), _wrap(tau_arr.astype(a.dtype)))
