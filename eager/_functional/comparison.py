"""Comparisons, logical and bitwise ops and the tests of values (isnan, isclose) of eager's
functional surface."""
from __future__ import annotations

from typing import Any

from .. import _dtypes
from ..ops import elementwise as E
from ..ops import math_ops as M
from ._common import _category


def _comparison(record: Any, name: str, relation: str) -> Any:
    """torch's elementwise comparison `name`: `record` applied to both operands, which
    broadcast and promote as the record's forward does. One definition serves the six."""
    def compare(input, other):
        return record(input, other)
    compare.__name__ = compare.__qualname__ = name
    compare.__doc__ = f"{relation}, elementwise, as a bool tensor. Mirrors torch.{name}."
    return compare


eq = _comparison(E.EQ, "eq", "input == other")
ne = _comparison(E.NE, "ne", "input != other")
lt = _comparison(E.LT, "lt", "input < other")
le = _comparison(E.LE, "le", "input <= other")
gt = _comparison(E.GT, "gt", "input > other")
ge = _comparison(E.GE, "ge", "input >= other")


def logical_and(input, other):
    """Elementwise logical AND of the truth values, as a bool tensor. Mirrors torch.logical_and."""
    return E.LOGICAL_AND(input, other)


def logical_not(input):
    """Elementwise logical NOT of the truth values, as a bool tensor. Mirrors torch.logical_not."""
    return E.LOGICAL_NOT(input)


def bitwise_not(input):
    """`~x`: logical not of a bool tensor, two's complement not (-x - 1) of an integer one."""
    cat = _category(input)
    if cat == 0:
        return E.LOGICAL_NOT(input)
    if cat == 1:
        return E.SUB(E.NEG(input), 1)
    raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")


def bitwise_and(input, other):
    """`a & b`: logical and of bool operands, bit by bit for integers; floats are refused."""
    return _bitwise("bitwise_and", E.LOGICAL_AND, M.BITWISE_AND, input, other)


def _numeric_category(name: str, cats) -> None:
    if 2 in cats:  # PyTorch 2.13 raises NotImplementedError here
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'Float\'; bitwise ops take integer or bool '
                                  "tensors")


_check_bitwise = _numeric_category


def _bitwise(name, on_bools, on_integers, input, other):
    """`name` of two bool tensors is its logical form (a bool result); of integers (or an integer
    with a bool), the bitwise op; floats are refused with PyTorch's message."""
    cats = (_category(input), _category(other))
    if cats == (0, 0):
        return on_bools(input, other)
    _check_bitwise(name, cats)
    return on_integers(input, other)


def bitwise_or(input, other):
    """Elementwise bitwise OR of integer or bool tensors. Mirrors torch.bitwise_or."""
    return _bitwise("bitwise_or", M.LOGICAL_OR, M.BITWISE_OR, input, other)


def bitwise_xor(input, other):
    """Elementwise bitwise XOR of integer or bool tensors. Mirrors torch.bitwise_xor."""
    return _bitwise("bitwise_xor", M.LOGICAL_XOR, M.BITWISE_XOR, input, other)


def logical_or(input, other):
    """Elementwise logical OR of the truth values, as a bool tensor. Mirrors torch.logical_or."""
    return M.LOGICAL_OR(input, other)


def logical_xor(input, other):
    """Elementwise logical XOR of the truth values, as a bool tensor. Mirrors torch.logical_xor."""
    return M.LOGICAL_XOR(input, other)


def isnan(input):
    """Whether each element is NaN, as a bool tensor. Mirrors torch.isnan."""
    return M.ISNAN(input)


def isinf(input):
    """Whether each element is +inf or -inf, as a bool tensor. Mirrors torch.isinf."""
    return M.ISINF(input)


def isfinite(input):
    """Whether each element is neither infinite nor NaN, as a bool tensor. Mirrors torch.isfinite."""
    return M.ISFINITE(input)


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """Elementwise |input - other| <= atol + rtol * |other| (equal infinities are close; NaNs only
    with `equal_nan`). Written in ops, so static traces it. Mirrors torch.isclose."""
    from .elementwise import abs, add, sub, to_dtype  # noqa: PLC0415  (elementwise imports this module: clamp compares)

    if input.dtype is not other.dtype:
        raise RuntimeError(f"isclose: {input.dtype.name} did not match {other.dtype.name}; "
                           f"convert one operand with .to(other.dtype) first")
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"isclose: rtol and atol must be non-negative, but got rtol={rtol} and atol={atol}")
    close = eq(input, other)
    if input.dtype is _dtypes.bool_ or (rtol == 0 and atol == 0):
        return close
    if equal_nan and input.dtype.is_floating_point:
        close = logical_or(close, logical_and(isnan(input), isnan(other)))
    if not input.dtype.is_floating_point:  # integers compare in the default float type, as PyTorch
        input, other = to_dtype(input, _dtypes.DEFAULT_FLOAT), to_dtype(other, _dtypes.DEFAULT_FLOAT)
    actual = abs(sub(input, other))
    allowed = add(abs(other) * rtol, atol)
    return logical_or(close, logical_and(isfinite(actual), le(actual, allowed)))
