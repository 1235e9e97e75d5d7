"""Elementwise ops: each forward beside its abstract rule and its VJP (written with ops)."""
from __future__ import annotations

import math

import numpy as np

from gmbase import dtypes as _dtypes
from gmnative.kernels import LARGE as _NATIVE_LARGE  # the native layer's threshold (no file read, no build)

from . import _erf as _erf_numpy
from ._checks import broadcast_shapes, require_float, same_dtype, specs_of
from ._layout import copy_as, like
from ._native import try_native
from ._registry import OpDef, TensorSpec, defop


# -- abstract rules -------------------------------------------------------------------------
def _unary_float(name):
    def abstract(x, **attrs):
        require_float(name, x)
        return x

    return abstract


def _elementwise(name, result_dtype=None):
    def abstract(*operands, **attrs):
        specs = specs_of(operands)
        shape = broadcast_shapes(name, *(s.shape for s in specs))
        return TensorSpec(shape, result_dtype or same_dtype(name, specs))

    return abstract


# -- samples for the registry-wide tests (float64, broadcasting shapes) -----------------------
def _any(*shapes, **attrs):
    return lambda rng: [(tuple(rng.standard_normal(s) for s in shapes), attrs)]


def _positive(*shapes, **attrs):
    return lambda rng: [(tuple(rng.uniform(0.5, 2.0, s) for s in shapes), attrs)]


def _away_from_zero(*shapes, **attrs):
    def make(rng):
        arrays = []
        for s in shapes:
            a = rng.uniform(0.3, 1.5, s) * rng.choice([-1.0, 1.0], s)
            arrays.append(a)
        return [(tuple(arrays), attrs)]

    return make


# the Python surface eager generates from a record (eager._surface): eager.<name>, Tensor.<name>
# and the in-place Tensor.<name>_
_ALL = ("function", "method", "inplace")


def _unary(name, forward, vjp, grad_name, samples, save=(0,), save_output=False, doc="", **facts) -> OpDef:
    return defop(
        name, forward=forward, abstract=_unary_float(name), vjp=vjp, grad_name=grad_name,
        save=save, save_output=save_output, promote="float", samples=samples, doc=doc,
        batchable=True, **facts,
    )


# -- unary math ------------------------------------------------------------------------------
NEG = defop(
    "neg", forward=lambda xp, x: xp.negative(x), abstract=lambda x: x,
    vjp=lambda ctx, g: (-g,), grad_name="NegBackward0", samples=_any((3, 4)), c_expr="(-{0})",
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


def _relu(xp, x):
    if x.dtype.kind == "b":  # NumPy would give int64
        raise RuntimeError("Boolean inputs not supported for relu")
    return xp.maximum(x, 0)


ABS = defop(
    "abs", forward=_abs, abstract=lambda x: x,
    vjp=lambda ctx, g: (g * SIGN(ctx.input(0)),), grad_name="AbsBackward0", save=(0,),
    samples=_away_from_zero((3, 4)), batchable=True, ufunc="abs", c_expr="gm_abs({0})",
    surface=_ALL, doc="the absolute value, elementwise",
)
SIGN: OpDef = defop(
    "sign", forward=_sign, abstract=lambda x: x,
    vjp=lambda ctx, g: (g * 0.0,), grad_name="SignBackward0", samples=_away_from_zero((3, 4)), batchable=True,
    ufunc="sign", c_expr="gm_sign({0})", surface=(*_ALL, "alias sgn"),  # sgn: the same for real numbers
    doc="-1, 0 or 1 by the sign of each element",
)
RELU = defop(
    "relu", forward=_relu, abstract=lambda x: x,
    vjp=lambda ctx, g: (WHERE(GT(ctx.out, 0.0), g, 0.0),), grad_name="ReluBackward0",
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


def _erf(xp, x):
    if xp is not np:
        from cupyx.scipy.special import erf  # noqa: PLC0415

        return erf(x)
    if _SCIPY_ERF is not None and x.dtype == np.float32:
        return _SCIPY_ERF(x).astype(x.dtype, copy=False)
    return like(xp, x, _erf_numpy.erf(x))  # in x's memory order, as a pointwise op's result


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
ERF = _unary("erf", _erf, lambda ctx, g: (g * EXP(-(ctx.input(0) * ctx.input(0))) * _TWO_OVER_SQRT_PI,),
             "ErfBackward0", _any((3, 4)), c_expr="erf({0})", surface=_ALL, doc="the error function, elementwise")
ERF.extra["recompute"] = False  # many NumPy passes per element: a compiled backward saves it instead


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
)

_GELU_K = math.sqrt(2.0 / math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)


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
)


# -- binary arithmetic -----------------------------------------------------------------------
# A VJP computes the gradient of operand i only when ctx.needs(i): a constant operand such
# as the 2.0 of `x * 2.0` then costs no backward op.
def _needs(ctx, i, make):
    """`make()` when operand i wants a gradient, else None."""
    return make() if ctx.needs(i) else None


ADD = defop(
    "add", forward=lambda xp, a, b: xp.add(a, b), abstract=_elementwise("add"),
    vjp=lambda ctx, g: (g, g), grad_name="AddBackward0", promote="same",
    samples=_any((3, 4), (4,)),
    arity=2, scalar_as_array=True, commutative=True, c_expr="({0} + {1})",
)
SUB = defop(
    "sub", forward=lambda xp, a, b: xp.subtract(a, b), abstract=_elementwise("sub"),
    vjp=lambda ctx, g: (g, -g if ctx.needs(1) else None), grad_name="SubBackward0", promote="same",
    samples=_any((3, 1), (1, 4)),
    arity=2, scalar_as_array=True, c_expr="({0} - {1})",
)
RSUB = defop(
    "rsub", forward=lambda xp, a, b: xp.subtract(b, a), abstract=_elementwise("rsub"),
    vjp=lambda ctx, g: (-g if ctx.needs(0) else None, g), promote="same",
    # PyTorch names rsub(tensor, tensor) RsubBackward0 and rsub(tensor, number) RsubBackward1
    grad_name=lambda operands, attrs: "RsubBackward1" if isinstance(operands[1], (int, float)) else "RsubBackward0",
    samples=_any((3, 4), ()),
    doc="rsub(x, other) = other - x: the op behind `2 - x`",
    arity=2, scalar_as_array=True, c_expr="({1} - {0})",
)
MUL = defop(
    "mul", forward=lambda xp, a, b: xp.multiply(a, b), abstract=_elementwise("mul"),
    vjp=lambda ctx, g: (g * ctx.input(1) if ctx.needs(0) else None, g * ctx.input(0) if ctx.needs(1) else None),
    grad_name="MulBackward0", save=(0, 1), promote="same", samples=_any((2, 3, 4), (3, 1)),
    arity=2, scalar_as_array=True, commutative=True, c_expr="({0} * {1})",
    surface=_ALL, doc="input * other, elementwise and broadcast",
)
DIV = defop(
    "div", forward=lambda xp, a, b: xp.true_divide(a, b), abstract=_elementwise("div"),
    vjp=lambda ctx, g: (
        g / ctx.input(1) if ctx.needs(0) else None,
        -(g * ctx.input(0)) / (ctx.input(1) * ctx.input(1)) if ctx.needs(1) else None,
    ),
    grad_name="DivBackward0", save=(0, 1), promote="float",
    samples=lambda rng: [((rng.standard_normal((3, 4)), rng.uniform(0.5, 2.0, (4,))), {})],
    arity=2, scalar_as_array=True, c_expr="({0} / {1})",
)


def _pow_grad_name(operands, attrs):
    a, b = operands
    if not hasattr(b, "shape"):
        return "PowBackward0"
    return "PowBackward1" if hasattr(a, "shape") else "PowBackward2"


def _pow_vjp(ctx, g):
    a, b = ctx.input(0), ctx.input(1)
    ga = gb = None
    if ctx.needs(0):
        if isinstance(b, (int, float)):
            ga = g * 0.0 if b == 0 else g * (POW(a, b - 1) * b)
        else:
            # 0 where the exponent is 0, as PyTorch masks it: b * a**(b-1) at a = b = 0
            # would be 0 * inf = NaN, though a**0 is the constant 1
            ga = g * WHERE(EQ(b, 0.0), 0.0, POW(a, b - 1.0) * b)
    if ctx.needs(1):
        # d(a**b)/db = a**b * log(a); 0 where a == 0 and b >= 0, as PyTorch defines it
        if isinstance(a, (int, float)):
            gb = g * ctx.out * math.log(a) if a > 0 else g * 0.0
        else:
            gb = g * WHERE(EQ(a, 0.0), 0.0, ctx.out * LOG(a))
    return ga, gb


# Small whole exponents of a float tensor are multiplied out: powf/pow's general path costs
# ~100x a multiply (x**3 on 8e6 float32: ~380 ms against ~2.5 ms). x*x is what np.power(x, 2)
# computes itself (bit for bit); x**3 and x**4 round twice instead of once, so they may differ
# from np.power by an ulp or two (PyTorch's CPU kernel computes x**3 as x*x*x too). 0.5 stays
# with power: where power is C's pow (CuPy, older NumPy) sqrt differs from it at -inf, so the
# results would not be bit-identical everywhere.
_SMALL_POWERS = (2, 3, 4)
_FAST_POW_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _pow(xp, a, b):
    """a ** b, multiplied out for x**2, x**3 and x**4 (see above)."""
    if (type(b) is int or type(b) is float) and b in _SMALL_POWERS and getattr(a, "dtype", None) in _FAST_POW_DTYPES:
        out = xp.square(a)
        # in place, saving an allocation (a 0-d result is a NumPy scalar, which `*=` rebinds)
        if b == 3:
            out *= a
        elif b == 4:
            out *= out
        return out
    if type(b) is int and getattr(a, "dtype", None) is not None and a.dtype.kind in "iu":
        if b < 0:  # PyTorch refuses a negative number as an integer tensor's exponent
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        if b > np.iinfo(a.dtype).max:
            raise RuntimeError(f"value cannot be converted to type {a.dtype.name}_t without overflow "
                               f"(exponent {b} of a {a.dtype.name} tensor)")
    try:
        if not hasattr(a, "shape"):  # PyTorch's pow(Scalar, Tensor) result is row-major
            out = xp.power(a, b)  # (ascontiguousarray makes a 0-d result 1-d: only for ndim >= 1)
            return xp.ascontiguousarray(out) if getattr(out, "ndim", 0) else out
        return xp.power(a, b)
    except ValueError as exc:
        if "negative integer powers" not in str(exc):
            raise
        return _int_pow_negative(xp, a, b)


def _int_pow_negative(xp, a, b):
    """Integer powers with negative exponents in a tensor, as PyTorch computes them (NumPy
    refuses them): the integer part of a**b, that is 1 for a base of 1, +-1 for -1, else 0."""
    a, b = xp.asarray(a), xp.asarray(b)
    positive = xp.power(a, xp.maximum(b, 0))
    negative = xp.where(a == 1, 1, xp.where(a == -1, 1 - 2 * (b & 1), 0))
    return xp.where(b < 0, negative, positive).astype(positive.dtype, copy=False)


POW = defop(
    "pow", forward=_pow, abstract=_elementwise("pow"), vjp=_pow_vjp,
    grad_name=_pow_grad_name, save=(0, 1), save_output=True, promote="same",
    samples=lambda rng: [
        ((rng.uniform(0.5, 2.0, (3, 4)), rng.standard_normal((4,))), {}),
        ((rng.uniform(0.5, 2.0, (3, 4)), 3.0), {}),
        ((2.0, rng.standard_normal((3, 4))), {}),
    ],
    arity=2, ufunc="power", c_expr="pow({0}, {1})",
    surface=("pow(input, exponent, *, out=None)", *_ALL),
    doc="input raised to `exponent` (a tensor or a number), elementwise",
)


def _max_min_vjp(is_max):
    def vjp(ctx, g):
        a, b = ctx.input(0), ctx.input(1)
        win_a = GT(a, b) if is_max else LT(a, b)
        tie = EQ(a, b)
        half = g * 0.5
        ga = WHERE(win_a, g, WHERE(tie, half, 0.0)) if ctx.needs(0) else None
        gb = WHERE(win_a, 0.0, WHERE(tie, half, g)) if ctx.needs(1) else None
        return ga, gb

    return vjp


MAXIMUM = defop(
    "maximum", forward=lambda xp, a, b: xp.maximum(a, b), abstract=_elementwise("maximum"),
    vjp=_max_min_vjp(True), grad_name="MaximumBackward0", save=(0, 1), promote="same",
    samples=_any((3, 4), (4,)),
    arity=2, commutative=True, ufunc="maximum", c_expr="gm_max({0}, {1})",
    surface=("function", "method"), doc="the larger of input and other, elementwise and broadcast (NaN propagates)",
)
MINIMUM = defop(
    "minimum", forward=lambda xp, a, b: xp.minimum(a, b), abstract=_elementwise("minimum"),
    vjp=_max_min_vjp(False), grad_name="MinimumBackward0", save=(0, 1), promote="same",
    samples=_any((3, 4), (4,)),
    arity=2, commutative=True, ufunc="minimum", c_expr="gm_min({0}, {1})",
    surface=("function", "method"), doc="the smaller of input and other, elementwise and broadcast (NaN propagates)",
)


# -- selection and clamping -------------------------------------------------------------------
def _where_abstract(cond, a, b):
    specs = [s for s in (a, b) if isinstance(s, TensorSpec)]
    if isinstance(cond, TensorSpec) and cond.dtype is not _dtypes.bool_:
        raise TypeError(f"where: expected condition to be a bool tensor, but got a tensor with dtype {cond.dtype.name}")
    shape = broadcast_shapes("where", *(s.shape for s in [cond, *specs] if isinstance(s, TensorSpec)))
    return TensorSpec(shape, same_dtype("where", specs) if specs else _dtypes.result_type([], [], [a, b]))


# float dtype -> the unsigned integer of its width, for selecting bits (_select_bits)
_BITS_OF: dict[np.dtype, np.dtype] = {np.dtype(np.float32): np.dtype(np.uint32), np.dtype(np.float64): np.dtype(np.uint64)}
SELECT_BITS_MIN = 1 << 14  # elements from which selecting bits beats np.where's loop


def _select_bits(c, a, b):
    """np.where(c, a, b) for a float array `a` of c's shape and `b` a number or an array of
    a's shape and dtype, by masking bits: NumPy's where branches per element, and a mask of
    unpredictable values (relu's, dropout's) made it 8x slower than a multiply (1.7 ms
    against 0.2 for 400K float32). Each result element is a's or b's bits, as where's."""
    u = _BITS_OF[a.dtype]
    mask = np.negative(c.view(np.uint8), dtype=u)  # all ones where c, zeros elsewhere
    out = np.bitwise_and(a.view(u), mask)
    if isinstance(b, np.ndarray):
        np.bitwise_or(out, np.bitwise_and(b.view(u), np.bitwise_not(mask, out=mask), out=mask), out=out)
    else:
        bits = np.array(b, dtype=a.dtype).view(u)
        if bits:  # (+0.0: nothing to add where c is false)
            np.bitwise_or(out, np.bitwise_and(np.bitwise_not(mask, out=mask), bits, out=mask), out=out)
    return out.view(a.dtype)


def _where(xp, c, a, b):
    if (xp is np and type(a) is np.ndarray and type(c) is np.ndarray and c.dtype == np.bool_
            and a.dtype in _BITS_OF and c.shape == a.shape and a.size >= SELECT_BITS_MIN
            and (type(b) is float or type(b) is int
                 or type(b) is np.ndarray and b.dtype == a.dtype and b.shape == a.shape)):
        return _select_bits(c, a, b)
    if (xp is np and type(b) is np.ndarray and type(c) is np.ndarray and c.dtype == np.bool_
            and b.dtype in _BITS_OF and c.shape == b.shape and b.size >= SELECT_BITS_MIN
            and (type(a) is float or type(a) is int)):
        return _select_bits(np.logical_not(c), b, a)
    out = xp.where(c, a, b)
    if not hasattr(a, "dtype") and not hasattr(b, "dtype"):
        # two Python numbers: PyTorch's dtype for them (float32 for floats), not NumPy's float64
        out = out.astype(_dtypes.result_type([], [], [a, b]).np, copy=False)
    return out


WHERE: OpDef = defop(
    "where", forward=_where, abstract=_where_abstract,
    vjp=lambda ctx, g: (
        None,
        _needs(ctx, 1, lambda: WHERE(ctx.input(0), g, 0.0)),
        _needs(ctx, 2, lambda: WHERE(ctx.input(0), 0.0, g)),
    ),
    grad_name="WhereBackward0", save=(0,), promote="same",
    samples=lambda rng: [((rng.standard_normal((3, 4)) > 0, rng.standard_normal((3, 4)),
                           rng.standard_normal((4,))), {})],
    arity=3, mask_operands=(0,), c_expr="gm_select({0}, {1}, {2})",
)


def _clamp_dtype(dt, min, max):
    """PyTorch's: the bounds promote like Python scalars (an int tensor clamped to 0.5
    gives float32)."""
    return _dtypes.result_type([dt], [], [b for b in (min, max) if b is not None])


def _check_bounds_fit(dt, min, max) -> None:
    """A finite bound beyond the result dtype's range is refused, as PyTorch does (NumPy
    would clip to the bound rounded to inf)."""
    if not dt.is_floating_point:
        return
    top = float(np.finfo(dt.np).max)
    for b in (min, max):
        if b is not None and math.isfinite(b) and abs(b) > top:
            raise RuntimeError(f"clamp: value cannot be converted to type {_dtypes.cpp_type_name(dt)} without "
                               f"overflow (bound {b}); pass a bound within the tensor's dtype range")


def _clamp(xp, x, min=None, max=None):
    out = _clamp_dtype(_dtypes.from_numpy(x.dtype), min, max)
    _check_bounds_fit(out, min, max)
    return xp.clip(x, min, max).astype(out.np, copy=False)


def _clamp_abstract(x, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    out = _clamp_dtype(x.dtype, min, max)
    _check_bounds_fit(out, min, max)
    return TensorSpec(x.shape, out)


def _clamp_vjp(ctx, g):
    x, lo, hi = ctx.input(0), ctx.attrs["min"], ctx.attrs["max"]
    keep = None
    if lo is not None:
        keep = GE(x, lo)
    if hi is not None:
        below = LE(x, hi)
        keep = below if keep is None else LOGICAL_AND(keep, below)
    return (WHERE(keep, g, 0.0),)


CLAMP = defop(
    "clamp", forward=_clamp, abstract=_clamp_abstract, vjp=_clamp_vjp, grad_name="ClampBackward1",
    save=(0,), samples=_any((3, 4), min=-0.5, max=0.7),
)


# -- comparisons and logic: bool results, no gradient ----------------------------------------
_C_COMPARISON = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _compare(name, ufunc) -> OpDef:
    return defop(
        name, forward=lambda xp, a, b: getattr(xp, ufunc)(a, b),
        abstract=_elementwise(name, result_dtype=_dtypes.bool_), promote="same",
        samples=_any((3, 4), (4,)),
        arity=2, commutative=name in ("eq", "ne"), c_expr=f"({{0}} {_C_COMPARISON[name]} {{1}})",
        surface=_ALL, doc=f"input {_C_COMPARISON[name]} other, elementwise, as a bool tensor",
    )


EQ = _compare("eq", "equal")
NE = _compare("ne", "not_equal")
LT = _compare("lt", "less")
LE = _compare("le", "less_equal")
GT: OpDef = _compare("gt", "greater")
GE = _compare("ge", "greater_equal")
LOGICAL_AND = defop(
    "logical_and", forward=lambda xp, a, b: xp.logical_and(a, b),
    abstract=_elementwise("logical_and", result_dtype=_dtypes.bool_),
    samples=lambda rng: [((rng.standard_normal((3, 4)) > 0, rng.standard_normal((4,)) > 0), {})],
    arity=2, commutative=True, c_expr="({0} && {1})",
    surface=_ALL, doc="elementwise logical AND of the truth values, as a bool tensor",
)
LOGICAL_NOT = defop(
    "logical_not", forward=lambda xp, a: xp.logical_not(a),
    abstract=lambda a: TensorSpec(a.shape, _dtypes.bool_),
    samples=lambda rng: [((rng.standard_normal((3, 4)) > 0,), {})], c_expr="(!{0})",
    surface=_ALL, doc="elementwise logical NOT of the truth values, as a bool tensor",
)


# -- casts and copies ------------------------------------------------------------------------
TO_DTYPE = defop(
    "to_dtype", forward=lambda xp, x, dtype: x.astype(dtype.np),
    abstract=lambda x, dtype: TensorSpec(x.shape, dtype),
    vjp=lambda ctx, g: (g,),  # fit_grad casts back to the operand's dtype
    grad_name="ToCopyBackward0",
    samples=lambda rng: [((rng.standard_normal((3, 4)),), {"dtype": _dtypes.float32})],
    c_expr="gm_cast<{R}>({0})",  # {R}: the result's C type
)
CLONE = defop(
    "clone", forward=copy_as, abstract=lambda x, memory_format=None: x,  # preserve_format unless asked
    vjp=lambda ctx, g: (g,), grad_name="CloneBackward0", samples=_any((3, 4)), c_expr="{0}",
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


# These unary ops never meet a floating-point event (overflow, 0/0, log(0); sigmoid takes
# exp of non-positive numbers only), so eager runs them without switching NumPy's error
# reports off, a per-call cost on the hot path (see eager._dispatch and OpDef.quiet_fp). Ops
# that take a Python number stay quiet: comparing float16 with 70000 casts it with a warning.
for _op in (NEG, ABS, SIGN, RELU, TANH, SIGMOID, CLONE, LOGICAL_NOT):
    _op.quiet_fp = False
