"""Unary math records: exp, log, the trigonometric and hyperbolic functions, sigmoid, abs,
sign, relu, erf, softplus, GELU, exp2, reciprocal. Each forward beside its abstract rule and
its VJP (written with ops). A new pointwise op is one record here (docs/architecture.md,
"How to add an op")."""
from __future__ import annotations

import math

import numpy as np

from gmbase import dtypes as _dtypes
from gmnative.kernels import LARGE as _NATIVE_LARGE  # the native layer's threshold (no file read, no build)

from . import _erf as _erf_numpy
from ._checks import require_float
from ._layout import like
from ._native import try_native
from ._pointwise import _ALL, _any, _away_from_zero, _positive, _unary, _unary_float
from ._registry import OpDef, defop
from .comparison import EQ, GT, LE
from .selection import WHERE
from .special import FULL_LIKE

# -- unary math ------------------------------------------------------------------------------
_NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. "
             "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _neg(xp, x):
    try:
        return xp.negative(x)
    except TypeError:  # NumPy refuses a bool array: PyTorch's error instead (free on the good path)
        if getattr(x, "dtype", None) is not None and x.dtype.kind == "b":
            raise RuntimeError(_NEG_BOOL) from None
        raise


def _neg_abstract(x):
    if x.dtype is _dtypes.bool_:
        raise RuntimeError(_NEG_BOOL)
    return x


NEG = defop(
    "neg", forward=_neg, abstract=_neg_abstract,
    vjp=lambda ctx, g: (-g,), grad_name="NegBackward0", samples=_any((3, 4)), c_expr="(-{0})",
    surface=(*_ALL, "alias negative"), doc="-input, elementwise (not defined for bool)",
)
def _native_math(name: str, numpy_forward):
    """A unary forward that runs the vectorized, threaded native kernel on large float arrays
    (gmnative.kernels.math: NumPy's tanh and exp are single-threaded) and NumPy's own
    function otherwise, or where no compiler is found."""
    def forward(xp, x):
        out = try_native(xp, "math", name, x) if getattr(x, "size", 0) >= _NATIVE_LARGE else None
        return numpy_forward(xp, x) if out is None else out
    return forward



EXP = _unary("exp", _native_math("exp", lambda xp, x: xp.exp(x)), lambda ctx, g: (g * ctx.out,), "ExpBackward0",
             _any((3, 4)), save=(), save_output=True, ufunc="exp", c_expr="exp({0})", surface=_ALL,
             doc="e ** input, elementwise")
LOG = _unary("log", lambda xp, x: xp.log(x), lambda ctx, g: (g / ctx.input(0),), "LogBackward0",
             _positive((3, 4)), ufunc="log", c_expr="log({0})", surface=_ALL,
             doc="the natural logarithm, elementwise")
LOG1P = _unary("log1p", lambda xp, x: xp.log1p(x), lambda ctx, g: (g / (ctx.input(0) + 1.0),),
               "Log1PBackward0", _positive((3, 4)), ufunc="log1p", c_expr="log1p({0})", surface=_ALL,
               doc="log(1 + input), accurate for small input")
EXPM1 = _unary("expm1", lambda xp, x: xp.expm1(x), lambda ctx, g: (g * (ctx.out + 1.0),),
               "Expm1Backward0", _any((3, 4)), save=(), save_output=True, ufunc="expm1", c_expr="expm1({0})",
               surface=_ALL, doc="exp(input) - 1, accurate for small input")
SQRT = _unary("sqrt", lambda xp, x: xp.sqrt(x), lambda ctx, g: (g / (ctx.out * 2.0),),
              "SqrtBackward0", _positive((3, 4)), save=(), save_output=True, ufunc="sqrt", c_expr="sqrt({0})",
              surface=_ALL, doc="the square root, elementwise")
RSQRT = _unary("rsqrt", lambda xp, x: 1.0 / xp.sqrt(x),
               lambda ctx, g: (g * (ctx.out * ctx.out * ctx.out) * -0.5,),
               "RsqrtBackward0", _positive((3, 4)), save=(), save_output=True, surface=_ALL,
               doc="1 / sqrt(input), elementwise",
               c_expr="(({T})1 / sqrt({0}))")  # 1/sqrt(x) as the forward computes it (not the hardware's rsqrt)
SIN = _unary("sin", lambda xp, x: xp.sin(x), lambda ctx, g: (g * COS(ctx.input(0)),),
             "SinBackward0", _any((3, 4)), ufunc="sin", c_expr="sin({0})", surface=_ALL, doc="the sine, elementwise")
COS: OpDef = _unary("cos", lambda xp, x: xp.cos(x), lambda ctx, g: (-(g * SIN(ctx.input(0))),),
             "CosBackward0", _any((3, 4)), ufunc="cos", c_expr="cos({0})", surface=_ALL,
             doc="the cosine, elementwise")
TANH = _unary("tanh", _native_math("tanh", lambda xp, x: xp.tanh(x)), lambda ctx, g: (g * (1.0 - ctx.out * ctx.out),),
              "TanhBackward0", _any((3, 4)), save=(), save_output=True, ufunc="tanh", c_expr="tanh({0})",
              surface=_ALL, doc="the hyperbolic tangent, elementwise")


def _sigmoid(xp, x):
    # exp of a non-positive number only: no overflow warnings for large |x|
    if type(x) is np.ndarray and x.dtype.kind == "f" and x.ndim:
        # the same quotients without a select: the numerator is e where x < 0 and 1 elsewhere,
        # max(e, x >= 0) as e <= 1 (NaN propagates). A where() on a random sign mask
        # mispredicts branches: 44 -> 14 us on a (32, 256) float32 gate block, the same bits.
        e = np.abs(x)
        np.negative(e, out=e)
        np.exp(e, out=e)
        den = e + 1.0
        np.maximum(e, x >= 0, out=e)
        return np.divide(e, den, out=e)
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


SIGMOID = _unary("sigmoid", _sigmoid, lambda ctx, g: (g * (ctx.out * (1.0 - ctx.out)),),
                 "SigmoidBackward0", _any((3, 4)), save=(), save_output=True, c_expr="gm_sigmoid({0})",
                 surface=_ALL, doc="1 / (1 + exp(-input)), elementwise")
def _abs(xp, x):
    if x.dtype.kind == "b":  # NumPy would return the bools
        raise NotImplementedError("abs: \"abs_cpu\" not implemented for 'Bool'; cast with .int() first")
    return xp.abs(x)


def _sign(xp, x):
    return x.copy() if x.dtype.kind == "b" else xp.sign(x)  # PyTorch: sign of a bool is itself


_RELU_FORM: dict = {}  # NumPy float dtype -> how relu keeps x's -0.0 there (probed once)


def _relu_form(dt) -> int:
    """How NumPy computes PyTorch's relu of a negative zero (-0.0: PyTorch keeps x unless x < 0)
    for dtype dt: 0 `maximum(0, x)`, 1 `maximum(x, 0)`, 2 `where(x < 0, 0, x)`. NumPy's maximum
    returns one operand or the other on a tie of zeros, which one by its loop (SIMD or not, per
    dtype and host), so each order is asked once, on lengths and offsets that take its vector
    body and its tail; the where (slower) only where neither order keeps it."""
    probe = np.full(1041, -0.0, dtype=dt)
    spans = ((0, 1041), (1, 1040), (3, 20), (0, 1))
    form = 2
    if all(np.signbit(np.maximum(0, probe[k:n])).all() for k, n in spans):
        form = 0
    elif all(np.signbit(np.maximum(probe[k:n], 0)).all() for k, n in spans):
        form = 1
    _RELU_FORM[dt] = form
    return form


_CONV: list = [None]  # gmnative.conv_kernels once looked up (False: not importable)


def _relu(xp, x):
    dt = x.dtype
    if dt.kind == "b":  # NumPy would give int64
        raise RuntimeError("Boolean inputs not supported for relu")
    if dt.kind == "f" and xp is np:
        if x.size >= _NATIVE_LARGE:  # one threaded pass (NumPy's maximum runs on one thread), -0.0 and NaN kept
            native = _CONV[0]
            if native is None:
                from .conv import conv_native  # noqa: PLC0415  (gmops.conv imports after this module)

                native = _CONV[0] = conv_native() or False
            out = native.relu(x) if native else None
            if out is not None:
                return out
        form = _RELU_FORM.get(dt)
        if form is None:
            form = _relu_form(dt)
        if form == 0:
            return xp.maximum(0, x)  # relu(-0.0) is -0.0, as PyTorch's (the same loop, the same speed)
        if form == 2:
            return xp.where(x < 0, xp.zeros((), dt), x)
    return xp.maximum(x, 0)


ABS = defop(
    "abs", forward=_abs, abstract=lambda x: x,
    vjp=lambda ctx, g: (g * SIGN(ctx.input(0)),), grad_name="AbsBackward0", save=(0,),
    samples=_away_from_zero((3, 4)), batchable=True, ufunc="abs", c_expr="gm_abs({0})",
    surface=(*_ALL, "alias absolute"), doc="the absolute value, elementwise",
)


def _sign_op(name: str) -> OpDef:
    """sign, and sgn (the same values for real numbers, but a node of its own in PyTorch,
    SgnBackward0): a zero gradient, zeros_like(grad) as PyTorch's (a NaN or inf flowing in
    gives 0, where g * 0 would give NaN)."""
    return defop(
        name, forward=_sign, abstract=lambda x: x,
        vjp=lambda ctx, g: (FULL_LIKE(g, value=0.0),), grad_name=f"{name.title()}Backward0",
        samples=_away_from_zero((3, 4)), batchable=True, ufunc="sign", c_expr="gm_sign({0})", surface=_ALL,
        doc="-1, 0 or 1 by the sign of each element" + (" (sign's value for real numbers)" if name == "sgn" else ""),
    )


SIGN: OpDef = _sign_op("sign")
SGN: OpDef = _sign_op("sgn")
RELU = defop(
    "relu", forward=_relu, abstract=lambda x: x,
    # PyTorch's threshold_backward: zero where the result is <= 0, so a NaN passes its gradient
    vjp=lambda ctx, g: (WHERE(LE(ctx.out, 0.0), 0.0, g),), grad_name="ReluBackward0",
    save_output=True, samples=_away_from_zero((3, 4)), c_expr="gm_relu({0})",
    surface=("relu(input)", *_ALL), doc="max(input, 0), elementwise",
)


def _scipy_erf():
    """SciPy's erf when it is importable (one C loop), else None. Used for float32 only: there
    it stays within the error bound `tests/eager/test_erf.py` checks NumPy's evaluation
    (`_erf.erf`) against, while its float64 erf is off by up to 2 units in the last place
    where the NumPy evaluation keeps to 1."""
    try:
        from scipy.special import erf  # noqa: PLC0415
    except ImportError:
        return None
    return erf


_SCIPY_ERF = _scipy_erf()


def _erf_elsewhere(xp, name: str, x):
    """erf or erfc (name) in a namespace other than NumPy: its own function where it has one
    (static's IR namespace: the op), else CuPy's scipy.special one (NumPy has neither)."""
    own = getattr(xp, name, None)
    if own is not None:
        return own(x)
    import cupyx.scipy.special as cupy_special  # noqa: PLC0415

    return getattr(cupy_special, name)(x)


def _erf(xp, x):
    if xp is not np:
        return _erf_elsewhere(xp, "erf", x)
    if _SCIPY_ERF is not None and x.dtype == np.float32:
        return _SCIPY_ERF(x).astype(x.dtype, copy=False)
    return like(xp, x, _erf_numpy.erf(x))  # in x's memory order, as a pointwise op's result


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
ERF = _unary("erf", _erf, lambda ctx, g: (g * EXP(-(ctx.input(0) * ctx.input(0))) * _TWO_OVER_SQRT_PI,),
             "ErfBackward0", _any((3, 4)), c_expr="erf({0})", surface=_ALL, doc="the error function, elementwise")
ERF.extra["recompute"] = False  # many NumPy passes per element: a compiled backward saves it instead


_FLOAT16 = np.dtype(np.float16)


def _in_float32(forward):
    """`forward` computing a float16 operand in float32 and rounding once, as PyTorch's CPU
    kernels do (opmath): in float16 steps 1 + erf(x) cancels to 0 for x < -3 and gelu gave -0
    where PyTorch gives -1.3e-4. The C kernels compute float16 in float already."""
    def run(xp, x, *args, **attrs):
        if getattr(x, "dtype", None) is _FLOAT16:  # (an identity test: the hot path's cost is ~0.05 us)
            return forward(xp, x.astype(np.float32), *args, **attrs).astype(np.float16)
        return forward(xp, x, *args, **attrs)
    run.__name__ = run.__qualname__ = forward.__name__
    return run


@_in_float32
def _softplus(xp, x, beta=1.0, threshold=20.0):
    bx = x * beta
    # log1p(exp(-|bx|)) + max(bx, 0) is log(1 + exp(bx)) without overflow
    soft = (xp.log1p(xp.exp(-xp.abs(bx))) + xp.maximum(bx, 0)) / beta
    return xp.where(bx > threshold, x, soft).astype(x.dtype, copy=False)


def _softplus_vjp(ctx, g):
    x, beta, threshold = ctx.input(0), ctx.attrs["beta"], ctx.attrs["threshold"]
    bx = x * beta
    return (WHERE(GT(bx, threshold), g, g * SIGMOID(bx)),)


SOFTPLUS = defop(
    "softplus", forward=_softplus, abstract=_unary_float("softplus"), vjp=_softplus_vjp,
    grad_name="SoftplusBackward0", save=(0,), promote="float",
    samples=_any((3, 4), beta=1.0, threshold=20.0), batchable=True,
    # torch.nn.functional.softplus's signature (eager also has it as eager.softplus and a method)
    surface=("function", "method", "softplus(input, beta=1.0, threshold=20.0)"),
    doc="log(1 + exp(beta * input)) / beta, linear where beta * input > threshold",
)

_GELU_K = math.sqrt(2.0 / math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)


@_in_float32
def _gelu(xp, x, approximate="none"):
    out = try_native(xp, "gelu", x, approximate)
    if out is not None:  # one threaded pass (gmnative.kernels)
        return out
    if approximate == "tanh":
        return 0.5 * x * (1.0 + xp.tanh(_GELU_K * (x + 0.044715 * x * x * x)))
    out = xp.asarray(_erf(xp, x * _INV_SQRT2))  # a fresh buffer: the rest runs in place
    out += 1.0
    out *= x
    out *= 0.5
    return out


def _gelu_vjp(ctx, g):
    x = ctx.input(0)
    if ctx.attrs["approximate"] == "tanh":
        t = TANH((x + x * x * x * 0.044715) * _GELU_K)
        dt = (1.0 - t * t) * ((x * x * (3 * 0.044715) + 1.0) * _GELU_K)
        return (g * ((t + 1.0) * 0.5 + x * dt * 0.5),)
    return (g * GELU_GRAD(x),)


_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@_in_float32
def _gelu_grad(xp, x):
    """Phi(x) + x * phi(x), the derivative of exact GELU, in one buffer (the backward of a
    GELU then costs one op where the composite took about ten)."""
    found = try_native(xp, "gelu_grad", x)
    if found is not None:  # one threaded pass (gmnative.kernels)
        return found
    out = _erf(xp, x * _INV_SQRT2)
    out += 1.0
    out *= 0.5
    pdf = xp.asarray(x * x)  # an array even for 0-d x (NumPy gives a scalar there)
    pdf *= -0.5
    xp.exp(pdf, out=pdf)
    pdf *= x
    pdf *= _INV_SQRT_2PI
    out += pdf
    return out


GELU_GRAD = defop(
    "gelu_grad", forward=_gelu_grad, abstract=_unary_float("gelu_grad"),
    # d/dx (Phi + x phi) = 2 phi - x^2 phi
    vjp=lambda ctx, g: (g * (EXP(ctx.input(0) * ctx.input(0) * -0.5) * _INV_SQRT_2PI)
                        * (2.0 - ctx.input(0) * ctx.input(0)),),
    grad_name="GeluBackwardBackward0", save=(0,), promote="float", samples=_any((3, 4)),
    doc="the derivative of exact GELU: Phi(x) + x * phi(x)", c_expr="gm_gelu_grad({0})",
)


def _gelu_abstract(x, approximate="none"):
    require_float("gelu", x)
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"gelu: approximate argument must be either none or tanh, got {approximate!r}")
    return x


GELU = defop(
    "gelu", forward=_gelu, abstract=_gelu_abstract, vjp=_gelu_vjp, grad_name="GeluBackward0",
    save=(0,), promote="float",
    samples=lambda rng: _any((3, 4), approximate="none")(rng) + _any((3, 4), approximate="tanh")(rng),
    batchable=True, extra={"recompute": False},  # erf's many passes: a compiled backward saves it instead
    surface=("function", "gelu(input, approximate='none')"),  # torch.nn.functional.gelu's signature
    doc="the Gaussian error linear unit; approximate='tanh' uses the tanh formula",
)


# -- exp2: the worked example of "adding a pointwise op" (docs/architecture.md) --------------
# One declaration (its facts come from `_unary`: arity 1, pointwise, fusible, batchable) plus
# its spellings in codegen/lowering.py; the registry-wide tests then cover it like any op.
_LN2 = math.log(2.0)
EXP2 = _unary("exp2", lambda xp, x: xp.exp2(x), lambda ctx, g: (g * ctx.out * _LN2,), "Exp2Backward0",
              _any((3, 4)), save=(), save_output=True, ufunc="exp2", c_expr="exp2({0})",
              surface=_ALL)

# reciprocal: one record is the whole op - its forward, gradient, facts, NumPy/CuPy ufunc, the
# C expression the native and CUDA kernels inline, and the Python names eager generates
# (eager.reciprocal, Tensor.reciprocal, Tensor.reciprocal_)
RECIPROCAL = _unary("reciprocal", lambda xp, x: xp.reciprocal(x), lambda ctx, g: (-(g * (ctx.out * ctx.out)),),
                    "ReciprocalBackward0", _away_from_zero((3, 4)), save=(), save_output=True,
                    ufunc="reciprocal", c_expr="(({T})1 / {0})", surface=("function", "method", "inplace"),
                    doc="1 / input, elementwise (integers give floats)")


# tan and the inverse hyperbolic functions: each one record (forward, gradient, PyTorch's names
# from `surface`), its ufunc and the C function the native and CUDA kernels inline (scalar calls
# of the C library on the host: gmnative/c_helpers.py MATH, accuracy in
# tests/codegen/test_c_expressions.py).
def _in(lo: float, hi: float):
    return lambda rng: [((rng.uniform(lo, hi, (3, 4)),), {})]


TAN = _unary("tan", lambda xp, x: xp.tan(x), lambda ctx, g: (g * (ctx.out * ctx.out + 1.0),), "TanBackward0",
             _in(-1.2, 1.2), save=(), save_output=True, surface=_ALL, doc="the tangent, elementwise",
             ufunc="tan", c_expr="tan({0})")
ASINH = _unary("asinh", lambda xp, x: xp.arcsinh(x), lambda ctx, g: (g * RSQRT(ctx.input(0) * ctx.input(0) + 1.0),),
               "AsinhBackward0", _in(-2.0, 2.0), surface=(*_ALL, "alias arcsinh"),
               doc="the inverse hyperbolic sine, elementwise", ufunc="arcsinh", c_expr="asinh({0})")
ACOSH = _unary("acosh", lambda xp, x: xp.arccosh(x), lambda ctx, g: (g * RSQRT(ctx.input(0) * ctx.input(0) - 1.0),),
               "AcoshBackward0", _in(1.2, 3.0), surface=(*_ALL, "alias arccosh"),
               doc="the inverse hyperbolic cosine, elementwise (NaN below 1)", ufunc="arccosh", c_expr="acosh({0})")
ATANH = _unary("atanh", lambda xp, x: xp.arctanh(x), lambda ctx, g: (g / (1.0 - ctx.input(0) * ctx.input(0)),),
               "AtanhBackward0", _in(-0.8, 0.8), surface=(*_ALL, "alias arctanh"),
               doc="the inverse hyperbolic tangent, elementwise (NaN outside [-1, 1])", ufunc="arctanh",
               c_expr="atanh({0})")

# These unary ops never meet a floating-point event (overflow, 0/0, log(0); sigmoid takes
# exp of non-positive numbers only), so eager runs them without switching NumPy's error
# reports off, a per-call cost on the hot path (see eager._dispatch and OpDef.quiet_fp). Ops
# that take a Python number stay quiet: comparing float16 with 70000 casts it with a warning.
for _op in (NEG, ABS, SIGN, RELU, TANH, SIGMOID):
    _op.quiet_fp = False


# -- PyTorch's remaining pointwise ops: each one record (forward against xp, abstract rule,
# gradient written with ops, ufunc / C expression for fusion, surface) --------------------------
def _float_only(name: str):
    """The abstract rule of an op PyTorch defines on floating-point tensors only: an integer
    or bool tensor raises NotImplementedError as PyTorch's kernel does (no silent promotion)."""
    def abstract(x, **attrs):
        if not x.dtype.is_floating_point:
            raise NotImplementedError(f'{name}: "{name}_cpu" not implemented for \'{x.dtype.name}\'; '
                                      "cast with .float() first")
        return x

    return abstract


def _not_float(name: str, x) -> None:
    """Raise _float_only's error from a forward, which sees an array (a NumPy dtype)."""
    raise NotImplementedError(f'{name}: "{name}_cpu" not implemented for \'{x.dtype}\'; cast with .float() first')


def _frac(xp, x):
    if getattr(x, "dtype", None) is not None and x.dtype.kind not in "fc":
        _not_float("frac", x)
    return xp.subtract(x, xp.trunc(x))


FRAC = defop(
    "frac", forward=_frac, abstract=_float_only("frac"), vjp=lambda ctx, g: (g,), grad_name="FracBackward0",
    samples=lambda rng: [((rng.uniform(-3.0, 3.0, (3, 4)) + 0.05,), {})], batchable=True,
    c_expr="({0} - trunc({0}))", surface=_ALL,
    doc="input - trunc(input): the fractional part, with input's sign (floating-point tensors only)",
)


def _erfc(xp, x):
    if xp is not np:
        return _erf_elsewhere(xp, "erfc", x)
    return like(xp, x, _erf_numpy.erfc(x))  # relative accuracy in the right tail, where 1 - erf(x) is 0


ERFC = _unary("erfc", _erfc, lambda ctx, g: (g * EXP(-(ctx.input(0) * ctx.input(0))) * -_TWO_OVER_SQRT_PI,),
              "ErfcBackward0", _any((3, 4)), c_expr="erfc({0})", surface=_ALL,
              doc="the complementary error function 1 - erf(input), accurate where erf(input) is near 1")
ERFC.extra["recompute"] = False  # many NumPy passes per element, as erf


# -- modified Bessel functions of the first kind: i0 (torch.i0) and i1 (torch.special.i1, i0's
# derivative). Computed in float64 and rounded once: np.i0 is Cephes' Chebyshev evaluation; i1,
# which NumPy lacks, is its power series (positive terms, no cancellation) below |x| = 30 and
# its asymptotic series e^x / sqrt(2 pi x) (1 - 3/(8x) - ...) above, both to double precision.
def _i1_float64(x: np.ndarray) -> np.ndarray:
    return _bessel_first_kind(x, 1, scaled=False)


def _bessel_first_kind(x: np.ndarray, order: int, scaled: bool) -> np.ndarray:
    """I_order(x) (order 0 or 1) in float64, times e^-|x| when `scaled` (i0e, i1e: finite
    where I overflows). Order 0 below |x| = 30 is np.i0."""
    a = np.abs(x)
    if order == 0:
        out = np.empty_like(a)
        small = ~(a > 30.0)
        out[small] = np.i0(a[small]) * (np.exp(-a[small]) if scaled else 1.0)
        out[~small] = _asymptotic(a[~small], 0, scaled)
        return out
    magnitude = _i1_magnitude(a, scaled)
    return np.where(x < 0, -magnitude, magnitude)  # odd, with I1(-0) = +0 (PyTorch's)


def _asymptotic(big: np.ndarray, order: int, scaled: bool) -> np.ndarray:
    """e^x / sqrt(2 pi x) sum_k (-1)^k prod_j (4 order^2 - (2j-1)^2) / (k! (8x)^k), for x > 30
    (without e^x when scaled; e^x as two halves, finite where e^x alone overflows)."""
    infinite = np.isinf(big)  # I(inf) = inf, scaled 0 (the series would give inf * 0)
    z, term, total = 8.0 * big, np.ones_like(big), np.ones_like(big)
    for k in range(1, 30):
        term *= -(4.0 * order * order - (2 * k - 1) ** 2) / (k * z)
        total += term
    root = total / np.sqrt(2.0 * np.pi * big)
    if scaled:
        return root
    half = np.exp(big * 0.5)
    return np.where(infinite, big, half * (half * root))


def _i1_magnitude(a: np.ndarray, scaled: bool) -> np.ndarray:
    out = np.empty_like(a)
    small = ~(a > 30.0)  # NaN takes the series, which keeps it
    t = a[small] * 0.5
    term, q = t.copy(), t * t
    total = term.copy()
    k = 0
    while term.size and k < 200:
        k += 1
        term *= q / (k * (k + 1.0))
        total += term
        if not (term > total * 1e-17).any():
            break
    out[small] = total * np.exp(-a[small]) if scaled else total
    out[~small] = _asymptotic(a[~small], 1, scaled)
    return out


def _bessel(numpy_fn, name: str):
    def forward(xp, x):
        if xp is not np:
            own = getattr(xp, name, None)  # CuPy's i0 / cupyx.scipy.special's i1; static's IR namespace: the op
            if own is None:
                import cupyx.scipy.special as cps  # noqa: PLC0415

                own = getattr(cps, name)
            return own(x)
        dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
        with np.errstate(all="ignore"):
            values = numpy_fn(np.asarray(x, dtype=np.float64))
        return like(xp, x, np.asarray(values).astype(dtype, copy=False))
    return forward


def _i1_vjp(ctx, g):
    x = ctx.input(0)
    # I1'(x) = I0(x) - I1(x) / x, whose limit at 0 is 1/2
    return (g * WHERE(EQ(x, 0.0), 0.5, I0(x) - ctx.out / x),)


# the C expressions: gmnative/csrc/gm_helpers.h's gm_i0 ... gm_i1e, the same series in C
I1 = _unary("i1", _bessel(_i1_float64, "i1"), _i1_vjp, "SpecialI1Backward0", _any((3, 4)), save=(0,),
            save_output=True, c_expr="gm_i1({0})",
            doc="the modified Bessel function of the first kind of order 1 (torch.special.i1)")


def _i0_float64(x: np.ndarray) -> np.ndarray:
    return _bessel_first_kind(x, 0, scaled=False)  # np.i0 below 30 (it gives NaN at inf, inf from 710)


I0: OpDef = _unary("i0", _bessel(_i0_float64, "i0"), lambda ctx, g: (g * I1(ctx.input(0)),), "I0Backward0", _any((3, 4)),
                   surface=_ALL, c_expr="gm_i0({0})",
                   doc="the modified Bessel function of the first kind of order 0, elementwise")


_POS_BOOL = "positive: the `+` operator, on a bool tensor is not supported; cast with .int() or .float() first."


def _positive_forward(xp, x):
    if getattr(x, "dtype", None) is not None and x.dtype.kind == "b":
        raise RuntimeError(_POS_BOOL)
    return x


def _positive_abstract(x):
    if x.dtype is _dtypes.bool_:
        raise RuntimeError(_POS_BOOL)
    return x


# PyTorch returns input itself: here the result is a view of input's memory (writes through it
# reach input, version counter shared) and the gradient passes unchanged
POSITIVE = defop(
    "positive", forward=_positive_forward, abstract=_positive_abstract, vjp=lambda ctx, g: (g,), grad_name="AliasBackward0",
    is_view=True, samples=_any((3, 4)), c_expr="{0}", surface=("positive(input)", "function", "method"),
    doc="+input: input itself (not defined for bool)",
)


# the exponentially scaled i0 and i1 (torch.special.i0e, i1e): e^-|x| I(x), finite where I(x)
# overflows; each the other's derivative, so one commit
def _i0e_float64(x: np.ndarray) -> np.ndarray:
    return _bessel_first_kind(x, 0, scaled=True)


def _i1e_float64(x: np.ndarray) -> np.ndarray:
    return _bessel_first_kind(x, 1, scaled=True)


def _i1e_vjp(ctx, g):
    x = ctx.input(0)
    # d/dx e^-|x| I1(x) = i0e(x) - i1e(x) (sign(x) + 1/x), whose limit at 0 is 1/2
    return (g * WHERE(EQ(x, 0.0), 0.5, I0E(x) - ctx.out * (SIGN(x) + 1.0 / x)),)


I1E = _unary("i1e", _bessel(_i1e_float64, "i1e"), _i1e_vjp, "SpecialI1EBackward0", _any((3, 4)), save=(0,),
             save_output=True, c_expr="gm_i1e({0})", doc="e^-|input| times the modified Bessel function I1 (torch.special.i1e)")
I0E: OpDef = _unary("i0e", _bessel(_i0e_float64, "i0e"),
                    lambda ctx, g: (g * (I1E(ctx.input(0)) - SIGN(ctx.input(0)) * ctx.out),), "SpecialI0EBackward0",
                    _any((3, 4)), save=(0,), save_output=True, c_expr="gm_i0e({0})",
                    doc="e^-|input| times the modified Bessel function I0 (torch.special.i0e)")
