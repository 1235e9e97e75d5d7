"""`eager.sparse`: sparse COO tensors (`torch.sparse_coo`), compact and honest.

A `SparseTensor` holds `indices` (int64, (sparse_dim, nnz)) and `values` (a dense tensor of
shape (nnz, *dense_shape)) for a tensor of `size`. Every op it supports is written with
dense ops on `values` (index_add, index_select, multiplication), so autograd needs nothing
of its own: gradients reach the values (and through them whatever made them) and the
dense operand of a product, and a sparse leaf's `.grad` is the sparse tensor of its
values' gradient on its own pattern, as PyTorch's.

Supported: `eager.sparse_coo_tensor`, `Tensor.to_sparse()`, `to_dense()`, `coalesce()`,
`is_coalesced()`, `indices()`/`values()` (coalesced only, as PyTorch) and
`_indices()`/`_values()`, `_nnz()`, `sparse_dim()`/`dense_dim()`, `t()`/`transpose()` of
sparse dims, `eager.sparse.mm`/`spmm`/`addmm`/`sum`, `eager.mm`/`matmul`/`@` of a sparse
matrix and a dense one (either side), sparse + dense (dense), sparse + sparse, sparse *
scalar or dense (sparse), negation, the zero-preserving unary ops (abs, sqrt, sin, tanh,
...), dtype casts and clone. Any other op on a sparse tensor raises a RuntimeError naming
the op and saying to call `.to_dense()` first."""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import _dtypes
from .._factories import tensor as _tensor
from .._factories import zeros as _zeros
from .._functional import _renamed
from .._functional import cat as _cat
from .._grad_mode import no_grad
from .._tensor import Size, Tensor

__all__ = ["DoubleTensor", "FloatTensor", "LongTensor", "SparseTensor", "addmm", "layout", "mm", "sparse_coo",
           "sparse_coo_tensor", "spmm", "strided", "sum", "to_sparse"]


class layout:
    """A tensor layout (torch.layout): `strided` for dense tensors, `sparse_coo`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self) -> str:
        return self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")

_TO_DENSE = "call .to_dense() first (or build the dense tensor directly)"

# zero-preserving elementwise ops: applied to the values, the result stays sparse
_UNARY_ON_VALUES = frozenset({"neg", "abs", "sqrt", "sin", "tan", "tanh", "asin", "atan", "sinh", "asinh", "atanh",
                              "expm1", "log1p", "sign", "sgn", "trunc", "floor", "ceil", "round", "relu", "square",
                              "erf", "deg2rad", "rad2deg", "to_dtype", "clone"})


_LINEAR_UNARY = frozenset({"neg", "to_dtype", "clone"})


def _unsupported(name: str) -> RuntimeError:
    return RuntimeError(f"{name}: not supported for sparse COO tensors (layout=torch.sparse_coo) here; {_TO_DENSE}")


class SparseTensor(Tensor):
    """A sparse COO tensor. Made by `eager.sparse_coo_tensor` or `Tensor.to_sparse()`."""

    _i: Tensor
    _v: Tensor
    _size: tuple[int, ...]
    _coalesced: bool

    @property
    def _data(self) -> Any:  # noqa: PLR0206 (shadows Tensor's buffer slot on purpose)
        # AttributeError, so that code asking hasattr(t, "_data") (is it a dense array?) gets False
        raise AttributeError("this operation reads a dense buffer, which a sparse COO tensor "
                             f"(layout=torch.sparse_coo) does not have; {_TO_DENSE}")

    @staticmethod
    def _build(indices: Tensor, values: Tensor, size: tuple[int, ...], coalesced: bool) -> "SparseTensor":
        s = object.__new__(SparseTensor)
        s._i, s._v, s._size, s._coalesced = indices, values, tuple(int(n) for n in size), coalesced
        s._vc = [0]
        s._output_nr = 0
        return s

    # -- dispatch: every op reaching a sparse operand comes here ---------------------------------
    @staticmethod
    def __graphmode_dispatch__(op: Any, operands: tuple, attrs: dict) -> Any:
        return _dispatch(op, operands, attrs)

    # -- metadata ---------------------------------------------------------------------------------
    is_sparse = True
    layout = sparse_coo

    @property
    def shape(self) -> Size:
        return Size(self._size)

    def size(self, dim: int | None = None):
        return Size(self._size) if dim is None else self._size[dim]

    @property
    def dtype(self) -> _dtypes.dtype:
        return self._v.dtype

    @property
    def device(self):
        return self._v.device

    @property
    def is_cuda(self) -> bool:
        return self._v.is_cuda

    @property
    def ndim(self) -> int:
        return len(self._size)

    def dim(self) -> int:
        return len(self._size)

    def numel(self) -> int:
        return math.prod(self._size)

    def is_floating_point(self) -> bool:
        return self._v.is_floating_point()

    def sparse_dim(self) -> int:
        return int(self._i.shape[0])

    def dense_dim(self) -> int:
        return self._v.ndim - 1

    def _nnz(self) -> int:
        return int(self._v.shape[0])

    def is_coalesced(self) -> bool:
        return self._coalesced

    def is_contiguous(self, memory_format: Any = None) -> bool:
        raise RuntimeError("is_contiguous: sparse COO tensors have no strides")

    def stride(self, dim: int | None = None):
        raise RuntimeError("stride: sparse COO tensors have no strides")

    # -- the parts ----------------------------------------------------------------------------------
    def _indices(self) -> Tensor:
        return self._i

    def _values(self) -> Tensor:
        return self._v

    def indices(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._i

    def values(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._v

    # -- autograd: carried by the values ------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._v.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._v.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> "SparseTensor":
        self._v.requires_grad_(requires_grad)
        return self

    @property
    def _requires_grad(self) -> bool:  # type: ignore[override]
        return self._v.requires_grad

    @property
    def grad_fn(self):  # type: ignore[override]
        return self._v.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._v.is_leaf

    @property
    def grad(self):
        """The gradient with respect to this tensor, sparse on its (coalesced) pattern: each
        value's gradient is the dense gradient at its index, so a duplicated index (an
        uncoalesced leaf) contributes its entry once, as PyTorch's."""
        g = self._v.grad
        if g is None:
            return None
        if self._coalesced:
            return SparseTensor._build(self._i, g, self._size, True)
        lin = self._linear()
        _, first = np.unique(lin, return_index=True)
        pick = _tensor(first.astype(np.int64), device=g.device)
        return SparseTensor._build(self._i.index_select(1, pick), g.index_select(0, pick), self._size,
                                   True).coalesce()

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            raise RuntimeError("assigning a sparse tensor's .grad is not supported here (only None, which clears "
                               "it)")
        self._v.grad = None

    def detach(self) -> "SparseTensor":
        return SparseTensor._build(self._i, self._v.detach(), self._size, self._coalesced)

    def backward(self, *args: Any, **kwargs: Any) -> None:
        raise _unsupported("backward")

    # -- conversions -------------------------------------------------------------------------------
    def to_sparse(self, sparse_dim: int | None = None, **kwargs: Any) -> "SparseTensor":
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError(f"to_sparse: conversion from Sparse to Sparse with sparse_dim argument != "
                               f"self.sparse_dim() is not supported ({sparse_dim} != {self.sparse_dim()})")
        return self

    def _linear(self) -> np.ndarray:
        """Each nonzero's position in the row-major flattening of the sparse dims."""
        idx = self._i.numpy().astype(np.int64, copy=False)
        sparse_shape = self._size[:self.sparse_dim()]
        if idx.shape[1] == 0:
            return np.zeros(0, dtype=np.int64)
        return np.ravel_multi_index(tuple(idx), sparse_shape) if sparse_shape else np.zeros(idx.shape[1], np.int64)

    def to_dense(self, dtype: Any = None, *, masked_grad: bool = True) -> Tensor:
        """The dense tensor (duplicates summed); differentiable with respect to the values."""
        sd = self.sparse_dim()
        rows = math.prod(self._size[:sd])
        flat = _zeros((rows, *self._size[sd:]), dtype=self._v.dtype, device=self._v.device)
        lin = _tensor(self._linear(), dtype=_dtypes.int64, device=self._v.device)
        out = _renamed(flat.index_add(0, lin, self._v).reshape(*self._size), "ToDenseBackward0")
        return out if dtype is None else out.to(dtype)

    def coalesce(self) -> "SparseTensor":
        """Indices sorted and unique, duplicates' values summed (differentiably)."""
        if self._coalesced:
            return self
        lin = self._linear()
        uniq, inverse = np.unique(lin, return_inverse=True)
        sd = self.sparse_dim()
        new_idx = (np.stack(np.unravel_index(uniq, self._size[:sd])) if sd else np.zeros((0, uniq.size), np.int64))
        inv = _tensor(inverse.reshape(-1).astype(np.int64), device=self._v.device)
        vals = _zeros((uniq.size, *self._v.shape[1:]), dtype=self._v.dtype, device=self._v.device).index_add(
            0, inv, self._v)
        return SparseTensor._build(_tensor(new_idx.astype(np.int64), device=self._v.device), vals, self._size, True)

    def numpy(self, *, force: bool = False) -> np.ndarray:
        raise TypeError(f"numpy: can't convert a sparse COO tensor to a NumPy array; {_TO_DENSE}")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"can't convert a sparse COO tensor to a NumPy array; {_TO_DENSE}")

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self.to_dense().item()

    def tolist(self):
        raise _unsupported("tolist")

    def __len__(self) -> int:
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.to_dense().item())

    def __iter__(self):
        raise _unsupported("iteration")

    def __reduce_ex__(self, protocol):
        return (_rebuild_sparse, (self._i, self._v, self._size, self._coalesced))

    def __repr__(self) -> str:
        ind = repr(self._i).replace("\n", "\n" + " " * 15)
        val = repr(self._v).replace("\n", "\n" + " " * 14)
        extra = ""
        if self.grad_fn is not None:
            extra = f", grad_fn=<{self.grad_fn.name()}>"
        elif self.requires_grad:
            extra = ", requires_grad=True"
        return (f"tensor(indices={ind},\n       values={val},\n       size={self._size}, nnz={self._nnz()}, "
                f"layout=torch.sparse_coo{extra})")

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def to(self, *args: Any, **kwargs: Any) -> "SparseTensor":
        return SparseTensor._build(self._i.to(*[a for a in args if not isinstance(a, _dtypes.dtype)],
                                              **{k: v for k, v in kwargs.items() if k != "dtype"}),
                                   self._v.to(*args, **kwargs), self._size, self._coalesced)

    def cpu(self) -> "SparseTensor":
        return self.to("cpu")

    def double(self) -> "SparseTensor":
        return self.to(_dtypes.float64)

    def float(self) -> "SparseTensor":
        return self.to(_dtypes.float32)

    def contiguous(self, memory_format: Any = None) -> "SparseTensor":
        return self

    # -- shape ops that act on the indices ------------------------------------------------------------
    def t(self) -> "SparseTensor":
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but self is "
                               f"{self.sparse_dim()} sparse and {self.dense_dim()} dense")
        return self.transpose(0, 1) if self.ndim == 2 else self

    def transpose(self, dim0: int, dim1: int) -> "SparseTensor":
        sd, nd = self.sparse_dim(), self.ndim
        d0, d1 = dim0 % nd, dim1 % nd
        if d0 >= sd or d1 >= sd:
            raise RuntimeError(f"transpose: of a sparse COO tensor's dense dimensions is not supported here "
                               f"(dims {dim0}, {dim1}; {sd} sparse dims); {_TO_DENSE}")
        order = list(range(sd))
        order[d0], order[d1] = order[d1], order[d0]
        size = list(self._size)
        size[d0], size[d1] = size[d1], size[d0]
        idx = self._i[_tensor(order, dtype=_dtypes.int64)] if sd else self._i
        return SparseTensor._build(idx, self._v, tuple(size), self._coalesced and d0 == d1)

    def transpose_(self, dim0: int, dim1: int) -> "SparseTensor":
        raise _unsupported("transpose_")

    @property
    def T(self) -> "SparseTensor":  # noqa: N802
        return self.t()

    def sum(self, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        return sum(self, dim) if not keepdim and dtype is None else self.to_dense().sum(dim, keepdim, dtype=dtype)

    def view(self, *shape: Any) -> Tensor:
        raise _unsupported("view")

    def reshape(self, *shape: Any) -> Tensor:
        raise _unsupported("reshape")

    def __getitem__(self, index: Any) -> Tensor:
        raise _unsupported("indexing")

    def __setitem__(self, index: Any, value: Any) -> None:
        raise _unsupported("index assignment")


def _rebuild_sparse(indices: Tensor, values: Tensor, size: tuple, coalesced: bool) -> SparseTensor:
    return SparseTensor._build(indices, values, size, coalesced)


# -- construction ------------------------------------------------------------------------------------
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


# -- products ------------------------------------------------------------------------------------------
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


# -- the dispatch of ops on sparse operands ------------------------------------------------------------
def _same_size(name: str, a: Any, b: Any) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"{name}: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(a.shape)} while other has size {list(b.shape)} (sparse operands do not broadcast)")


def _dense_at(d: Tensor, s: SparseTensor) -> Tensor:
    """d's entries (or slices) at s's nonzeros: shape (nnz, *dense_shape)."""
    sd = s.sparse_dim()
    return d[tuple(s._i[k] for k in range(sd))] if sd else d.unsqueeze(0)


def _add(a: Any, b: Any, sign: float) -> Any:
    name = "add" if sign > 0 else "sub"
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        raise RuntimeError(f"{name}: a sparse tensor and a number are not supported here; {_TO_DENSE}")
    _same_size(name, a, b)
    if isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        if a.sparse_dim() != b.sparse_dim():
            raise RuntimeError(f"{name}: sparse tensors with different sparse_dim ({a.sparse_dim()} and "
                               f"{b.sparse_dim()}) are not supported")
        vals = _cat([a._v, b._v if sign > 0 else -b._v], 0)
        out = SparseTensor._build(_cat([a._i, b._i], 1), vals, a._size, False)
        return out.coalesce() if a._coalesced and b._coalesced else out
    if isinstance(a, SparseTensor):  # PyTorch refuses sparse + dense (the result would be dense, named after self)
        raise RuntimeError(f"{name}(sparse, dense) is not supported. Use {name}(dense, sparse) instead.")
    return a + b.to_dense() if sign > 0 else a - b.to_dense()


def _mul(a: Any, b: Any) -> SparseTensor:
    s, other = (a, b) if isinstance(a, SparseTensor) else (b, a)
    if isinstance(other, SparseTensor):
        other = other.to_dense()
    if isinstance(other, Tensor) and other.ndim:
        _same_size("mul", s, other)
        factor = _dense_at(other, s)
    else:
        factor = other
    return SparseTensor._build(s._i, s._v * factor, s._size, s._coalesced)


def _dispatch(op: Any, operands: tuple, attrs: dict) -> Any:
    name = op.name
    first = operands[0]
    if name in _UNARY_ON_VALUES and isinstance(first, SparseTensor) and len(operands) == 1:
        if name not in _LINEAR_UNARY:  # f(a) + f(b) != f(a + b): duplicates are summed first
            first = first.coalesce()
        vals = Tensor._apply_op(op, (first._v,), attrs)
        return SparseTensor._build(first._i, vals, first._size, first._coalesced)
    if name == "add":
        return _add(operands[0], operands[1], 1.0)
    if name == "sub":
        return _add(operands[0], operands[1], -1.0)
    if name == "rsub":
        return _add(operands[1], operands[0], -1.0)
    if name == "mul":
        return _mul(operands[0], operands[1])
    if name == "div" and isinstance(first, SparseTensor) and not isinstance(operands[1], SparseTensor):
        other = operands[1]
        if isinstance(other, Tensor) and other.ndim:
            raise _unsupported("div by a non-scalar dense tensor")
        return SparseTensor._build(first._i, first._v / other, first._size, first._coalesced)
    if name == "pow" and isinstance(first, SparseTensor) and isinstance(operands[1], (int, float)) and operands[1] > 0:
        return SparseTensor._build(first._i, first._v ** operands[1], first._size, first._coalesced)
    if name == "matmul":
        a, b = operands
        if a.ndim == 2 and b.ndim == 2:
            return mm(a, b)
        if isinstance(a, SparseTensor) and a.ndim == 2 and b.ndim == 1:
            return mm(a, b.unsqueeze(1)).squeeze(1)
        raise _unsupported(f"matmul of shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if name == "transpose" and isinstance(first, SparseTensor):
        return first.transpose(attrs["dim0"], attrs["dim1"])
    if name == "sum" and isinstance(first, SparseTensor) and not attrs.get("dim"):
        return sum(first)
    raise _unsupported(name)
