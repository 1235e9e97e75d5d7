"""The negative log-likelihood of class indices as one autograd node, on the NumPy arrays:
cross_entropy's second half, after its log_softmax (which stays an op, so the graph is
PyTorch's: NllLossBackward0 then LogSoftmaxBackward0).

Why: op by op the loss after log_softmax is nine ops forward (the target checks, the pick,
the mean) and five backward: cross_entropy took about 240 us on a (32, 10) batch where
PyTorch's takes 36, and a GRU-cell step computes it 16 times. Here the forward is the pick
and the reduction (the op's own mean and sum), the backward the gradient written out: the
incoming gradient, scaled, negated at each row's target, zero elsewhere.

It runs only for the common case: 2-d logits of float32/float64, 1-d int64 targets all in
range (none equal to ignore_index), no class weights, no label smoothing, plain eager tensors
with no dispatch mode or trace. Anything else, and a target out of range (whose error the op
path raises), takes the op-by-op path. A backward that records a graph (create_graph=True)
differentiates the op-by-op loss on the saved inputs.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gmops import REGISTRY

from .. import _dispatch
from .._grad_mode import STATE
from .._tensor import Tensor
from ..autograd.function import Function, FunctionCtx
from ._fused_cells import _grads_by_recompute, node_apply

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_I64 = np.dtype(np.int64)
_mean = REGISTRY["mean"].forward
_log_softmax = REGISTRY["log_softmax"].forward  # the op's own forward: the same bits
_sum = REGISTRY["sum"].forward


def eligible(input: Any, target: Any, weight: Any, ignore_index: int, reduction: str,
             label_smoothing: float) -> bool:
    """Whether the fused loss may run (see the module docstring)."""
    if (weight is not None or label_smoothing or _dispatch._n_modes_pushed or type(input) is not Tensor
            or type(target) is not Tensor or reduction not in ("mean", "sum", "none")):
        return False
    x, t = input._data, target._data
    if type(x) is not np.ndarray or type(t) is not np.ndarray or x.ndim != 2 or t.ndim != 1:
        return False
    if x.dtype not in _FLOATS or t.dtype != _I64 or t.shape[0] != x.shape[0] or not t.size or not x.shape[1]:
        return False
    lo, hi = int(t.min()), int(t.max())
    return lo >= 0 and hi < x.shape[1] and not (lo <= ignore_index <= hi and (t == ignore_index).any())


class _LogSoftmaxCtx(FunctionCtx):
    """The node's name is PyTorch's for log_softmax's result."""

    def name(self) -> str:
        return "LogSoftmaxBackward0"


_LogSoftmaxCtx.__name__ = _LogSoftmaxCtx.__qualname__ = "LogSoftmaxBackward0"


class LogSoftmaxFunction(Function):
    """log_softmax over the classes (dim 1) of 2-d logits: the op's forward, its gradient
    g - exp(out) * sum(g) written out (cross_entropy's first node; the graph stays PyTorch's)."""

    _ctx_class = _LogSoftmaxCtx

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        out = _log_softmax(np, x._data, dim=1)
        ctx.save_for_backward(x)
        ctx.out = out
        return Tensor._make(out)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        if STATE.enabled:
            from .. import _functional as _F  # noqa: PLC0415

            return _grads_by_recompute(ctx, lambda x: _F.log_softmax(x, 1), (g,))
        G = g._data
        grad = np.exp(ctx.out)
        grad *= G.sum(1, keepdims=True)
        np.subtract(G, grad, out=grad)
        return (Tensor._make(grad),)


def cross_entropy(input: Tensor, target: Tensor, reduction: str) -> Tensor:
    """log_softmax then the loss, two nodes named as PyTorch's (call only when `eligible`)."""
    return node_apply(NllLossFunction, node_apply(LogSoftmaxFunction, input), target, reduction)


class _NllLossCtx(FunctionCtx):
    """The node's name is PyTorch's for cross_entropy's result."""

    def name(self) -> str:
        return "NllLossBackward0"


_NllLossCtx.__name__ = _NllLossCtx.__qualname__ = "NllLossBackward0"


class NllLossFunction(Function):
    """-logp[i, t_i], reduced by `reduction`."""

    _ctx_class = _NllLossCtx

    @staticmethod
    def forward(ctx: Any, logp: Tensor, target: Tensor, reduction: str) -> Tensor:
        L, T = logp._data, target._data
        n, c = L.shape
        loss = np.negative(L.reshape(-1)[T + np.arange(0, n * c, c)])  # (L is its own array: contiguous)
        if reduction == "mean":
            out = _mean(np, loss, dims=None, keepdim=False)
        elif reduction == "sum":
            out = _sum(np, loss, dims=None, keepdim=False)
        else:
            out = loss
        ctx.save_for_backward(logp, target)
        ctx.reduction = reduction
        ctx.shape = L.shape
        return Tensor._make(np.asarray(out, dtype=L.dtype))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        if STATE.enabled:
            from .functional.losses import _nll_loss_ops  # noqa: PLC0415

            reduction = ctx.reduction
            return _grads_by_recompute(ctx, lambda lp, t: _nll_loss_ops(lp, t, reduction), (g,)) + (None,)
        if not ctx.needs_input_grad[0]:
            return None, None, None
        _, target = ctx.saved_tensors
        n, c = ctx.shape
        G = g._data
        grad = np.zeros((n, c), G.dtype)
        flat = target._data + np.arange(0, n * c, c)
        grad.reshape(-1)[flat] = -(G / n) if ctx.reduction == "mean" else -G
        return Tensor._make(grad), None, None
