"""Tensors of a constant or a range: zeros, ones, empty, full and their `_like` forms, arange,
linspace, logspace and eye."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import _layout

from .._device import xp_for, xp_of_array
from .._tensor import Tensor
from .construction import _dev, _finish, _infer_dtype


def _shape_args(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"expected a sequence of integers for the size, got {type(s).__name__} ({s!r})")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    # an int subclass stays: a compiled trace's symbolic size (static.dynamic_shapes)
    return tuple(s if isinstance(s, int) else int(s) for s in size)


def _size_kw(sizes: tuple, size) -> tuple:
    """The size given positionally or as size= (torch.zeros(size=(2, 3)))."""
    if size is None:
        return sizes
    if sizes:
        raise TypeError("size given both positionally and as size=")
    return (size,)


def _filled(fn_name, size, dtype, device, requires_grad, value=None):
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.DEFAULT_FLOAT
    xp = xp_for(_dev(device))
    shape = _shape_args(size)
    if fn_name in ("zeros", "ones", "full") and any(type(d) is not int for d in shape):
        # a symbolic size (a compiled function's dynamic dimension): a `full` node of the trace,
        # not a constant of the traced call's size
        from gmops.special import FULL  # noqa: PLC0415

        fill = {"zeros": 0, "ones": 1}.get(fn_name, value)
        out = FULL(shape=shape, value=fill, dtype=dt)
        return out.requires_grad_() if requires_grad else out
    if fn_name == "full":
        from gmops._checks import fit_scalar  # noqa: PLC0415

        value = fit_scalar("full", value, dt)  # PyTorch's RuntimeError where dt cannot hold value
        with np.errstate(over="ignore", invalid="ignore"):  # (inf and NaN pass through)
            arr = xp.full(shape, value, dtype=dt.np)
    else:
        arr = getattr(xp, fn_name)(shape, dtype=dt.np)
    return _finish(arr, requires_grad)


def zeros(*sizes, size=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros of the given size (ints, one sequence, or size=). Mirrors torch.zeros."""
    return _filled("zeros", _size_kw(sizes, size), dtype, device, requires_grad)


def ones(*sizes, size=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones of the given size (ints, one sequence, or size=). Mirrors torch.ones."""
    return _filled("ones", _size_kw(sizes, size), dtype, device, requires_grad)


def empty(*sizes, size=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of the given size whose values are not to be relied on.

    Unlike PyTorch, the memory is zeroed (no uninitialized reads). Mirrors torch.empty."""
    return _filled("zeros", _size_kw(sizes, size), dtype, device, requires_grad)  # zeroed: no uninitialized reads


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of the given size filled with `fill_value` (dtype inferred from it unless given). Mirrors torch.full."""
    if dtype is None:
        dtype = _infer_dtype(fill_value)
    return _filled("full", (size,) if isinstance(size, int) else tuple(size), dtype, device, requires_grad, fill_value)


def _like(make: Callable[..., Tensor], input, dtype, device, requires_grad: bool) -> Tensor:
    """`make(size, ...)` (zeros, ones, randn, rand) with input's shape, and its dtype and device
    unless given: what every `*_like` factory means. The result is laid out in input's memory
    order (PyTorch's preserve_format), so `zeros_like(x.t())` is transposed too. Of a value
    batched by vmap it is batched too (torch.func's), so `empty_like(x).normal_()` fills each
    example's own tensor."""
    if getattr(type(input), "__graphmode_batched__", False):
        return type(input)(_like(make, input._value, dtype, device, requires_grad), input._level, input._size)
    out = make(tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
               requires_grad=requires_grad)
    return _in_layout_of(out, input)


def _in_layout_of(out: Tensor, input) -> Tensor:
    data = getattr(input, "_data", None)
    if data is None or data.ndim < 2 or data.flags.c_contiguous or type(data) is not type(out._data):
        return out
    laid = _layout.empty_like(xp_of_array(out._data), data, out._data.dtype)
    laid[...] = out._data
    out._data = laid
    return out


def zeros_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros with input's shape, and its dtype and device unless given. Mirrors torch.zeros_like."""
    return _like(zeros, input, dtype, device, requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones with input's shape, and its dtype and device unless given. Mirrors torch.ones_like."""
    return _like(ones, input, dtype, device, requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialized-by-contract tensor with input's shape (zeroed here, see empty). Mirrors torch.empty_like."""
    return zeros_like(input, dtype, device, requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """`fill_value` with input's shape, and its dtype and device unless given. Mirrors torch.full_like."""
    if getattr(type(input), "__graphmode_batched__", False):  # (batched as _like's)
        return type(input)(full_like(input._value, fill_value, dtype, device, requires_grad), input._level,
                           input._size)
    return _in_layout_of(full(tuple(input.shape), fill_value, dtype=dtype or input.dtype,
                              device=device or input.device, requires_grad=requires_grad), input)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values from `start` (default 0) up to, not including, `end` in steps of `step`, as a 1-d tensor.

    int64 when all of them are ints, else the default float dtype. Mirrors torch.arange."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = _dtypes.int64 if all(isinstance(v, int) for v in (start, end, step)) else _dtypes.DEFAULT_FLOAT
    dt = _dtypes.as_dtype(dtype)
    if step == 1 and any(type(v) is not int and isinstance(v, int) for v in (start, end)):
        return _symbolic_arange(start, end, dt, requires_grad)
    return _finish(xp_for(_dev(device)).arange(start, end, step, dtype=dt.np), requires_grad)


def _symbolic_arange(start, end, dt, requires_grad: bool) -> Tensor:
    """arange over a symbolic size (a compiled function's dynamic dimension: static's SymInt):
    made with ops, a cumulative sum of ones, so that the graph reads the size at run time
    rather than holding the traced call's values as a constant."""
    from gmops.math_ops import CUMSUM  # noqa: PLC0415
    from gmops.special import FULL  # noqa: PLC0415

    ones = FULL(shape=(end - start,), value=1, dtype=_dtypes.int64)
    out = CUMSUM(ones, dim=0) + (start - 1)
    out = out if dt is _dtypes.int64 else out.to(dt)
    return out.requires_grad_() if requires_grad else out


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False) -> Tensor:
    """`steps` evenly spaced values from `start` to `end` inclusive, as a 1-d tensor. Mirrors torch.linspace."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.DEFAULT_FLOAT
    return _finish(xp_for(_dev(device)).linspace(start, end, steps, dtype=dt.np), requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False) -> Tensor:
    """`steps` values from base**start to base**end inclusive, evenly spaced in the exponent
    (computed in float64, then rounded to the dtype). Mirrors torch.logspace."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.DEFAULT_FLOAT
    values = np.power(float(base), np.linspace(start, end, steps, dtype=np.float64))
    return _finish(xp_for(_dev(device)).asarray(values.astype(dt.np)), requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An n x m (n x n by default) matrix with ones on the diagonal and zeros elsewhere. Mirrors torch.eye."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.DEFAULT_FLOAT
    return _finish(xp_for(_dev(device)).eye(n, m, dtype=dt.np), requires_grad)
