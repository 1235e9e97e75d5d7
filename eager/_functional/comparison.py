"""isclose of eager's functional surface: a function whose arguments need handling of its own.

The comparisons (eq ... ge), logical_and/or/xor/not, the bitwise ops (bool operands taking
the logical form, floats refused: their records' argument mappings) and isnan/isinf/isfinite
are generated from their records' `surface` (eager._surface)."""
from __future__ import annotations

from gmbase import dtypes as _dtypes
from gmops import elementwise as E
from gmops import math_ops as M

from .elementwise import to_dtype


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
