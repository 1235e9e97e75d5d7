"""The bitwise ops and isclose of eager's functional surface: functions whose arguments need
handling of their own (bool operands take the logical form, floats are refused as in PyTorch).

The comparisons (eq ... ge), logical_and/or/xor/not and isnan/isinf/isfinite are generated
from their records' `surface` (eager._surface)."""
from __future__ import annotations

from gmbase import dtypes as _dtypes
from gmops import elementwise as E
from gmops import math_ops as M

from ._common import _category
from .elementwise import to_dtype


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


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """Elementwise |input - other| <= atol + rtol * |other| (equal infinities are close; NaNs only
    with `equal_nan`). Written in ops, so static traces it. Mirrors torch.isclose."""
    if input.dtype is not other.dtype:
        raise RuntimeError(f"isclose: {input.dtype.name} did not match {other.dtype.name}; "
                           f"convert one operand with .to(other.dtype) first")
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"isclose: rtol and atol must be non-negative, but got rtol={rtol} and atol={atol}")
    close = E.EQ(input, other)
    if input.dtype is _dtypes.bool_ or (rtol == 0 and atol == 0):
        return close
    if equal_nan and input.dtype.is_floating_point:
        close = M.LOGICAL_OR(close, E.LOGICAL_AND(M.ISNAN(input), M.ISNAN(other)))
    if not input.dtype.is_floating_point:  # integers compare in the default float type, as PyTorch
        input, other = to_dtype(input, _dtypes.DEFAULT_FLOAT), to_dtype(other, _dtypes.DEFAULT_FLOAT)
    actual = E.ABS(E.SUB(input, other))
    allowed = E.ADD(E.ABS(other) * rtol, atol)
    return M.LOGICAL_OR(close, E.LOGICAL_AND(M.ISFINITE(actual), E.LE(actual, allowed)))
