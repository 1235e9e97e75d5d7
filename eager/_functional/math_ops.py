"""Rounding and the further transcendental functions of eager's functional surface (floor,
round, log2, sinh, atan2 ...), over the records in `eager/ops/math_ops.py`."""
from __future__ import annotations

from ..ops import math_ops as M


def floor(input):
    """The largest integer not above each element (an integer tensor as it is). Mirrors torch.floor."""
    return M.FLOOR(input)


def ceil(input):
    """The smallest integer not below each element (an integer tensor as it is). Mirrors torch.ceil."""
    return M.CEIL(input)


def trunc(input):
    """Each element rounded toward zero (an integer tensor as it is). Mirrors torch.trunc."""
    return M.TRUNC(input)


def round(input, *, decimals: int = 0):  # noqa: A001  (torch's name)
    """Each element rounded to `decimals` places, halves to even. Mirrors torch.round."""
    return M.ROUND(input, decimals=int(decimals))


def log2(input):
    """The base-2 logarithm, elementwise. Mirrors torch.log2."""
    return M.LOG2(input)


def log10(input):
    """The base-10 logarithm, elementwise. Mirrors torch.log10."""
    return M.LOG10(input)


def sinh(input):
    """The hyperbolic sine, elementwise. Mirrors torch.sinh."""
    return M.SINH(input)


def cosh(input):
    """The hyperbolic cosine, elementwise. Mirrors torch.cosh."""
    return M.COSH(input)


def asin(input):
    """The arcsine, elementwise (NaN outside [-1, 1]). Mirrors torch.asin."""
    return M.ASIN(input)


def acos(input):
    """The arccosine, elementwise (NaN outside [-1, 1]). Mirrors torch.acos."""
    return M.ACOS(input)


def atan(input):
    """The arctangent, elementwise. Mirrors torch.atan."""
    return M.ATAN(input)


def atan2(input, other):
    """The angle of the point (other, input) in (-pi, pi], elementwise. Mirrors torch.atan2."""
    return M.ATAN2(input, other)


arcsin, arccos, arctan, arctan2, fix = asin, acos, atan, atan2, trunc
