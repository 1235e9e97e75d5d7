"""as_strided: a tensor of any size and strides over the memory (storage) of its input.

Why a gather here, not a NumPy strided view: the result's elements are read from the
storage positions offset + sum(i_k * stride_k), mapped back to the input's elements; that is
one index_select on the flattened input, so the gradient is PyTorch's as_strided_backward
(each output element's gradient summed into the input element it read, overlapping
windows included) and the static tracer records it. Storage positions that the input does
not cover (a narrow view of a larger buffer) read the buffer's current values with no
gradient, as PyTorch's backward drops them.

Where no gradient is recorded through the result and the input is an eager tensor over one
row-major NumPy buffer, the result is then made PyTorch's view (`_share_memory`): its array a
strided NumPy view of that buffer, its version counter the input's, so writes through either
reach the other (a self-overlapping view is read-only: writing into it raises PyTorch's
error). A result that records a gradient stays the gather's copy: writing into it does not
reach the input (the input's history could not be rewritten for that write).
"""
from __future__ import annotations

import builtins as _builtins
from typing import Any

import numpy as np

from gmops import elementwise as E

from ._common import _renamed, _sizes
from .shape_ops import reshape


def _root(data: Any) -> Any:
    base = data
    while getattr(base, "base", None) is not None and hasattr(base.base, "__array_interface__"):
        base = base.base
    return base


def _positions(size: tuple, stride: tuple, offset: int) -> np.ndarray:
    pos = np.full(size, offset, dtype=np.int64)
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        pos = pos + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return pos


def as_strided(input: Any, size: Any, stride: Any, storage_offset: int | None = None) -> Any:
    """The tensor of `size` whose element i reads input's storage at storage_offset +
    sum(i_k * stride[k]) (storage_offset defaults to input's own). Mirrors torch.as_strided
    (a copy here, not a view); differentiable, overlapping windows included."""
    size, stride = _sizes((size,)), _sizes((stride,))
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(size)} sizes, {len(stride)} strides")
    if _builtins.any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    if _builtins.any(n < 0 for n in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    data: Any = getattr(input, "_data", None)
    root = _root(data) if data is not None and hasattr(data, "__array_interface__") else None
    if root is not None and (root.dtype != data.dtype or not root.flags.c_contiguous):
        root = None  # memory reinterpreted or not row-major: read the input's own elements
    if root is not None:
        item = data.itemsize
        root_size = root.nbytes // item
        own = (data.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // item
        own_stride = tuple(s // item for s in data.strides)
    else:  # a traced value, or memory not NumPy's: the input's own row-major elements
        root_size, own = 1, 0
        for n in input.shape:
            root_size *= n
        own_stride = tuple(int(np.prod(input.shape[k + 1:])) for k in range(len(input.shape)))
    offset = own if storage_offset is None else int(storage_offset)
    count = int(np.prod(size)) if size else 1
    need = 0 if count == 0 else offset + 1 + _builtins.sum((n - 1) * s for n, s in zip(size, stride))
    if need > root_size or offset < 0:
        item = getattr(input.dtype, "itemsize", None) or (data.itemsize if data is not None else 4)
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {item} requiring a storage size of {need * item} are out of bounds for storage "
                           f"of size {root_size * item}")
    from .._factories import tensor  # noqa: PLC0415

    wanted = _positions(size, stride, offset)
    # which of input's elements sits at each storage position (-1: none)
    owner = np.full(max(root_size, 1), -1, dtype=np.int64)
    owner[_positions(tuple(input.shape), own_stride, own).reshape(-1)] = np.arange(
        int(np.prod(input.shape)) if input.shape else 1, dtype=np.int64)
    pick = owner[wanted.reshape(-1)]
    flat = reshape(input, -1)
    if count == 0:
        return _renamed(reshape(flat[:0], *size), "AsStridedBackward0")
    if (pick >= 0).all():
        out = flat.index_select(0, tensor(pick, device=input.device))
    else:
        buffer = tensor(np.ascontiguousarray(root).reshape(-1)[wanted.reshape(-1)], device=input.device)
        got = flat.index_select(0, tensor(np.maximum(pick, 0), device=input.device))
        out = E.WHERE(tensor(pick >= 0, device=input.device), got, buffer)
    return _share_memory(input, _renamed(reshape(out, *size), "AsStridedBackward0"), size, stride, offset)


def _overlaps(size: tuple, stride: tuple) -> bool:
    """Whether two indices of a (size, stride) view reach one storage position (the dims
    sorted by stride, each stride must pass the extent of the smaller ones)."""
    extent = 0
    for n, s in sorted(((n, s) for n, s in zip(size, stride) if n > 1), key=lambda d: d[1]):
        if s <= extent:
            return True
        extent += (n - 1) * s
    return False


def _share_memory(input: Any, result: Any, size: tuple, stride: tuple, offset: int) -> Any:
    """`result` (the gather's values) made a view of input's memory as PyTorch's as_strided is,
    where input is an eager tensor over one row-major NumPy buffer and result records no
    gradient (see the module docstring); else result as it is."""
    from .._tensor import Tensor  # noqa: PLC0415

    if not isinstance(input, Tensor) or type(result) is not Tensor or result._requires_grad:
        return result
    data = input._data
    if type(data) is not np.ndarray:
        return result
    view = strided_view(data, size, stride, offset)
    if view is None or view.shape != result._data.shape:
        return result
    if _overlaps(size, stride) or not data.flags.writeable:
        view.flags.writeable = False
    result._data = view
    result._vc = input._vc
    result._base = input if input._base is None else input._base
    result._view = None  # (no steps to replay: the write is the memory's, no graph to rewrite)
    return result


def strided_view(data: Any, size: tuple, stride: tuple, storage_offset: int | None) -> Any:
    """A NumPy view of `size` and `stride` (in elements) over the memory `data` lives in, from
    storage_offset (default: data's own), for as_strided_ (the tensor keeps its memory, as
    PyTorch's does); None where that memory is not one row-major NumPy buffer. The bounds
    are checked by as_strided, which runs first."""
    if not hasattr(data, "__array_interface__"):
        return None
    root = _root(data)
    if root.dtype != data.dtype or not root.flags.c_contiguous:
        return None
    item = data.itemsize
    own = (data.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // item
    offset = own if storage_offset is None else int(storage_offset)
    flat = root.reshape(-1)
    return np.lib.stride_tricks.as_strided(flat[offset:] if offset < flat.size else flat[:0], shape=tuple(size),
                                           strides=tuple(s * item for s in stride))


def as_strided_in_place(self: Any, size: Any, stride: Any, storage_offset: Any, view_in_place: Any) -> Any:
    """Tensor.as_strided_: `self` becomes as_strided's result (its history too, through
    eager._metadata_inplace's view_in_place), over the same memory where that is one NumPy
    buffer (a strided NumPy view holding the same values)."""
    size, stride = _sizes((size,)), _sizes((stride,))
    data = getattr(self, "_data", None)
    view = strided_view(data, size, stride, storage_offset) if data is not None else None
    view_in_place(self, lambda t: as_strided(t, size, stride, storage_offset), "AsStridedBackward0")
    if view is not None:
        self._data = view
    return self
