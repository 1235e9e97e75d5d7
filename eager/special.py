"""`eager.special`: the torch.special functions that are compositions of eager's ops (so they
differentiate and compile like them), and erfinv (an autograd.Function: NumPy lacks it, so
it is solved by Newton steps on eager's erf/erfc to double precision). The ones that need functions NumPy lacks (erfc, and
with it ndtr and log_ndtr in the tails, the gamma family, Bessel functions) are not
here rather than approximated: 0.5 (1 + erf(x / sqrt 2)) is 0 for x < -8.3, where ndtr is
not."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _functional as _F
from ._compositions import xlogy  # torch.special.xlogy is torch.xlogy
from .autograd.function import Function
from .ops._erf import erf as _erf
from .ops._erf import erfc as _erfc

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


# -- erfinv: Giles' polynomial start refined by Newton steps on erf (erfc in the tails) ------------------
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
               -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erfinv_array(y: Any) -> Any:
    """erfinv of a NumPy array in float64 (then cast back): NumPy has no erfinv and SciPy is
    optional. Giles' single-precision approximation starts four Newton steps, taken on erfc
    where |y| > 0.5 so that 1 - |y| keeps its digits near +-1; +-1 give +-inf, |y| > 1 NaN."""
    dtype = y.dtype if y.dtype.kind == "f" else np.dtype(np.float32)
    a = np.asarray(y, dtype=np.float64)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - a) * (1.0 + a))
        central, tail = w - 2.5, np.sqrt(w) - 3.0
        pc, pt = np.zeros_like(a), np.zeros_like(a)
        for c, t in zip(_GILES_CENTRAL, _GILES_TAIL):
            pc, pt = pc * central + c, pt * tail + t
        x = np.where(w < 5.0, pc, pt) * a
        s, mag = np.sign(a), np.abs(a)
        for _ in range(4):
            ax = np.abs(x)
            slope = 2.0 / np.sqrt(np.pi) * np.exp(-ax * ax)
            tail_c = _erfc(ax)  # in the tail, Newton on log erfc (nearly -x^2: a few steps from afar)
            step = np.where(mag > 0.5, (np.log(tail_c) - np.log1p(-mag)) * tail_c / slope,
                            (mag - _erf(ax)) / slope)
            ax = ax + step  # Newton: erf(ax) = mag, i.e. erfc(ax) = 1 - mag
            x = s * ax
        x = np.where(mag == 1.0, s * np.inf, np.where(mag > 1.0, np.nan, x))
    return x.astype(dtype)


class _Erfinv(Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        from ._device import xp_of_array  # noqa: PLC0415
        from ._tensor import Tensor  # noqa: PLC0415

        data = x._data
        xp = xp_of_array(data)
        if xp.__name__ == "numpy":
            out = _erfinv_array(data)
        else:  # CuPy: through the host (erfinv is rare enough in a step that the copy is acceptable)
            out = xp.asarray(_erfinv_array(xp.asnumpy(data)))
        result = Tensor._make(out)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (result,) = ctx.saved_tensors
        return grad * (math.sqrt(math.pi) / 2) * _F.exp(result * result)


def erfinv(input: Any) -> Any:  # noqa: A002
    """The inverse error function on [-1, 1] (+-inf at +-1, NaN outside), with gradient
    sqrt(pi)/2 exp(erfinv(x)^2). Integer inputs give float32, as PyTorch's. Mirrors torch.special.erfinv."""
    if input.dtype.is_complex if hasattr(input.dtype, "is_complex") else False:
        raise RuntimeError(f"erfinv: complex input is not supported, got {input.dtype}")
    return _Erfinv.apply(input)


__all__ += ["erfinv"]


def _attach_methods() -> None:
    """Tensor.erfinv (eager/_api.py is at its size bound; Tensor.is_inference lives in
    eager/_tensor_metadata)."""
    from ._api import TensorAPI  # noqa: PLC0415

    TensorAPI.erfinv = erfinv  # type: ignore[attr-defined]


_attach_methods()
