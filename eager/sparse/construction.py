"""Making sparse tensors: `eager.sparse_coo_tensor`, the legacy `eager.sparse.FloatTensor`-style
constructors and `Tensor.to_sparse()`."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from .._factories import tensor as _tensor
from .._factories import zeros as _zeros
from .._grad_mode import no_grad
from .._tensor import Tensor
from .tensor import SparseTensor


def sparse_coo_tensor(indices: Any, values: Any, size: Any = None, *, dtype: Any = None, device: Any = None,
                      requires_grad: bool = False, check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseTensor:
    """A sparse COO tensor with the given indices ((sparse_dim, nnz), integers) and values
    ((nnz, *dense_shape)); `size` defaults to the smallest that holds the indices. Values
    that require grad pass gradients through; `requires_grad=True` makes a sparse leaf.
    Mirrors torch.sparse_coo_tensor."""
    idx = indices if isinstance(indices, Tensor) else _tensor(indices)
    if idx.is_floating_point():
        raise RuntimeError(f"indices must be an int64 tensor (got {idx.dtype})")
    idx = idx.detach().to(_dtypes.int64)
    vals = values if isinstance(values, Tensor) else _tensor(values, dtype=dtype)
    if dtype is not None and vals.dtype is not dtype:
        vals = vals.to(dtype)
    if device is not None:
        vals, idx = vals.to(device), idx.to(device)
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if vals.ndim == 0:
        raise RuntimeError("values must be at least 1-dimensional (nnz, *dense_shape)")
    sd, nnz = int(idx.shape[0]), int(idx.shape[1])
    if vals.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           f"values: {vals.shape[0]}")
    idx_np = idx.numpy()
    if nnz and idx_np.min() < 0:
        d = int(np.argmin(idx_np.min(axis=1)))
        raise RuntimeError(f"found negative index {int(idx_np[d].min())} for dim {d}")
    if size is None:
        sizes = tuple(int(m) + 1 for m in idx_np.max(axis=1)) if nnz else (0,) * sd
        size = sizes + tuple(vals.shape[1:])
    size = tuple(int(n) for n in size)
    if len(size) != sd + vals.ndim - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sd}) + dense_dim ({vals.ndim - 1}), but got "
                           f"{len(size)}")
    if tuple(size[sd:]) != tuple(vals.shape[1:]):
        raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sd:]]}, got {list(vals.shape)}")
    for d in range(sd):
        if nnz and idx_np[d].max() >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found index "
                               f"{int(idx_np[d].max())}")
    if requires_grad:
        vals = vals.detach().clone().requires_grad_()
    coalesced = bool(is_coalesced) if is_coalesced is not None else nnz <= 1
    return SparseTensor._build(idx, vals, size, coalesced)


def _legacy(dtype: _dtypes.dtype, name: str):
    def construct(*args: Any, size: Any = None) -> SparseTensor:
        if args and all(isinstance(a, int) for a in args):  # FloatTensor(2, 3): an empty tensor of that size
            shape = tuple(args)
            return sparse_coo_tensor(_zeros((len(shape), 0), dtype=_dtypes.int64), _zeros(0, dtype=dtype), shape)
        if len(args) not in (2, 3):
            raise TypeError(f"torch.sparse.{name}: expected (indices, values[, size]) or sizes, got {len(args)} "
                            "arguments")
        warnings.warn("torch.sparse.SparseTensor(indices, values, shape, *, device=) is deprecated.  Please use "
                      "torch.sparse_coo_tensor(indices, values, shape, dtype=, device=).", UserWarning, stacklevel=2)
        values = args[1] if isinstance(args[1], Tensor) else _tensor(args[1])
        size = args[2] if len(args) == 3 else size
        return sparse_coo_tensor(args[0], values.to(dtype), size)

    construct.__name__ = construct.__qualname__ = name
    construct.__doc__ = (f"The legacy constructor torch.sparse.{name}(indices, values, size) (or (*sizes) for an "
                         "empty one): sparse_coo_tensor with the values cast to its dtype.")
    return construct


FloatTensor = _legacy(_dtypes.float32, "FloatTensor")
DoubleTensor = _legacy(_dtypes.float64, "DoubleTensor")
LongTensor = _legacy(_dtypes.int64, "LongTensor")


def to_sparse(input: Tensor, sparse_dim: int | None = None) -> SparseTensor:
    """The sparse COO form of a dense tensor: its nonzero entries (or nonzero slices over
    the first `sparse_dim` dims), coalesced. Differentiable: the values are read from input
    by indexing, so the gradient returns to the dense tensor. Mirrors torch.Tensor.to_sparse."""
    if isinstance(input, SparseTensor):
        return input.to_sparse(sparse_dim)
    nd = input.ndim
    sd = nd if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= nd:
        raise RuntimeError(f"to_sparse: sparse_dim must be in [0, {nd}], got {sparse_dim}")
    with no_grad():
        flat = input.detach().reshape(*input.shape[:sd], -1) if sd < nd else input.detach()
        mask = (flat != 0).any(-1) if sd < nd else flat != 0
        idx_np = np.stack(np.nonzero(mask.numpy())).astype(np.int64) if sd else np.zeros((0, 1), np.int64)
    idx = _tensor(idx_np, dtype=_dtypes.int64, device=input.device)
    if sd == 0:
        vals = input.unsqueeze(0)
    else:
        vals = input[tuple(idx[d] for d in range(sd))]
    return SparseTensor._build(idx, vals, tuple(input.shape), True)
