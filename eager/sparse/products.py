"""Products and sums with sparse operands: `eager.sparse.mm`/`spmm`/`addmm`/`sum`, written with
dense ops on the values."""
from __future__ import annotations

from typing import Any

from .._factories import zeros as _zeros
from .._tensor import Tensor
from .construction import to_sparse
from .tensor import SparseTensor, _unsupported


def _check_mm(a: Any, b: Any, name: str) -> None:
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError(f"{name}: both arguments must be matrices (got shapes {tuple(a.shape)} and "
                           f"{tuple(b.shape)})")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"{name}: mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                           f"{b.shape[0]}x{b.shape[1]})")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{name}: expected mat1 and mat2 to have the same dtype, but got: {a.dtype} != {b.dtype}")


def _sparse_dense_mm(s: SparseTensor, d: Tensor) -> Tensor:
    """out[r] += v * d[c] for each nonzero (r, c, v): index_select and index_add, so the
    gradient reaches both the values and d."""
    if s.dense_dim():
        raise _unsupported("mm of a hybrid sparse tensor (values with dense dims)")
    rows, cols = s._i[0], s._i[1]
    contrib = d.index_select(0, cols) * s._v.unsqueeze(1)
    out = _zeros((s.shape[0], d.shape[1]), dtype=d.dtype, device=d.device)
    return out.index_add(0, rows, contrib)


def mm(mat1: Any, mat2: Any) -> Any:
    """mat1 @ mat2 with mat1 sparse (2 sparse dims) and mat2 dense (dense result) or sparse
    (sparse result); gradients reach mat1's values and mat2. Mirrors torch.sparse.mm."""
    _check_mm(mat1, mat2, "mm")
    if isinstance(mat1, SparseTensor) and isinstance(mat2, SparseTensor):
        return to_sparse(_sparse_dense_mm(mat1, mat2.to_dense()))
    if isinstance(mat1, SparseTensor):
        return _sparse_dense_mm(mat1, mat2)
    if isinstance(mat2, SparseTensor):  # dense @ sparse = (sparse^T @ dense^T)^T
        return _sparse_dense_mm(mat2.t(), mat1.t()).t()
    return mat1 @ mat2


spmm = mm


def addmm(mat: Tensor, mat1: Any, mat2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """beta * mat + alpha * (mat1 @ mat2) with mat1 sparse. Mirrors torch.sparse.addmm."""
    prod = mm(mat1, mat2)
    prod = prod.to_dense() if isinstance(prod, SparseTensor) else prod
    mat = mat.to_dense() if isinstance(mat, SparseTensor) else mat
    return mat * beta + prod * alpha


def sum(input: Any, dim: Any = None, dtype: Any = None) -> Tensor:  # noqa: A001 (torch.sparse.sum)
    """The sum of all values (a dense 0-d tensor), or over `dim` (dense when no sparse dim
    remains, else sparse). Mirrors torch.sparse.sum."""
    if not isinstance(input, SparseTensor):
        return input.sum(dim) if dim is not None else input.sum()
    if dim is None:
        out = input._v.sum()
        return out if dtype is None else out.to(dtype)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(d % input.ndim for d in dims)
    dense = input.to_dense().sum(dims)
    remaining_sparse = input.sparse_dim() - len([d for d in dims if d < input.sparse_dim()])
    if dtype is not None:
        dense = dense.to(dtype)
    return to_sparse(dense, remaining_sparse) if remaining_sparse > 0 else dense
