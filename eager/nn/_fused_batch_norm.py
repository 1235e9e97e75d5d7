"""F.batch_norm in training (the batch's statistics, a weight and a bias) as one autograd node
on the NumPy arrays (PyTorch's NativeBatchNormBackward0), the running statistics moved from the
forward kernel's own statistics.

Why: through the op record (gmops.normalization BATCH_NORM) the forward is one native kernel,
but the running statistics were a second pass over the batch (gmnative.kernels.channel_moments
and a handful of in-place ops on the buffers: about 0.25 ms a layer on a small CNN's
activations, where the kernel itself takes 0.2), the gradient a second eager op dispatched as
any op, and that gradient's kernel computed each channel's mean and variance once more. Here
one kernel call (gmnative.conv_kernels.batch_norm_stats) gives the output and each channel's
mean and sum of squared deviations; the running mean and the unbiased running variance move
toward those in place on the buffers' arrays (what running.mul_(1 - momentum).add_(batch,
alpha=momentum) computes); and the backward hands the saved statistics to the gradient kernel
(batch_norm_backward's `saved`), which then reads x and g once each per channel. The
arithmetic is the op path's kernels' (the statistics are the ones that kernel would compute
again), so the values are the op path's, bit for bit.

It runs for the common case only: a float32/float64 C-contiguous plain eager tensor of at
least 2 dims, a weight and a bias of its dtype and shape (C,), running statistics that are
None or plain eager float tensors of shape (C,) over C-contiguous NumPy memory, a number as
momentum, no dispatch mode or trace, and the native kernels there. Anything else (no weight
or bias, eval mode, float16, a non-contiguous input, a tensor momentum, a tracer) takes the
op path. A backward that records a graph (create_graph=True) differentiates the op on the
saved inputs, so higher derivatives stay exact.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dispatch
from .._fused_node import attach
from .._grad_mode import STATE
from .._tensor import Tensor
from ..autograd.function import Function, FunctionCtx
from ._fused_cells import _grads_by_recompute
from ._fused_conv import _FLOATS, _PLAIN, _kernels  # (the conv kernels' unit holds batch norm's)

_ndarray = np.ndarray


def _running_ok(t: Any, c: int) -> bool:
    """Whether a running-statistics buffer may be moved in place on its array: None, or a plain
    float tensor of shape (C,) over C-contiguous NumPy memory that records no history."""
    if t is None:
        return True
    if type(t) not in _PLAIN or t._requires_grad:
        return False
    a = t._data
    return type(a) is _ndarray and a.dtype in _FLOATS and a.shape == (c,) and a.flags.c_contiguous \
        and a.flags.writeable


def _eligible(x: Any, w: Any, b: Any, running_mean: Any, running_var: Any, momentum: Any) -> bool:
    if type(x) is not Tensor or type(w) not in _PLAIN or type(b) not in _PLAIN or _dispatch._n_modes_pushed:
        return False
    if type(momentum) not in (int, float):
        return False
    X, W, B = x._data, w._data, b._data
    if type(X) is not _ndarray or type(W) is not _ndarray or type(B) is not _ndarray:
        return False
    dt = X.dtype
    if dt not in _FLOATS or X.ndim < 2 or not X.size or not X.flags.c_contiguous or W.dtype != dt \
            or B.dtype != dt:
        return False
    c = X.shape[1]
    if W.shape != (c,) or B.shape != (c,) or not W.flags.c_contiguous or not B.flags.c_contiguous:
        return False
    return _running_ok(running_mean, c) and _running_ok(running_var, c) and _kernels() is not None


def _move(running: Tensor, batch: np.ndarray, momentum: float) -> None:
    """running = running * (1 - momentum) + batch * momentum in place on its array, the batch's
    statistic cast to the buffer's dtype first: the op path's mul_ then add_(alpha=momentum),
    its two writes counted in the buffer's version."""
    a = running._data
    a *= 1 - momentum
    a += batch.astype(a.dtype) * momentum
    running._vc[0] += 2


class _BatchNormCtx(FunctionCtx):
    eps: float
    stats: np.ndarray

    def name(self) -> str:
        return "NativeBatchNormBackward0"


_BatchNormCtx.__name__ = _BatchNormCtx.__qualname__ = "NativeBatchNormBackward0"


def _batch_norm_op(x: Tensor, w: Tensor, b: Tensor, *, eps: float) -> Tensor:
    """The op path's batch norm (what a graph-recording backward differentiates)."""
    from gmops import normalization as _normalization  # noqa: PLC0415

    return _normalization.BATCH_NORM(x, w, b, eps=eps)


class BatchNormFunction(Function):
    """Batch norm in training by the batch's statistics, then * weight + bias per channel, as
    one node named NativeBatchNormBackward0 (built by `batch_norm` below, with the kernel's
    output and statistics)."""

    _ctx_class = _BatchNormCtx

    @staticmethod
    def forward(ctx: Any, x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:  # noqa: ARG004
        raise RuntimeError("BatchNormFunction: build it with eager.nn._fused_batch_norm.batch_norm "
                           "(the node is made there, with its kernel's output and statistics)")

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        eps = ctx.eps
        if STATE.enabled:  # create_graph=True: the op's gradient, itself differentiable
            return _grads_by_recompute(ctx, lambda x, w, b: _batch_norm_op(x, w, b, eps=eps), (g,))
        x, w, _ = ctx.saved_tensors  # (raises when one was changed in place since)
        X, W, G = x._data, w._data, g._data
        if type(G) is not _ndarray or G.dtype != X.dtype or not G.flags.c_contiguous:
            G = np.ascontiguousarray(np.asarray(G), dtype=X.dtype)
        native = _kernels()
        found = None if native is None else native.batch_norm_backward(G, X, W, eps, ctx.stats)
        if found is None:  # (the kernel library went away since the forward: the op's NumPy code)
            from gmops import normalization as _normalization  # noqa: PLC0415

            found = tuple(np.asarray(a) for a in _normalization.BATCH_NORM_BACKWARD.forward(np, G, X, W, eps))
        gx, gw, gb = found
        needs = ctx.needs_input_grad
        return (Tensor._make(gx) if needs[0] else None, Tensor._make(gw) if needs[1] else None,
                Tensor._make(gb) if needs[2] else None)


def batch_norm(x: Any, running_mean: Any, running_var: Any, weight: Any, bias: Any, momentum: Any,
               eps: float) -> Tensor | None:
    """F.batch_norm in training with a weight and a bias as one node, the running statistics
    (where given) moved toward the batch's; None where the fused path does not run (the caller
    takes the op path, nothing changed). The caller has checked the input's rank and that
    each channel has more than one value."""
    if not _eligible(x, weight, bias, running_mean, running_var, momentum):
        return None
    X = x._data
    found = _kernels().batch_norm_stats(X, weight._data, bias._data, eps)
    if found is None:
        return None
    y, stats = found
    c = X.shape[1]
    if running_mean is not None and running_var is not None:
        count = X.size // c
        _move(running_mean, stats[:c], momentum)
        _move(running_var, stats[c:] / max(count - 1, 1), momentum)
    t = Tensor._make(y)
    args = (x, weight, bias)
    if not STATE.enabled or not (x._requires_grad or weight._requires_grad or bias._requires_grad):
        return t
    ctx = _BatchNormCtx(BatchNormFunction, args)
    ctx.save_for_backward(x, weight, bias)
    ctx.eps, ctx.stats = eps, stats
    return attach(t, ctx, args, y.shape)


__all__ = ["BatchNormFunction", "batch_norm"]
