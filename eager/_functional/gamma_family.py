"""The special functions of the gamma family that NumPy lacks and eager.special did not have:
the Hurwitz zeta function, polygamma of any order, mvlgamma, and the regularized incomplete
gamma functions (gammainc/igamma, gammaincc/igammac).

Why on the host in float64: each is a series (Cephes' algorithms, as PyTorch's kernels use)
evaluated once with NumPy and rounded to the result dtype, wrapped in an autograd Function
whose backward is the next function of the family (polygamma(n + 1), the incomplete gamma's
density), so no SciPy is needed and gradients follow.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from ..autograd.function import Function

_MACHEP = 1.11022302462515654042e-16
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)


def _zeta_array(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hurwitz zeta sum_{k>=0} (k + q)^-x by Cephes' Euler-Maclaurin summation: inf at x == 1,
    NaN for x < 1, inf at a pole q = 0, -1, ...; NaN for q < 0 with a non-integer x."""
    x, q = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(q, np.float64))
    with np.errstate(all="ignore"):
        s = np.power(q, -x)
        a = q.copy()
        b = np.zeros_like(s)
        active = np.ones(s.shape, bool)
        i = 0
        while True:
            run = active & ((i < 9) | (a <= 9.0))
            if not run.any():
                break
            i += 1
            a = np.where(run, a + 1.0, a)
            term = np.power(a, -x)
            b = np.where(run, term, b)
            s = np.where(run, s + term, s)
            active = run
        w = a
        s = s + b * w / (x - 1.0) - 0.5 * b
        fac = np.ones_like(s)
        k = 0.0
        done = np.zeros(s.shape, bool)
        for coef in _ZETA_A:
            fac = fac * (x + k)
            b = b / w
            t = fac * b / coef
            s = np.where(done, s, s + t)
            done |= np.abs(t / s) < _MACHEP
            k += 1.0
            fac = fac * (x + k)
            b = b / w
            k += 1.0
        s = np.where(x == 1.0, np.inf, s)
        s = np.where(x < 1.0, np.nan, s)
        pole = (q <= 0) & (q == np.floor(q))
        s = np.where(pole & (x >= 1.0), np.inf, s)
        s = np.where((q < 0) & ~pole & (x != np.floor(x)), np.nan, s)
    return s


def _result_dtype(*values: Any) -> Any:
    """The float dtype of the operands promoted together (integers give the default float)."""
    from .._settings import result_type  # noqa: PLC0415

    dt = result_type(*values) if len(values) > 1 else getattr(values[0], "dtype", _dtypes.DEFAULT_FLOAT)
    return dt if dt.is_floating_point else _dtypes.DEFAULT_FLOAT


def _arr(v: Any, name: str) -> np.ndarray:
    """v's values in float64 (a number as it is); a traced value has none: these run eagerly
    only, and compile's fallback='eager' breaks the graph on the Unsupported raised here."""
    data = getattr(v, "_data", None)
    if data is None and hasattr(v, "shape"):
        from .._linalg_decompositions import untraceable  # noqa: PLC0415

        raise untraceable(f"{name} runs eagerly only and cannot be traced into a compiled graph; compile with "
                          "fallback='eager' or call it outside the compiled function")
    if data is None:
        return np.asarray(v, np.float64)
    return np.asarray(data if type(data).__module__.startswith("numpy") else data.get(), np.float64)


def _out(values: np.ndarray, dtype: Any, like: Any) -> Any:
    from .._factories import tensor  # noqa: PLC0415

    return tensor(np.asarray(values), dtype=dtype, device=getattr(like, "device", None))


def zeta(input: Any, other: Any) -> Any:  # noqa: A002
    """The Hurwitz zeta function sum_k (k + other)^-input, broadcast (numbers allowed).
    Mirrors torch.special.zeta (which records no gradient)."""
    like = input if hasattr(input, "shape") else other
    return _out(_zeta_array(_arr(input, "special.zeta"),
                            _arr(other, "special.zeta")), _result_dtype(input, other), like)


def _polygamma_array(n: int, x: np.ndarray) -> np.ndarray:
    from ..special import _digamma_array  # noqa: PLC0415

    if n == 0:
        return _digamma_array(x)
    sign = 1.0 if n % 2 else -1.0
    return sign * math.exp(math.lgamma(n + 1.0)) * _zeta_array(np.float64(n + 1), x)


class _Polygamma(Function):
    @staticmethod
    def forward(ctx: Any, x: Any, n: int) -> Any:
        ctx.save_for_backward(x)
        ctx.n = n
        return _out(_polygamma_array(n, _arr(x, "polygamma")), x.dtype, x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return grad * polygamma(ctx.n + 1, x), None


def polygamma(n: int, input: Any) -> Any:  # noqa: A002
    """The n-th derivative of digamma, elementwise (n = 0 is digamma); differentiable, its
    derivative polygamma(n + 1). Mirrors torch.polygamma."""
    if int(n) < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = input
    if not x.dtype.is_floating_point:
        x = x.to(_dtypes.DEFAULT_FLOAT)
    return _Polygamma.apply(x, int(n))


def mvlgamma(input: Any, p: int) -> Any:  # noqa: A002
    """The multivariate log-gamma of dimension p (see special.multigammaln). Mirrors torch.mvlgamma."""
    from ..special import multigammaln  # noqa: PLC0415

    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = input if input.dtype.is_floating_point else input.to(_dtypes.DEFAULT_FLOAT)
    return multigammaln(x, p)


def _igamma_array(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """P(a, x) (or Q = 1 - P with upper) by the series for x < a + 1 and the continued
    fraction (modified Lentz) otherwise, with PyTorch's edge values."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    from ..special import _lgamma_array  # noqa: PLC0415

    with np.errstate(all="ignore"):
        safe_a = np.where((a > 0) & np.isfinite(a), a, 1.0)
        safe_x = np.where((x > 0) & np.isfinite(x), x, 1.0)
        log_front = safe_a * np.log(safe_x) - safe_x - _lgamma_array(safe_a)
        # the series: sum_n x^n / (a (a + 1) ... (a + n))
        term = 1.0 / safe_a
        total = term.copy()
        ap = safe_a.copy()
        for _ in range(2000):
            ap = ap + 1.0
            term = term * safe_x / ap
            total = total + term
            if (np.abs(term) <= np.abs(total) * _MACHEP).all():
                break
        p_series = np.exp(log_front) * total
        # the continued fraction for Q
        tiny = 1e-300
        b = safe_x + 1.0 - safe_a
        c = np.full_like(b, 1.0 / tiny)
        d = 1.0 / np.where(np.abs(b) < tiny, tiny, b)
        h = d.copy()
        for i in range(1, 2000):
            an = -i * (i - safe_a)
            b = b + 2.0
            d = an * d + b
            d = np.where(np.abs(d) < tiny, tiny, d)
            c = b + an / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            d = 1.0 / d
            delta = d * c
            h = h * delta
            if (np.abs(delta - 1.0) <= _MACHEP).all():
                break
        q_frac = np.exp(log_front) * h
        use_series = safe_x < safe_a + 1.0
        p = np.where(use_series, p_series, 1.0 - q_frac)
        q = np.where(use_series, 1.0 - p_series, q_frac)
        out = q if upper else p
        low, high = (1.0, 0.0) if upper else (0.0, 1.0)  # (the value at x = 0, at x = inf)
        out = np.where(x == 0, low, out)
        out = np.where(np.isposinf(x), high, out)
        out = np.where(np.isposinf(a) & np.isfinite(x), low, out)
        out = np.where(np.isposinf(a) & np.isposinf(x), np.nan, out)
        out = np.where((a == 0) & (x > 0), high, out)
        out = np.where((a == 0) & (x == 0), np.nan, out)
        out = np.where((a < 0) | (x < 0) | np.isnan(a) | np.isnan(x), np.nan, out)
    return out


class _Igamma(Function):
    @staticmethod
    def forward(ctx: Any, a: Any, x: Any, upper: bool, dtype: Any) -> Any:
        ctx.save_for_backward(a, x)
        ctx.upper = upper
        return _out(_igamma_array(_arr(a, "igamma"), _arr(x, "igamma"), upper), dtype, x)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        a, x = ctx.saved_tensors
        name = "igammac" if ctx.upper else "igamma"
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        from ..special import lgamma  # noqa: PLC0415

        g = grad * ((a - 1) * x.log() - x - lgamma(a)).exp()  # the gamma density at x
        return None, _sum_to(-g if ctx.upper else g, tuple(x.shape)), None, None


def _igamma(name: str, input: Any, other: Any, upper: bool) -> Any:
    for v in (input, other):
        dt = getattr(v, "dtype", None)
        if dt is not None and not dt.is_floating_point:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtypes.scalar_type_name(dt)}'")
    from .._factories import tensor  # noqa: PLC0415

    dtype = _result_dtype(input, other)
    a = input if hasattr(input, "shape") else tensor(float(input), dtype=dtype)
    x = other if hasattr(other, "shape") else tensor(float(other), dtype=dtype)
    return _Igamma.apply(a, x, upper, dtype)


def _sum_to(g: Any, shape: tuple) -> Any:
    """g summed over the dims broadcasting added to an operand of `shape`."""
    extra = len(g.shape) - len(shape)
    if extra:
        g = g.sum(tuple(range(extra)))
    dims = tuple(k for k, n in enumerate(shape) if n == 1 and g.shape[k] != 1)
    return g.sum(dims, keepdim=True) if dims else g


def igamma(input: Any, other: Any) -> Any:  # noqa: A002
    """The regularized lower incomplete gamma function P(input, other), elementwise,
    broadcast; differentiable in other (the gamma density), as PyTorch's. Mirrors torch.igamma."""
    return _igamma("igamma", input, other, upper=False)


def igammac(input: Any, other: Any) -> Any:  # noqa: A002
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P. Mirrors torch.igammac."""
    return _igamma("igammac", input, other, upper=True)


gammainc = igamma
gammaincc = igammac
