"""Reductions, scans and statistics of eager's functional surface (sum ... norm, softmax,
cumsum, var_mean, count_nonzero, histc)."""
from __future__ import annotations

import functools
import math

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import math_ops as M
from gmops import reductions as R
from gmops import shape_ops as S
from gmops._checks import norm_dim, norm_dims
from gmops.elementwise import ABS as abs  # the ops themselves (their functions are generated, eager._surface)
from gmops.elementwise import EQ as eq
from gmops.elementwise import GT as gt
from gmops.elementwise import LOGICAL_NOT as logical_not
from gmops.elementwise import MAXIMUM as maximum
from gmops.elementwise import MINIMUM as minimum
from gmops.elementwise import NE as ne
from gmops.elementwise import POW as pow
from gmops.elementwise import SQRT as sqrt
from gmops.selection import WHERE as where  # the op itself (its function is generated)

from ..return_types import make as _return_type
from ._common import _host, _ndim, _renamed
from .elementwise import to_dtype

return_types_max = _return_type("max")  # torch.return_types.max
return_types_min = _return_type("min")  # torch.return_types.min


def _reduce(op, input, dim, keepdim, name, **extra):
    dims = norm_dims(name, dim, _ndim(input))
    return op(input, dims=dims, keepdim=bool(keepdim), **extra)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum over `dim` (all elements when None), optionally cast to `dtype` first. Mirrors torch.sum."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    return _reduce(R.SUM, input, dim, keepdim, "sum")


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean over `dim` (all elements when None); needs a floating dtype or `dtype=`. Mirrors torch.mean."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    _require_float_input(input, "mean(): could not infer output dtype. Input dtype must be either a floating "
                                "point or complex dtype. Got: {}")
    return _reduce(R.MEAN, input, dim, keepdim, "mean")


def _require_float_input(input, message: str) -> None:
    """NumPy would compute in float64 silently where PyTorch refuses an integer input."""
    dt = getattr(input, "dtype", None)
    if isinstance(dt, _dtypes.dtype) and not dt.is_floating_point:
        raise RuntimeError(message.format(_dtypes.scalar_type_name(dt)))


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """The product over `dim` (all elements when None). Mirrors torch.prod."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    return _reduce(R.PROD, input, dim, keepdim, "prod")


def _spread(op, name, input, dim, unbiased, keepdim, correction):
    """var and std: `correction` (default 1, Bessel's) or the older `unbiased` flag sets the
    divisor N - correction; a second positional argument that is not a bool is the dim, as
    in torch.var(x, 0)."""
    if isinstance(unbiased, bool) is False and unbiased is not None and dim is None:
        dim, unbiased = unbiased, None
    if correction is None:
        correction = 1 if unbiased in (None, True) else 0
    return _reduce(op, input, dim, keepdim, name, correction=int(correction))


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The variance over `dim` (all elements when None), divided by N - correction. Mirrors torch.var."""
    return _spread(R.VAR, "var", input, dim, unbiased, keepdim, correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The standard deviation over `dim` (all elements when None), divided by N - correction. Mirrors torch.std."""
    return _spread(R.STD, "std", input, dim, unbiased, keepdim, correction)


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over `dim`, computed stably. Mirrors torch.logsumexp."""
    return _reduce(R.LOGSUMEXP, input, dim, keepdim, "logsumexp")


def amax(input, dim=(), keepdim=False):
    """The maximum over `dim` (all dimensions when empty); the gradient is shared among ties. Mirrors torch.amax."""
    return _reduce(R.AMAX, input, None if dim == () else dim, keepdim, "amax")


def amin(input, dim=(), keepdim=False):
    """The minimum over `dim` (all dimensions when empty); the gradient is shared among ties. Mirrors torch.amin."""
    return _reduce(R.AMIN, input, None if dim == () else dim, keepdim, "amin")


def _max_min(input, dim, keepdim, is_max):
    """max(x): the largest value; max(x, dim): (values, indices); max(x, other): elementwise."""
    if dim is None:
        return (R.MAX_ALL if is_max else R.MIN_ALL)(input, dims=None, keepdim=False)
    if not isinstance(dim, int):
        return maximum(input, dim) if is_max else minimum(input, dim)
    d = norm_dim("max" if is_max else "min", dim, _ndim(input))
    if _ndim(input) == 0:  # PyTorch: a 0-d tensor is its own maximum, at index 0
        input, keepdim = S.RESHAPE(input, shape=(1,)), False
    index = (R.ARGMAX if is_max else R.ARGMIN)(input, dim=d, keepdim=bool(keepdim))
    values = R.TAKE_ALONG(input, index, dim=d, keepdim=bool(keepdim))
    return (return_types_max if is_max else return_types_min)(values, index)


def max(input, dim=None, keepdim=False):
    """The largest element; with `dim`, a (values, indices) named tuple; with a tensor second argument, maximum.

    Mirrors torch.max."""
    return _max_min(input, dim, keepdim, True)


def min(input, dim=None, keepdim=False):
    """The smallest element; with `dim`, a (values, indices) named tuple; with a tensor second argument, minimum.

    Mirrors torch.min."""
    return _max_min(input, dim, keepdim, False)


def argmax(input, dim=None, keepdim=False):
    """The index of the largest element (of the flattened input when `dim` is None). Mirrors torch.argmax."""
    d = None if dim is None else norm_dim("argmax", dim, _ndim(input))
    return R.ARGMAX(input, dim=d, keepdim=bool(keepdim))


def argmin(input, dim=None, keepdim=False):
    """The index of the smallest element (of the flattened input when `dim` is None). Mirrors torch.argmin."""
    d = None if dim is None else norm_dim("argmin", dim, _ndim(input))
    return R.ARGMIN(input, dim=d, keepdim=bool(keepdim))


def all(input, dim=None, keepdim=False):
    """True where every element (along dim) is nonzero, as a bool tensor. Counted with ops
    (the zeros, summed) rather than read from the array, so it works on any tensor-like a
    tracer hands in, and an empty reduction is True."""
    zeros = logical_not(to_dtype(input, _dtypes.bool_))
    return eq(sum(zeros, dim, keepdim), 0)


def any(input, dim=None, keepdim=False):
    """True where some element (along dim) is nonzero, as a bool tensor (see `all`)."""
    return gt(sum(to_dtype(input, _dtypes.bool_), dim, keepdim), 0)


def norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """The vector p-norm over `dim` (all elements when None), as PyTorch's torch.norm for
    p = 2 (or "fro"), 1, inf, -inf, 0 and any other positive p; its node is named
    LinalgVectorNormBackward0 whatever ops compose it, as PyTorch's. Mirrors torch.norm."""
    return _renamed(_vector_norm(input, p, dim, keepdim, dtype), "LinalgVectorNormBackward0")


def _vector_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """norm's value (see norm).

    Composed from ops, so gradients come from their rules. Where the norm is 0 the gradient
    is 0, as in PyTorch, rather than the NaN that d sqrt(s)/ds = inf at s = 0 would give:
    the root is taken of where(s == 0, 1, s) and its value replaced by 0 there."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    _require_float_input(input, "linalg.vector_norm: Expected a floating point or complex tensor as input. "
                                "Got {}")
    if getattr(input, "dtype", None) is _dtypes.float16:
        # PyTorch accumulates a float16 norm in float32 (squares above 256 overflow float16)
        return to_dtype(norm(to_dtype(input, _dtypes.float32), p, dim, keepdim), _dtypes.float16)
    if p == "fro":
        p = 2
    if p == "nuc":  # the sum of singular values, over the two dims given (all two of a matrix)
        from .. import linalg as _linalg  # noqa: PLC0415

        dims = tuple(range(_ndim(input))) if dim is None else tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        if len(dims) != 2:
            raise RuntimeError(f"norm: p='nuc' needs a matrix: two dims, got {len(dims)} ({list(dims)})")
        return _linalg.matrix_norm(input, "nuc", dims, keepdim)
    if isinstance(p, str) or not isinstance(p, (int, float)):
        raise RuntimeError(f"norm: p={p!r} is not supported (use a number, inf, -inf or 'fro')")
    if p == math.inf:
        return amax(abs(input), () if dim is None else dim, keepdim)
    if p == -math.inf:
        return amin(abs(input), () if dim is None else dim, keepdim)
    if p == 0:
        return sum(to_dtype(ne(input, 0), input.dtype), dim, keepdim)
    if p == 1:
        return sum(abs(input), dim, keepdim)
    if p < 0:
        raise RuntimeError(f"norm: p={p} is not supported (negative p other than -inf)")
    if p == 2:
        total = sum(input * input, dim, keepdim)
    else:
        total = sum(pow(abs(input), p), dim, keepdim)
    is_zero = eq(total, 0)
    safe = where(is_zero, 1.0, total)
    root = sqrt(safe) if p == 2 else pow(safe, 1.0 / p)
    return where(is_zero, 0.0, root)


def softmax(input, dim, dtype=None):
    """exp(input) normalized to sum to 1 along `dim`, optionally cast to `dtype` first. Mirrors torch.softmax."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    dim = norm_dim("softmax", dim, _ndim(input))
    from .. import _fused_softmax  # noqa: PLC0415  (it imports Tensor, which imports this module)

    fused = _fused_softmax.rows(input, dim, False)  # one node each way, native (eager/_fused_softmax.py)
    return R.SOFTMAX(input, dim=dim) if fused is None else fused


def log_softmax(input, dim, dtype=None):
    """log(softmax(input, dim)), computed stably. Mirrors torch.log_softmax."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    dim = norm_dim("log_softmax", dim, _ndim(input))
    from .. import _fused_softmax  # noqa: PLC0415

    fused = _fused_softmax.rows(input, dim, True)
    return R.LOG_SOFTMAX(input, dim=dim) if fused is None else fused


def cumsum(input, dim, *, dtype=None):
    """The running sum along `dim`. Mirrors torch.cumsum."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    return M.CUMSUM(input, dim=norm_dim("cumsum", dim, _ndim(input)))


def cumprod(input, dim, *, dtype=None):
    """The running product along `dim`. Mirrors torch.cumprod."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    return M.CUMPROD(input, dim=norm_dim("cumprod", dim, _ndim(input)))


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The variance and the mean over `dim`, as a tuple (see var). Mirrors torch.var_mean."""
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The standard deviation and the mean over `dim`, as a tuple (see std). Mirrors torch.std_mean."""
    return std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def count_nonzero(input, dim=None):
    """The number of nonzero elements over `dim` (an int, a tuple or all), as int64.

    Mirrors torch.count_nonzero."""
    nonzero_mask = ne(input, 0)
    if dim is None:
        return to_dtype(R.SUM(nonzero_mask, dims=None, keepdim=False), _dtypes.int64)
    return to_dtype(sum(nonzero_mask, dim), _dtypes.int64)


def histc(input, bins: int = 100, min: float = 0, max: float = 0):  # noqa: A002  (PyTorch's names)
    """Counts of the elements in `bins` equal-width bins over [min, max] (the data's range when
    both are 0; elements outside are not counted), as a tensor of input's dtype. No gradient.
    Mirrors torch.histc."""
    from .._factories import tensor  # noqa: PLC0415

    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    data = _host(input).astype(np.float64).reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and data.size:
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc(): max must be larger than min, got min={lo} and max={hi}")
    counts, _ = np.histogram(data[(data >= lo) & (data <= hi)], bins=bins, range=(lo, hi))
    return tensor(counts.astype(input.dtype.np))


def _numpy_spellings(fn):
    """`fn` also taking NumPy's keyword spellings `axis=` for dim and `keepdims=` for keepdim,
    as PyTorch's argument parser takes them for every reduction (makemore's
    `P.sum(1, keepdims=True)`, `x.mean(axis=0)`)."""

    @functools.wraps(fn)
    def reduction(*args, **kwargs):
        if kwargs:
            if "axis" in kwargs:
                if "dim" in kwargs:
                    raise TypeError(f"{fn.__name__}() got both dim and its NumPy spelling axis")
                kwargs["dim"] = kwargs.pop("axis")
            if "keepdims" in kwargs:
                if "keepdim" in kwargs:
                    raise TypeError(f"{fn.__name__}() got both keepdim and its NumPy spelling keepdims")
                kwargs["keepdim"] = kwargs.pop("keepdims")
        return fn(*args, **kwargs)

    return reduction


sum = _numpy_spellings(sum)  # noqa: A001  (PyTorch's names)
mean = _numpy_spellings(mean)
prod = _numpy_spellings(prod)
var = _numpy_spellings(var)
std = _numpy_spellings(std)
logsumexp = _numpy_spellings(logsumexp)
amax = _numpy_spellings(amax)
amin = _numpy_spellings(amin)
max = _numpy_spellings(max)  # noqa: A001
min = _numpy_spellings(min)  # noqa: A001
argmax = _numpy_spellings(argmax)
argmin = _numpy_spellings(argmin)
all = _numpy_spellings(all)  # noqa: A001
any = _numpy_spellings(any)  # noqa: A001
norm = _numpy_spellings(norm)
var_mean = _numpy_spellings(var_mean)
std_mean = _numpy_spellings(std_mean)
count_nonzero = _numpy_spellings(count_nonzero)
softmax = _numpy_spellings(softmax)
log_softmax = _numpy_spellings(log_softmax)
cumsum = _numpy_spellings(cumsum)
cumprod = _numpy_spellings(cumprod)
