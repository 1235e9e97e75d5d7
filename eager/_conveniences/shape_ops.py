"""Shape and selection conveniences PyTorch programs call: ravel, unflatten, swapdims, take,
msort, sum_to_size, split_with_sizes, dsplit, unravel_index, isin, aminmax, and the
data-dependent unique_consecutive and the deprecated torch.range.

Written in eager's differentiable functions where the output shape follows from the input
shapes (so they trace under static); unique_consecutive reads the values through `_host`,
so a traced value refuses it with static's TraceError, as unique does."""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmops._checks import norm_dim

from .. import _functional as _F
from .._compositions._helpers import _is_tensor
from .._compositions.shape_ops import _even_split
from ..return_types import make as _return_type

return_types_aminmax = _return_type("aminmax", ("min", "max"))  # torch.return_types.aminmax


def _dims(t: Any) -> int:
    return len(t.shape)


def ravel(input: Any) -> Any:  # noqa: A002  (PyTorch's parameter names)
    """The elements in row-major order as a 1-d tensor (a view when the layout allows).
    Mirrors torch.ravel."""
    return _F.reshape(input, (-1,))


def swapdims(input: Any, dim0: int, dim1: int) -> Any:  # noqa: A002
    """dim0 and dim1 exchanged (transpose's other name). Mirrors torch.swapdims."""
    return _F.transpose(input, dim0, dim1)


def unflatten(input: Any, dim: int, sizes: Any) -> Any:  # noqa: A002
    """Dimension `dim` split into `sizes` (one of them may be -1, inferred). Mirrors torch.unflatten."""
    n = _dims(input)
    if n == 0:
        raise RuntimeError("unflatten: Dimension specified as 0 but tensor has no dimensions")
    d = norm_dim("unflatten", dim, n)
    sizes = tuple(int(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    length = input.shape[d]
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in sizes if s != -1)
    if -1 in sizes:
        if known == 0 or length % known:
            raise RuntimeError(f"shape '{list(sizes)}' is invalid for input of size {length}")
        sizes = tuple(length // known if s == -1 else s for s in sizes)
    elif known != length:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({length}) in the input tensor")
    shape = tuple(input.shape)
    return _F.reshape(input, shape[:d] + sizes + shape[d + 1:])


def take(input: Any, index: Any) -> Any:  # noqa: A002
    """input's elements at the flat (row-major) positions `index`, negative ones counted from
    the end, in index's shape. Mirrors torch.take."""
    if not _is_tensor(index) or index.dtype is not _dtypes.int64:
        dt = getattr(index, "dtype", None)
        got = _dtypes.scalar_type_name(dt) if isinstance(dt, _dtypes.dtype) else type(index).__name__
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {got}")
    numel = math.prod(input.shape)
    from .._tensor import Tensor  # noqa: PLC0415

    if isinstance(index, Tensor) and math.prod(index.shape):  # (a traced index is checked by no one: no data)
        idx = _F._host(index)
        bad = idx[(idx >= numel) | (idx < -numel)]
        if bad.size:
            raise IndexError(f"out of range: tried to access index {int(bad.reshape(-1)[0])} on a tensor of "
                             f"{numel} elements.")
    flat_index = _F.reshape(index, (-1,))
    flat_index = _F.where(_F.lt(flat_index, 0), flat_index + numel, flat_index)
    picked = _F.index_select(_F.reshape(input, (-1,)), 0, flat_index)
    return _F.reshape(picked, tuple(index.shape))


def msort(input: Any) -> Any:  # noqa: A002
    """input sorted along its first dimension (sort(input, 0).values). Mirrors torch.msort."""
    return _F.sort(input, 0).values


def sum_to_size(input: Any, *size: Any) -> Any:  # noqa: A002
    """input summed down to `size`, a shape input expands from (the reverse of expand: a
    broadcast gradient reduced to its operand's shape). Mirrors torch.Tensor.sum_to_size."""
    target = _F._sizes(size)
    shape = tuple(input.shape)
    lead = len(shape) - len(target)
    if lead < 0 or any(t not in (s, 1) for t, s in zip(target, shape[lead:])):
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size {{{list(shape)}}}.")
    if target == shape:
        return input
    out = _F.sum(input, tuple(range(lead))) if lead else input
    kept = tuple(i for i, (t, s) in enumerate(zip(target, shape[lead:])) if t == 1 and s != 1)
    if kept:
        out = _F.sum(out, kept, keepdim=True)
    return out


def split_with_sizes(input: Any, split_sizes: Any, dim: int = 0) -> tuple[Any, ...]:  # noqa: A002
    """input cut along `dim` into pieces of the given sizes, which must add up to its length.
    Mirrors torch.split_with_sizes."""
    if _dims(input) == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = norm_dim("split_with_sizes", dim, _dims(input))
    sizes = [int(s) for s in split_sizes]
    length = input.shape[d]
    if sum(sizes) != length or any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {length} (input tensor's size "
                           f"at dimension {dim}), but got split_sizes={sizes}")
    return tuple(_F.split(input, sizes, d))


def dsplit(input: Any, indices_or_sections: Any) -> tuple[Any, ...]:  # noqa: A002
    """tensor_split along dim 2 of a tensor of 3 or more dims; an int must divide the length
    evenly. Mirrors torch.dsplit."""
    if _dims(input) < 3:
        raise RuntimeError(f"torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with "
                           f"{_dims(input)} dimensions!")
    return _even_split("dsplit", input, indices_or_sections, 2)


def unravel_index(indices: Any, shape: Any) -> tuple[Any, ...]:
    """The coordinates in `shape` of each flat row-major index, one int64 tensor per dim
    (negative indices wrap, as floor division gives). Mirrors torch.unravel_index."""
    if not _is_tensor(indices):
        from .._factories import tensor  # noqa: PLC0415

        indices = tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype is _dtypes.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(isinstance(s, int) and not isinstance(s, bool)
                                                       for s in shape):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {shape!r}")
    dims = tuple(shape)
    if any(s < 0 for s in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {dims}")
    if 0 in dims:  # (PyTorch's floor division by the zero-sized coefficient)
        raise RuntimeError(f"unravel_index: ZeroDivisionError: shape {dims} has a zero-sized dimension, so it holds "
                           f"no flat index")
    idx = _F.to_dtype(indices, _dtypes.int64)
    out = []
    coef = 1
    for s in reversed(dims):
        out.append(_F.remainder(_F.floor_divide(idx, coef), s))
        coef *= s
    return tuple(reversed(out))


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False) -> Any:
    """Whether each element of `elements` is among `test_elements` (either may be a number),
    a bool tensor of elements' shape; `invert` negates. Mirrors torch.isin."""
    if not _is_tensor(elements) and not _is_tensor(test_elements):
        raise TypeError("isin(): expected at least one of elements and test_elements to be a Tensor, got two "
                        "numbers")
    if not _is_tensor(elements):
        from .._factories import tensor  # noqa: PLC0415

        elements = tensor(elements, dtype=_dtypes.result_type([test_elements.dtype], [], [elements]),
                          device=test_elements.device)
    if not _is_tensor(test_elements):
        found = _F.eq(elements, test_elements)
    elif math.prod(test_elements.shape) == 0:
        found = _F.ne(elements, elements) if elements.dtype is _dtypes.bool_ else _F.lt(_F.mul(elements, 0), 0)
    else:
        candidates = _F.reshape(test_elements, (-1,))
        found = _F.any(_F.eq(_F.unsqueeze(elements, -1), candidates), -1)
    return _F.logical_not(found) if invert else found


def aminmax(input: Any, *, dim: int | None = None, keepdim: bool = False) -> Any:  # noqa: A002
    """The minimum and maximum over `dim` (all elements when None) as a (min, max) named tuple.
    Mirrors torch.aminmax."""
    if dim is None:
        if math.prod(input.shape) == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        if keepdim:
            dims = tuple(range(_dims(input)))
            return return_types_aminmax(_F.amin(input, dims, keepdim=True), _F.amax(input, dims, keepdim=True))
        return return_types_aminmax(_F.amin(input), _F.amax(input))
    d = norm_dim("aminmax", dim, _dims(input))
    if _dims(input) and input.shape[d] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {dim} to have non-zero size.")
    if _dims(input) == 0:
        return return_types_aminmax(input, input)
    return return_types_aminmax(_F.amin(input, d, keepdim=keepdim), _F.amax(input, d, keepdim=keepdim))


def unique_consecutive(input: Any, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
                       dim: int | None = None) -> Any:
    """Each run of equal consecutive elements (slices along `dim` when given) kept once, with
    optionally the run each input element belongs to and each run's length. The output length
    depends on the values: eager only (static refuses it). Mirrors torch.unique_consecutive."""
    from .._factories import tensor  # noqa: PLC0415

    arr = _F._host(input)
    if dim is None:
        flat = arr.reshape(-1)
        starts = np.ones(flat.shape[0], dtype=bool)
        if flat.shape[0] > 1:
            starts[1:] = flat[1:] != flat[:-1]
        values = flat[starts]
        inverse_shape: tuple[int, ...] = arr.shape
    else:
        d = norm_dim("unique_consecutive", dim, arr.ndim)
        moved = np.moveaxis(arr, d, 0)
        n = moved.shape[0]
        starts = np.ones(n, dtype=bool)
        if n > 1:
            rows = moved.reshape(n, -1)
            starts[1:] = np.any(rows[1:] != rows[:-1], axis=1)
        values = np.moveaxis(moved[starts], 0, d)
        inverse_shape = (n,)
    out = [tensor(np.ascontiguousarray(values), dtype=input.dtype, device=input.device)]
    if return_inverse:
        inv = (np.cumsum(starts) - 1).astype(np.int64).reshape(inverse_shape)
        out.append(tensor(inv, dtype=_dtypes.int64, device=input.device))
    if return_counts:
        positions = np.flatnonzero(starts)
        counts = np.diff(np.append(positions, starts.shape[0])).astype(np.int64)
        out.append(tensor(counts, dtype=_dtypes.int64, device=input.device))
    return out[0] if len(out) == 1 else tuple(out)


_RANGE_WARNING = ("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values "
                  "in [start, end).")


def range_(start: Any, end: Any, step: Any = 1, *, out: Any = None, dtype: Any = None,
           layout: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """Values from start to end INCLUSIVE in steps of step, of the default float dtype unless
    given (torch.range, deprecated in PyTorch for arange, with its UserWarning). Mirrors torch.range."""
    warnings.warn(_RANGE_WARNING, UserWarning, stacklevel=2)
    start, end, step = (float(v.item()) if _is_tensor(v) else float(v) for v in (start, end, step))
    if not all(math.isfinite(v) for v in (start, end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = int(math.floor((end - start) / step)) + 1
    from gmbase.dtypes import DEFAULT_FLOAT  # noqa: PLC0415

    from .._factories import tensor  # noqa: PLC0415

    d = _dtypes.as_dtype(dtype) if dtype is not None else DEFAULT_FLOAT
    values = start + np.arange(count, dtype=np.float64) * step
    result = tensor(values.astype(d.np), dtype=d, device=device, requires_grad=requires_grad)
    if out is not None:
        if tuple(out.shape) != (count,):
            out.resize_(count)
        out.copy_(result)
        return out
    return result
