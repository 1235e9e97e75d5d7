"""Order statistics and moments PyTorch names: quantile and nanquantile (five interpolation
modes), nanmedian, mode, cov and corrcoef, histogram.

Why compositions: quantile is PyTorch's own algorithm (sort, ranks from q and the count of
values, two gathers and a lerp), written with differentiable eager ops so gradients and the
static tracer follow; cov is a mean, a product and a sum. mode and histogram read values
(their result depends on them the way no op records), through `_host`, so static refuses
them with a TraceError.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import elementwise as E
from gmops._checks import norm_dim

from ..return_types import make as _return_type
from ._common import _host, _ndim, _numel, _renamed
from .elementwise import lerp, to_dtype
from .indexing import gather
from .shape_ops import permute, reshape, squeeze, transpose, unsqueeze

return_types_nanmedian = _return_type("nanmedian")  # torch.return_types.nanmedian
return_types_mode = _return_type("mode")  # torch.return_types.mode
return_types_histogram = _return_type("histogram", ("hist", "bin_edges"))  # torch.return_types.histogram

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _tname(dt: Any) -> str:
    return _dtypes.scalar_type_name(dt) if isinstance(dt, _dtypes.dtype) else str(dt)


def _concrete(t: Any) -> bool:
    data = getattr(t, "_data", None)
    return data is not None and type(data).__module__.split(".")[0] in ("numpy", "cupy")


def _tensor(values: Any, like: Any, dtype: Any = None) -> Any:
    from .._factories import tensor  # noqa: PLC0415

    return tensor(values, dtype=dtype, device=getattr(like, "device", None))


def _quantile(input: Any, q: Any, dim: Any, keepdim: bool, interpolation: str, ignore_nan: bool) -> Any:
    """PyTorch's quantile_compute: sort along the reduced dim (moved last), ranks = q * (count
    - 1) (count: the values, or for nanquantile the non-NaN ones; a row holding NaN ranks
    last, so its quantile is NaN), adjusted to the interpolation mode, then a lerp of the
    two neighbouring sorted values."""
    if input.dtype not in (_dtypes.float32, _dtypes.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    scalar_q = not hasattr(q, "shape")
    if scalar_q:
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q:g}")
        qv = _tensor([float(q)], input, input.dtype)
    else:
        if _ndim(q) > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        if _concrete(q):
            values = _host(q)
            if not ((values >= 0) & (values <= 1)).all():
                raise RuntimeError("quantile() q values must be in the range [0, 1]")
        qv = reshape(q, -1)
        scalar_q = _ndim(q) == 0  # a 0-d q adds no dim, as a number's
    if interpolation not in _MODES:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if _numel(input) == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    nd = _ndim(input)
    if dim is None:
        keep_shape = (1,) * nd if keepdim else ()
        rows = reshape(input, *(keep_shape + (-1,)))
        d = None
    else:
        d = norm_dim("quantile", dim, nd)
        rows = transpose(unsqueeze(input, -1), d, -1) if nd else reshape(input, 1)
    ordered = rows.sort(-1).values
    n = ordered.shape[-1]
    k = qv.shape[0]
    lead = tuple(ordered.shape[:-1])
    qb = reshape(qv, *([1] * len(lead) + [k]))
    nan = ordered.isnan()
    if ignore_nan:
        count = to_dtype(E.LOGICAL_NOT(nan), input.dtype).sum(-1, keepdim=True)
        ranks = qb * (count - 1)
        ranks = E.WHERE(E.LT(ranks, 0), 0.0, ranks)
    else:
        ranks = E.WHERE(nan.any(-1, keepdim=True), float(n - 1), qb * float(n - 1))
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    ranks = ranks.expand(*(lead + (k,)))
    below = to_dtype(ranks, _dtypes.int64)
    out = gather(ordered, -1, below)
    if interpolation in ("linear", "midpoint"):
        weights = ranks - to_dtype(below, input.dtype) if interpolation == "linear" else 0.5
        above = gather(ordered, -1, to_dtype(ranks.ceil(), _dtypes.int64))
        out = _lerp(out, above, weights)
    if scalar_q:
        out = squeeze(out, -1)
    else:
        m = _ndim(out)
        out = permute(out, (m - 1,) + tuple(range(m - 1)))
    if d is not None and not keepdim and nd:
        out = squeeze(out, d + (0 if scalar_q else 1))
    return out


def _lerp(low: Any, high: Any, weight: Any) -> Any:
    """PyTorch's lerp as its vector kernel rounds it: low + w * (high - low) for w < 0.5, else
    high - (1 - w) * (high - low), each a fused multiply-add (one rounding). In float32 the
    product and sum are made in float64 (exact product) and rounded once; float64 inputs
    take eager's lerp, which already matches."""
    if low.dtype is not _dtypes.float32:
        return lerp(low, high, weight)
    diff = to_dtype(high - low, _dtypes.float64)
    if hasattr(weight, "shape"):
        w = to_dtype(weight, _dtypes.float64)
        rest = to_dtype(1.0 - weight, _dtypes.float64)
    else:
        w, rest = float(weight), 1.0 - float(weight)
    near_low = to_dtype(low, _dtypes.float64) + w * diff
    near_high = to_dtype(high, _dtypes.float64) - rest * diff
    small = E.LT(weight, 0.5) if hasattr(weight, "shape") else bool(weight < 0.5)
    out = E.WHERE(small, near_low, near_high) if hasattr(weight, "shape") else (near_low if small else near_high)
    return to_dtype(out, _dtypes.float32)


def quantile(input: Any, q: Any, dim: Any = None, keepdim: bool = False, *, interpolation: str = "linear") -> Any:
    """The q-th quantiles (q a number or 1-d tensor in [0, 1]) of input, over all values or
    along `dim`; a NaN makes its row's quantile NaN. A 1-d q adds its dim first.
    Mirrors torch.quantile (differentiable: a lerp of sorted values)."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(input: Any, q: Any, dim: Any = None, keepdim: bool = False, *, interpolation: str = "linear") -> Any:
    """quantile over the non-NaN values only (NaN where a row has none). Mirrors torch.nanquantile."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True)


def nanmedian(input: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """The lower median of the non-NaN values (NaN where there are none); with `dim`, the
    (values, indices) named tuple. Mirrors torch.nanmedian."""
    if dim is None:
        flat = reshape(input, -1)
        if _numel(flat) == 0:
            return _tensor(float("nan"), input, input.dtype)
        ordered = flat.sort(0).values
        count = E.LOGICAL_NOT(ordered.isnan()).sum()
        pos = (count - 1).clamp(min=0) // 2
        return _renamed(reshape(gather(ordered, 0, reshape(to_dtype(pos, _dtypes.int64), 1)), ()),
                        "NanmedianBackward0")
    nd = _ndim(input)
    d = norm_dim("nanmedian", dim, max(nd, 1))
    x = reshape(input, 1) if not nd else input
    if x.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    ordered, order = x.sort(d)
    count = E.LOGICAL_NOT(ordered.isnan()).sum(d, keepdim=True)
    # PyTorch's middle of the non-NaN values; of an all-NaN row, the middle position
    pos = to_dtype(E.WHERE(E.EQ(count, 0), (x.shape[d] - 1) // 2, (count - 1) // 2), _dtypes.int64)
    values = gather(ordered, d, pos)
    indices = gather(order, d, pos)
    if not nd:
        values, indices = reshape(values, ()), reshape(indices, ())
    elif not keepdim:
        values, indices = squeeze(values, d), squeeze(indices, d)
    return return_types_nanmedian(_renamed(values, "NanmedianBackward1"), indices)


def _mode_positions(rows: np.ndarray) -> np.ndarray:
    """For each row of the 2-d array, the last index of its mode: the most frequent value, the
    smallest among equally frequent ones (NaNs never equal each other, so each counts once).
    Vectorized over the rows: a stable sort, runs of equal values numbered, counted with one
    bincount."""
    m, n = rows.shape
    order = np.argsort(rows, axis=1, kind="stable")
    s = np.take_along_axis(rows, order, axis=1)
    new_run = np.ones((m, n), dtype=np.int64)
    new_run[:, 1:] = s[:, 1:] != s[:, :-1]
    run = np.cumsum(new_run, axis=1) - 1  # the run each sorted position belongs to, per row
    counts = np.bincount((run + np.arange(m)[:, None] * n).reshape(-1), minlength=m * n).reshape(m, n)
    best = counts.argmax(axis=1)  # the first largest count: the smallest such value
    return np.where(run == best[:, None], order, -1).max(axis=1)


def mode(input: Any, dim: int = -1, keepdim: bool = False) -> Any:
    """The most frequent value along `dim` (the smallest among ties) and the last index where
    it occurs, as a (values, indices) named tuple. Mirrors torch.mode; the values' gradient
    reaches the picked elements. (PyTorch's index is the last of its run after an unstable
    sort: the last occurrence for rows under 17 values, unspecified beyond, as NaN rows are.)"""
    nd = _ndim(input)
    d = norm_dim("mode", dim, max(nd, 1))
    x = reshape(input, 1) if not nd else input
    if x.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    arr = np.moveaxis(_host(x), d, -1)
    flat = arr.reshape(-1, arr.shape[-1])
    picks = _mode_positions(flat).astype(np.int64).reshape(arr.shape[:-1] + (1,))
    index = _tensor(np.ascontiguousarray(np.moveaxis(picks, -1, d)), x, _dtypes.int64)
    values = gather(x, d, index)
    if not nd:
        values, index = reshape(values, ()), reshape(index, ())
    elif not keepdim:
        values, index = squeeze(values, d), squeeze(index, d)
    return return_types_mode(_renamed(values, "ModeBackward0"), index)


def _check_weights(name: str, w: Any, observations: int, floating: bool) -> None:
    if _ndim(w) > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{_ndim(w)} dimensions")
    if floating and not w.dtype.is_floating_point:
        raise RuntimeError(f"cov(): expected {name} to have floating point dtype but got {name} with "
                           f"{_tname(w.dtype)} dtype")
    if not floating and (w.dtype.is_floating_point or w.dtype is _dtypes.bool_):
        raise RuntimeError(f"cov(): expected {name} to have integral dtype but got {name} with "
                           f"{_tname(w.dtype)} dtype")
    if _numel(w) != observations:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {_numel(w)} != {observations}")
    if _concrete(w) and (_host(w) < 0).any():
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input: Any, *, correction: int = 1, fweights: Any = None, aweights: Any = None) -> Any:
    """The covariance matrix of the variables in input's rows (observations in columns; a
    1-d input is one variable), with integer frequency and float observation weights.
    Mirrors torch.cov (its algorithm, so the same degrees-of-freedom rule and warning)."""
    if _ndim(input) > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{_ndim(input)} dimensions")
    if input.dtype is _dtypes.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = reshape(input, 1, -1) if _ndim(input) < 2 else input
    observations = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, observations, floating=False)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, observations, floating=True)
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum: Any = observations
        avg = x.sum(1) / observations
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if w is None:
        norm: Any = observations - correction
    elif aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if not hasattr(norm, "shape") or _concrete(norm):
        if float(_host(norm) if hasattr(norm, "shape") else norm) <= 0:
            warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number "
                          "of observations.", UserWarning, stacklevel=3)
            norm = 0 if not hasattr(norm, "shape") else norm * 0
    centred = x - unsqueeze(avg, 1)
    weighted = centred * w if w is not None else centred
    c = centred.matmul(weighted.t())
    if not hasattr(norm, "shape"):
        c = c / (float(norm) if c.dtype.is_floating_point else norm)
    else:
        c = c / norm
    return c.squeeze()


def corrcoef(input: Any) -> Any:
    """The Pearson correlation coefficients of the variables in input's rows, clamped to
    [-1, 1]. Mirrors torch.corrcoef."""
    c = cov(input)
    if _ndim(c) == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / unsqueeze(std, 1)
    c = c / unsqueeze(std, 0)
    return c.clamp(-1, 1)


def _value_range(values: np.ndarray, lo_hi: Any, d: int) -> tuple[float, float]:
    """(lo, hi) of dimension d's uniform bins, as torch.histogram and histogramdd take them:
    `lo_hi` where given, else the values' min and max; lo above hi is an error, and an empty
    width is widened by half a unit each side ((0, 1) for no values)."""
    if lo_hi is not None:
        lo, hi = float(lo_hi[0]), float(lo_hi[1])
    elif values.size:
        lo, hi = float(values.min()), float(values.max())
    else:
        lo, hi = 0.0, 0.0
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} max {hi:g} for "
                           f"dimension {d}")
    if lo == hi:
        lo, hi = (lo - 0.5, hi + 0.5) if values.size else (0.0, 1.0)
    return lo, hi


def _linspace(lo: float, hi: float, steps: int, npdt: Any) -> np.ndarray:
    """PyTorch's linspace in the result dtype: the step rounded to it, then the first half
    stepped up from lo and the second down from hi, each product-and-sum rounded once (its
    kernel's fused multiply-add: computed wider here), so the bin edges, and the counts at
    them, are PyTorch's to the last bit."""
    npdt = np.dtype(npdt)
    wide = np.float64 if npdt.itemsize < 8 else np.longdouble
    start, end = npdt.type(lo), npdt.type(hi)
    step = wide((end - start) / npdt.type(steps - 1))
    i = np.arange(steps)
    up = wide(start) + step * i.astype(wide)
    down = wide(end) - step * (steps - i - 1).astype(wide)
    return np.where(i < steps // 2, up, down).astype(npdt)


def histogram(input: Any, bins: Any = 100, *, range: Any = None, weight: Any = None,  # noqa: A002
              density: bool = False) -> Any:
    """The counts (weights' sums with weight) of input's values in bins: `bins` equal-width
    bins over `range` (default: the values' min and max), or the bins the 1-d tensor `bins`
    gives as edges; the last bin holds its right edge. Returns (hist, bin_edges), both in
    input's dtype. Mirrors torch.histogram (no gradient)."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"histogramdd" not implemented for \'{_tname(input.dtype)}\'')
    name = {_dtypes.float32: "float", _dtypes.float64: "double"}.get(input.dtype, str(input.dtype))
    data = _host(input).reshape(-1).astype(np.float64)
    w = None
    if weight is not None:
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                               f"should have the same dtype, but got input({name}), and weight("
                               f"{ {_dtypes.float32: 'float', _dtypes.float64: 'double'}.get(weight.dtype, weight.dtype)})")
        if tuple(weight.shape) != tuple(input.shape):
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as "
                               f"the input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(input.shape)} and weight with shape {list(weight.shape)}")
        w = _host(weight).reshape(-1).astype(np.float64)
    npdt = _host(input).dtype
    if hasattr(bins, "shape"):
        if bins.dtype is not input.dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but got "
                               f"input with dtype {name} and bins for dimension 0 with dtype "
                               f"{ {_dtypes.float32: 'float', _dtypes.float64: 'double'}.get(bins.dtype, bins.dtype)}")
        if _ndim(bins) != 1 or _numel(bins) < 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension and at least 1 entry, but "
                               f"got a tensor with {_ndim(bins)} dimensions")
        edges = _host(bins).astype(npdt)
    else:
        nbins = int(bins)
        if nbins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {nbins} for dimension 0")
        lo, hi = _value_range(data, range, 0)
        if not (np.isfinite(lo) and np.isfinite(hi)):  # (widening an empty width keeps a bound infinite)
            raise RuntimeError(f"torch.histogramdd: dimension 0's range [{lo:g}, {hi:g}] is not finite")
        edges = _linspace(lo, hi, nbins + 1, npdt)
    e64 = edges.astype(np.float64)
    hist = np.zeros(max(len(e64) - 1, 0), dtype=np.float64)
    if len(e64) > 1:
        keep = (data >= e64[0]) & (data <= e64[-1])
        pos = np.searchsorted(e64, data[keep], side="right") - 1
        pos = np.minimum(pos, len(e64) - 2)
        np.add.at(hist, pos, 1.0 if w is None else w[keep])
    if density:
        total = hist.sum()
        hist = hist / (total * np.diff(e64)) if total else hist * np.nan
    return return_types_histogram(_tensor(hist.astype(npdt), input, input.dtype),
                                  _tensor(edges, input, input.dtype))

