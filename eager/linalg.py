"""`eager.linalg`: norms (vector norms, and the Frobenius norm of matrices), the inverse,
linear solves, the determinant and the cross product, as torch.linalg. Each differentiates and compiles: the
norms are built on `eager.norm` (0 gradient at 0), the others are ops of their own
(eager.ops.linalg) running LAPACK through NumPy or CuPy. The decompositions (cholesky, qr,
eigh, svd and slogdet, pinv, matrix_rank, lstsq, solve_triangular) are autograd.Functions or
compositions in eager/_linalg_decompositions, re-exported at the end."""
from __future__ import annotations

from typing import Any

from gmops.linalg import DET, INV, SOLVE

from . import _functional as _F
from ._compositions.linalg import _cross


def vector_norm(x: Any, ord: float = 2, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
                dtype: Any = None) -> Any:
    """The ord-norm of x's elements over dim (all of them when None)."""
    if dtype is not None:
        x = x.to(dtype)
    return _F.norm(x, ord, dim, keepdim)


def matrix_norm(A: Any, ord: Any = "fro", dim: tuple = (-2, -1), keepdim: bool = False, *,  # noqa: N803
                dtype: Any = None) -> Any:
    """The matrix norm over the two dims: 'fro' (Frobenius), 'nuc' (sum of singular values),
    2 / -2 (largest / smallest singular value), 1 / -1 (max / min column abs-sum), inf / -inf
    (max / min row abs-sum). Mirrors torch.linalg.matrix_norm."""
    if A.dim() < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions, got {A.dim()}")
    if dtype is not None:
        A = A.to(dtype)  # noqa: N806
    d0, d1 = (d % A.dim() for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        s = svdvals(A.movedim((d0, d1), (-2, -1)))
        out = _F.sum(s, -1) if ord == "nuc" else (s[..., 0] if ord == 2 else s[..., -1])
    elif ord in (1, -1, float("inf"), float("-inf")):
        summed, other = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = _F.sum(_F.abs(A), summed, True)
        out = (sums.amax(other, True) if ord > 0 else sums.amin(other, True)).squeeze((d0, d1))
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if keepdim:
        for d in sorted((d0, d1)):
            out = out.unsqueeze(d)
    return out


def norm(A: Any, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:  # noqa: N803
    """torch.linalg.norm: with ord=None the 2-norm of the flattened input (dim=None), of
    vectors along an int dim, or the Frobenius norm over a pair of dims; a string ord, or a
    number ord over a pair of dims (or of a 2-d input without dim), is a matrix norm, a
    number ord otherwise a vector norm."""
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if isinstance(ord, str) or (dim is not None and len(dim) == 2) or (dim is None and A.dim() == 2):
        return matrix_norm(A, ord, tuple(dim) if dim is not None else (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def cond(A: Any, p: Any = None) -> Any:  # noqa: N803
    """The condition number: largest over smallest singular value (p None or 2), or
    norm(A, p) norm(inv(A), p) for the other matrix norms. Mirrors torch.linalg.cond."""
    if p is None or p == 2 or p == -2:
        s = svdvals(A)
        return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


def inv(A: Any) -> Any:  # noqa: N803
    """The inverse of each square matrix of the last two dims; a singular one raises
    RuntimeError. Mirrors torch.linalg.inv."""
    return INV(A)


def solve(A: Any, B: Any, *, left: bool = True) -> Any:  # noqa: N803
    """X with A X = B. B is a batch of vectors when it is 1-d or has A's shape without its last
    dim (PyTorch's rule), else of (n, k) matrices; batch dims broadcast. Mirrors torch.linalg.solve."""
    if not left:
        raise NotImplementedError("linalg.solve: left=False (X A = B) is not supported; solve A^T X^T = B^T instead")
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        return SOLVE(A, B.unsqueeze(-1)).squeeze(-1)
    return SOLVE(A, B)


def det(A: Any) -> Any:  # noqa: N803
    """The determinant of each square matrix of the last two dims. Its gradient needs A
    invertible (a singular A raises there). Mirrors torch.linalg.det."""
    return DET(A)


def cross(input: Any, other: Any, *, dim: int = -1) -> Any:  # noqa: A002
    """The cross product of 3-vectors along dim (default the last), batch dims broadcast
    (eager.cross's composition, with torch.linalg.cross's default dim)."""
    return _cross("linalg.cross", input, other, dim)


def matmul(input: Any, other: Any) -> Any:  # noqa: A002
    """The matrix product (torch.matmul under its linalg name). Mirrors torch.linalg.matmul."""
    return _F.matmul(input, other)


def vecdot(x: Any, y: Any, *, dim: int = -1) -> Any:
    """The dot products of x and y along `dim` (broadcast; real dtypes, so no conjugate). Mirrors torch.linalg.vecdot."""
    return _F.sum(x * y, dim)


def diagonal(A: Any, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Any:  # noqa: N803
    """The `offset`-th diagonals of the matrices over dim1, dim2 (a view). Mirrors torch.linalg.diagonal."""
    return _F.diagonal(A, offset, dim1, dim2)


def multi_dot(tensors: Any) -> Any:
    """The product of a chain of matrices, the first and last may be vectors, multiplied in
    the order that needs the fewest scalar products (as PyTorch chooses for 3). Mirrors
    torch.linalg.multi_dot."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        if t.ndim != 2 and not (t.ndim == 1 and i in (0, len(ts) - 1)):
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D{' or 1D' if i in (0, len(ts) - 1) else ''} "
                               f"but got {t.ndim}D")
    first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_vec:
        ts[0] = ts[0].unsqueeze(0)
    if last_vec:
        ts[-1] = ts[-1].unsqueeze(1)
    if len(ts) == 3:
        a, b, c = ts
        cost_ab = a.shape[0] * a.shape[1] * b.shape[1] + a.shape[0] * b.shape[1] * c.shape[1]
        cost_bc = b.shape[0] * b.shape[1] * c.shape[1] + a.shape[0] * a.shape[1] * c.shape[1]
        out = _F.matmul(_F.matmul(a, b), c) if cost_ab <= cost_bc else _F.matmul(a, _F.matmul(b, c))
    else:
        out = ts[0]
        for t in ts[1:]:
            out = _F.matmul(out, t)
    if first_vec:
        out = out.squeeze(0)
    if last_vec:
        out = out.squeeze(-1)
    return out


def matrix_power(A: Any, n: int) -> Any:  # noqa: N803
    """A multiplied by itself n times by repeated squaring (n = 0: the identity; n < 0: of
    inv(A)). Mirrors torch.linalg.matrix_power."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{' by '.join(str(s) for s in A.shape[-2:])} matrices")
    if n == 0:
        from ._factories import eye  # noqa: PLC0415

        return _F.broadcast_to(eye(A.shape[-1], dtype=A.dtype, device=A.device), tuple(A.shape)).clone()
    base = inv(A) if n < 0 else A
    n = abs(n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else _F.matmul(result, base)
        n >>= 1
        if n:
            base = _F.matmul(base, base)
    return result


from ._conveniences.linalg import linalg_vander as vander  # noqa: E402,F401  (torch.linalg.vander)
from ._linalg_decompositions import (  # noqa: E402,F401  (the decompositions, kept in their own module)
    LinAlgError,
    cholesky,
    cholesky_ex,
    eigh,
    eigvalsh,
    lstsq,
    matrix_exp,
    matrix_rank,
    pinv,
    qr,
    slogdet,
    solve_triangular,
    svd,
    svdvals,
)
from ._linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve  # noqa: E402,F401  (Bunch-Kaufman LDL^T)
from ._linalg_more import (  # noqa: E402,F401  (the LU family and the tensor/Householder solvers)
    householder_product,
    inv_ex,
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
    solve_ex,
    tensorinv,
    tensorsolve,
)
