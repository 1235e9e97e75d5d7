"""`eager.special`: the torch.special functions that are compositions of eager's ops (so they
differentiate and compile like them). The ones that need functions NumPy lacks (erfc, and
with it ndtr and log_ndtr in the tails, erfinv, the gamma family, Bessel functions) are not
here rather than approximated: 0.5 (1 + erf(x / sqrt 2)) is 0 for x < -8.3, where ndtr is
not."""
from __future__ import annotations

from typing import Any

from . import _functional as _F
from ._compositions import xlogy  # torch.special.xlogy is torch.xlogy

__all__ = ["erf", "exp2", "expit", "expm1", "log1p", "log_softmax", "logit", "logsumexp", "softmax", "xlogy"]

erf = _F.erf
expm1 = _F.expm1
log1p = _F.log1p
logsumexp = _F.logsumexp


def expit(input: Any) -> Any:  # noqa: A002  (PyTorch's parameter names)
    """The logistic sigmoid 1 / (1 + e^-x)."""
    return _F.sigmoid(input)


def logit(input: Any, eps: float | None = None) -> Any:  # noqa: A002
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given (PyTorch's rule)."""
    p = input if eps is None else _F.clamp(input, eps, 1 - eps)
    return _F.log(p) - _F.log1p(-p)


def exp2(input: Any) -> Any:  # noqa: A002
    """2 ** x."""
    return _F.pow(2.0, input)


def softmax(input: Any, dim: int, *, dtype: Any = None) -> Any:  # noqa: A002
    return _F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Any, dim: int, *, dtype: Any = None) -> Any:  # noqa: A002
    return _F.log_softmax(input, dim, dtype=dtype)
