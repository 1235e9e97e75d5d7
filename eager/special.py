"""`eager.special`: the torch.special functions that are compositions of eager's ops (so they
differentiate and compile like them), and erfinv, lgamma (gammaln) and digamma (psi), which
NumPy lacks: autograd.Functions computed to double precision on the host (erfinv by Newton
steps on eager's erf/erfc, lgamma by math.lgamma, digamma by recurrence and its asymptotic
series). erfc, i0, i1, i0e and i1e are ops with records (gmops/unary.py); ndtr is 0.5 erfc(-x / sqrt 2),
accurate in the left tail where 0.5 (1 + erf(x / sqrt 2)) is 0, and log_ndtr its logarithm
with an asymptotic series where it underflows. The other Bessel functions are not here rather
than approximated."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from gmops._erf import erf as _erf
from gmops._erf import erfc as _erfc

from . import _functional as _F
from ._compositions import xlogy  # torch.special.xlogy is torch.xlogy
from .autograd.function import Function

__all__ = ["erf", "exp2", "expit", "expm1", "log1p", "log_softmax", "logit", "logsumexp", "softmax", "xlogy"]

erf = _F.erf
expm1 = _F.expm1
log1p = _F.log1p
exp2 = _F.exp2  # torch.special.exp2 is exp2 (its record: Exp2Backward0, not 2 ** x's PowBackward2)
logsumexp = _F.logsumexp


def expit(input: Any) -> Any:  # noqa: A002  (PyTorch's parameter names)
    """The logistic sigmoid 1 / (1 + e^-x)."""
    return _F.sigmoid(input)


def logit(input: Any, eps: float | None = None) -> Any:  # noqa: A002
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given (PyTorch's rule)."""
    p = input if eps is None else _F.clamp(input, eps, 1 - eps)
    return _F.log(p) - _F.log1p(-p)


def softmax(input: Any, dim: int, *, dtype: Any = None) -> Any:  # noqa: A002
    return _F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Any, dim: int, *, dtype: Any = None) -> Any:  # noqa: A002
    return _F.log_softmax(input, dim, dtype=dtype)


# -- erfinv: Giles' polynomial start refined by Newton steps on erf (erfc in the tails) ------------------
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
               -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _array_of(x: Any, name: str) -> Any:
    """x's array; a traced value has none (these run eagerly only: compile's fallback='eager'
    breaks the graph on the Unsupported raised here)."""
    data = getattr(x, "_data", None)
    if data is None:
        from ._linalg_decompositions import untraceable  # noqa: PLC0415

        raise untraceable(f"special.{name} runs eagerly only and cannot be traced into a compiled graph; compile "
                          "with fallback='eager' or call it outside the compiled function")
    return data


def _erfinv_array(y: Any) -> Any:
    """erfinv of a NumPy array in float64 (then cast back): NumPy has no erfinv and SciPy is
    optional. Giles' single-precision approximation starts four Newton steps, taken on erfc
    where |y| > 0.5 so that 1 - |y| keeps its digits near +-1; +-1 give +-inf, |y| > 1 NaN."""
    dtype = y.dtype if y.dtype.kind == "f" else np.dtype(np.float32)
    a = np.asarray(y, dtype=np.float64)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - a) * (1.0 + a))
        central, tail = w - 2.5, np.sqrt(w) - 3.0
        pc, pt = np.zeros_like(a), np.zeros_like(a)
        for c, t in zip(_GILES_CENTRAL, _GILES_TAIL):
            pc, pt = pc * central + c, pt * tail + t
        x = np.where(w < 5.0, pc, pt) * a
        s, mag = np.sign(a), np.abs(a)
        for _ in range(4):
            ax = np.abs(x)
            slope = 2.0 / np.sqrt(np.pi) * np.exp(-ax * ax)
            tail_c = _erfc(ax)  # in the tail, Newton on log erfc (nearly -x^2: a few steps from afar)
            step = np.where(mag > 0.5, (np.log(tail_c) - np.log1p(-mag)) * tail_c / slope,
                            (mag - _erf(ax)) / slope)
            ax = ax + step  # Newton: erf(ax) = mag, i.e. erfc(ax) = 1 - mag
            x = s * ax
        x = np.where(mag == 1.0, s * np.inf, np.where(mag > 1.0, np.nan, x))
    return x.astype(dtype)


class _Erfinv(Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        from ._device import xp_of_array  # noqa: PLC0415
        from ._tensor import Tensor  # noqa: PLC0415

        data = _array_of(x, "erfinv")
        xp = xp_of_array(data)
        if xp.__name__ == "numpy":
            out = _erfinv_array(data)
        else:  # CuPy: through the host (erfinv is rare enough in a step that the copy is acceptable)
            out = xp.asarray(_erfinv_array(xp.asnumpy(data)))
        result = Tensor._make(out)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (result,) = ctx.saved_tensors
        return grad * (math.sqrt(math.pi) / 2) * _F.exp(result * result)


def erfinv(input: Any) -> Any:  # noqa: A002
    """The inverse error function on [-1, 1] (+-inf at +-1, NaN outside), with gradient
    sqrt(pi)/2 exp(erfinv(x)^2). Integer inputs give float32, as PyTorch's. Mirrors torch.special.erfinv."""
    if input.dtype.is_complex if hasattr(input.dtype, "is_complex") else False:
        raise RuntimeError(f"erfinv: complex input is not supported, got {input.dtype}")
    return _Erfinv.apply(input)


__all__ += ["erfinv"]


# -- lgamma / digamma on arrays (NumPy has neither; math.lgamma per element is exact enough) --------------
def ndtri(input: Any) -> Any:  # noqa: A002
    """The standard normal quantile sqrt(2) erfinv(2p - 1) (differentiable). Mirrors torch.special.ndtri."""
    return erfinv(2 * input - 1) * math.sqrt(2)


__all__ += ["ndtri"]


def _lgamma_scalar(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:  # the poles 0, -1, -2, ...: +inf, as PyTorch's
        return math.inf


def _lgamma_array(a: np.ndarray) -> np.ndarray:
    out = np.vectorize(_lgamma_scalar, otypes=[np.float64])(np.asarray(a, dtype=np.float64)) if a.size else a
    return np.asarray(out).astype(a.dtype if a.dtype.kind == "f" else np.float32)


def _reflect_and_shift(a: np.ndarray, step: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> tuple:
    """(x, refl, y, acc) for the polygamma evaluations (digamma's, trigamma's): x as float64,
    refl where x < 0.5 (reflected to y = 1 - x), then y raised by ones up to >= 10 (at most ten
    steps), acc the recurrence's terms so far, each step acc = step(acc, y, y < 10) before y
    moves; the caller adds the asymptotic series at y and undoes the reflection."""
    x = np.asarray(a, dtype=np.float64)
    refl = x < 0.5
    y = np.where(refl, 1.0 - x, x)
    acc = np.zeros_like(y)
    for _ in range(10):
        small = y < 10.0
        acc = step(acc, y, small)
        y = np.where(small, y + 1.0, y)
    return x, refl, y, acc


def _digamma_array(a: np.ndarray) -> np.ndarray:
    """psi(x): the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series;
    reflection for x < 0.5 (poles give NaN/inf as PyTorch's). Relative error about 1e-13."""
    with np.errstate(all="ignore"):
        x, refl, y, acc = _reflect_and_shift(a, lambda acc, y, small: acc - np.where(small, 1.0 / y, 0.0))
        inv2 = 1.0 / (y * y)
        series = np.log(y) - 0.5 / y - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
            1 / 240 - inv2 * (1 / 132)))))
        psi = acc + series
        psi = np.where(refl, psi - np.pi / np.tan(np.pi * x), psi)
        psi = np.where(x == 0, -np.inf, np.where((x < 0) & (x == np.floor(x)), np.nan, psi))
    return psi.astype(a.dtype if a.dtype.kind == "f" else np.float32)


def _host(fn: Any, arr: Any) -> Any:
    from ._device import xp_of_array  # noqa: PLC0415

    xp = xp_of_array(arr)
    return fn(arr) if xp is np else xp.asarray(fn(xp.asnumpy(arr)))


def _host_function(name: str, values: Callable[[np.ndarray], np.ndarray],
                   derivative: Callable[[Any], Any]) -> type[Function]:
    """An autograd Function of one input computing values(x) on the host (NumPy; a device
    array goes there and back), whose backward is grad * derivative(x): lgamma's and
    digamma's, each the derivative of the one before."""

    class HostFunction(Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return _make_tensor(_host(values, _array_of(x, name)))

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (x,) = ctx.saved_tensors
            return grad * derivative(x)

    HostFunction.__name__ = HostFunction.__qualname__ = "_" + name.capitalize()
    return HostFunction


_Lgamma = _host_function("lgamma", _lgamma_array, lambda x: digamma(x))


def lgamma(input: Any) -> Any:  # noqa: A002
    """log|Gamma(x)| elementwise, differentiable (its derivative is digamma). Mirrors torch.lgamma."""
    return _Lgamma.apply(input)


def _trigamma_array(a: np.ndarray) -> np.ndarray:
    """psi'(x): the recurrence psi'(x) = psi'(x + 1) + 1/x^2 up to x >= 10, then the asymptotic
    series; reflection psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x) for x < 0.5."""
    with np.errstate(all="ignore"):
        x, refl, y, acc = _reflect_and_shift(a, lambda acc, y, small: acc + np.where(small, 1.0 / (y * y), 0.0))
        inv = 1.0 / y
        inv2 = inv * inv
        series = inv + 0.5 * inv2 + inv * inv2 * (1 / 6 - inv2 * (1 / 30 - inv2 * (1 / 42 - inv2 * (1 / 30))))
        out = acc + series
        out = np.where(refl, (np.pi / np.sin(np.pi * x)) ** 2 - out, out)
        out = np.where((x <= 0) & (x == np.floor(x)), np.inf, out)
    return out.astype(a.dtype if a.dtype.kind == "f" else np.float32)


_Digamma = _host_function("digamma", _digamma_array, lambda x: _make_tensor(_host(_trigamma_array, x._data)))


def digamma(input: Any) -> Any:  # noqa: A002
    """psi(x) = d/dx lgamma(x) elementwise, differentiable (its derivative is the trigamma
    function, so lgamma differentiates twice). Mirrors torch.digamma."""
    return _Digamma.apply(input)


def _make_tensor(arr: Any) -> Any:
    from ._tensor import Tensor  # noqa: PLC0415

    return Tensor._make(arr)


gammaln = lgamma
psi = digamma
__all__ += ["digamma", "gammaln", "psi"]


def _attach_methods() -> None:
    """Tensor.erfinv, .lgamma, .digamma (eager/_api.py is at its size bound; Tensor.is_inference lives in
    eager/_tensor_metadata)."""
    from ._api import TensorAPI  # noqa: PLC0415

    TensorAPI.erfinv = erfinv  # type: ignore[attr-defined]

    def erfinv_(self: Any) -> Any:
        """In-place erfinv (recorded for autograd as eager's in-place ops are). Mirrors torch.Tensor.erfinv_."""
        return self._apply_inplace(erfinv, (), "erfinv_", saves_self=False)

    def lgamma_(self: Any) -> Any:
        """In-place lgamma. Mirrors torch.Tensor.lgamma_."""
        return self._apply_inplace(lgamma, (), "lgamma_", saves_self=False)

    def digamma_(self: Any) -> Any:
        """In-place digamma. Mirrors torch.Tensor.digamma_."""
        return self._apply_inplace(digamma, (), "digamma_", saves_self=False)

    TensorAPI.erfinv_ = erfinv_  # type: ignore[attr-defined]
    TensorAPI.lgamma_ = lgamma_  # type: ignore[attr-defined]
    TensorAPI.digamma_ = digamma_  # type: ignore[attr-defined]
    TensorAPI.lgamma = lgamma  # type: ignore[attr-defined]
    TensorAPI.digamma = digamma  # type: ignore[attr-defined]


_attach_methods()


# -- torch.special names of ops with records (erfc, i0, i1, round, sinc) and compositions of them
# (ndtr, entr, xlog1py): they differentiate, compile and fuse as their ops do; each takes out=
def _special_functions() -> dict[str, Any]:
    from gmops._registry import REGISTRY  # noqa: PLC0415

    from . import _out, _surface  # noqa: PLC0415
    from ._compositions import elementwise as _elementwise  # noqa: PLC0415

    def ndtr(input: Any) -> Any:  # noqa: A002
        """The standard normal CDF, 0.5 erfc(-x / sqrt 2): accurate in the left tail, where
        0.5 (1 + erf(x / sqrt 2)) would be 0."""
        return _F.erfc(input * -_INV_SQRT2) * 0.5

    def entr(input: Any) -> Any:  # noqa: A002
        """-x log x for x > 0, 0 at 0, -inf below (PyTorch's torch.special.entr). log reads 1
        where x <= 0, so no NaN reaches the value or the gradient there."""
        (x,) = _elementwise._floats(input)
        positive = _F.gt(x, 0.0)
        inner = -x * _F.log(_F.where(positive, x, 1.0))
        return _F.where(positive, inner, _F.where(_F.eq(x, 0.0), 0.0, _F.where(_F.isnan(x), x, -math.inf)))

    def xlog1py(input: Any, other: Any) -> Any:  # noqa: A002
        """input * log1p(other), 0 where input is 0 unless other is NaN (as xlogy)."""
        if not _elementwise._is_tensor(input) and not _elementwise._is_tensor(other):
            raise TypeError("xlog1py(): expected at least one tensor argument (input or other), got two numbers")
        x, y = _elementwise._floats(input, other)
        zeroed = _F.logical_and(_F.eq(x, 0.0), _F.logical_not(_F.isnan(y)))
        return _F.where(zeroed, 0.0, x * _F.log1p(_F.where(zeroed, 0.0, y)))

    def log_ndtr(input: Any) -> Any:  # noqa: A002
        """log of the standard normal CDF, accurate everywhere: log1p(-ndtr(-x)) for x >= 0,
        log(ndtr(x)) down to -20 (float64; -10 float32, -5 float16), and below it the asymptotic series -x^2/2 - log(-x) -
        log(2 pi)/2 + log1p(sum_k (-1)^k (2k-1)!! / x^2k), where ndtr itself underflows.
        Each branch reads a value of its own range (where() masks the others), so no inf or
        NaN reaches a gradient."""
        (x,) = _elementwise._floats(input)
        # the series takes over before erfc underflows in x's dtype (float32's near -13)
        cut = {8: -20.0, 4: -10.0}.get(x.dtype.itemsize, -5.0)
        right, tail = _F.ge(x, 0.0), _F.lt(x, cut)
        xr = _F.where(right, x, 0.0)
        xm = _F.where(_F.logical_or(right, tail), -1.0, x)
        xt = _F.where(tail, x, cut)
        upper = _F.log1p(_F.erfc(xr * _INV_SQRT2) * -0.5)
        middle = _F.log(_F.erfc(xm * -_INV_SQRT2) * 0.5)
        inv2 = 1.0 / (xt * xt)
        series, term = inv2 * 0.0, inv2 * 0.0 + 1.0
        for k in range(1, 11):
            term = term * inv2 * -(2 * k - 1)
            series = series + term
        asymptotic = xt * xt * -0.5 - _F.log(-xt) - _HALF_LOG_2PI + _F.log1p(series)
        return _F.where(right, upper, _F.where(tail, asymptotic, middle))

    def erfcx(input: Any) -> Any:  # noqa: A002
        """exp(x^2) erfc(x), the scaled complementary error function: the product where
        exp(x^2) stays finite in x's dtype, and for larger x its asymptotic series
        1 / (x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2x^2)^k, where erfc underflows."""
        (x,) = _elementwise._floats(input)
        cut = {8: 10.0, 4: 5.0}.get(x.dtype.itemsize, 3.0)  # the series to double precision above 10
        tail = _F.gt(x, cut)
        xs = _F.where(tail, 0.0, x)
        xt = _F.where(tail, x, cut)
        inv = 1.0 / (xt * xt * 2.0)
        series, term = inv * 0.0 + 1.0, inv * 0.0 + 1.0
        for k in range(1, 13):
            term = term * inv * -(2 * k - 1)
            series = series + term
        asymptotic = series / (xt * _SQRT_PI)
        return _F.where(tail, asymptotic, _F.exp(xs * xs) * _F.erfc(xs))

    made: dict[str, Any] = {name: _out.with_out(fn) for name, fn in
                            (("ndtr", ndtr), ("entr", entr), ("xlog1py", xlog1py), ("log_ndtr", log_ndtr),
                             ("erfcx", erfcx))}
    plain_round = getattr(_F, "round", None) or _surface.function_for(REGISTRY["round"])

    def special_round(input: Any, *, decimals: int = 0, out: Any = None) -> Any:  # noqa: A002
        """round(input, *, decimals=0, out=None): eager.round with decimals always given, so its
        node is RoundBackward1, as torch.special.round's (round.decimals). Mirrors torch.special.round."""
        return plain_round(input, decimals=decimals, out=out)

    special_round.__name__ = special_round.__qualname__ = "round"
    made["round"] = special_round
    for name in ("i1", "i0e", "i1e"):
        made[name] = _surface.function_for(REGISTRY[name])
    for name in ("erfc", "i0"):
        made[name] = getattr(_F, name, None) or _surface.function_for(REGISTRY[name])
    made["sinc"] = _out.with_out(_elementwise.sinc)
    return made


_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT_PI = math.sqrt(math.pi)
_MADE = _special_functions()
entr, erfc, i0, i1, ndtr = _MADE["entr"], _MADE["erfc"], _MADE["i0"], _MADE["i1"], _MADE["ndtr"]
sinc, xlog1py, log_ndtr, round = _MADE["sinc"], _MADE["xlog1py"], _MADE["log_ndtr"], _MADE["round"]  # noqa: A001
i0e, i1e, erfcx = _MADE["i0e"], _MADE["i1e"], _MADE["erfcx"]
__all__ += ["entr", "erfc", "erfcx", "i0", "i0e", "i1", "i1e", "log_ndtr", "ndtr", "round", "sinc", "xlog1py"]


def multigammaln(input: Any, p: int) -> Any:  # noqa: A002
    """The multivariate log-gamma function of dimension p: p(p-1)/4 log(pi) plus
    sum_{j<p} lgamma(input - j/2), differentiable through lgamma. Mirrors
    torch.special.multigammaln."""
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise ValueError(f"multigammaln: p has to be a positive integer, got {p!r}")
    total = lgamma(input)
    for j in range(1, p):
        total = total + lgamma(input - j / 2.0)
    return total + p * (p - 1) / 4.0 * math.log(math.pi)


def spherical_bessel_j0(input: Any) -> Any:  # noqa: A002
    """sin(x) / x, 1 at 0 (where the quotient reads x = 1, so no 0/0 reaches the gradient).
    Mirrors torch.special.spherical_bessel_j0."""
    from ._compositions import elementwise as _elementwise  # noqa: PLC0415

    (x,) = _elementwise._floats(input)
    zero = _F.eq(x, 0.0)
    safe = _F.where(zero, 1.0, x)
    return _F.where(zero, 1.0, _F.sin(safe) / safe)


modified_bessel_i0, modified_bessel_i1 = i0, i1  # torch.special's other names of the same functions
__all__ += ["modified_bessel_i0", "modified_bessel_i1", "multigammaln", "spherical_bessel_j0"]


# -- orthogonal polynomials (torch.special.*_polynomial_*): P_n(x) by its three-term recurrence in
# float64 on the host, rounded once to the result dtype, with PyTorch's special cases (n < 0 gives
# 0; |x| == 1 and, for large n, the trigonometric forms of the Chebyshev polynomials). PyTorch
# records no gradient for them, nor does this (the result is a new tensor outside autograd).
def _polynomial_arrays(input: Any, n: Any, name: str) -> tuple[np.ndarray, np.ndarray, Any]:
    from gmbase import dtypes as _dtypes  # noqa: PLC0415

    x = _array_of(input, name) if hasattr(input, "_data") else np.asarray(input)
    k = _array_of(n, name) if hasattr(n, "_data") else np.asarray(n)
    if not (hasattr(input, "_data") or hasattr(n, "_data")):
        raise TypeError(f"{name}(): expected input or n to be a tensor, got {type(input).__name__} and "
                        f"{type(n).__name__}")
    kinds = [a.dtype for a, t in ((x, input), (k, n)) if hasattr(t, "_data")]
    floats = [d for d in kinds if d.kind == "f"]  # PyTorch's promotion: a float tensor's dtype wins over integers
    dt = np.result_type(*floats) if floats else _dtypes.DEFAULT_FLOAT.np
    x64, k64 = np.broadcast_arrays(np.asarray(x, np.float64), np.trunc(np.asarray(k, np.float64)))
    return x64, k64, dt


def _recurrence(x: np.ndarray, n: np.ndarray, p0: np.ndarray, p1: np.ndarray, step: Any) -> np.ndarray:
    """P_n(x) elementwise from P_0, P_1 and P_{k+1} = step(k, x, P_k, P_{k-1})."""
    out = np.where(n == 0, p0, np.where(n == 1, p1, 0.0))
    top = int(np.nanmax(n, initial=1.0)) if n.size else 1
    p, q = p0, p1
    for k in range(1, top):
        p, q = q, step(k, x, q, p)
        out = np.where(n == k + 1, q, out)
    return np.where(n < 0, 0.0, out)


def _polynomial(name: str, evaluate: Any) -> Any:
    def fn(input: Any, n: Any) -> Any:  # noqa: A002
        x, k, dt = _polynomial_arrays(input, n, name)
        with np.errstate(all="ignore"):
            values = evaluate(x, k)
        return _make_tensor(np.asarray(values).astype(dt, copy=False))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(input, n): the polynomial of degree n at input, elementwise. Mirrors torch.special.{name}."
    return _out_form(fn)


def _out_form(fn: Any) -> Any:
    from . import _out  # noqa: PLC0415

    return _out.with_out(fn)


def _hermite_h(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    return _recurrence(x, n, np.ones_like(x), x + x, lambda k, x, q, p: (x + x) * q - (2 * k) * p)


def _hermite_he(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    return _recurrence(x, n, np.ones_like(x), x, lambda k, x, q, p: x * q - k * p)


def _laguerre(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    out = _recurrence(x, n, np.ones_like(x), 1.0 - x, lambda k, x, q, p: ((2 * k + 1 - x) * q - k * p) / (k + 1))
    return np.where((x == 0) & (n >= 0), 1.0, out)


def _legendre(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    out = _recurrence(x, n, np.ones_like(x), x, lambda k, x, q, p: ((2 * k + 1) * x * q - k * p) / (k + 1))
    edge = np.where((x > 0) | (n % 2 == 0), 1.0, -1.0)
    return np.where((np.abs(x) == 1) & (n >= 0), edge, out)


def _chebyshev_t(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    out = _recurrence(x, n, np.ones_like(x), x, lambda k, x, q, p: (x + x) * q - p)
    out = np.where((n > 6) & (np.abs(x) < 1), np.cos(n * np.arccos(x)), out)
    edge = np.where((x > 0) | (n % 2 == 0), 1.0, -1.0)
    return np.where((np.abs(x) == 1) & (n >= 0), edge, out)


def _chebyshev_u(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    out = _recurrence(x, n, np.ones_like(x), x + x, lambda k, x, q, p: (x + x) * q - p)
    theta = np.arccos(x)
    s = np.sin(theta)
    trig = np.where(s != 0, np.sin((n + 1) * theta) / s, (n + 1) * np.cos((n + 1) * theta) / x)
    out = np.where((n > 8) & (np.abs(x) < 1), trig, out)
    edge = np.where((x > 0) | (n % 2 == 0), n + 1, -(n + 1))
    return np.where((np.abs(x) == 1) & (n >= 0), edge, out)


hermite_polynomial_h = _polynomial("hermite_polynomial_h", _hermite_h)
hermite_polynomial_he = _polynomial("hermite_polynomial_he", _hermite_he)
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", _laguerre)
legendre_polynomial_p = _polynomial("legendre_polynomial_p", _legendre)
chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", _chebyshev_t)
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", _chebyshev_u)
__all__ += ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "hermite_polynomial_h", "hermite_polynomial_he",
            "laguerre_polynomial_l", "legendre_polynomial_p"]

from ._functional.gamma_family import gammainc, gammaincc, polygamma, zeta  # noqa: E402  (the gamma family's rest)

__all__ += ["gammainc", "gammaincc", "polygamma", "zeta"]

from ._special_bessel import (  # noqa: E402,F401  (the Bessel family and Airy Ai)
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    modified_bessel_k0,
    modified_bessel_k1,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
)

__all__ += ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
            "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"]
