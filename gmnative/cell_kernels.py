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
dtype, GRAPHMODE_EAGER_NATIVE=0); sigmoid and tanh are the helper layer's, within NumPy's
own rounding of them.
"""
from __future__ import annotations

import numpy as np

from . import kernels as _kernels

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_I64 = np.dtype(np.int64)


def _ready(*arrays) -> tuple | None:
    """(kernels, suffix) where every array is a C-contiguous NumPy array of the first one's
    float dtype and the kernels can run; None otherwise."""
    first = arrays[0]
    suffix = _SUFFIX.get(first.dtype) if type(first) is np.ndarray else None
    if suffix is None:
        return None
    dt = first.dtype
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != dt or not a.flags.c_contiguous:
            return None
    k = _kernels.kernels()
    return None if k is None else (k, suffix)


def gru_cell(gi, gh, bi, bh, h) -> tuple | None:
    """(h', saved) of the GRU cell from the transposed products gi = W_ih x^T and gh = W_hh h^T
    (3K, B), the biases bi, bh (3K) and the state h (B, K): h' (B, K), and saved (4, K, B), the
    gates r, z, n and the hidden product's n part (hn) that gru_cell_backward reads. None where
    the kernel cannot run."""
    ready = _ready(gi, gh, bi, bh, h)
    if ready is None:
        return None
    k, suffix = ready
    b, units = h.shape
    if gi.shape != (3 * units, b) or gh.shape != gi.shape or bi.shape != (3 * units,) or bh.shape != bi.shape:
        return None
    out = np.empty_like(h)
    saved = np.empty((4, units, b), h.dtype)
    dims = np.array([b, units], _I64)
    dt = h.dtype.name
    if not k.run(f"gm_eager_gru_cell_{suffix}", k.threads(),
                 (gi.nbytes, gh.nbytes, bi.nbytes, bh.nbytes, h.nbytes, -out.nbytes, -saved.nbytes, 16),
                 k.formats((dt, dt, dt, dt, dt, dt, dt, "int64")), gi, gh, bi, bh, h, out, saved, dims):
        return None
    return out, saved


def gru_cell_backward(g, h, saved) -> tuple | None:
    """(dgi, dgh, gz, dbi, dbh) for the output gradient g (B, K) of gru_cell: the gradients of
    the pre-activations of the input and hidden products, (3K, B) as the products came; g * z,
    the part of h's gradient that skips the products; and the bias gradients (3K). None where
    the kernel cannot run."""
    ready = _ready(g, h, saved)
    if ready is None:
        return None
    k, suffix = ready
    b, units = h.shape
    if g.shape != h.shape or saved.shape != (4, units, b):
        return None
    dgi = np.empty((3 * units, b), h.dtype)
    dgh = np.empty_like(dgi)
    gz = np.empty_like(h)
    dbi = np.empty(3 * units, h.dtype)
    dbh = np.empty_like(dbi)
    dims = np.array([b, units], _I64)
    dt = h.dtype.name
    if not k.run(f"gm_eager_gru_cell_backward_{suffix}", k.threads(),
                 (g.nbytes, h.nbytes, saved.nbytes, -dgi.nbytes, -dgh.nbytes, -gz.nbytes, -dbi.nbytes, -dbh.nbytes, 16),
                 k.formats((dt, dt, dt, dt, dt, dt, dt, dt, "int64")), g, h, saved, dgi, dgh, gz, dbi, dbh, dims):
        return None
    return dgi, dgh, gz, dbi, dbh


def lstm_cell(gi, gh, bi, bh, c) -> tuple | None:
    """(h', c', saved) of the LSTM cell from the transposed products gi = W_ih x^T and
    gh = W_hh h^T (4K, B), the biases (4K) and the cell state c (B, K); saved (5, K, B) holds
    the gates i, f, g, o and tanh(c') for lstm_cell_backward. None where the kernel cannot run."""
    ready = _ready(gi, gh, bi, bh, c)
    if ready is None:
        return None
    k, suffix = ready
    b, units = c.shape
    if gi.shape != (4 * units, b) or gh.shape != gi.shape or bi.shape != (4 * units,) or bh.shape != bi.shape:
        return None
    h2 = np.empty_like(c)
    c2 = np.empty_like(c)
    saved = np.empty((5, units, b), c.dtype)
    dims = np.array([b, units], _I64)
    dt = c.dtype.name
    if not k.run(f"gm_eager_lstm_cell_{suffix}", k.threads(),
                 (gi.nbytes, gh.nbytes, bi.nbytes, bh.nbytes, c.nbytes, -h2.nbytes, -c2.nbytes, -saved.nbytes, 16),
                 k.formats((dt,) * 8 + ("int64",)), gi, gh, bi, bh, c, h2, c2, saved, dims):
        return None
    return h2, c2, saved


def lstm_cell_backward(gh2, gc2, c, saved) -> tuple | None:
    """(dg, dc, db) for the output gradients gh2, gc2 (B, K) of lstm_cell: the gates'
    pre-activation gradients (4K, B) (both products' and, summed over the batch, db (4K)),
    and the gradient of the cell state c. None where the kernel cannot run."""
    ready = _ready(gh2, gc2, c, saved)
    if ready is None:
        return None
    k, suffix = ready
    b, units = c.shape
    if gh2.shape != c.shape or gc2.shape != c.shape or saved.shape != (5, units, b):
        return None
    dg = np.empty((4 * units, b), c.dtype)
    dcp = np.empty_like(c)
    db = np.empty(4 * units, c.dtype)
    dims = np.array([b, units], _I64)
    dt = c.dtype.name
    if not k.run(f"gm_eager_lstm_cell_backward_{suffix}", k.threads(),
                 (gh2.nbytes, gc2.nbytes, c.nbytes, saved.nbytes, -dg.nbytes, -dcp.nbytes, -db.nbytes, 16),
                 k.formats((dt,) * 7 + ("int64",)), gh2, gc2, c, saved, dg, dcp, db, dims):
        return None
    return dg, dcp, db
