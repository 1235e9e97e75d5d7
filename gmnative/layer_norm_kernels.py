"""layer_norm's kernels that hand the row statistics from the forward to the backward
(csrc/eager_kernels.cpp: gm_eager_layer_norm_stats, gm_eager_layer_norm_backward_stats).

Why: the backward needs each row's mean and 1/sqrt(var + eps); computing them again costs two
of its four passes over the rows. The forward writes them (two float64 numbers a row, from
the same code that normalizes the row) and the backward reads them, as PyTorch's
native_layer_norm saves mean and rstd. The calls are kernels.layer_norm's and
kernels.layer_norm_backward's, given the statistics' array. The values are the ones kernels.layer_norm and
kernels.layer_norm_backward give (the same row statistics, the same arithmetic). Each
function returns None where the kernels cannot run (no compiler, GRAPHMODE_EAGER_NATIVE=0,
another dtype or layout, an empty input): the caller runs the other path then.
"""
from __future__ import annotations

import numpy as np

from . import kernels as _kernels

_F64 = np.dtype(np.float64)


def layer_norm_stats(rows: np.ndarray, w: np.ndarray, b: np.ndarray,
                     eps: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(layer norm of (groups, n) rows with weight and bias of n elements, the (groups, 2)
    float64 array of each row's mean and rstd), or None."""
    stats = np.empty((rows.shape[0], 2), _F64)
    out = _kernels.layer_norm(rows, w, b, eps, stats)
    return None if out is None else (out, stats)


def layer_norm_backward_stats(g: np.ndarray, rows: np.ndarray, w: np.ndarray, eps: float,
                              stats: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(grad_input, grad_weight, grad_bias) of layer norm over (groups, n) rows, given the
    forward's `stats` (layer_norm_stats), or None."""
    if stats.shape != (rows.shape[0], 2) or stats.dtype != _F64 or not stats.flags.c_contiguous:
        return None
    return _kernels.layer_norm_backward(g, rows, w, eps, stats)


__all__ = ["layer_norm_backward_stats", "layer_norm_stats"]
