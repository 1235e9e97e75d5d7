"""SparseTensor, the COO tensor (indices and values for a size) with its methods, and the
layout objects `eager.strided` and `eager.sparse_coo`."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from .._factories import tensor as _tensor
from .._factories import zeros as _zeros
from .._functional import _renamed
from .._tensor import Tensor
from .._tensor_metadata import Size


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


# What SparseTensor's methods call (the dispatch of ops on sparse operands, the sparse sum) is
# written over SparseTensor, so it is imported once the class exists.
from .dispatch import _dispatch  # noqa: E402
from .products import sum  # noqa: E402
