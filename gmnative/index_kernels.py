"""eager's index and loss kernels (csrc/eager_index.cpp): cross_entropy's forward and its
log-softmax gradient on 2-d logits, x[idx]'s row gradient, and NumPy's bounded int64 draws
run on a Generator's own bit generator (the same numbers and state as Generator.integers).

Each function returns None where it cannot run (no compiler, GRAPHMODE_EAGER_NATIVE=0,
another dtype or layout, another bit generator): the caller runs its NumPy code then. The
unit is built on first use and cached on disk like eager's other kernels (gmnative.kernels),
through the same call path, with the same switch.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._units import LazyUnit

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_I64 = np.dtype(np.int64)


class _Unit:
    """The loaded library, its kernels' addresses and the call path."""

    def __init__(self, library: Any, call: Any, formats: Any) -> None:
        self.call = call
        self.address = {}
        for suffix, dt in (("f32", "float32"), ("f64", "float64")):
            f = formats
            self.address[f"ce_forward_{suffix}"] = (library.address(f"gm_eager_ce_forward_{suffix}"),
                                                    f((dt, "int64", dt, dt, "int64")))
            self.address[f"log_softmax_backward_{suffix}"] = (
                library.address(f"gm_eager_log_softmax_backward_{suffix}"), f((dt, dt, dt, "int64")))
            self.address[f"rows_add_{suffix}"] = (library.address(f"gm_eager_rows_add_{suffix}"),
                                                  f((dt, "int64", dt, "int64")))
        self.address["bounded_int64"] = (library.address("gm_eager_bounded_int64"), f(("int64", "int64")))


_loader: LazyUnit[_Unit] = LazyUnit(("eager_rows.h", "eager_index.cpp"), "gm_eager_index", _Unit)
_unit = _loader.get


def reset() -> None:
    """Forget the loaded unit (the next use looks at GRAPHMODE_EAGER_NATIVE again)."""
    _loader.reset()


def cross_entropy_forward(x: np.ndarray, t: np.ndarray, ignore_index: int) -> tuple | None:
    """(logp, per-row loss, the losses' sum, rows kept) of 2-d C-contiguous float logits x and
    int64 targets t (a row whose target is ignore_index counts 0 and is not kept); None where
    the kernel does not run, or when a target is out of range (the op path raises)."""
    suffix = _SUFFIX.get(x.dtype)
    u = _unit() if suffix is not None and x.flags.c_contiguous and t.flags.c_contiguous else None
    if u is None or t.dtype != _I64:
        return None
    n, c = x.shape
    addr, fmt = u.address[f"ce_forward_{suffix}"]
    logp = np.empty((n, c), x.dtype)
    loss = np.empty(n + 1, x.dtype)
    d = np.array([n, c, ignore_index, -1, 0], _I64)
    u.call(addr, 1, (x.nbytes, t.nbytes, -logp.nbytes, -loss.nbytes, -40), fmt, x, t, logp, loss, d)
    if d[3] >= 0:
        return None
    return logp, loss[:n], loss[n], int(d[4])


def log_softmax_backward(g: np.ndarray, logp: np.ndarray) -> np.ndarray | None:
    """g - exp(logp) * g.sum(1) of 2-d C-contiguous arrays of one float dtype, or None."""
    suffix = _SUFFIX.get(g.dtype)
    if (suffix is None or logp.dtype != g.dtype or g.shape != logp.shape or g.ndim != 2
            or not g.flags.c_contiguous or not logp.flags.c_contiguous):
        return None
    u = _unit()
    if u is None:
        return None
    addr, fmt = u.address[f"log_softmax_backward_{suffix}"]
    out = np.empty(g.shape, g.dtype)
    u.call(addr, 1, (g.nbytes, logp.nbytes, -out.nbytes, 16), fmt, g, logp, out, np.array(g.shape, _I64))
    return out


def rows_add(g: np.ndarray, idx: np.ndarray, rows_out: int, into: np.ndarray | None = None) -> np.ndarray | None:
    """(rows_out, width) zeros (or `into`, C-contiguous of g's dtype, written in place) with
    row i of the 2-d C-contiguous float g added at row idx[i] (negative indices counted from
    the end), in order (np.add.at's bits); None where the kernel does not run or an index is
    out of range (the NumPy code raises; `into` is then untouched)."""
    suffix = _SUFFIX.get(g.dtype)
    if suffix is None or g.ndim != 2 or not g.flags.c_contiguous or idx.ndim != 1 or idx.shape[0] != g.shape[0]:
        return None
    if into is not None and (type(into) is not np.ndarray or into.dtype != g.dtype or not into.flags.c_contiguous
                             or into.shape != (rows_out, g.shape[1]) or not into.flags.writeable):
        return None
    u = _unit()
    if u is None:
        return None
    if idx.dtype != _I64 or not idx.flags.c_contiguous:
        idx = np.ascontiguousarray(idx, _I64)
    addr, fmt = u.address[f"rows_add_{suffix}"]
    out = np.empty((rows_out, g.shape[1]), g.dtype) if into is None else into
    d = np.array([g.shape[0], g.shape[1], rows_out, -1, into is None], _I64)
    u.call(addr, 1, (g.nbytes, idx.nbytes, -out.nbytes, -40), fmt, g, idx, out, d)
    return None if d[3] >= 0 else out


def bounded_int64(g: Any, low: int, high: int, n: int) -> np.ndarray | None:
    """g.integers(low, high, n) (int64) for a NumPy Generator on any bit generator: NumPy's
    own algorithm run on the bit generator's functions, so the numbers and the generator's
    state after are NumPy's; None where it does not apply (an empty or too wide range, no
    compiler: the caller asks NumPy)."""
    if type(g) is not np.random.Generator or not -(1 << 63) <= low < high <= (1 << 63) or n < 0:
        return None
    u = _unit()
    if u is None:
        return None
    bits = g.bit_generator
    addr, fmt = u.address["bounded_int64"]
    out = np.empty(n, _I64)
    mask = (1 << 64) - 1  # (low as two's complement: the kernel adds in 64-bit unsigned arithmetic)
    p = np.array([bits.ctypes.bit_generator.value, low & mask, high - 1 - low, n], dtype=np.uint64).view(_I64)
    with bits.lock:  # as NumPy's own draws hold it
        u.call(addr, 1, (32, -out.nbytes), fmt, p, out)
    return out
