"""The scatter family PyTorch builds on index and view positions: index_copy, index_reduce,
masked_scatter, put, and the inverse of the views select/slice/diagonal (select_scatter,
slice_scatter, diagonal_scatter).

Why compositions: each is an existing differentiable record (scatter, scatter_reduce,
index_add, index put, where) applied to an index made from the arguments, so gradients, the
static tracer and the code generators follow without new records. Concrete index values
are checked first (PyTorch's IndexError for one out of range); a traced index is not read.
"""
from __future__ import annotations

import builtins as _builtins
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import elementwise as E
from gmops._checks import norm_dim

from ._common import _host, _ndim, _numel, _renamed
from .elementwise import clone, to_dtype
from .indexing import index_add, put_at_index, scatter, scatter_reduce
from .shape_ops import broadcast_shape, expand, permute, reshape

_REDUCES = ("prod", "mean", "amax", "amin")


def _tname(dt: Any) -> str:
    return _dtypes.scalar_type_name(dt) if isinstance(dt, _dtypes.dtype) else str(dt)


def _concrete(t: Any) -> bool:
    """Whether t holds values here (an eager tensor), not a traced one whose values are unknown."""
    data = getattr(t, "_data", None)
    return data is not None and type(data).__module__.split(".")[0] in ("numpy", "cupy")


def _tensor_like(values: Any, like: Any, dtype: Any = None) -> Any:
    from .._factories import tensor  # noqa: PLC0415

    return tensor(values, dtype=dtype, device=like.device)


def _check_index(op: str, index: Any, size: int, dim: int) -> None:
    """PyTorch's checks of an index tensor: int64, at most 1-d, each value in [-size, size)."""
    if getattr(index, "dtype", None) is not _dtypes.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {_tname(getattr(index, 'dtype', None))}")
    if _ndim(index) > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, got a {_ndim(index)}-D index tensor")
    if _concrete(index):
        values = _host(index).reshape(-1)
        bad = values[(values < -size) | (values >= size)]
        if bad.size:
            raise IndexError(f"{op}(): index {int(bad[0])} is out of bounds for dimension {dim} with size {size}")


def _along(index: Any, dim: int, shape: tuple) -> Any:
    """The 1-d index laid along `dim` and expanded to `shape` (scatter's per-element index);
    negative entries counted from the end of that dim of the destination is done by the caller."""
    view = reshape(index, *([1] * dim + [-1] + [1] * (len(shape) - dim - 1)))
    return expand(view, *shape)


def _positive(index: Any, size: int) -> Any:
    """index with negative entries counted from the end (size + i)."""
    return E.WHERE(E.LT(index, 0), E.ADD(index, size), index) if size else index


def _index_scatter(op: str, input: Any, dim: int, index: Any, source: Any, run: Any) -> Any:
    """What index_copy and index_reduce share: PyTorch's checks (each op's own order, types
    and messages), 0-d operands as 1-d, and `run(dest, d, per-element index, source)` on the
    shapes PyTorch's kernel sees."""
    copy = op == "index_copy_"
    it = getattr(index, "dtype", None)
    if copy and it is not _dtypes.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {_tname(it)}")
    if not copy and it not in (_dtypes.int64, _dtypes.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index but got: {_tname(it)}")
    if _ndim(index) > 1:
        if copy:
            raise IndexError(f"{op}(): Index should have dimension 1 or 0 (got {_ndim(index)})")
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {_ndim(index)} with type: "
                         f"{_tname(it)} and size: {list(index.shape)}")
    if input.dtype is not source.dtype:
        if copy:
            raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got (self) "
                               f"{_tname(input.dtype)} and (source) {_tname(source.dtype)}")
        raise RuntimeError(f"{op}(): self ({_tname(input.dtype)}) and source ({_tname(source.dtype)}) must have the "
                           f"same scalar type")
    if copy and _ndim(input) and _ndim(source) and _ndim(input) != _ndim(source):
        raise IndexError(f"{op}(): When source and destination are not scalars, their dimensionality must match. "
                         f"Source dimensionality ({_ndim(source)}), destination dimensionality ({_ndim(input)})")
    d = norm_dim(op, dim, max(_ndim(input), 1))
    n = _numel(index)
    along = source.shape[d] if d < _ndim(source) else 1
    if n != along:
        if copy:
            raise IndexError(f"{op}(): Number of indices ({n}) should be equal to source.size(dim) ({along})")
        raise RuntimeError(f"{op}(): Number of indices ({n}) should be equal to source.size(dim): ({along}), for "
                           f"dim: {d}")
    dest = reshape(input, 1) if not _ndim(input) else input
    src = reshape(source, 1) if not _ndim(source) else source
    if src.ndim != dest.ndim and copy:
        src = reshape(src, *([1] * dest.ndim))
    rest_dest = [dest.shape[k] for k in range(dest.ndim) if k != d]
    rest_src = [src.shape[k] for k in range(src.ndim) if k != d]
    if rest_dest != rest_src:
        if copy:
            raise RuntimeError(f"{op}(): Source/destination tensor must have same slice shapes. Destination slice "
                               f"shape: {' '.join(map(str, rest_dest))} at dimension {d} and source slice shape: "
                               f"{' '.join(map(str, rest_src))} at dimension 0.")
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(input.shape)} source.shape = {list(source.shape)}")
    if _concrete(index):
        size = dest.shape[d]
        values = _host(index).reshape(-1)
        bad = values[(values < -size) | (values >= size)]
        if bad.size:
            raise IndexError(f"{op}(): index {int(bad[0])} is out of bounds for dimension {d} with size {size}"
                             if copy else "index out of range in self")
    if n == 0:
        return clone(input)
    idx = _along(_positive(to_dtype(reshape(index, -1), _dtypes.int64), dest.shape[d]), d, tuple(src.shape))
    out = run(dest, d, idx, src)
    return reshape(out, *input.shape) if not _ndim(input) else out


def index_copy(input: Any, dim: int, index: Any, source: Any) -> Any:
    """A copy of input with the slices of `source` along `dim` written at the positions `index`
    (1-d int64) names. Mirrors torch.index_copy; gradients reach input (zero where written)
    and source (the written positions' gradient)."""
    out = _index_scatter("index_copy_", input, dim, index, source, lambda x, d, i, s: scatter(x, d, i, s))
    return _renamed(out, "IndexCopyBackward0")


def index_reduce(input: Any, dim: int, index: Any, source: Any, reduce: str, *, include_self: bool = True) -> Any:
    """A copy of input with source's slices along `dim` combined into the positions `index`
    names by `reduce` ('prod', 'mean', 'amax' or 'amin'); include_self=False leaves input's
    own value out where index reaches. Mirrors torch.index_reduce."""
    if reduce not in _REDUCES:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    out = _index_scatter("index_reduce_", input, dim, index, source,
                         lambda x, d, i, s: scatter_reduce(x, d, i, s, reduce, include_self=include_self))
    return _renamed(out, "IndexReduceBackward0")


def masked_scatter(input: Any, mask: Any, source: Any) -> Any:
    """input with the positions where `mask` (bool, broadcast with input) is True taken from
    source's elements in row-major order. Mirrors torch.masked_scatter.

    The k-th True takes source's k-th element: a running count of the mask picks it, so the
    trace records it and gradients reach input (where mask is False) and source's used elements."""
    if getattr(mask, "dtype", None) is not _dtypes.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_tname(getattr(mask, 'dtype', None))}")
    if input.dtype is not source.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{_tname(input.dtype)} and {_tname(source.dtype)}")
    shape = broadcast_shape(tuple(input.shape), tuple(mask.shape))
    x = input if tuple(input.shape) == shape else expand(input, *shape)
    m = mask if tuple(mask.shape) == shape else expand(mask, *shape)
    n = _numel(source)
    if _concrete(m) and int(np.count_nonzero(_host(m))) > n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    if n == 0 or not _builtins.all(shape):
        return _renamed(clone(x), "MaskedScatterBackward0")
    flat = reshape(m, -1)
    pos = (to_dtype(flat, _dtypes.int64).cumsum(0) - 1).clamp(0, n - 1)
    picked = reshape(reshape(source, -1).index_select(0, pos), *shape)
    return _renamed(E.WHERE(m, picked, x), "MaskedScatterBackward0")


def put(input: Any, index: Any, source: Any, accumulate: bool = False) -> Any:
    """A copy of input with source's elements written (added, with accumulate) at the positions
    `index` names in input's row-major flattening (negative counting from the end).
    Mirrors torch.put."""
    if getattr(index, "dtype", None) is not _dtypes.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_tname(getattr(index, 'dtype', None))}")
    if input.dtype is not source.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_tname(input.dtype)} and source.dtype = {_tname(source.dtype)}")
    if _numel(index) != _numel(source):
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {_numel(source)}, index.numel() = {_numel(index)}")
    size = _numel(input)
    if _concrete(index):
        values = _host(index).reshape(-1)
        bad = values[(values < -size) | (values >= size)]
        if bad.size:
            raise IndexError(f"out of range: tried to access index {int(bad[0])} on a tensor of {size} elements.")
    if _numel(index) == 0:
        return _renamed(clone(input), "PutBackward0")
    flat = reshape(input, -1)
    idx = _positive(reshape(index, -1), size)
    src = reshape(source, -1)
    out = index_add(flat, 0, idx, src) if accumulate else scatter(flat, 0, idx, src)
    return _renamed(reshape(out, *input.shape), "PutBackward0")


def _check_src(src: Any, expected: tuple) -> None:
    if tuple(src.shape) != expected:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(expected)}")


def _place(input: Any, key: tuple, src: Any) -> Any:
    from .._factories import tensor  # noqa: PLC0415

    if src.dtype is not input.dtype:
        src = to_dtype(src, input.dtype)
    return put_at_index(input, key, src, tensor)


def select_scatter(input: Any, src: Any, dim: int, index: int) -> Any:
    """A copy of input with input.select(dim, index) replaced by src (its shape).
    Mirrors torch.select_scatter; gradients reach both."""
    d = norm_dim("select_scatter", dim, _ndim(input))
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {d}")
    _check_src(src, tuple(input.shape[:d]) + tuple(input.shape[d + 1:]))
    return _renamed(_place(input, (slice(None),) * d + (index,), src), "SelectScatterBackward0")


def slice_scatter(input: Any, src: Any, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Any:
    """A copy of input with input[..., start:end:step, ...] (along dim) replaced by src.
    Mirrors torch.slice_scatter; gradients reach both."""
    d = norm_dim("slice_scatter", dim, _ndim(input))
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    sl = slice(start, end, step)
    expected = tuple(input.shape[:d]) + (len(range(*sl.indices(input.shape[d]))),) + tuple(input.shape[d + 1:])
    _check_src(src, expected)
    if not _numel(src):
        return _renamed(clone(input), "SliceScatterBackward0")
    return _renamed(_place(input, (slice(None),) * d + (sl,), src), "SliceScatterBackward0")


def diagonal_scatter(input: Any, src: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
    """A copy of input with its diagonal(offset, dim1, dim2) replaced by src (the diagonal's
    shape: the other dims, then the diagonal last). Mirrors torch.diagonal_scatter."""
    nd = _ndim(input)
    d1, d2 = norm_dim("diagonal_scatter", dim1, nd), norm_dim("diagonal_scatter", dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    rows, cols = input.shape[d1], input.shape[d2]
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    rest = [k for k in range(nd) if k not in (d1, d2)]
    _check_src(src, tuple(input.shape[k] for k in rest) + (length,))
    if length == 0:
        return _renamed(clone(input), "DiagonalScatterBackward0")
    order = rest + [d1, d2]
    moved = permute(input, order)
    r = np.arange(length, dtype=np.int64) + max(0, -offset)
    c = np.arange(length, dtype=np.int64) + max(0, offset)
    out = _place(moved, (Ellipsis, _tensor_like(r, input), _tensor_like(c, input)), src)
    inverse = [order.index(k) for k in range(nd)]
    return _renamed(clone(permute(out, inverse)), "DiagonalScatterBackward0")
