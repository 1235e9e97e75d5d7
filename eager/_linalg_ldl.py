"""linalg.ldl_factor(_ex) and ldl_solve, as torch.linalg's (hermitian=False, real input):
LAPACK's sytf2 (Bunch-Kaufman diagonal pivoting, lower storage) and sytrs written on NumPy,
one matrix at a time, so the factors and the 1-based pivots (negative for the rows of a 2x2
block) are LAPACK's own, which sytrf also gives for the sizes below its block size (64).
Neither records a gradient (PyTorch implements none)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import return_types
from ._linalg_decompositions import LinAlgError, _array, _check_matrix, _wrap

_LDLFactorResult = return_types.make("linalg_ldl_factor", ("LD", "pivots"))
_LDLFactorExResult = return_types.make("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0


def _sytf2(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(LD, ipiv, info) of one symmetric matrix (its lower triangle read); 0-based indices
    inside, LAPACK's 1-based pivots out."""
    a = np.tril(a).astype(a.dtype, copy=True)
    n = a.shape[0]
    ipiv = np.zeros(n, dtype=np.int32)
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = abs(a[k, k])
        if k < n - 1:
            imax = k + 1 + int(np.argmax(np.abs(a[k + 1:, k])))
            colmax = abs(a[imax, k])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0 or math.isnan(absakk):
            if info == 0:
                info = k + 1
            kp = k
        else:
            if absakk >= _ALPHA * colmax:
                kp = k
            else:
                jmax = k + int(np.argmax(np.abs(a[imax, k:imax])))
                rowmax = abs(a[imax, jmax])
                if imax < n - 1:
                    jmax = imax + 1 + int(np.argmax(np.abs(a[imax + 1:, imax])))
                    rowmax = max(rowmax, abs(a[jmax, imax]))
                if absakk >= _ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif abs(a[imax, imax]) >= _ALPHA * rowmax:
                    kp = imax
                else:
                    kp, kstep = imax, 2
            kk = k + kstep - 1
            if kp != kk:  # swap rows and columns kk and kp of the trailing lower triangle
                if kp < n - 1:
                    a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
                seg = a[kk + 1:kp, kk].copy()
                a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
                a[kp, kk + 1:kp] = seg
                a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
                if kstep == 2:
                    a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]
            if kstep == 1:
                if k < n - 1:
                    d11 = 1.0 / a[k, k]
                    x = a[k + 1:, k].copy()
                    a[k + 1:, k + 1:] -= np.tril(d11 * np.outer(x, x))
                    a[k + 1:, k] *= d11
            elif k < n - 2:
                d21 = a[k + 1, k]
                d11 = a[k + 1, k + 1] / d21
                d22 = a[k, k] / d21
                t = 1.0 / (d11 * d22 - 1.0)
                d21 = t / d21
                for j in range(k + 2, n):
                    wk = d21 * (d11 * a[j, k] - a[j, k + 1])
                    wkp1 = d21 * (d22 * a[j, k + 1] - a[j, k])
                    a[j:, j] -= a[j:, k] * wk + a[j:, k + 1] * wkp1
                    a[j, k] = wk
                    a[j, k + 1] = wkp1
        if kstep == 1:
            ipiv[k] = kp + 1
        else:
            ipiv[k] = ipiv[k + 1] = -(kp + 1)
        k += kstep
    return a, ipiv, info


def _sytrs(a: np.ndarray, ipiv: np.ndarray, b: np.ndarray) -> np.ndarray:
    """X with A X = B from sytf2's lower factors (LAPACK's sytrs)."""
    b = b.copy()
    n = a.shape[0]
    k = 0
    while k < n:  # L D Y = P B
        if ipiv[k] > 0:
            kp = ipiv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            b[k + 1:] -= np.outer(a[k + 1:, k], b[k])
            b[k] /= a[k, k]
            k += 1
        else:
            kp = -ipiv[k] - 1
            if kp != k + 1:
                b[[k + 1, kp]] = b[[kp, k + 1]]
            b[k + 2:] -= np.outer(a[k + 2:, k], b[k]) + np.outer(a[k + 2:, k + 1], b[k + 1])
            akm1k = a[k + 1, k]
            akm1 = a[k, k] / akm1k
            ak = a[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1.0
            bkm1 = b[k] / akm1k
            bk = b[k + 1] / akm1k
            b[k] = (ak * bkm1 - bk) / denom
            b[k + 1] = (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T P^T X = Y
        if ipiv[k] > 0:
            b[k] -= a[k + 1:, k] @ b[k + 1:]
            kp = ipiv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            b[k] -= a[k + 1:, k] @ b[k + 1:]
            b[k - 1] -= a[k + 1:, k - 1] @ b[k + 1:]
            kp = -ipiv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            k -= 2
    return b


def ldl_factor_ex(A: Any, *, hermitian: bool = False, check_errors: bool = False) -> Any:  # noqa: N803
    """(LD, pivots, info): A = P L D L^T P^T with D of 1x1 and 2x2 blocks (Bunch-Kaufman),
    L's strict lower part and D packed in LD's lower triangle; info > 0 where D is singular."""
    _check_matrix("torch.linalg.ldl_factor_ex", A)
    a = np.asarray(_array(A))
    n = a.shape[-1]
    flat = a.reshape(-1, n, n)
    lds, pivs, infos = [], [], []
    with np.errstate(all="ignore"):
        for mat in flat:
            ld, piv, info = _sytf2(mat)
            lds.append(ld)
            pivs.append(piv)
            infos.append(info)
    batch = a.shape[:-2]
    ld_arr = np.stack(lds).reshape(a.shape) if lds else np.zeros(a.shape, a.dtype)
    piv_arr = np.stack(pivs).reshape(*batch, n) if pivs else np.zeros((*batch, n), np.int32)
    info_arr = np.asarray(infos, dtype=np.int32).reshape(batch)
    if check_errors and (info_arr != 0).any():
        raise LinAlgError(f"torch.linalg.ldl_factor_ex: The factorization could not be completed because the block "
                          f"diagonal matrix D is singular (zero pivot at {int(info_arr.max())}).")
    return _LDLFactorExResult(_wrap(ld_arr), _wrap(piv_arr), _wrap(info_arr))


def ldl_factor(A: Any, *, hermitian: bool = False) -> Any:  # noqa: N803
    """(LD, pivots) of ldl_factor_ex; a singular D raises LinAlgError as PyTorch's."""
    ld, piv, info = ldl_factor_ex(A, hermitian=hermitian)
    if bool((info != 0).any()):
        raise LinAlgError(f"torch.linalg.ldl_factor: The factorization could not be completed because the block "
                          f"diagonal matrix is singular (zero pivot at {int(info.max())}).")
    return _LDLFactorResult(ld, piv)


def ldl_solve(LD: Any, pivots: Any, B: Any, *, hermitian: bool = False) -> Any:  # noqa: N803
    """X with A X = B from ldl_factor's (LD, pivots), batches broadcast."""
    _check_matrix("torch.linalg.ldl_solve", LD)
    if B.dim() < 2:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected B to have at least 2 dimensions, but it has {B.dim()}")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"torch.linalg.ldl_solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({LD.shape[-2]}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    ld = np.asarray(_array(LD))
    piv = np.asarray(_array(pivots))
    b = np.asarray(_array(B))
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    ld_b = np.broadcast_to(ld, (*batch, n, n)).reshape(-1, n, n)
    piv_b = np.broadcast_to(piv, (*batch, n)).reshape(-1, n)
    b_b = np.broadcast_to(b, (*batch, *b.shape[-2:])).reshape(-1, *b.shape[-2:])
    dtype = np.result_type(ld.dtype, b.dtype)
    with np.errstate(all="ignore"):
        out = [_sytrs(m, p, rhs.astype(dtype)) for m, p, rhs in zip(ld_b, piv_b, b_b, strict=True)]
    res = np.stack(out).reshape(*batch, *b.shape[-2:]) if out else np.zeros((*batch, *b.shape[-2:]), dtype)
    return _wrap(res)
