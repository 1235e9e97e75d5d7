"""`eager.linalg`: norms (vector norms, and the Frobenius norm of matrices), the inverse,
linear solves, the determinant and the cross product, as torch.linalg. Each differentiates and compiles: the
norms are built on `eager.norm` (0 gradient at 0), the others are ops of their own
(eager.ops.linalg) running LAPACK through NumPy or CuPy."""
from __future__ import annotations

from typing import Any

from . import _functional as _F
from ._compositions.linalg import _cross
from .ops.linalg import DET, INV, SOLVE


def vector_norm(x: Any, ord: float = 2, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
                dtype: Any = None) -> Any:
    """The ord-norm of x's elements over dim (all of them when None)."""
    if dtype is not None:
        x = x.to(dtype)
    return _F.norm(x, ord, dim, keepdim)


def matrix_norm(A: Any, ord: Any = "fro", dim: tuple = (-2, -1), keepdim: bool = False, *,  # noqa: N803
                dtype: Any = None) -> Any:
    """The Frobenius norm over the two dims; other matrix norms (nuc, 2, 1, inf) need a
    singular value or a max over sums not built here, and raise."""
    if ord != "fro":
        raise NotImplementedError(f"linalg.matrix_norm: ord={ord!r} is not supported; only ord='fro' (the "
                                  "Frobenius norm) is")
    if A.dim() < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions, got {A.dim()}")
    return vector_norm(A, 2, tuple(dim), keepdim, dtype=dtype)


def norm(A: Any, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:  # noqa: N803
    """torch.linalg.norm: with ord=None the 2-norm of the flattened input (dim=None), of
    vectors along an int dim, or the Frobenius norm over a pair of dims; a number ord is a
    vector norm, ord='fro' a matrix norm."""
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if isinstance(ord, str):
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype)
    if dim is None and A.dim() == 2:
        raise NotImplementedError(f"linalg.norm: ord={ord!r} of a matrix is a matrix norm, which is not "
                                  "supported; give dim for vector norms or use ord='fro'")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


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
