"""Elementwise compositions: logaddexp(2), hypot, xlogy, signbit, copysign, sinc, deg2rad, rad2deg."""
from __future__ import annotations

import math
from typing import Any

from gmbase import dtypes as _dtypes

from .. import _functional as _F
from ._helpers import _LN2, _floats, _floats_only, _is_tensor


def _log_add(name: str, input: Any, other: Any, base_log: float) -> Any:  # noqa: A002
    """log_b(b^x + b^y) as max(x, y) + log_b(1 + b^-|x - y|): no b^x is formed, so nothing
    overflows. Equal infinities take a difference of 0 (inf - inf would be NaN) and give
    that infinity, as PyTorch does; NaN propagates through maximum."""
    a, b = _floats_only(name, input, other)
    same_infinity = _F.logical_and(_F.isinf(a), _F.eq(a, b))
    gap = _F.abs(_F.where(same_infinity, 0.0, _F.sub(a, b)))
    top = _F.maximum(a, b)
    if base_log == 1.0:
        return top + _F.log1p(_F.exp(-gap))
    return top + _F.log1p(_F.exp(gap * -base_log)) / base_log


def logaddexp(input: Any, other: Any) -> Any:  # noqa: A002  (PyTorch's parameter names)
    """log(e^input + e^other), elementwise and broadcast, computed stably. Mirrors torch.logaddexp."""
    return _log_add("logaddexp", input, other, 1.0)


def logaddexp2(input: Any, other: Any) -> Any:  # noqa: A002
    """log2(2^input + 2^other), elementwise and broadcast, computed stably. Mirrors torch.logaddexp2."""
    return _log_add("logaddexp2", input, other, _LN2)


def hypot(input: Any, other: Any) -> Any:  # noqa: A002
    """sqrt(input^2 + other^2), elementwise and broadcast. Written as hi * sqrt(1 + (lo/hi)^2)
    with hi, lo the larger and smaller magnitude, so squaring neither overflows nor underflows;
    an infinite operand gives inf even beside NaN (C's hypot). Mirrors torch.hypot."""
    a, b = _floats_only("hypot", input, other)
    aa, bb = _F.abs(a), _F.abs(b)
    hi, lo = _F.maximum(aa, bb), _F.minimum(aa, bb)
    ratio = lo / _F.where(_F.eq(hi, 0.0), 1.0, hi)
    out = hi * _F.sqrt(1.0 + ratio * ratio)
    return _F.where(_F.logical_or(_F.isinf(a), _F.isinf(b)), math.inf, out)


def xlogy(input: Any, other: Any) -> Any:  # noqa: A002
    """input * log(other), 0 where input is 0 (even where other is 0 or inf) unless other is
    NaN. log reads 1 at the zeroed positions, so no 0 * -inf reaches the value or the
    gradient: d/dinput is log(other) (0 where input is 0), d/dother is input / other.
    Mirrors torch.xlogy."""
    if not _is_tensor(input) and not _is_tensor(other):
        raise TypeError("xlogy(): expected at least one tensor argument (input or other), got two numbers")
    x, y = _floats(input, other)
    zeroed = _F.logical_and(_F.eq(x, 0.0), _F.logical_not(_F.isnan(y)))
    return _F.where(zeroed, 0.0, x * _F.log(_F.where(zeroed, 1.0, y)))


def signbit(input: Any) -> Any:  # noqa: A002
    """Whether each element's sign bit is set: True for negatives and -0.0 (1 / -0.0 is -inf).
    A NaN reads False whatever its sign bit (no composition of the op set sees it).
    Mirrors torch.signbit."""
    if input.dtype is _dtypes.bool_:
        return _F.ne(input, input)
    if not input.dtype.is_floating_point:
        return _F.lt(input, 0)
    negative_zero = _F.logical_and(_F.eq(input, 0.0), _F.lt(1.0 / input, 0.0))
    return _F.logical_or(_F.lt(input, 0.0), negative_zero)


def copysign(input: Any, other: Any) -> Any:  # noqa: A002
    """|input| with the sign of other (its sign bit, so -0.0 counts as negative), broadcast; a
    floating result, as PyTorch's. Mirrors torch.copysign."""
    if not _is_tensor(input):
        raise TypeError(f"copysign(): argument 'input' must be Tensor, not {type(input).__name__}")
    x, y = _floats(input, other)
    magnitude = _F.abs(x)
    out = _F.where(signbit(y), -magnitude, magnitude)
    if getattr(y, "requires_grad", False):
        # PyTorch gives other a zero gradient (zeros_like), not none: out - fill(other, 0) keeps
        # other on the graph and every value as it is (x - (+0.0) is x, -0.0 included)
        from gmops.device import FILL  # noqa: PLC0415

        out = _F.sub(out, FILL(y, value=0))
    return _F._renamed(out, "CopysignBackward0" if _is_tensor(other) else "CopysignBackward1")


def sinc(input: Any) -> Any:  # noqa: A002
    """sin(pi x) / (pi x), 1 at x = 0 (the division reads 1 there, so the gradient at 0 is 0, not NaN).

    Mirrors torch.sinc."""
    (x,) = _floats(input)
    at_zero = _F.eq(x, 0.0)
    scaled = _F.where(at_zero, 1.0, x * math.pi)
    return _F.where(at_zero, 1.0, _F.sin(scaled) / scaled)


def deg2rad(input: Any) -> Any:  # noqa: A002
    """Degrees to radians (x * pi / 180); integers give the default float dtype. Mirrors torch.deg2rad."""
    (x,) = _floats(input)
    return x * (math.pi / 180.0)


def rad2deg(input: Any) -> Any:  # noqa: A002
    """Radians to degrees (x * 180 / pi); integers give the default float dtype. Mirrors torch.rad2deg."""
    (x,) = _floats(input)
    return x * (180.0 / math.pi)
