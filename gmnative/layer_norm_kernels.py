"""layer_norm's kernels that hand the row statistics from the forward to the backward
(csrc/eager_kernels.cpp: gm_eager_layer_norm_stats, gm_eager_layer_norm_backward_stats).

Why: the backward needs each row's mean and 1/sqrt(var + eps); computing them again costs two
of its four passes over the rows. The forward writes them (two float64 numbers a row, from
the same code that normalizes the row) and the backward reads them, as PyTorch's
native_layer_norm saves mean and rstd. The values are the ones kernels.layer_norm and
kernels.layer_norm_backward give (the same row statistics, the same arithmetic). Each
function returns None where the kernels cannot run (no compiler, GRAPHMODE_EAGER_NATIVE=0,
another dtype or layout, an empty input): the caller runs the other path then.
"""
from __future__ import annotations

import numpy as np

from .kernels import _usable, kernels

_I64, _F64 = np.dtype(np.int64), np.dtype(np.float64)


def layer_norm_stats(rows: np.ndarray, w: np.ndarray, b: np.ndarray,
                     eps: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(layer norm of (groups, n) rows with weight and bias of n elements, the (groups, 2)
    float64 array of each row's mean and rstd), or None."""
    suffix = _usable(rows, w, b)
    k = kernels() if suffix is not None and rows.size else None
    if k is None:
        return None
    groups, n = rows.shape
    out = np.empty_like(rows)
    stats = np.empty((groups, 2), _F64)
    dt = rows.dtype.name
    if not k.run(f"gm_eager_layer_norm_stats_{suffix}", k.threads(),
                 (rows.nbytes, w.nbytes, b.nbytes, -out.nbytes, 16, 8, -stats.nbytes),
                 k.formats((dt, dt, dt, dt, "int64", "float64", "float64")),
                 rows, w, b, out, np.array([groups, n], _I64), np.array([eps], _F64), stats):
        return None
    return out, stats


def layer_norm_backward_stats(g: np.ndarray, rows: np.ndarray, w: np.ndarray, eps: float,
                              stats: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(grad_input, grad_weight, grad_bias) of layer norm over (groups, n) rows, given the
    forward's `stats` (layer_norm_stats), or None."""
    suffix = _usable(g, rows, w)
    k = kernels() if suffix is not None and rows.size else None
    if k is None or stats.shape != (rows.shape[0], 2) or stats.dtype != _F64 or not stats.flags.c_contiguous:
        return None
    groups, n = rows.shape
    nt = k.threads()
    gx = np.empty_like(rows)
    gw = np.empty(n, rows.dtype)
    gb = np.empty(n, rows.dtype)
    part = np.empty((nt, 2, n), _F64)
    dt = rows.dtype.name
    if not k.run(f"gm_eager_layer_norm_backward_stats_{suffix}", nt,
                 (g.nbytes, rows.nbytes, w.nbytes, -gx.nbytes, -gw.nbytes, -gb.nbytes, -part.nbytes, 16, 8,
                  stats.nbytes),
                 k.formats((dt, dt, dt, dt, dt, dt, "float64", "int64", "float64", "float64")),
                 g, rows, w, gx, gw, gb, part, np.array([groups, n], _I64), np.array([eps], _F64), stats):
        return None
    return gx, gw, gb


__all__ = ["layer_norm_backward_stats", "layer_norm_stats"]
