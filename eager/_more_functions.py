"""PyTorch functions that are compositions of the shared op set.

Each function here is written in terms of functions eager already has (`eager._functional`),
never in arrays and never as a new op record: a composition differentiates through the
backward rules of the ops it is made of, and static traces it like any other user code, so
one definition serves eager and compiled code alike. The exceptions read data on purpose:
`bincount` (its length depends on the values, so it runs eagerly only and a traced value
refuses it with static's TraceError, as `unique` and `nonzero` do) and the index factories
`tril_indices` / `triu_indices` (they read no tensor at all).

The functions are exported from `eager` and, where PyTorch has the method, attached to the
shared Tensor API (so eager tensors and static's traced values both get them).
"""
from __future__ import annotations

import builtins as _builtins
import math
import warnings
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _dtypes
from . import _functional as _F
from ._api import TensorAPI
from .ops._checks import norm_dim

__all__ = [
    "block_diag", "bincount", "broadcast_tensors", "copysign", "cross", "cummax", "cummin", "deg2rad", "hsplit",
    "hypot", "kron", "logaddexp", "logaddexp2", "logcumsumexp", "nanmean", "nansum", "rad2deg", "rot90", "signbit",
    "sinc", "take_along_dim", "tensor_split", "tensordot", "trapezoid", "tril_indices", "triu_indices", "vsplit",
    "xlogy",
]

return_types_cummax = namedtuple("cummax", ["values", "indices"])  # type: ignore[name-match]  # torch.return_types.cummax
return_types_cummin = namedtuple("cummin", ["values", "indices"])  # type: ignore[name-match]  # torch.return_types.cummin

_LN2 = math.log(2.0)


# -- helpers ------------------------------------------------------------------------------------
def _is_tensor(x: Any) -> bool:
    return isinstance(x, TensorAPI)


def _result_dtype(*operands: Any) -> _dtypes.dtype:
    """PyTorch's promotion of tensors (dimensioned before 0-d) and Python numbers."""
    dims = [o.dtype for o in operands if _is_tensor(o) and o.ndim > 0]
    zero_dims = [o.dtype for o in operands if _is_tensor(o) and o.ndim == 0]
    scalars = [o for o in operands if not _is_tensor(o)]
    return _dtypes.result_type(dims, zero_dims, scalars)


def _float_dtype(*operands: Any) -> _dtypes.dtype:
    """The promoted dtype, or the default float one where it is bool or integer (PyTorch's
    rule for float-valued functions of integers, such as sin or xlogy)."""
    d = _result_dtype(*operands)
    return d if d.is_floating_point else _dtypes.DEFAULT_FLOAT


def _like(operand: Any, dtype: _dtypes.dtype, device: Any) -> Any:
    """`operand` as a tensor of `dtype` (a Python number becomes a 0-d tensor)."""
    if _is_tensor(operand):
        return _F.to_dtype(operand, dtype)
    from ._factories import tensor  # noqa: PLC0415

    return tensor(operand, dtype=dtype, device=device)


def _device_of(*operands: Any) -> Any:
    for o in operands:
        if _is_tensor(o):
            return o.device
    return None


def _floats_only(name: str, *operands: Any) -> tuple[Any, ...]:
    """The operands as tensors of their promoted floating dtype; an integer or bool result
    dtype raises NotImplementedError, as PyTorch's kernels for these functions do."""
    if not any(_is_tensor(o) for o in operands):
        raise TypeError(f"{name}(): expected at least one tensor argument, got {[type(o).__name__ for o in operands]}")
    d = _result_dtype(*operands)
    if not d.is_floating_point:
        raise NotImplementedError(f'"{name}" not implemented for \'{_dtypes.scalar_type_name(d)}\': {name} needs a '
                                  f"floating-point input; convert it with .float() or .double()")
    device = _device_of(*operands)
    return tuple(_like(o, d, device) for o in operands)


def _floats(*operands: Any) -> tuple[Any, ...]:
    """The operands as tensors of their promoted dtype, the default float one for integers."""
    d = _float_dtype(*operands)
    device = _device_of(*operands)
    return tuple(_like(o, d, device) for o in operands)


def _size(x: Any, dim: int) -> int:
    return int(x.shape[dim])


# -- elementwise --------------------------------------------------------------------------------
def _log_add(name: str, input: Any, other: Any, base_log: float) -> Any:  # noqa: A002
    """log_b(b^x + b^y) as max(x, y) + log_b(1 + b^-|x - y|): no b^x is formed, so nothing
    overflows. Equal infinities take a difference of 0 (inf - inf would be NaN) and give
    that infinity, as PyTorch does; NaN propagates through maximum."""
    a, b = _floats_only(name, input, other)
    same_infinity = _F.logical_and(_F.isinf(a), _F.eq(a, b))
    gap = _F.abs(_F.where(same_infinity, 0.0, _F.sub(a, b)))
    top = _F.maximum(a, b)
    if base_log == 1.0:
        return top + _F.log1p(_F.exp(-gap))
    return top + _F.log1p(_F.exp(gap * -base_log)) / base_log


def logaddexp(input: Any, other: Any) -> Any:  # noqa: A002  (PyTorch's parameter names)
    """log(e^input + e^other), elementwise and broadcast, computed stably. Mirrors torch.logaddexp."""
    return _log_add("logaddexp", input, other, 1.0)


def logaddexp2(input: Any, other: Any) -> Any:  # noqa: A002
    """log2(2^input + 2^other), elementwise and broadcast, computed stably. Mirrors torch.logaddexp2."""
    return _log_add("logaddexp2", input, other, _LN2)


def hypot(input: Any, other: Any) -> Any:  # noqa: A002
    """sqrt(input^2 + other^2), elementwise and broadcast. Written as hi * sqrt(1 + (lo/hi)^2)
    with hi, lo the larger and smaller magnitude, so squaring neither overflows nor underflows;
    an infinite operand gives inf even beside NaN (C's hypot). Mirrors torch.hypot."""
    a, b = _floats_only("hypot", input, other)
    aa, bb = _F.abs(a), _F.abs(b)
    hi, lo = _F.maximum(aa, bb), _F.minimum(aa, bb)
    ratio = lo / _F.where(_F.eq(hi, 0.0), 1.0, hi)
    out = hi * _F.sqrt(1.0 + ratio * ratio)
    return _F.where(_F.logical_or(_F.isinf(a), _F.isinf(b)), math.inf, out)


def xlogy(input: Any, other: Any) -> Any:  # noqa: A002
    """input * log(other), 0 where input is 0 (even where other is 0 or inf) unless other is
    NaN. log reads 1 at the zeroed positions, so no 0 * -inf reaches the value or the
    gradient: d/dinput is log(other) (0 where input is 0), d/dother is input / other.
    Mirrors torch.xlogy."""
    if not _is_tensor(input) and not _is_tensor(other):
        raise TypeError("xlogy(): expected at least one tensor argument (input or other), got two numbers")
    x, y = _floats(input, other)
    zeroed = _F.logical_and(_F.eq(x, 0.0), _F.logical_not(_F.isnan(y)))
    return _F.where(zeroed, 0.0, x * _F.log(_F.where(zeroed, 1.0, y)))


def signbit(input: Any) -> Any:  # noqa: A002
    """Whether each element's sign bit is set: True for negatives and -0.0 (1 / -0.0 is -inf).
    A NaN reads False whatever its sign bit (no composition of the op set sees it).
    Mirrors torch.signbit."""
    if input.dtype is _dtypes.bool_:
        return _F.ne(input, input)
    if not input.dtype.is_floating_point:
        return _F.lt(input, 0)
    negative_zero = _F.logical_and(_F.eq(input, 0.0), _F.lt(1.0 / input, 0.0))
    return _F.logical_or(_F.lt(input, 0.0), negative_zero)


def copysign(input: Any, other: Any) -> Any:  # noqa: A002
    """|input| with the sign of other (its sign bit, so -0.0 counts as negative), broadcast; a
    floating result, as PyTorch's. Mirrors torch.copysign."""
    if not _is_tensor(input):
        raise TypeError(f"copysign(): argument 'input' must be Tensor, not {type(input).__name__}")
    x, y = _floats(input, other)
    magnitude = _F.abs(x)
    return _F.where(signbit(y), -magnitude, magnitude)


def sinc(input: Any) -> Any:  # noqa: A002
    """sin(pi x) / (pi x), 1 at x = 0 (the division reads 1 there, so the gradient at 0 is 0, not NaN).

    Mirrors torch.sinc."""
    (x,) = _floats(input)
    at_zero = _F.eq(x, 0.0)
    scaled = _F.where(at_zero, 1.0, x * math.pi)
    return _F.where(at_zero, 1.0, _F.sin(scaled) / scaled)


def deg2rad(input: Any) -> Any:  # noqa: A002
    """Degrees to radians (x * pi / 180); integers give the default float dtype. Mirrors torch.deg2rad."""
    (x,) = _floats(input)
    return x * (math.pi / 180.0)


def rad2deg(input: Any) -> Any:  # noqa: A002
    """Radians to degrees (x * 180 / pi); integers give the default float dtype. Mirrors torch.rad2deg."""
    (x,) = _floats(input)
    return x * (180.0 / math.pi)


# -- NaN-ignoring reductions ------------------------------------------------------------------------
def nansum(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:  # noqa: A002
    """The sum over dim (all elements when None) treating NaN as 0; the gradient is 0 at NaNs.

    Mirrors torch.nansum."""
    x = input if dtype is None else _F.to_dtype(input, dtype)
    if x.dtype.is_floating_point:
        x = _F.where(_F.isnan(x), 0.0, x)
    return _F.sum(x, dim, keepdim)


def nanmean(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:  # noqa: A002
    """The mean over dim of the non-NaN elements (NaN where there are none). The gradient is 0
    at NaNs, also in a slice of NaNs only (PyTorch's reads NaN there, from inf * 0).
    Mirrors torch.nanmean."""
    x = input if dtype is None else _F.to_dtype(input, dtype)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{_dtypes.scalar_type_name(x.dtype)}; convert it with .float() or pass dtype=")
    present = _F.logical_not(_F.isnan(x))
    total = _F.sum(_F.where(present, x, 0.0), dim, keepdim)
    return total / _F.sum(_F.to_dtype(present, x.dtype), dim, keepdim)


# -- products ------------------------------------------------------------------------------------
def _tensordot_dims(dims: Any, ndim_a: int, ndim_b: int) -> tuple[list[int], list[int]]:
    if _is_tensor(dims):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > ndim_a or dims > ndim_b:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims} "
                               f"(ndim_a={ndim_a}, ndim_b={ndim_b})")
        return list(range(ndim_a - dims, ndim_a)), list(range(dims))
    if not isinstance(dims, (list, tuple)) or len(dims) != 2:
        raise RuntimeError(f"tensordot expects dims to be an int or a pair of dim lists, got {dims!r}")
    first, second = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(first) != len(second):
        raise RuntimeError(f"both dimension lists should have same length, got {len(first)} and {len(second)}")
    return ([norm_dim("tensordot", int(d), ndim_a) for d in first],
            [norm_dim("tensordot", int(d), ndim_b) for d in second])


def tensordot(a: Any, b: Any, dims: Any = 2, out: Any = None) -> Any:
    """The sum of products of a and b over the paired dims (the last `dims` of a with the first
    `dims` of b, or two lists): a's free dims, then b's. Made as permute, reshape and one
    matrix product. Mirrors torch.tensordot."""
    if out is not None:
        raise NotImplementedError("tensordot: out= is not supported; use the returned tensor")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"tensordot: both inputs should have same dtype, got {a.dtype.name} and {b.dtype.name}; "
                           "convert one with .to()")
    dims_a, dims_b = _tensordot_dims(dims, a.ndim, b.ndim)
    contracted = 1
    for da, db in zip(dims_a, dims_b):
        if _size(a, da) != _size(b, db):
            raise RuntimeError(f"contracted dimensions need to match, but first has size {_size(a, da)} in dim {da} "
                               f"and second has size {_size(b, db)} in dim {db}")
        contracted *= _size(a, da)
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    shape_a = [_size(a, d) for d in free_a]
    shape_b = [_size(b, d) for d in free_b]
    left = _F.reshape(_F.permute(a, free_a + dims_a), (math.prod(shape_a), contracted))
    right = _F.reshape(_F.permute(b, dims_b + free_b), (contracted, math.prod(shape_b)))
    return _F.reshape(_F.mm(left, right), tuple(shape_a + shape_b))


def kron(input: Any, other: Any) -> Any:  # noqa: A002
    """The Kronecker product: the block tensor of input[i] * other (the fewer dims padded with
    leading 1s), made as a broadcast product of interleaved reshapes. Mirrors torch.kron."""
    nd = _builtins.max(input.ndim, other.ndim)
    sa = [1] * (nd - input.ndim) + list(input.shape)
    sb = [1] * (nd - other.ndim) + list(other.shape)
    a = _F.reshape(input, tuple(v for s in sa for v in (s, 1)))
    b = _F.reshape(other, tuple(v for s in sb for v in (1, s)))
    return _F.reshape(a * b, tuple(x * y for x, y in zip(sa, sb)))


def _cross(name: str, input: Any, other: Any, dim: int | None) -> Any:  # noqa: A002
    if input.ndim != other.ndim:
        raise RuntimeError(f"{name}: inputs must have the same number of dimensions (got shapes "
                           f"{tuple(input.shape)} and {tuple(other.shape)}); unsqueeze the smaller one")
    a, b = broadcast_tensors(input, other)
    if dim is None:
        sizes = [d for d in range(a.ndim) if _size(a, d) == 3]
        if not sizes:
            raise RuntimeError(f"{name}: no dimension of size 3 in input (shape {tuple(a.shape)}); pass dim=")
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated. Please either pass the dim "
                      "explicitly or simply use torch.linalg.cross.", UserWarning, stacklevel=3)
        d = sizes[0]
    else:
        d = norm_dim(name, dim, a.ndim)
        if _size(input, d) != 3 or _size(other, d) != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {_size(input, d)} "
                               f"and {_size(other, d)}")
    a1, a2, a3 = (_F.narrow(a, d, k, 1) for k in range(3))
    b1, b2, b3 = (_F.narrow(b, d, k, 1) for k in range(3))
    return _F.cat([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], d)


def cross(input: Any, other: Any, dim: int | None = None) -> Any:  # noqa: A002
    """The cross product of 3-vectors along dim (the first dim of size 3 when None, with
    PyTorch's deprecation warning), batch dims broadcast. Mirrors torch.cross."""
    return _cross("cross", input, other, dim)


# -- building and splitting ---------------------------------------------------------------------------
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
    from ._factories import zeros  # noqa: PLC0415

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
    from ._factories import tensor  # noqa: PLC0415

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


# -- counting -------------------------------------------------------------------------------------------
def bincount(input: Any, weights: Any = None, minlength: int = 0) -> Any:  # noqa: A002
    """The count of each value 0..max of a 1-d non-negative integer tensor (at least minlength
    bins), or the sum of `weights` per value: float32 weights give float32, other weights
    float64, no weights int64. Its length depends on the values, so it runs eagerly only
    (static raises a TraceError); no gradient. Mirrors torch.bincount."""
    from ._factories import tensor  # noqa: PLC0415

    values = _F._host(input)
    w = None if weights is None else _F._host(weights)
    if minlength < 0:
        raise RuntimeError(f"minlength should be >= 0, got {minlength}")
    if input.dtype.is_floating_point:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_dtypes.scalar_type_name(input.dtype)}': "
                                  "bincount counts integers; convert the input with .long()")
    if input.ndim != 1 or (values.size and values.min() < 0):
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs (got shape "
                           f"{tuple(input.shape)}); flatten it or shift negative values")
    if w is not None and (w.ndim != 1 or w.shape[0] != values.shape[0]):
        raise RuntimeError(f"weights should be 1-d and have the same length as input (input {tuple(input.shape)}, "
                           f"weights {tuple(w.shape)})")
    length = _builtins.max(int(values.max()) + 1 if values.size else 0, int(minlength))
    if w is None:
        counts = np.bincount(values.astype(np.int64), minlength=length).astype(np.int64)
        return tensor(counts, dtype=_dtypes.int64, device=input.device)
    out_dtype = _dtypes.float32 if weights.dtype is _dtypes.float32 else _dtypes.float64
    sums = np.bincount(values.astype(np.int64), weights=w.astype(np.float64), minlength=length)
    return tensor(sums.astype(out_dtype.np), dtype=out_dtype, device=input.device)


# -- scans ------------------------------------------------------------------------------------------
def _shift_combine(x: Any, d: int, combine: Any) -> Any:
    """An inclusive scan along d in log2(n) steps (Hillis-Steele): at shift s each position
    i >= s combines the running result at i - s (earlier) with its own (later)."""
    n = _size(x, d)
    s = 1
    while s < n:
        earlier, later = _F.narrow(x, d, 0, n - s), _F.narrow(x, d, s, n - s)
        x = _F.cat([_F.narrow(x, d, 0, s), combine(earlier, later)], d)
        s *= 2
    return x


def _cum_extreme(name: str, input: Any, dim: int, largest: bool) -> Any:  # noqa: A002
    """cummax / cummin: the running extreme and the index where it was found, the last one
    among equal values and NaN ranking above every number (PyTorch's rule). The indices
    come from a scan over (value, index) pairs; the values are input gathered there, so
    the gradient goes to the chosen elements as PyTorch's does."""
    from ._factories import arange  # noqa: PLC0415

    result = return_types_cummax if largest else return_types_cummin
    d = norm_dim(name, dim, input.ndim)
    if input.ndim == 0:
        return result(_F.clone(input), _zero_index(input))
    n = _size(input, d)
    shape = [1] * input.ndim
    shape[d] = n
    index = _F.expand(_F.reshape(arange(n, device=input.device), tuple(shape)), tuple(input.shape))
    value = input.detach()
    floating = input.dtype.is_floating_point
    beats = _F.gt if largest else _F.lt

    def combine(earlier: tuple[Any, Any], later: tuple[Any, Any]) -> tuple[Any, Any]:
        keep = beats(earlier[0], later[0])
        if floating:
            keep = _F.logical_or(keep, _F.logical_and(_F.isnan(earlier[0]), _F.logical_not(_F.isnan(later[0]))))
        return _F.where(keep, earlier[0], later[0]), _F.where(keep, earlier[1], later[1])

    s = 1
    while s < n:
        head = (_F.narrow(value, d, 0, s), _F.narrow(index, d, 0, s))
        v, i = combine((_F.narrow(value, d, 0, n - s), _F.narrow(index, d, 0, n - s)),
                       (_F.narrow(value, d, s, n - s), _F.narrow(index, d, s, n - s)))
        value, index = _F.cat([head[0], v], d), _F.cat([head[1], i], d)
        s *= 2
    if n == 0:
        return result(_F.clone(input), _F.to_dtype(input.detach(), _dtypes.int64))
    return result(_F.gather(input, d, index), index)


def _zero_index(input: Any) -> Any:  # noqa: A002
    from ._factories import tensor  # noqa: PLC0415

    return tensor(0, dtype=_dtypes.int64, device=input.device)


def cummax(input: Any, dim: int) -> Any:  # noqa: A002
    """The running maximum along dim and where it was found, as a (values, indices) named
    tuple; ties take the later index, NaN is the largest. Mirrors torch.cummax."""
    return _cum_extreme("cummax", input, dim, largest=True)


def cummin(input: Any, dim: int) -> Any:  # noqa: A002
    """The running minimum along dim and where it was found, as a (values, indices) named
    tuple; ties take the later index, NaN counts as the smallest. Mirrors torch.cummin."""
    return _cum_extreme("cummin", input, dim, largest=False)


def logcumsumexp(input: Any, dim: int) -> Any:  # noqa: A002
    """log(cumsum(exp(input))) along dim, as a scan of logaddexp (so no exp overflows and small
    terms beside large ones are not lost, unlike shifting by one global max). Mirrors torch.logcumsumexp."""
    (x,) = _floats_only("logcumsumexp", input)
    d = norm_dim("logcumsumexp", dim, x.ndim)
    if x.ndim == 0:
        return _F.clone(x)
    return _shift_combine(x, d, logaddexp)


def trapezoid(y: Any, x: Any = None, *, dx: float | None = None, dim: int = -1) -> Any:
    """The trapezoid rule integral of y along dim: sum((y[i] + y[i+1]) / 2 * (x[i+1] - x[i])),
    with spacing dx (default 1) or sample points x (1-d along dim, or y's shape).
    Mirrors torch.trapezoid."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid(): pass either the sample points x or the spacing dx, not both")
    d = norm_dim("trapezoid", dim, y.ndim)
    (yf,) = _floats(y)
    n = _size(yf, d)
    if n == 0:
        return _F.sum(yf, d)
    pairs = (_F.narrow(yf, d, 1, n - 1) + _F.narrow(yf, d, 0, n - 1)) * 0.5
    if x is None:
        return _F.sum(pairs, d) * (1.0 if dx is None else dx)
    if x.ndim == 1:
        if _size(x, 0) != n:
            raise RuntimeError(f"trapezoid: There must be one `x` value for each sample point (x has {_size(x, 0)} "
                               f"values, y has {n} along dim {dim})")
        shape = [1] * y.ndim
        shape[d] = n - 1
        spacing = _F.reshape(_F.diff(x), tuple(shape))
    else:
        spacing = _F.diff(x, dim=dim)
    return _F.sum(pairs * spacing, d)


# -- the Tensor methods PyTorch has for these ---------------------------------------------------------
_METHODS = (
    logaddexp, logaddexp2, hypot, xlogy, copysign, sinc, deg2rad, rad2deg, signbit, nansum, nanmean, kron, cross,
    take_along_dim, tensor_split, hsplit, vsplit, rot90, bincount, cummax, cummin, logcumsumexp,
)
for _fn in _METHODS:
    setattr(TensorAPI, _fn.__name__, _fn)
