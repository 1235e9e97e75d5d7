"""Exact GELU's gradient as one native pass (csrc/eager_kernels.cpp, gm_eager_gelu_backward_*):
g * gelu'(x), the derivative gmnative.kernels.gelu_grad computes times the incoming gradient,
rounded once; and float32 GELU with its derivative from one erf (gm_eager_gelu_and_grad_f32),
for a forward whose backward will follow.

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


def gelu_and_grad(x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(gelu(x), gelu'(x)) of a C-contiguous float32 array in one pass (erf once for both; each
    with the bits of kernels.gelu and kernels.gelu_grad), or None (float64 and other layouts:
    the caller's separate passes)."""
    if type(x) is not np.ndarray or x.dtype != np.float32 or not x.size or not x.flags.c_contiguous:
        return None
    k = _kernels.kernels()
    if k is None:
        return None
    formats = _FORMATS.get("and_grad")
    if formats is None:
        formats = _FORMATS["and_grad"] = k.formats(("float32", "float32", "float32", "int64"))
    y, d = np.empty(x.shape, x.dtype), np.empty(x.shape, x.dtype)
    if not k.run("gm_eager_gelu_and_grad_f32", k.threads(), (x.nbytes, -y.nbytes, -d.nbytes, 8), formats,
                 x, y, d, np.array([x.size], _I64)):
        return None
    return y, d


__all__ = ["gelu_and_grad", "gelu_backward"]
