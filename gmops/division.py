"""Division with rounding and the remainders: floor_divide (`//`, no derivative in PyTorch),
div's rounding modes (div_floor, div_trunc: zero gradients, DivBackward2), remainder and fmod.
Integer division by zero and two bool operands are refused as PyTorch refuses them (NumPy
gives 0 and int8 silently). Re-exported by gmops.math_ops, their home before."""
from __future__ import annotations

import numpy as np

from gmbase import dtypes as _dtypes

from ._pointwise import _ALL, _elementwise
from ._registry import defop
from .special import FULL_LIKE


def _divisors(rng, shape):
    return rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


# -- division with rounding -------------------------------------------------------------------
def _both_bool(a, b) -> bool:
    """Both operands bool (arrays, specs or Python bools): PyTorch has no bool kernel of the
    divisions and remainders, where NumPy would compute them as int8."""
    def is_bool(v) -> bool:
        dt = getattr(v, "dtype", None)
        return type(v) is bool or dt is _dtypes.bool_ or getattr(dt, "kind", None) == "b"

    return is_bool(a) and is_bool(b)


def _refuse_bools(kernel: str) -> None:
    raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'; convert the operands with .int() first')


def _division_abstract(name: str, kernel: str):
    """The broadcast rule of a division or remainder, refusing two bool operands as PyTorch."""
    rule = _elementwise(name)

    def abstract(a, b):
        if _both_bool(a, b):
            _refuse_bools(kernel)
        return rule(a, b)

    return abstract


def _integer_division(fn, kernel: str):
    """`fn(a, b)` refusing an integer division by zero as PyTorch does (a RuntimeError whose
    message is "ZeroDivisionError"): NumPy gives 0 there, silently; and two bool operands,
    which PyTorch's `kernel` does not take."""
    def forward(xp, a, b):
        if _both_bool(a, b):
            _refuse_bools(kernel)
        dt = getattr(b, "dtype", None)
        integral = dt.kind in "iu" if dt is not None else isinstance(b, int) and not isinstance(b, bool)
        if integral and getattr(a, "dtype", np.dtype(np.int64)).kind in "iu" and bool(xp.any(xp.asarray(b) == 0)):
            raise RuntimeError("ZeroDivisionError")
        return fn(xp, a, b)
    return forward


def _zeros_for(n: int):
    """The VJP of an n-operand op whose derivative is zero almost everywhere (a step: rounding,
    a rounded quotient), as PyTorch's: zeros of the gradient's shape for each operand that wants
    one (zeros_like(grad): a NaN or inf flowing in gives 0, not g * 0 = NaN). The result stays
    on the graph, so a backward through it runs instead of raising."""
    def vjp(ctx, g):
        return tuple(FULL_LIKE(g, value=0.0) if ctx.needs(i) else None for i in range(n))

    return vjp


# PyTorch implements no derivative of floor_divide (`//`): the result of a float tensor that
# requires grad stays on the graph (grad_fn NotImplemented) and a backward through it raises;
# div(..., rounding_mode="floor") is the differentiable spelling (DivBackward2, zero gradients)
FLOOR_DIVIDE = defop(
    "floor_divide", arity=2, forward=_integer_division(lambda xp, a, b: xp.floor_divide(a, b), "div_floor_cpu"),
    abstract=_division_abstract("floor_divide", "div_floor_cpu"), grad_name="NotImplemented", differentiable_order=0,
    promote="same",
    samples=lambda rng: [((rng.standard_normal((3, 4)) * 3, _divisors(rng, (4,))), {}),
                         ((rng.integers(-9, 9, (3, 4)), rng.integers(1, 4, (4,))), {})],
    doc="a // b: the quotient rounded toward -inf (PyTorch implements no derivative of it: use "
        "div(a, b, rounding_mode='floor'), whose gradient is zero)", surface=_ALL,
)


def _trunc_divide(xp, a, b):
    """The quotient rounded toward zero, as PyTorch's div_trunc: trunc(a / b) for floats (the
    division rounded first, then truncated), C's integer division for integers (NumPy's
    floor_divide, moved up by one where the signs differ and the division is not exact)."""
    if any(getattr(v, "dtype", np.dtype(type(v))).kind == "f" for v in (a, b)):
        return xp.trunc(xp.true_divide(a, b))
    q = xp.floor_divide(a, b)
    inexact = xp.not_equal(q * b, a) & xp.not_equal(xp.less(a, 0), xp.less(b, 0))
    return xp.where(inexact, q + 1, q)


def _div_rounded(mode: str, fn):
    """div(a, b, rounding_mode=mode) as one record: the rounded quotient (integer dtypes kept),
    its gradient zero for both operands and the node named DivBackward2, as PyTorch's."""
    name = f"div_{mode}"
    return defop(
        name, arity=2, forward=_integer_division(fn, f"{name}_cpu"), abstract=_division_abstract(name, f"{name}_cpu"),
        vjp=_zeros_for(2), grad_name="DivBackward2", promote="same",
        samples=lambda rng: [((rng.standard_normal((3, 4)) * 3, _divisors(rng, (4,))), {}),
                             ((rng.standard_normal((3, 4)) * 3, 0.75), {})],
        doc=f"a / b rounded {'toward -inf' if mode == 'floor' else 'toward zero'} (div's rounding_mode={mode!r}); "
            "its gradient is zero",
    )


DIV_FLOOR = _div_rounded("floor", lambda xp, a, b: xp.floor_divide(a, b))
DIV_TRUNC = _div_rounded("trunc", _trunc_divide)


def _tensor_or_number_name(stem: str):
    """PyTorch's node names of remainder/fmod: ...Backward0 for (tensor, number), ...Backward1
    for (tensor, tensor); (number, tensor) has no derivative in PyTorch (NotImplemented)."""
    def name(operands, attrs):
        if not hasattr(operands[0], "shape"):
            return "NotImplemented"
        return f"{stem}Backward{1 if hasattr(operands[1], 'shape') else 0}"

    return name


def _divisor_grad(name: str, a, b, g, rounded):
    """-g * rounded(a, b), other's gradient of remainder (floor) and fmod (trunc), PyTorch's
    formula; a number dividend has no derivative in PyTorch, so asking for it raises."""
    if not hasattr(a, "shape"):
        raise RuntimeError(f"derivative for {name} is not implemented: {name}(number, tensor) has no derivative "
                           "in PyTorch; pass the dividend as a tensor (eager.tensor(a))")
    return -(g * rounded(a, b))


def _remainder_vjp(ctx, g):
    a, b = ctx.input(0), ctx.input(1)
    gb = _divisor_grad("remainder", a, b, g, DIV_FLOOR) if ctx.needs(1) else None
    return (g if ctx.needs(0) else None), gb


def _remainder(xp, a, b):
    """NumPy's remainder with PyTorch's zero: a float result of 0 keeps fmod's sign, the
    dividend's (remainder(-0.0, 1.0) and remainder(-2.0, -1.0) are -0.0; NumPy gives the
    divisor's sign). The native kernel (native_gen.loop_library.divmod_op) computes the same."""
    r = xp.remainder(a, b)
    if r.dtype.kind == "f":
        r = xp.where(r == 0, xp.copysign(r, a), r)
    return r


REMAINDER = defop(
    "remainder", arity=2, forward=_integer_division(_remainder, "remainder_cpu"),
    abstract=_division_abstract("remainder", "remainder_cpu"),
    vjp=_remainder_vjp, grad_name=_tensor_or_number_name("Remainder"), save=(0, 1), promote="same",
    samples=lambda rng: [((rng.standard_normal((3, 4)) * 3, _divisors(rng, (4,))), {}),
                         ((rng.standard_normal((3, 4)) * 3, 1.5), {})],
    doc="a % b with the sign of b (Python's %)", surface=_ALL,
)


def _fmod_vjp(ctx, g):
    a, b = ctx.input(0), ctx.input(1)
    gb = _divisor_grad("fmod", a, b, g, DIV_TRUNC) if ctx.needs(1) else None
    return (g if ctx.needs(0) else None), gb


FMOD = defop(
    "fmod", arity=2, forward=_integer_division(lambda xp, a, b: xp.fmod(a, b), "fmod_cpu"),
    abstract=_division_abstract("fmod", "fmod_cpu"),
    vjp=_fmod_vjp, grad_name=_tensor_or_number_name("Fmod"), save=(0, 1), promote="same",
    samples=lambda rng: [((rng.standard_normal((3, 4)) * 3, _divisors(rng, (4,))), {})],
    doc="C's fmod: the remainder with the sign of a", surface=_ALL,
)
