"""Shape and dtype helpers that abstract rules share; errors read as PyTorch's do,
prefixed with the op's name and followed by what to do."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from gmbase.dtypes import dtype

from ._registry import TensorSpec


def broadcast_shapes(op: str, *shapes: tuple) -> tuple:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            if -i > len(s):
                continue
            n = s[i]
            if n == 1 or n == size:
                continue
            if size == 1:
                size = n
                continue
            first = next(j for j, t in enumerate(shapes) if -i <= len(t) and t[i] == size)
            raise RuntimeError(
                f"{op}: The size of tensor a ({size}) must match the size of tensor b ({n}) at "
                f"non-singleton dimension {ndim + i} (shapes {tuple(shapes[first])} and {tuple(s)}); "
                "make the shapes broadcastable, e.g. with unsqueeze() or reshape()"
            )
        out.append(size)
    return tuple(out)


def specs_of(operands) -> list[TensorSpec]:
    return [o for o in operands if isinstance(o, TensorSpec)]


def same_dtype(op: str, specs: list[TensorSpec]) -> dtype:
    dts = {s.dtype for s in specs}
    if len(dts) > 1:
        raise TypeError(
            f"{op}: expected operands of one dtype, got {', '.join(sorted(d.name for d in dts))}; "
            "cast with .to(dtype) first"
        )
    return specs[0].dtype


def norm_dim(op: str, dim: int, ndim: int) -> int:
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}")
    if dim < lo or dim > hi:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim % ndim if ndim else 0


def norm_dims(op: str, dims, ndim: int) -> tuple | None:
    """None (all axes) or a sorted tuple of distinct non-negative axes."""
    if dims is None:
        return None
    if isinstance(dims, int):
        dims = (dims,)
    if len(tuple(dims)) == 0:
        return tuple(range(ndim))  # PyTorch: an empty dim list reduces over every dim
    out = tuple(sorted({norm_dim(op, d, ndim) for d in dims}))
    if len(out) != len(tuple(dims)):
        raise RuntimeError(f"{op}: dim {tuple(dims)} appears multiple times in the list of dims")
    return out


def reduced_shape(shape: tuple, dims: tuple | None, keepdim: bool) -> tuple:
    axes = range(len(shape)) if dims is None else dims
    if keepdim:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def require_float(op: str, spec: TensorSpec) -> None:
    if not spec.dtype.is_floating_point:
        raise TypeError(f'{op}: "{op}" not implemented for \'{spec.dtype.name}\'; cast with .float() first')


def numel(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


# PyTorch's names for the element types in "value cannot be converted to type T without overflow"
_C10_NAME = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
             "float16": "c10::Half", "float32": "float", "float64": "double"}


_INT_RANGES: dict[str, tuple[int, int]] = {}


def _int_range(dt: dtype) -> tuple[int, int]:
    """(min, max) of an integer dtype, cached (np.iinfo costs a microsecond)."""
    r = _INT_RANGES.get(dt.name)
    if r is None:
        info = np.iinfo(dt.np)
        r = _INT_RANGES[dt.name] = (int(info.min), int(info.max))
    return r


def fit_scalar(op: str, value: Any, dt: dtype) -> Any:
    """`value` (a Python or NumPy number) as a tensor of dtype `dt` stores it, or PyTorch's
    RuntimeError where `dt` cannot hold it (c10's checked scalar conversion) -- NumPy would wrap
    300 to 44 in an int8 tensor, or refuse with its own OverflowError. Every op that writes a
    scalar into a tensor (fill, full, full_like, where/masked_fill, scatter's value) calls this
    from its abstract rule and forward, so eager and traced code raise alike.

    c10's rule: an integer fits a signed dtype within its range, an unsigned one within
    [-max, max] (a negative wraps: uint8 -1 is 255); a float fits an integer dtype within
    [min, max] (no NaN or inf), a float dtype when finite within its largest finite value
    (inf and NaN are kept); a bool dtype takes any number (its truth)."""
    if type(value) is float and -65504.0 <= value <= 65504.0 and dt.is_floating_point:
        return value  # (the common case, every float dtype holds it: checked first, quickly)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return value
    if dt.name == "bool":
        return bool(value)
    if dt.name not in _C10_NAME:  # complex: any real fits
        return value
    if dt.is_floating_point:
        top = float(np.finfo(dt.np).max)
        fits = not (isinstance(value, (float, np.floating)) and math.isfinite(value)) or abs(value) <= top
        if isinstance(value, (int, np.integer)):
            fits = abs(int(value)) <= top
    else:
        lo, hi = _int_range(dt)
        low = -hi if lo == 0 and isinstance(value, (int, np.integer)) else lo
        fits = (value == value) and low <= value <= hi
    if not fits:
        raise RuntimeError(f"{op}: value cannot be converted to type {_C10_NAME[dt.name]} without overflow "
                           f"({value!r} into a {dt.name} tensor); pass a value within {dt.name}'s range, or "
                           "convert the tensor to a wider dtype first")
    if isinstance(value, (int, np.integer)) and value < 0 and not dt.is_floating_point and _int_range(dt)[0] == 0:
        return int(value) % (_int_range(dt)[1] + 1)  # two's complement, as PyTorch's cast
    return value
