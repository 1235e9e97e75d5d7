"""Reductions and scans as compositions: nansum, nanmean, bincount, cummax/cummin,
logcumsumexp and trapezoid."""
from __future__ import annotations

import builtins as _builtins
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmops._checks import norm_dim

from .. import _functional as _F
from ..return_types import make as _return_type
from ._helpers import _floats, _floats_only, _size
from .elementwise import logaddexp

return_types_cummax = _return_type("cummax")  # torch.return_types.cummax
return_types_cummin = _return_type("cummin")  # torch.return_types.cummin


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


def bincount(input: Any, weights: Any = None, minlength: int = 0) -> Any:  # noqa: A002
    """The count of each value 0..max of a 1-d non-negative integer tensor (at least minlength
    bins), or the sum of `weights` per value: float32 weights give float32, other weights
    float64, no weights int64. Its length depends on the values, so it runs eagerly only
    (static raises a TraceError); no gradient. Mirrors torch.bincount."""
    from .._factories import tensor  # noqa: PLC0415

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
    from .._factories import arange  # noqa: PLC0415

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
    from .._factories import tensor  # noqa: PLC0415

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
