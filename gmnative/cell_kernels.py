"""Native kernels for the fused GRU and LSTM cells' gate arithmetic (eager/nn/_fused_cells.py):
the gates and the new state in one pass, their gradients and the bias gradients in one more
(csrc/eager_kernels.cpp: gru_cell, gru_cell_backward, lstm_cell, lstm_cell_backward).

Why: on a batch of 32 rows and 128 units the cell's two products take about 55 us forward
and 105 us back, and NumPy's gate arithmetic (a dozen whole-array passes, each with its
temporary) another 65 and 45 us: a sixth of a GRU-cell training step. One pass each is a
few microseconds.

The products come transposed, (3K, B) = W x^T as BLAS gives them without a transposed
operand, so the gate loops run contiguous over the batch; the input gradients go back in
that layout, which the backward's products read as a transposed operand. The same formulas
in the same order as the NumPy code (which runs where these cannot: no compiler, another
dtype, GRAPHMODE_EAGER_NATIVE=0); float32's sigmoid and tanh are computed inline (within 2
ulp of the library's), float64's are the library's.

Each call's constants (the kernel's address, byte sizes, type codes and the dimensions
array) are made once per (kernel, dtype, batch, units) and kept (`_PLANS`): built per call
they cost 15 us (dtype.name alone is a Python property of 5 us), as much as the gate pass
itself on a GRU cell of 32 x 128, which a recurrent step calls twice per time step.
"""
from __future__ import annotations

import numpy as np

from . import kernels as _kernels

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_NAMES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64"}
_I64 = np.dtype(np.int64)
_ndarray = np.ndarray

# (kernel, dtype, batch, units) -> (kernels, address, byte sizes, type codes, dims array)
_PLANS: dict = {}

# per kernel: (arrays in, arrays out, saved rows per unit, kernel name) as the plans size them
_KINDS = {"gru_cell": 7, "gru_cell_backward": 8, "lstm_cell": 8, "lstm_cell_backward": 7}


def _plan(kind: str, dt: np.dtype, b: int, units: int, nbytes: tuple) -> tuple | None:
    """The call's constants for kernel `kind` on `dt` arrays of batch b and `units` hidden
    units (nbytes: each array's byte size, negative where written); None where the kernels
    cannot run."""
    key = (kind, dt, b, units)
    found = _PLANS.get(key)
    if found is not None:
        return found
    k = _kernels.kernels()
    if k is None:
        return None
    address = k.address(f"gm_eager_{kind}_{_SUFFIX[dt]}")
    if address is None:
        return None
    name = _NAMES[dt]
    dims = np.array([b, units], _I64)
    if len(_PLANS) > 256:  # (shapes of a long-lived process: keep the table small)
        _PLANS.clear()
    found = _PLANS[key] = (k, address, nbytes + (dims.nbytes,), k.formats((name,) * _KINDS[kind] + ("int64",)), dims)
    return found


def _same(dt: np.dtype, *arrays) -> bool:
    """Whether every array is a C-contiguous NumPy array of dtype dt."""
    for a in arrays:
        if type(a) is not _ndarray or a.dtype is not dt or not a.flags.c_contiguous:
            return False
    return True


def _dtype_of(first) -> np.dtype | None:
    if type(first) is not _ndarray:
        return None
    dt = first.dtype
    return dt if dt in _SUFFIX else None


def gru_cell(gi, gh, bi, bh, h) -> tuple | None:
    """(h', saved) of the GRU cell from the transposed products gi = W_ih x^T and gh = W_hh h^T
    (3K, B), the biases bi, bh (3K) and the state h (B, K): h' (B, K), and saved (4, K, B), the
    gates r, z, n and the hidden product's n part (hn) that gru_cell_backward reads. None where
    the kernel cannot run."""
    dt = _dtype_of(h)
    if dt is None or not _same(dt, gi, gh, bi, bh, h):
        return None
    b, units = h.shape
    if gi.shape != (3 * units, b) or gh.shape != gi.shape or bi.shape != (3 * units,) or bh.shape != bi.shape:
        return None
    size = h.nbytes
    plan = _plan("gru_cell", dt, b, units, (3 * size, 3 * size, bi.nbytes, bi.nbytes, size, -size, -4 * size))
    if plan is None:
        return None
    k, address, sizes, formats, dims = plan
    out = np.empty((b, units), dt)
    saved = np.empty((4, units, b), dt)
    k.call(address, k.threads(), sizes, formats, gi, gh, bi, bh, h, out, saved, dims)
    return out, saved


def gru_cell_backward(g, h, saved) -> tuple | None:
    """(dgi, dgh, gz, dbi, dbh) for the output gradient g (B, K) of gru_cell: the gradients of
    the pre-activations of the input and hidden products, (3K, B) as the products came; g * z,
    the part of h's gradient that skips the products; and the bias gradients (3K). None where
    the kernel cannot run."""
    dt = _dtype_of(h)
    if dt is None or not _same(dt, g, h, saved):
        return None
    b, units = h.shape
    if g.shape != h.shape or saved.shape != (4, units, b):
        return None
    size = h.nbytes
    bias = 3 * units * dt.itemsize
    plan = _plan("gru_cell_backward", dt, b, units, (size, size, 4 * size, -3 * size, -3 * size, -size, -bias, -bias))
    if plan is None:
        return None
    k, address, sizes, formats, dims = plan
    dgi = np.empty((3 * units, b), dt)
    dgh = np.empty((3 * units, b), dt)
    gz = np.empty((b, units), dt)
    dbi = np.empty(3 * units, dt)
    dbh = np.empty(3 * units, dt)
    k.call(address, k.threads(), sizes, formats, g, h, saved, dgi, dgh, gz, dbi, dbh, dims)
    return dgi, dgh, gz, dbi, dbh


def lstm_cell(gi, gh, bi, bh, c) -> tuple | None:
    """(h', c', saved) of the LSTM cell from the transposed products gi = W_ih x^T and
    gh = W_hh h^T (4K, B), the biases (4K) and the cell state c (B, K); saved (5, K, B) holds
    the gates i, f, g, o and tanh(c') for lstm_cell_backward. None where the kernel cannot run."""
    dt = _dtype_of(c)
    if dt is None or not _same(dt, gi, gh, bi, bh, c):
        return None
    b, units = c.shape
    if gi.shape != (4 * units, b) or gh.shape != gi.shape or bi.shape != (4 * units,) or bh.shape != bi.shape:
        return None
    size = c.nbytes
    plan = _plan("lstm_cell", dt, b, units,
                 (4 * size, 4 * size, bi.nbytes, bi.nbytes, size, -size, -size, -5 * size))
    if plan is None:
        return None
    k, address, sizes, formats, dims = plan
    h2 = np.empty((b, units), dt)
    c2 = np.empty((b, units), dt)
    saved = np.empty((5, units, b), dt)
    k.call(address, k.threads(), sizes, formats, gi, gh, bi, bh, c, h2, c2, saved, dims)
    return h2, c2, saved


def lstm_cell_backward(gh2, gc2, c, saved) -> tuple | None:
    """(dg, dc, db) for the output gradients gh2, gc2 (B, K) of lstm_cell: the gates'
    pre-activation gradients (4K, B) (both products' and, summed over the batch, db (4K)),
    and the gradient of the cell state c. None where the kernel cannot run."""
    dt = _dtype_of(c)
    if dt is None or not _same(dt, gh2, gc2, c, saved):
        return None
    b, units = c.shape
    if gh2.shape != c.shape or gc2.shape != c.shape or saved.shape != (5, units, b):
        return None
    size = c.nbytes
    plan = _plan("lstm_cell_backward", dt, b, units,
                 (size, size, size, 5 * size, -4 * size, -size, -4 * units * dt.itemsize))
    if plan is None:
        return None
    k, address, sizes, formats, dims = plan
    dg = np.empty((4 * units, b), dt)
    dcp = np.empty((b, units), dt)
    db = np.empty(4 * units, dt)
    k.call(address, k.threads(), sizes, formats, gh2, gc2, c, saved, dg, dcp, db, dims)
    return dg, dcp, db
