"""Dropout in one native pass on eager's NumPy generator (csrc/eager_random.cpp,
gm_eager_uniform_dropout_*): the uniform draws, the comparison with p, the scaled output and,
when the backward needs it, the scaled mask, with the generator's state carried in and out as
gmnative.kernels.uniform carries it.

Why: op by op, dropout was a uniform draw into a buffer, a comparison, a cast, a scalar
product and the product with the input (five passes and three eager ops, with their
backward nodes): about 320 us of a small GPT's training step (W5, seven dropout layers). The
mask is the same one: a draw k 2^-k_bits is >= p exactly when k >= ceil(p 2^k_bits) (p rounded
to the draw's precision first, as the comparison rounds it), so the masks, the generator's
state afterwards and everything that replays them (a compiled step's masks, checkpoint's
recomputation) stay the same.
"""
from __future__ import annotations

import math

import numpy as np

from . import kernels as _kernels

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_MASK64 = (1 << 64) - 1
_FORMATS: dict = {}  # the call's type codes by dtype (dtype.name costs a Python call each time)


def threshold(p: float, dtype: np.dtype) -> int:
    """The smallest k whose draw k 2^-bits is >= p as the comparison of a `dtype` draw with p
    sees it (float32: p rounded to float32 first; bits 24 for float32, 53 for float64)."""
    if dtype == np.float32:
        return math.ceil(float(np.float32(p)) * 2.0 ** 24)
    return math.ceil(float(p) * 2.0 ** 53)


def dropout(g: np.random.Generator, x: np.ndarray, p: float, scale: float, want_mask: bool) -> tuple | None:
    """(x * s, s or None) with s = (draw >= p) * scale per element, drawing from g as
    g.random(x.shape, x.dtype) would (the same numbers and final state); None where it does not
    apply (another bit generator or dtype, no compiler): the caller draws op by op then. x must
    be C-contiguous."""
    dt = x.dtype
    suffix = _SUFFIX.get(dt)
    bits = getattr(g, "bit_generator", None)
    if suffix is None or type(g) is not np.random.Generator or type(bits) is not np.random.PCG64:
        return None
    k = _kernels.kernels()
    name = f"gm_eager_uniform_dropout_{suffix}"
    if k is None or k.address(name) is None:
        return None
    formats = _FORMATS.get(dt)
    if formats is None:
        formats = _FORMATS[dt] = k.formats((dt.name, dt.name, dt.name, "uint64", dt.name))
    n = x.size
    y = np.empty(x.shape, dt)
    mask = np.empty(x.shape if want_mask else (0,), dt)
    factor = np.array([scale], dt)
    with bits.lock:  # as NumPy's own draws hold it
        state = bits.state
        s, inc = state["state"]["state"], state["state"]["inc"]
        params = np.array([s >> 64, s & _MASK64, inc >> 64, inc & _MASK64, state["has_uint32"], state["uinteger"],
                           n, threshold(p, dt), int(want_mask)], np.uint64)
        if not k.run(name, k.threads(), (x.nbytes, -y.nbytes, -mask.nbytes, -params.nbytes, factor.nbytes),
                     formats, x, y, mask, params, factor):
            return None
        state["state"]["state"] = (int(params[0]) << 64) | int(params[1])
        state["has_uint32"], state["uinteger"] = int(params[4]), int(params[5])
        bits.state = state
    return y, (mask if want_mask else None)


__all__ = ["dropout", "threshold"]
