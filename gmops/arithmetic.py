"""Binary arithmetic records: add, sub, rsub, mul, div, pow, maximum, minimum. Their operands
broadcast; a VJP computes an operand's gradient only when that operand wants one."""
from __future__ import annotations

import math

import numpy as np

from gmbase import dtypes as _dtypes

from ._pointwise import _ALL, _any, _elementwise
from ._registry import OpDef, TensorSpec, defop
from .casts import TO_DTYPE
from .comparison import EQ, GT, LT
from .selection import WHERE
from .special import FULL_LIKE
from .unary import EXP2, LOG

# -- binary arithmetic -----------------------------------------------------------------------
# PyTorch's extra arguments of add/sub/rsub (alpha) and div (rounding_mode) are not attributes
# of the ops: each record's surface carries the mapping from them onto ops (eager._surface
# calls it with `apply(op, operands, attrs)`: eager's dispatcher, or a tensor's _apply_op)
_BOOL_SUB = ("Subtraction, the `-` operator, with two bool tensors is not supported. "
             "Use the `^` or `logical_xor()` operator instead.")
_BOOL_SUB_ONE = ("Subtraction, the `-` operator, with a bool tensor is not supported. "
                 "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _category(v) -> int:
    """0 bool, 1 integer, 2 floating, 3 complex: of a tensor's dtype or a Python number's type."""
    dt = getattr(v, "dtype", None)
    return dt.category if isinstance(dt, _dtypes.dtype) else _dtypes.scalar_category(v)


def _is_bool(v) -> bool:
    return type(v) is bool or getattr(v, "dtype", None) is _dtypes.bool_


def refuse_bool_sub(a, b) -> None:
    """PyTorch refuses `-` with a bool operand (NumPy would compute it as integers)."""
    if _is_bool(a) or _is_bool(b):
        raise RuntimeError(_BOOL_SUB if _is_bool(a) and _is_bool(b) else _BOOL_SUB_ONE)


_NUMBERS = (int, float, bool, complex)


def _scaled(apply, name: str, x, alpha, other):
    """x * alpha (x itself for a Python 1: a tensor alpha always scales, as comparing it would
    need its data, which a traced value does not have). PyTorch's checks: a float alpha with
    integer operands, a bool alpha with non-bool ones, are refused."""
    kind = type(alpha)
    if kind is float or kind is bool:  # (an int alpha, the common case, needs no look at the operands)
        widest = max(_category(x), _category(other))
        if kind is float and widest < 2:
            raise RuntimeError(f"{name}: for integral input tensors, argument alpha must not be a floating point "
                               f"number (got alpha={alpha}); pass an integer alpha or convert the tensors to float")
        if kind is bool and widest > 0:
            raise RuntimeError(f"{name}: boolean alpha only supported for Boolean results (got alpha={alpha}); "
                               "pass a number")
    if (kind is int or kind is float) and alpha == 1:
        return x
    if type(x) in _NUMBERS:  # a Python number: scaled in Python, as PyTorch's scalar other
        return apply(MUL, (alpha, x), {}) if type(alpha) not in _NUMBERS else x * alpha
    return apply(MUL, (x, alpha), {})


def _add_arguments(apply, input, other, alpha=1):
    """torch.add(input, other, *, alpha=1): input + alpha * other."""
    return apply(ADD, (input, _scaled(apply, "add", other, alpha, input)), {})


def _sub_arguments(apply, input, other, alpha=1):
    """torch.sub(input, other, *, alpha=1): input - alpha * other (bool operands refused)."""
    refuse_bool_sub(input, other)
    return apply(SUB, (input, _scaled(apply, "sub", other, alpha, input)), {})


def _rsub_arguments(apply, input, other, alpha=1):
    """torch.rsub(input, other, *, alpha=1): other - alpha * input (bool operands refused)."""
    refuse_bool_sub(input, other)
    return apply(RSUB, (_scaled(apply, "rsub", input, alpha, other), other), {})


def _div_arguments(apply, input, other, rounding_mode=None):
    """torch.div(input, other, *, rounding_mode=None): true division, or the quotient rounded
    toward zero ('trunc') or down ('floor'), keeping integer dtypes: one record per mode
    (gmops.division.DIV_TRUNC / DIV_FLOOR), whose result stays on the graph with a zero
    gradient for both operands (DivBackward2), as PyTorch's."""
    if rounding_mode is None:
        return apply(DIV, (input, other), {})
    from .division import DIV_FLOOR, DIV_TRUNC  # noqa: PLC0415  (loaded after this module's records)

    if rounding_mode == "floor":
        return apply(DIV_FLOOR, (input, other), {})
    if rounding_mode == "trunc":
        return apply(DIV_TRUNC, (input, other), {})
    raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                       f"'{rounding_mode}'")


ADD = defop(
    "add", forward=lambda xp, a, b: xp.add(a, b), abstract=_elementwise("add"),
    vjp=lambda ctx, g: (g, g), grad_name="AddBackward0", promote="same",
    samples=_any((3, 4), (4,)),
    arity=2, scalar_as_array=True, commutative=True, c_expr="({0} + {1})",
    surface=(*_ALL, "add(input, other, *, alpha=1, out=None)", _add_arguments),
    doc="input + alpha * other, elementwise and broadcast",
)
SUB = defop(
    "sub", forward=lambda xp, a, b: xp.subtract(a, b), abstract=_elementwise("sub"),
    vjp=lambda ctx, g: (g, -g if ctx.needs(1) else None), grad_name="SubBackward0", promote="same",
    samples=_any((3, 1), (1, 4)),
    arity=2, scalar_as_array=True, c_expr="({0} - {1})",
    surface=(*_ALL, "sub(input, other, *, alpha=1, out=None)", "alias subtract", _sub_arguments),
    doc="input - alpha * other, elementwise and broadcast (bool operands are refused, as PyTorch)",
)
RSUB = defop(
    "rsub", forward=lambda xp, a, b: xp.subtract(b, a), abstract=_elementwise("rsub"),
    vjp=lambda ctx, g: (-g if ctx.needs(0) else None, g), promote="same",
    # PyTorch names rsub(tensor, tensor) RsubBackward0 and rsub(tensor, number) RsubBackward1
    grad_name=lambda operands, attrs: "RsubBackward1" if isinstance(operands[1], (int, float)) else "RsubBackward0",
    samples=_any((3, 4), ()),
    doc="other - alpha * input, elementwise and broadcast: the op behind `2 - x`",
    arity=2, scalar_as_array=True, c_expr="({1} - {0})",
    surface=("function", "rsub(input, other, *, alpha=1, out=None)", _rsub_arguments),
)
MUL = defop(
    "mul", forward=lambda xp, a, b: xp.multiply(a, b), abstract=_elementwise("mul"),
    vjp=lambda ctx, g: (g * ctx.input(1) if ctx.needs(0) else None, g * ctx.input(0) if ctx.needs(1) else None),
    grad_name="MulBackward0", save=(0, 1), promote="same", samples=_any((2, 3, 4), (3, 1)),
    arity=2, scalar_as_array=True, commutative=True, c_expr="({0} * {1})",
    surface=(*_ALL, "alias multiply"), doc="input * other, elementwise and broadcast",
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
    # (true_divide: PyTorch's docs write (dividend, divisor), its parser takes input= and other=)
    surface=(*_ALL, "div(input, other, *, rounding_mode=None, out=None)", "alias divide",
             "alias true_divide(input, other, *, out=None)", _div_arguments),
    doc="input / other, elementwise and broadcast (integers divide to a float); rounding_mode 'trunc' or "
        "'floor' rounds the quotient",
)


def _pow_grad_name(operands, attrs):
    a, b = operands
    if not hasattr(b, "shape"):
        return "PowBackward0"
    return "PowBackward1" if hasattr(a, "shape") else "PowBackward2"


def _pow_vjp(ctx, g):
    return _pow_grads(ctx, g, ctx.input(0), ctx.input(1))


def _pow_grads(ctx, g, a, b):
    """The gradients of a ** b (ctx.out) for base a and exponent b, tensors or numbers."""
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


def _square_arguments(apply, input):
    """torch.square(input): pow(input, 2)."""
    return apply(POW, (input, 2), {})


POW = defop(
    "pow", forward=_pow, abstract=_elementwise("pow"), vjp=_pow_vjp,
    grad_name=_pow_grad_name, save=(0, 1), save_output=True, promote="same",
    samples=lambda rng: [
        ((rng.uniform(0.5, 2.0, (3, 4)), rng.standard_normal((4,))), {}),
        ((rng.uniform(0.5, 2.0, (3, 4)), 3.0), {}),
        ((2.0, rng.standard_normal((3, 4))), {}),
    ],
    arity=2, ufunc="power", c_expr="pow({0}, {1})",
    # square is pow(input, 2), as PyTorch's (PowBackward0; a bool tensor squares to int64)
    surface=("pow(input, exponent, *, out=None)", *_ALL, ("alias square(input, *, out=None)", _square_arguments)),
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


def _max_min(is_max: bool) -> OpDef:
    """maximum's or minimum's record: one rule but for the comparison (NumPy's ufunc of the
    op's name, gm_max / gm_min in C, the tie split in half by _max_min_vjp)."""
    name, word = ("maximum", "larger") if is_max else ("minimum", "smaller")
    return defop(
        name, forward=lambda xp, a, b: getattr(xp, name)(a, b),
        abstract=_elementwise(name), vjp=_max_min_vjp(is_max), grad_name=f"{name.capitalize()}Backward0",
        save=(0, 1), promote="same", samples=_any((3, 4), (4,)),
        arity=2, commutative=True, ufunc=name, c_expr=f"gm_{name[:3]}({{0}}, {{1}})",
        surface=("function", "method"), doc=f"the {word} of input and other, elementwise and broadcast (NaN propagates)",
    )


MAXIMUM = _max_min(True)
MINIMUM = _max_min(False)


# -- PyTorch's remaining binary pointwise ops: each one record ---------------------------------
def _tensor_operand(name: str, param: str, b) -> None:
    """PyTorch's parsers take only a tensor for these ops' second operand (no Python number)."""
    if not hasattr(b, "shape"):
        raise TypeError(f"{name}(): argument '{param}' (position 2) must be Tensor, not {type(b).__name__}; "
                        f"wrap it with eager.tensor({b!r})")


_HEAVISIDE_DTYPES = "heaviside is not yet implemented for tensors with different dtypes"


def _heaviside(xp, x, values):
    _tensor_operand("heaviside", "values", values)
    if x.dtype != values.dtype:
        raise RuntimeError(f"{_HEAVISIDE_DTYPES} (input {x.dtype}, values {values.dtype}); "
                           "cast values with .to(input.dtype) first")
    # PyTorch's rule: values where input is 0, else input > 0 (so NaN gives 0, not NaN as np.heaviside)
    return xp.where(x == 0, values, x > 0).astype(x.dtype, copy=False)


def _heaviside_abstract(x, values):
    _tensor_operand("heaviside", "values", values)
    if x.dtype != values.dtype:
        raise RuntimeError(f"{_HEAVISIDE_DTYPES} (input {x.dtype.name}, values {values.dtype.name}); "
                           "cast values with .to(input.dtype) first")
    return _elementwise("heaviside")(x, values)


# PyTorch implements no derivative for heaviside: backward through it raises (a step function's
# zero gradient would silently stop training), while recording it is free
HEAVISIDE = defop(
    "heaviside", forward=_heaviside, abstract=_heaviside_abstract, grad_name="NotImplemented",
    differentiable_order=0, samples=_any((3, 4), (4,)), arity=2, c_expr="({0} == 0 ? {1} : ({T})({0} > 0))",
    surface=("heaviside(input, values, *, out=None)", *_ALL),
    doc="the Heaviside step: 0 where input < 0, values where input == 0, 1 where input > 0",
)


def _ldexp(xp, x, other):
    _tensor_operand("ldexp", "other", other)
    return xp.multiply(x, xp.exp2(other))  # PyTorch's definition: input * 2 ** other (both floats by then)


def _ldexp_abstract(x, other):
    _tensor_operand("ldexp", "other", other)
    return _elementwise("ldexp")(x, other)


LDEXP = defop(
    "ldexp", forward=_ldexp, abstract=_ldexp_abstract,
    vjp=lambda ctx, g: (g * EXP2(ctx.input(1)) if ctx.needs(0) else None,
                        g * ctx.out * math.log(2.0) if ctx.needs(1) else None),
    grad_name="LdexpBackward0", save=(1,), save_output=True, promote="float",
    samples=lambda rng: [((rng.standard_normal((3, 4)), rng.integers(-3, 4, (4,)).astype(np.float64)), {})],
    arity=2, c_expr="({0} * exp2({1}))", surface=("ldexp(input, other, *, out=None)", *_ALL),
    doc="input * 2 ** other, elementwise and broadcast (an integer input gives floats)",
)


def _as_float64(v):
    """A tensor operand in float64 (a number stays a number): float_power computes there."""
    return TO_DTYPE(v, dtype=_dtypes.float64) if hasattr(v, "shape") and v.dtype != _dtypes.float64 else v


def _float_power_abstract(x, exponent):
    specs = [v for v in (x, exponent) if hasattr(v, "shape")]
    return TensorSpec(_elementwise("float_power", _dtypes.float64)(*specs).shape, _dtypes.float64)


# float_power computes in float64 whatever its operands' dtypes (PyTorch casts both first), so
# its gradient is computed in float64 too and cast back to each operand's dtype (fit_grad)
def _float_power(xp, x, exponent):
    out = xp.float_power(x, exponent)
    if not hasattr(x, "shape") and np.ndim(out) > 0:  # a number's power of a tensor is row-major, as pow's
        return xp.ascontiguousarray(out)
    return out


FLOAT_POWER = defop(
    "float_power", forward=_float_power, abstract=_float_power_abstract,
    vjp=lambda ctx, g: _pow_grads(ctx, g, _as_float64(ctx.input(0)), _as_float64(ctx.input(1))),
    grad_name=_pow_grad_name, save=(0, 1), save_output=True,
    samples=lambda rng: [
        ((rng.uniform(0.5, 2.0, (3, 4)), rng.standard_normal((4,))), {}),
        ((rng.uniform(0.5, 2.0, (3, 4)), 2.5), {}),
        ((2.0, rng.standard_normal((3, 4))), {}),
    ],
    arity=2, ufunc="float_power", c_expr="pow((double){0}, (double){1})",
    extra={"exact_result_dtype": True},  # Tensor.float_power_ and out= need a float64 tensor, as PyTorch's
    surface=("float_power(input, exponent, *, out=None)", *_ALL),
    doc="input ** exponent computed in float64 (the result is float64 whatever the operands' dtypes)",
)


def _nextafter(xp, x, other):
    _tensor_operand("nextafter", "other", other)
    if x.dtype.kind not in "f":
        raise NotImplementedError(f'nextafter: "nextafter_cpu" not implemented for \'{x.dtype}\'; cast with .float() first')
    return xp.nextafter(x, other)


def _nextafter_abstract(x, other):
    _tensor_operand("nextafter", "other", other)
    spec = _elementwise("nextafter")(x, other)
    if not spec.dtype.is_floating_point:
        raise NotImplementedError(f'nextafter: "nextafter_cpu" not implemented for \'{spec.dtype.name}\'; '
                                  "cast with .float() first")
    return spec


# PyTorch's derivative: the gradient passes to input unchanged (the step is one ulp) and is zero for other
# (zeros_like(grad): a NaN flowing in still gives 0)
NEXTAFTER = defop(
    "nextafter", forward=_nextafter, abstract=_nextafter_abstract,
    vjp=lambda ctx, g: (g if ctx.needs(0) else None, FULL_LIKE(g, value=0.0) if ctx.needs(1) else None),
    grad_name="NextafterBackward0", promote="same", samples=_any((3, 4), (4,)),
    arity=2, ufunc="nextafter", c_expr="nextafter({0}, {1})",
    surface=("nextafter(input, other, *, out=None)", *_ALL),
    doc="the next floating-point value after input in the direction of other, elementwise and broadcast",
)
