"""Building and splitting as compositions: broadcast_tensors, block_diag, take_along_dim,
tensor_split/hsplit/vsplit, rot90 and the triangle index factories."""
from __future__ import annotations

import builtins as _builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmops._checks import norm_dim

from .. import _functional as _F
from ._helpers import _is_tensor, _result_dtype, _size


def broadcast_tensors(*tensors: Any) -> tuple[Any, ...]:
    """The tensors expanded to their common broadcast shape (RuntimeError when they do not
    broadcast). Mirrors torch.broadcast_tensors."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = _F.broadcast_shape(*(tuple(t.shape) for t in tensors))
    return tuple(t if tuple(t.shape) == shape else _F.expand(t, shape) for t in tensors)


def block_diag(*tensors: Any) -> Any:
    """The tensors (0-, 1- or 2-d; a 0-d one is 1x1, a 1-d one a row) on the diagonal of a
    zero matrix, in their promoted dtype. Mirrors torch.block_diag."""
    from .._factories import zeros  # noqa: PLC0415

    blocks = []
    for k, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {k} has "
                               f"{t.ndim} dimensions")
        blocks.append(_F.reshape(t, (1, -1) if t.ndim < 2 else tuple(t.shape)))
    if not blocks:
        return zeros(1, 0)
    dtype = _result_dtype(*tensors)
    device = blocks[0].device
    width = _builtins.sum(_size(b, 1) for b in blocks)
    rows, offset = [], 0
    for b in blocks:
        r, c = _size(b, 0), _size(b, 1)
        row = [zeros(r, offset, dtype=dtype, device=device), _F.to_dtype(b, dtype),
               zeros(r, width - offset - c, dtype=dtype, device=device)]
        rows.append(_F.cat(row, 1))
        offset += c
    return _F.cat(rows, 0)


def take_along_dim(input: Any, indices: Any, dim: int | None = None) -> Any:  # noqa: A002
    """The elements of input at `indices` along dim, the other dims broadcast (both flattened
    when dim is None); a gather, so the gradient adds up at repeated indices.
    Mirrors torch.take_along_dim."""
    if indices.dtype is not _dtypes.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_dtypes.scalar_type_name(indices.dtype)}; convert it with .long()")
    if dim is None:
        return _F.gather(_F.reshape(input, (-1,)), 0, _F.reshape(indices, (-1,)))
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    d = norm_dim("take_along_dim", dim, input.ndim)
    if input.ndim == 0:
        return _F.gather(_F.reshape(input, (1,)), 0, _F.reshape(indices, (1,))).reshape(())
    shape_in, shape_ix = list(input.shape), list(indices.shape)
    shape_in[d] = shape_ix[d] = 1
    batch = list(_F.broadcast_shape(tuple(shape_in), tuple(shape_ix)))
    target_in, target_ix = list(batch), list(batch)
    target_in[d], target_ix[d] = _size(input, d), _size(indices, d)
    x = input if list(input.shape) == target_in else _F.expand(input, tuple(target_in))
    ix = indices if list(indices.shape) == target_ix else _F.expand(indices, tuple(target_ix))
    return _F.gather(x, d, ix)


def _split_points(indices_or_sections: Any) -> tuple[int | None, list[int] | None]:
    """(sections, None) or (None, indices) from an int, a sequence or an int64 tensor."""
    value = indices_or_sections
    if _is_tensor(value):
        if value.dtype is not _dtypes.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have integer dtype, but got "
                               f"{_dtypes.scalar_type_name(value.dtype)}")
        if value.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {value.ndim} dims")
        value = value.tolist()
    if isinstance(value, int):
        return value, None
    return None, [int(v) for v in value]


def tensor_split(input: Any, indices_or_sections: Any, dim: int = 0) -> tuple[Any, ...]:  # noqa: A002
    """input cut along dim into `n` near-equal parts (the first length % n one longer) or at the
    given indices (clamped to the length, as slices are). Mirrors torch.tensor_split."""
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = norm_dim("tensor_split", dim, input.ndim)
    length = _size(input, d)
    sections, indices = _split_points(indices_or_sections)
    if sections is not None:
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        base, extra = divmod(length, sections)
        sizes = [base + 1] * extra + [base] * (sections - extra)
        starts = [_builtins.sum(sizes[:k]) for k in range(sections)]
        bounds = [(s, s + n) for s, n in zip(starts, sizes)]
    else:
        assert indices is not None
        cuts = [0, *indices, length]
        bounds = []
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            start, stop, _ = slice(lo, hi).indices(length)
            bounds.append((start, _builtins.max(start, stop)))
    return tuple(_F.narrow(input, d, start, stop - start) for start, stop in bounds)


def _even_split(name: str, input: Any, indices_or_sections: Any, d: int) -> tuple[Any, ...]:  # noqa: A002
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n == 0 or _size(input, d) % n:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the dimension "
                               f"{_size(input, d)} is not divisible by the split_size {n}!")
    return tensor_split(input, indices_or_sections, d)


def hsplit(input: Any, indices_or_sections: Any) -> tuple[Any, ...]:  # noqa: A002
    """tensor_split along dim 1 (dim 0 for a 1-d tensor); an int must divide the length evenly.

    Mirrors torch.hsplit."""
    if input.ndim == 0:
        raise RuntimeError(f"torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with "
                           f"{input.ndim} dimensions!")
    return _even_split("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0)


def vsplit(input: Any, indices_or_sections: Any) -> tuple[Any, ...]:  # noqa: A002
    """tensor_split along dim 0 of a tensor of 2 or more dims; an int must divide the length evenly.

    Mirrors torch.vsplit."""
    if input.ndim < 2:
        raise RuntimeError(f"torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with "
                           f"{input.ndim} dimensions!")
    return _even_split("vsplit", input, indices_or_sections, 0)


def rot90(input: Any, k: int = 1, dims: Sequence[int] = (0, 1)) -> Any:  # noqa: A002
    """input rotated k quarter turns in the plane of dims, from the first dim towards the second
    (flips and a transpose). Mirrors torch.rot90."""
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (norm_dim("rot90", int(d), input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return _F.transpose(_F.flip(input, (d1,)), d0, d1)
    if k == 2:
        return _F.flip(input, (d0, d1))
    if k == 3:
        return _F.flip(_F.transpose(input, d0, d1), (d1,))
    return _F.clone(input)


def _tri_indices(name: str, row: int, col: int, offset: int, dtype: Any, device: Any, lower: bool) -> Any:
    from .._factories import tensor  # noqa: PLC0415

    d = _dtypes.int64 if dtype is None else _dtypes.as_dtype(dtype)
    if d not in (_dtypes.int32, _dtypes.int64):
        raise NotImplementedError(f'"{name}" not implemented for \'{_dtypes.scalar_type_name(d)}\'; use dtype=int64 '
                                  "or int32")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    r, c = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    return tensor(np.stack([r, c]).astype(d.np).reshape(2, -1), dtype=d, device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Any:
    """The (2, N) row and column indices of the lower triangle of a row x col matrix (on and
    below the offset-th diagonal), row by row. Mirrors torch.tril_indices."""
    return _tri_indices("tril_indices", row, col, offset, dtype, device, lower=True)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Any:
    """The (2, N) row and column indices of the upper triangle of a row x col matrix (on and
    above the offset-th diagonal), row by row. Mirrors torch.triu_indices."""
    return _tri_indices("triu_indices", row, col, offset, dtype, device, lower=False)
