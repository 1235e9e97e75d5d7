"""Exact GELU's gradient as one native pass (csrc/eager_kernels.cpp, gm_eager_gelu_backward_*):
g * gelu'(x), the derivative gmnative.kernels.gelu_grad computes times the incoming gradient,
rounded once.

Why: eager's fused GELU backward (eager/_fused_gelu.py) ran gelu_grad's pass and then NumPy's
product with g, a second pass over two arrays of the MLP's width (W5: (16, 32, 256), two
layers a step). The bits are the two steps' (the same derivative, the same product).
"""
from __future__ import annotations

import numpy as np

from . import kernels as _kernels

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_I64 = np.dtype(np.int64)
_FORMATS: dict = {}  # the call's type codes by dtype


def gelu_backward(g: np.ndarray, x: np.ndarray) -> np.ndarray | None:
    """g * gelu'(x) for C-contiguous float32/float64 arrays of one shape and dtype, or None
    where the kernel does not run (the caller computes gelu_grad(x) and the product)."""
    if type(g) is not np.ndarray or type(x) is not np.ndarray or g.dtype != x.dtype or g.shape != x.shape \
            or not g.size or not g.flags.c_contiguous or not x.flags.c_contiguous:
        return None
    suffix = _SUFFIX.get(x.dtype)
    k = _kernels.kernels() if suffix is not None else None
    if k is None:
        return None
    formats = _FORMATS.get(x.dtype)
    if formats is None:
        name = x.dtype.name
        formats = _FORMATS[x.dtype] = k.formats((name, name, name, "int64"))
    out = np.empty(x.shape, x.dtype)
    if not k.run(f"gm_eager_gelu_backward_{suffix}", k.threads(), (g.nbytes, x.nbytes, -out.nbytes, 8), formats,
                 g, x, out, np.array([x.size], _I64)):
        return None
    return out


__all__ = ["gelu_backward"]
