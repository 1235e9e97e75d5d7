"""Native multi-tensor optimizer updates (csrc/eager_kernels.cpp: adam_multi, sgd_multi):
Adam/AdamW (with AMSGrad, maximize, weight decay) and SGD with momentum over a list of
parameters in one call, each element updated in one pass.

Why: eager's foreach updates ran NumPy's in-place ufuncs over a group's parameters laid end
to end: a gather of the parameters and gradients into flat buffers, a dozen whole-buffer
passes, a scatter back. For a GPT-sized group (200K-800K elements) that took 5 ns an element,
slower than PyTorch's per-parameter loop; one pass reading P, G and the state once and writing
P and the state once takes about 1 ns.

The kernels compute the NumPy update's operations in its order, each hyper-parameter rounded
to the array's dtype as NumPy rounds a Python float against it, with no fused multiply-adds:
the results are the NumPy update's bits (the tests compare them exactly). Used where every
array is a C-contiguous NumPy array of one float dtype (float32/float64) and eager's kernels
can run; None otherwise, and the optimizer runs its NumPy update.
"""
from __future__ import annotations

import math

import numpy as np

from . import kernels as _kernels

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_NAMES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64"}  # (dtype.name: a 5 us property)
_I64, _F64 = np.dtype(np.int64), np.dtype(np.float64)
# arrays a call takes at most (the C caller's limit is 512): longer lists go in several calls
_MAX_ARRAYS = 480


def _ready(columns: tuple) -> tuple | None:
    """(kernels, suffix, dtype) where every array of every column is a C-contiguous NumPy array
    of one float dtype and its column's first array's size; None otherwise."""
    first = columns[0][0] if columns and columns[0] else None
    if type(first) is not np.ndarray:
        return None
    suffix = _SUFFIX.get(first.dtype)
    if suffix is None:
        return None
    dt = first.dtype
    sizes = [p.size for p in columns[0]]
    for col in columns:
        for a, n in zip(col, sizes):
            if type(a) is not np.ndarray or a.dtype is not dt or a.size != n or not a.flags.c_contiguous:
                return None
    k = _kernels.kernels()
    return None if k is None else (k, suffix, dt)


def _run(name: str, columns: tuple, written: tuple, flags: int, hyper: list) -> bool:
    """Call kernel `name` over the tensors (one array per column for each), in chunks the
    caller takes; False (nothing run) where it cannot run. (The per-tensor lists are built
    by comprehensions: a GPT-sized group has some thirty tensors of four or five arrays.)"""
    ready = _ready(columns)
    if ready is None:
        return False
    k, suffix, dt = ready
    per = len(columns)
    count = len(columns[0])
    chunk = max(1, (_MAX_ARRAYS - 2) // per)
    hp = np.array(hyper, _F64)
    signs = tuple(-1 if j in written else 1 for j in range(per))
    kernel = f"gm_eager_{name}_{suffix}"
    threads = k.threads()
    fmt = None
    for lo in range(0, count, chunk):
        part = [col[lo:lo + chunk] for col in columns]
        n = len(part[0])
        dims = np.array([n, flags, *(a.size for a in part[0])], _I64)
        arrays = [a for row in zip(*part) for a in row]
        sizes = (dims.nbytes, hp.nbytes, *[a.nbytes * signs[i % per] for i, a in enumerate(arrays)])
        if fmt is None or n != chunk:
            fmt = k.formats(("int64", "float64", *(_NAMES[dt],) * (per * n)))
        if not k.run(kernel, threads, sizes, fmt, dims, hp, *arrays):
            return False
    return True


def adam(params: list, grads: list, exp_avg: list, exp_avg_sq: list, max_exp_avg_sq: list | None, *, lr: float,
         beta1: float, beta2: float, eps: float, weight_decay: float, decoupled: bool, maximize: bool,
         step: int) -> bool:
    """One Adam (decoupled: AdamW) step in place on the arrays of each parameter, its gradient
    and its state (max_exp_avg_sq: AMSGrad's, or None); False (nothing written) where the
    kernel cannot run."""
    columns: tuple = (params, grads, exp_avg, exp_avg_sq) + ((max_exp_avg_sq,) if max_exp_avg_sq is not None else ())
    flags = ((1 if max_exp_avg_sq is not None else 0) | (2 if decoupled else 0) | (4 if maximize else 0)
             | (8 if weight_decay != 0 else 0))
    hyper = [1 - beta1, beta1, 1 - beta2, beta2, eps, weight_decay, 1 - lr * weight_decay,
             math.sqrt(1 - beta2 ** step), lr / (1 - beta1 ** step)]
    return _run("adam_multi", columns, (0, 2, 3, 4), flags, hyper)


def sgd(params: list, grads: list, momentum_buffers: list | None, *, lr: float, momentum: float, dampening: float,
        weight_decay: float, nesterov: bool, maximize: bool, first: bool) -> bool:
    """One SGD step in place on each parameter's array (with momentum: and its buffer's; on the
    `first` step the buffer becomes the gradient); False (nothing written) where the kernel
    cannot run."""
    columns: tuple = (params, grads) + ((momentum_buffers,) if momentum_buffers is not None else ())
    flags = ((1 if momentum_buffers is not None else 0) | (2 if first else 0) | (4 if nesterov else 0)
             | (8 if maximize else 0) | (16 if weight_decay != 0 else 0) | (32 if dampening != 0 else 0))
    return _run("sgd_multi", columns, (0, 2), flags, [weight_decay, momentum, 1 - dampening, -lr])
