"""The matrix decompositions of `eager.linalg` (cholesky, qr, eigh, svd and what is built on
them: slogdet, pinv, matrix_rank, cholesky_solve, lstsq), as torch.linalg. Each is an
`eager.autograd.Function`: the forward runs LAPACK through the array module (NumPy or CuPy),
the backward is PyTorch's formula written on arrays. They are not op records, so they run
eagerly (traced, they raise eager._dynamo.exc.Unsupported, which compile's fallback='eager'
turns into a graph break). Results are named tuples
(`eager.return_types`) as PyTorch's are."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import return_types
from ._device import xp_of_array
from .autograd.function import Function

_EighResult = return_types.make("linalg_eigh", ("eigenvalues", "eigenvectors"))
_SvdResult = return_types.make("linalg_svd", ("U", "S", "Vh"))
_TorchSvdResult = return_types.make("svd", ("U", "S", "V"))
_QrResult = return_types.make("linalg_qr", ("Q", "R"))
_SlogdetResult = return_types.make("linalg_slogdet", ("sign", "logabsdet"))
_CholeskyExResult = return_types.make("linalg_cholesky_ex", ("L", "info"))
_LstsqResult = return_types.make("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))


class LinAlgError(RuntimeError):
    """A matrix a decomposition needs (positive-definite, invertible, converging) is not; a
    RuntimeError as torch.linalg.LinAlgError is."""


def _wrap(arr: Any) -> Any:
    from ._tensor import Tensor  # noqa: PLC0415

    return Tensor._make(arr)


def _array(A: Any) -> Any:  # noqa: N803
    """A's array; a traced value has none: these decompositions run eagerly only (the compiled
    function breaks its graph here with fallback='eager', or says why)."""
    data = getattr(A, "_data", None)
    if data is None:
        raise untraceable("eager.linalg's decompositions (cholesky, qr, eigh, svd, slogdet, pinv, matrix_rank, "
                          "matrix_exp) run "
                          "eagerly only and cannot be traced into a compiled graph; compile with fallback='eager' or "
                          "call them outside the compiled function")
    return data


def untraceable(message: str) -> Exception:
    """The error for an eager-only function met while tracing: static's TraceError (which
    compile's fallback='eager' catches) when static is loaded, as it is while tracing (eager
    does not import static), else eager._dynamo.exc.Unsupported, its base class."""
    import sys  # noqa: PLC0415

    from ._dynamo.exc import Unsupported  # noqa: PLC0415

    errors = sys.modules.get("static.errors")
    cls = getattr(errors, "TraceError", Unsupported)
    return cls(message)


def _mT(a: Any) -> Any:  # noqa: N802
    return a.swapaxes(-1, -2)


def _check_matrix(name: str, A: Any, square: bool = True) -> None:  # noqa: N803
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions, got {A.dim()}")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if not A.is_floating_point():
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype}")


# -- cholesky --------------------------------------------------------------------------------------------
class _Cholesky(Function):
    @staticmethod
    def forward(ctx: Any, A: Any) -> Any:  # noqa: N803
        a = _array(A)
        xp = xp_of_array(a)
        try:
            L = xp.linalg.cholesky(a)  # noqa: N806
        except Exception as err:  # numpy.linalg.LinAlgError
            raise LinAlgError("linalg.cholesky: The factorization could not be completed because the input is not "
                              "positive-definite.") from err
        if not xp.all(xp.isfinite(L)):  # CuPy fills NaN instead of raising
            raise LinAlgError("linalg.cholesky: The factorization could not be completed because the input is not "
                              "positive-definite.")
        out = _wrap(L)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, gL: Any) -> Any:  # noqa: N803
        (L,) = ctx.saved_tensors
        low, g = L._data, gL._data
        xp = xp_of_array(low)
        phi = _mT(low) @ xp.tril(g)
        phi = xp.tril(phi)
        idx = xp.arange(phi.shape[-1])
        phi[..., idx, idx] *= 0.5
        # gA = L^{-H} phi L^{-1}, then symmetrized (PyTorch's cholesky_backward)
        linv = xp.linalg.inv(low)
        ga = _mT(linv) @ phi @ linv
        return _wrap((ga + _mT(ga)) * 0.5)


def cholesky(A: Any, *, upper: bool = False) -> Any:  # noqa: N803
    """The lower (upper=True: upper) Cholesky factor of each symmetric positive-definite matrix;
    a matrix that is not positive-definite raises LinAlgError (a RuntimeError). Only the
    lower triangle of A is read, as LAPACK does. Mirrors torch.linalg.cholesky."""
    _check_matrix("linalg.cholesky", A)
    L = _Cholesky.apply(A)  # noqa: N806
    return L.mT if upper else L


def cholesky_ex(A: Any, *, upper: bool = False, check_errors: bool = False) -> Any:  # noqa: N803
    """cholesky with an info tensor (0: success) instead of raising unless check_errors."""
    from gmbase.dtypes import int32  # noqa: PLC0415

    from ._factories import zeros  # noqa: PLC0415

    try:
        L = cholesky(A, upper=upper)  # noqa: N806
        info = zeros(tuple(A.shape[:-2]), dtype=int32)
    except LinAlgError:
        if check_errors:
            raise
        L = A * float("nan")  # noqa: N806
        info = zeros(tuple(A.shape[:-2]), dtype=int32) + 1
    return _CholeskyExResult(L, info)


def cholesky_legacy(input: Any, upper: bool = False) -> Any:  # noqa: A002
    """torch.cholesky (deprecated there): linalg.cholesky with upper as a positional argument."""
    return cholesky(input, upper=upper)


def cholesky_solve(B: Any, L: Any, upper: bool = False) -> Any:  # noqa: N803
    """X with A X = B where A = L L^T (upper=True: A = U^T U) from its Cholesky factor; two
    solves, differentiable in B and L. Mirrors torch.cholesky_solve."""
    from .linalg import solve  # noqa: PLC0415

    if B.dim() < 2 or L.dim() < 2:
        raise RuntimeError(f"cholesky_solve: b and L must have at least 2 dimensions, got {B.dim()} and {L.dim()}")
    low = L.mT if upper else L
    y = solve(low, B)
    return solve(low.mT, y)


def cholesky_inverse(L: Any, upper: bool = False) -> Any:  # noqa: N803
    """The inverse of A = L L^T (upper=True: U^T U) from its Cholesky factor, differentiable
    in L. Mirrors torch.cholesky_inverse."""
    from ._factories import eye  # noqa: PLC0415

    if L.dim() < 2:
        raise RuntimeError(f"cholesky_inverse: The input tensor L must have at least 2 dimensions, got {L.dim()}")
    identity = eye(L.shape[-1], dtype=L.dtype, device=L.device)
    from . import _functional as _F  # noqa: PLC0415

    return cholesky_solve(_F.broadcast_to(identity, tuple(L.shape)), L, upper)


# -- qr ----------------------------------------------------------------------------------------------------
def _copyltu(m: Any, xp: Any) -> Any:
    low = xp.tril(m, -1)
    return low + _mT(low) + xp.tril(xp.triu(m))


def _qr_backward_tall(q: Any, r: Any, gq: Any, gr: Any, xp: Any) -> Any:
    """m >= n, reduced: gA = (gQ + Q copyltu(M)) R^{-T}, M = R gR^T - gQ^T Q."""
    m = r @ _mT(gr) - _mT(gq) @ q
    b = gq + q @ _copyltu(m, xp)
    return _mT(xp.linalg.solve(r, _mT(b)))


class _QR(Function):
    @staticmethod
    def forward(ctx: Any, A: Any, mode: str) -> Any:  # noqa: N803
        a = _array(A)
        xp = xp_of_array(a)
        if mode == "r":
            r = xp.linalg.qr(a, mode="r")
            ctx.mode = mode
            return _wrap(xp.zeros((*a.shape[:-2], 0), dtype=a.dtype)), _wrap(r)
        q, r = xp.linalg.qr(a, mode=mode)
        Q, R = _wrap(q), _wrap(r)  # noqa: N806
        ctx.mode = mode
        ctx.save_for_backward(Q, R)
        ctx.set_materialize_grads(False)
        return Q, R

    @staticmethod
    def backward(ctx: Any, gQ: Any, gR: Any) -> Any:  # noqa: N803
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                               "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
        Q, R = ctx.saved_tensors  # noqa: N806
        q, r = Q._data, R._data
        xp = xp_of_array(q)
        m, n = q.shape[-2], r.shape[-1]
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        gq = xp.zeros_like(q) if gQ is None else gQ._data
        gr = xp.zeros_like(r) if gR is None else gR._data
        if m >= n:
            return _wrap(_qr_backward_tall(q, r, gq, gr, xp)), None
        # m < n: A = Q [X | Y] with X = Q R1 square; Y = Q R2
        r1, r2 = r[..., :, :m], r[..., :, m:]
        gr1, gr2 = gr[..., :, :m], gr[..., :, m:]
        y = q @ r2
        gy = q @ gr2
        gx = _qr_backward_tall(q, r1, gq + y @ _mT(gr2), gr1, xp)
        return _wrap(xp.concatenate([gx, gy], axis=-1)), None


def qr(A: Any, mode: str = "reduced") -> Any:  # noqa: N803
    """The QR decomposition A = Q R of each matrix: mode 'reduced' (Q m×k, R k×n, k = min(m, n)),
    'complete' (Q m×m) or 'r' (only R; Q is empty and the result does not differentiate).
    Mirrors torch.linalg.qr."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           "'complete'")
    _check_matrix("linalg.qr", A, square=False)
    Q, R = _QR.apply(A, mode)  # noqa: N806
    return _QrResult(Q, R)


def _iterative(name: str, A: Any, **kwargs: Any) -> Any:  # noqa: N803
    """xp.linalg.<name>(A's array, **kwargs) in A's array namespace, for the iterative
    factorizations (eigh, svd): a failure there raised as PyTorch's LinAlgError naming the op."""
    a = _array(A)
    try:
        return getattr(xp_of_array(a).linalg, name)(a, **kwargs)
    except Exception as err:
        raise LinAlgError(f"linalg.{name}: The algorithm failed to converge ({err})") from err


# -- eigh --------------------------------------------------------------------------------------------------
class _Eigh(Function):
    @staticmethod
    def forward(ctx: Any, A: Any, uplo: str) -> Any:  # noqa: N803
        w, v = _iterative("eigh", A, UPLO=uplo)
        W, V = _wrap(w), _wrap(v)  # noqa: N806
        ctx.save_for_backward(W, V)
        ctx.set_materialize_grads(False)
        return W, V

    @staticmethod
    def backward(ctx: Any, gW: Any, gV: Any) -> Any:  # noqa: N803
        W, V = ctx.saved_tensors  # noqa: N806
        w, v = W._data, V._data
        xp = xp_of_array(v)
        n = w.shape[-1]
        idx = xp.arange(n)
        if gV is None:
            inner = xp.zeros(v.shape, dtype=v.dtype)
        else:
            vhgv = _mT(v) @ gV._data
            vhgv = 0.5 * (vhgv - _mT(vhgv))
            e = w[..., None, :] - w[..., :, None]  # E_ij = lambda_j - lambda_i
            e[..., idx, idx] = 1
            inner = vhgv / e
        inner[..., idx, idx] = 0 if gW is None else gW._data
        return _wrap(v @ inner @ _mT(v)), None


def eigh(A: Any, UPLO: str = "L") -> Any:  # noqa: N803
    """Eigenvalues (ascending) and orthonormal eigenvectors of each symmetric matrix, reading
    its lower (UPLO='L') or upper triangle. The eigenvector gradient divides by eigenvalue
    gaps, so it is inf/NaN for repeated eigenvalues, as PyTorch's. Mirrors torch.linalg.eigh."""
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    _check_matrix("linalg.eigh", A)
    W, V = _Eigh.apply(A, UPLO)  # noqa: N806
    return _EighResult(W, V)


def eigvalsh(A: Any, UPLO: str = "L") -> Any:  # noqa: N803
    """The eigenvalues (ascending) of each symmetric matrix. Mirrors torch.linalg.eigvalsh."""
    return eigh(A, UPLO).eigenvalues


# -- svd ---------------------------------------------------------------------------------------------------
class _SVD(Function):
    @staticmethod
    def forward(ctx: Any, A: Any, full_matrices: bool) -> Any:  # noqa: N803
        u, s, vh = _iterative("svd", A, full_matrices=full_matrices)
        U, S, Vh = _wrap(u), _wrap(s), _wrap(vh)  # noqa: N806
        ctx.full = full_matrices
        ctx.save_for_backward(U, S, Vh)
        ctx.set_materialize_grads(False)
        return U, S, Vh

    @staticmethod
    def backward(ctx: Any, gU: Any, gS: Any, gVh: Any) -> Any:  # noqa: N803
        U, S, Vh = ctx.saved_tensors  # noqa: N806
        u, s, vh = U._data, S._data, Vh._data
        xp = xp_of_array(s)
        m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
        gu = None if gU is None else gU._data
        gvh = None if gVh is None else gVh._data
        u, vh = u[..., :, :k], vh[..., :k, :]
        if gu is not None:
            gu = gu[..., :, :k]
        if gvh is not None:
            gvh = gvh[..., :k, :]
        if gu is None and gvh is None:
            if gS is None:
                return None, None
            return _wrap(u @ (gS._data[..., :, None] * vh)), None
        idx = xp.arange(k)
        v = _mT(vh)
        gv = None if gvh is None else _mT(gvh)
        s2 = s * s
        e = s2[..., None, :] - s2[..., :, None]
        e[..., idx, idx] = 1
        ga = xp.zeros((*s.shape, k), dtype=s.dtype)
        if gu is not None:
            uhgu = _mT(u) @ gu
            ga = ga + (uhgu - _mT(uhgu)) * s[..., None, :]
        if gv is not None:
            vhgv = _mT(v) @ gv
            ga = ga + s[..., :, None] * (vhgv - _mT(vhgv))
        ga = ga / e
        if gS is not None:
            ga[..., idx, idx] += gS._data
        if m > n and gu is not None:
            ga = u @ ga
            gusinv = gu / s[..., None, :]
            ga = ga + gusinv - u @ (_mT(u) @ gusinv)
            ga = ga @ vh
        elif m < n and gv is not None:
            ga = ga @ vh
            gvsinv = gv / s[..., None, :]
            ga = ga + _mT(gvsinv) - (_mT(gvsinv) @ v) @ vh
            ga = u @ ga
        else:
            ga = u @ ga @ vh
        return _wrap(ga), None


def svd(A: Any, full_matrices: bool = True, *, driver: Any = None) -> Any:  # noqa: N803
    """A = U diag(S) Vh for each matrix, singular values descending; full_matrices=False keeps
    k = min(m, n) columns of U and rows of Vh. The singular-vector gradient divides by gaps of
    squared singular values (inf/NaN when repeated, as PyTorch's). Mirrors torch.linalg.svd."""
    _check_matrix("linalg.svd", A, square=False)
    U, S, Vh = _SVD.apply(A, bool(full_matrices))  # noqa: N806
    return _SvdResult(U, S, Vh)


def svdvals(A: Any, *, driver: Any = None) -> Any:  # noqa: N803
    """The singular values (descending) of each matrix. Mirrors torch.linalg.svdvals."""
    return svd(A, full_matrices=False).S


def svd_legacy(input: Any, some: bool = True, compute_uv: bool = True) -> Any:  # noqa: A002
    """torch.svd: (U, S, V) with V, not Vh; some=False gives square U and V. With
    compute_uv=False U and V are zero m×m and n×n matrices (some ignored), as PyTorch's."""
    U, S, Vh = svd(input, full_matrices=not some)  # noqa: N806
    if not compute_uv:
        from ._factories import zeros  # noqa: PLC0415

        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        return _TorchSvdResult(zeros((*batch, m, m), dtype=input.dtype), S.detach(),
                               zeros((*batch, n, n), dtype=input.dtype))
    return _TorchSvdResult(U, S, Vh.mT)


# -- slogdet, logdet ---------------------------------------------------------------------------------------
class _Slogdet(Function):
    @staticmethod
    def forward(ctx: Any, A: Any) -> Any:  # noqa: N803
        a = _array(A)
        xp = xp_of_array(a)
        sign, logabs = xp.linalg.slogdet(a)
        S, L = _wrap(xp.asarray(sign, dtype=a.dtype)), _wrap(xp.asarray(logabs, dtype=a.dtype))  # noqa: N806
        ctx.mark_non_differentiable(S)
        ctx.save_for_backward(A)
        return S, L

    @staticmethod
    def backward(ctx: Any, gsign: Any, glog: Any) -> Any:
        (A,) = ctx.saved_tensors  # noqa: N806
        a = A._data
        xp = xp_of_array(a)
        try:
            inv = xp.linalg.inv(a)
        except Exception as err:
            raise LinAlgError("linalg.slogdet: the gradient needs an invertible A; this one is singular") from err
        return _wrap(glog._data[..., None, None] * _mT(inv))


def slogdet(A: Any) -> Any:  # noqa: N803
    """(sign, log|det|) of each square matrix: stable where det under- or overflows. sign does
    not differentiate. Mirrors torch.linalg.slogdet."""
    _check_matrix("linalg.slogdet", A)
    sign, logabs = _Slogdet.apply(A)
    return _SlogdetResult(sign, logabs)


def logdet(input: Any) -> Any:  # noqa: A002
    """log det A: NaN where det < 0, -inf where it is 0. Mirrors torch.logdet."""
    from . import _functional as _F  # noqa: PLC0415

    sign, logabs = slogdet(input)
    return logabs + _F.log(sign.detach())


# -- pinv, matrix_rank, lstsq ------------------------------------------------------------------------------
def _default_rtol(A: Any, xp: Any) -> float:  # noqa: N803
    return float(np.finfo(np.dtype(A._data.dtype)).eps) * max(A.shape[-2], A.shape[-1])


class _Pinv(Function):
    @staticmethod
    def forward(ctx: Any, A: Any, atol: Any, rtol: Any, hermitian: bool) -> Any:  # noqa: N803
        a = _array(A)
        xp = xp_of_array(a)
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
        smax = s.max(axis=-1, keepdims=True) if s.shape[-1] else xp.zeros((*s.shape[:-1], 1), dtype=s.dtype)
        tol = xp.maximum(atol, rtol * smax)
        sinv = xp.where(s > tol, 1.0 / xp.where(s > tol, s, 1), 0).astype(a.dtype)
        p = _mT(vh) @ (sinv[..., :, None] * _mT(u))
        P = _wrap(p)  # noqa: N806
        ctx.save_for_backward(A, P)
        return P

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        A, P = ctx.saved_tensors  # noqa: N806
        a, p, g = A._data, P._data, grad._data
        m, n = a.shape[-2], a.shape[-1]
        ph, gh = _mT(p), _mT(g)
        if m <= n:  # PyTorch's pinv_backward, products kept to the smaller dimension
            k = gh @ p
            kph = k @ ph
            ga = -_mT(p @ k) + kph - (a @ p) @ kph + (ph @ p) @ (gh - k @ a)
        else:
            k = p @ gh
            phk = ph @ k
            ga = -_mT(k @ p) + (gh - a @ k) @ p @ ph + phk - phk @ p @ a
        return _wrap(ga), None, None, None


def pinv(A: Any, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Any:  # noqa: N803
    """The Moore-Penrose pseudo-inverse through the SVD, singular values at or below
    max(atol, rtol * largest) treated as 0 (rtol defaults to eps * max(m, n) when neither is
    given). Mirrors torch.linalg.pinv."""
    _check_matrix("linalg.pinv", A, square=False)
    xp = xp_of_array(A._data)
    if rtol is None:
        rtol = 0.0 if atol is not None and float(atol) > 0 else _default_rtol(A, xp)
    return _Pinv.apply(A, 0.0 if atol is None else float(atol), float(rtol), hermitian)


def matrix_rank(A: Any, *, atol: Any = None, rtol: Any = None, hermitian: bool = False, tol: Any = None) -> Any:  # noqa: N803
    """The number of singular values above max(atol, rtol * largest), as int64. Mirrors
    torch.linalg.matrix_rank."""
    _check_matrix("linalg.matrix_rank", A, square=False)
    a = _array(A)
    xp = xp_of_array(a)
    if tol is not None:
        atol, rtol = tol, 0.0
    if rtol is None:
        rtol = 0.0 if atol is not None and float(atol) > 0 else _default_rtol(A, xp)
    s = xp.linalg.svd(a, compute_uv=False)
    smax = s.max(axis=-1, keepdims=True) if s.shape[-1] else xp.zeros((*s.shape[:-1], 1), dtype=s.dtype)
    limit = xp.maximum(0.0 if atol is None else float(atol), float(rtol) * smax)
    return _wrap((s > limit).sum(axis=-1).astype(np.int64))


def lstsq(A: Any, B: Any, rcond: Any = None, *, driver: Any = None) -> Any:  # noqa: N803
    """The least-squares solution pinv(A) B (differentiable), with the rank and singular values
    (the 'gelsd' driver's fields; residuals are empty, as PyTorch's for its default CPU driver
    'gelsy'). Mirrors torch.linalg.lstsq."""
    from . import _functional as _F  # noqa: PLC0415

    vector = B.dim() == A.dim() - 1
    b = B.unsqueeze(-1) if vector else B
    solution = _F.matmul(pinv(A, rtol=rcond), b)
    if vector:
        solution = solution.squeeze(-1)
    empty = _wrap(xp_of_array(A._data).zeros((0,), dtype=A._data.dtype))
    return _LstsqResult(solution, empty, matrix_rank(A, rtol=rcond), svdvals(A.detach()))


def _attach_methods() -> None:
    """Tensor.cholesky, .svd, .qr, .slogdet, .logdet, .pinverse, .cholesky_solve (eager/_api.py
    is at its size bound, so they are attached here as eager._compositions attaches its own)."""
    from ._api import TensorAPI  # noqa: PLC0415

    def _qr(self: Any, some: bool = True) -> Any:
        """The QR factorization of the matrix (batch): `torch.qr`'s `some=True` is
        linalg.qr's mode 'reduced', `some=False` its mode 'complete'."""
        return qr(self, "reduced" if some else "complete")

    def _pinverse(self: Any, rcond: float = 1e-15) -> Any:
        """The Moore-Penrose pseudo-inverse, singular values below `rcond` times the largest
        treated as zero (linalg.pinv with rtol=rcond)."""
        return pinv(self, rtol=rcond)

    for name, fn in (("cholesky", cholesky_legacy), ("svd", svd_legacy), ("qr", _qr), ("slogdet", slogdet),
                     ("logdet", logdet), ("pinverse", _pinverse), ("cholesky_solve", cholesky_solve),
                     ("cholesky_inverse", cholesky_inverse)):
        setattr(TensorAPI, name, fn)


_attach_methods()


def solve_triangular(A: Any, B: Any, *, upper: bool, left: bool = True,  # noqa: N803
                     unitriangular: bool = False) -> Any:
    """X with A X = B (left=False: X A = B) reading only A's upper (upper=True) or lower
    triangle, its diagonal taken as ones when unitriangular; a solve on that triangle, so
    the gradient in A is triangular too, as PyTorch's. Mirrors torch.linalg.solve_triangular."""
    from . import _functional as _F  # noqa: PLC0415
    from .linalg import solve  # noqa: PLC0415

    _check_matrix("linalg.solve_triangular", A)
    if B.dim() < 2:
        raise RuntimeError(f"linalg.solve_triangular: The input tensor B must have at least 2 dimensions, got {B.dim()}")
    tri = _F.triu(A) if upper else _F.tril(A)
    if unitriangular:
        from ._factories import eye  # noqa: PLC0415

        tri = tri - _F.diag_embed(_F.diagonal(tri, 0, -2, -1)) + eye(A.shape[-1], dtype=A.dtype, device=A.device)
    if left:
        return solve(tri, B)
    return solve(tri.mT, B.mT).mT


def matrix_exp(A: Any) -> Any:  # noqa: N803
    """e^A of each square matrix: scaling and squaring around a degree-18 Taylor polynomial
    (its remainder is below 1e-17 once the scaled 1-norm is at most 1), composed of matmuls
    so it differentiates as they do. Mirrors torch.linalg.matrix_exp."""
    from . import _functional as _F  # noqa: PLC0415
    from ._factories import eye  # noqa: PLC0415

    _check_matrix("linalg.matrix_exp", A)
    a = _array(A)
    xp = xp_of_array(a)
    norm1 = float(xp.abs(a).sum(axis=-2).max()) if a.size else 0.0
    s = max(0, math.ceil(math.log2(norm1))) if norm1 > 1 else 0
    scaled = A / (2.0 ** s)
    identity = _F.broadcast_to(eye(A.shape[-1], dtype=A.dtype, device=A.device), tuple(A.shape))
    result = identity
    for k in range(18, 0, -1):  # Horner: I + X/1 (I + X/2 (I + ... ))
        result = identity + _F.matmul(scaled, result) / k
    for _ in range(s):
        result = _F.matmul(result, result)
    return result
