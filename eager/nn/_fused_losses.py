"""The negative log-likelihood of class indices as one autograd node, on the NumPy arrays:
cross_entropy's second half, after its log_softmax (which stays a node of its own, so the
graph is PyTorch's: NllLossBackward0 then LogSoftmaxBackward0).

Why: op by op the loss after log_softmax is nine ops forward (the target checks, the pick,
the mean) and five backward: cross_entropy took about 240 us on a (32, 10) batch where
PyTorch's takes 36, and a GRU-cell step computes it 16 times; with ignored targets (padding
in a sequence model) the masked op path took 390 us on (320, 40) where PyTorch takes 70.
Here the forward is one native call (gmnative/csrc/eager_index.cpp: log-softmax, the pick and
the sum; without a compiler, log-softmax in place on fresh buffers with the op's formula and
bits, the pick by flat index and the reduction); the backward the gradient written out: the
incoming gradient, scaled, negated at each row's target, zero elsewhere and on ignored rows,
then g - exp(logp) * sum(g) per row (native too). Each node is made here with the one edge
PyTorch's has (its differentiable input), without autograd.Function's general apply.

It runs for the common case: 2-d logits of float32/float64, 1-d int64 targets, each in range
or equal to ignore_index, no class weights, no label smoothing, plain eager tensors with no
dispatch mode or trace. Anything else, and a target out of range (whose error the op path
raises), takes the op-by-op path. A backward that records a graph (create_graph=True)
differentiates the op-by-op loss on the saved inputs.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gmnative import index_kernels as _native
from gmops import REGISTRY

from .. import _dispatch
from .._fused_node import attach1
from .._grad_mode import STATE, enable_grad
from .._tensor import Tensor
from ..autograd.function import Function, FunctionCtx
from ._fused_cells import FusedCtx, _grads_by_recompute

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_I64 = np.dtype(np.int64)
_log_softmax_op = REGISTRY["log_softmax"].forward  # the op's own forward (non-finite rows)
_ndarray = np.ndarray
_max, _add, _exp, _log = np.maximum.reduce, np.add.reduce, np.exp, np.log
_OFFSETS: dict = {}  # (n, c) -> the flat position of each row's first element


def _row_starts(n: int, c: int) -> np.ndarray:
    found = _OFFSETS.get((n, c))
    if found is None:
        if len(_OFFSETS) > 64:
            _OFFSETS.clear()
        found = _OFFSETS[(n, c)] = np.arange(0, n * c, c, dtype=np.int64)
    return found


def _arrays(input: Any, target: Any, weight: Any, label_smoothing: float, reduction: str) -> tuple | None:
    """(logits, targets) when the fused loss may run by type, dtype and shape, else None."""
    if (weight is not None or label_smoothing or _dispatch._n_modes_pushed or type(input) is not Tensor
            or type(target) is not Tensor or reduction not in ("mean", "sum", "none")):
        return None
    x, t = input._data, target._data
    if type(x) is not _ndarray or type(t) is not _ndarray or x.ndim != 2 or t.ndim != 1:
        return None
    if x.dtype not in _FLOATS or t.dtype != _I64 or t.shape[0] != x.shape[0] or not t.size or not x.shape[1]:
        return None
    return x, t


def _targets(t: np.ndarray, c: int, ignore_index: int) -> tuple | None:
    """(safe targets, the rows kept or None when all are) for targets in [0, c) or equal to
    ignore_index; None when one is neither (the op path raises its error)."""
    lo, hi = int(t.min()), int(t.max())
    if lo >= 0 and hi < c and not lo <= ignore_index <= hi:
        return t, None
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    if int(safe.min()) < 0 or int(safe.max()) >= c:
        return None
    return safe, keep


def eligible(input: Any, target: Any, weight: Any, ignore_index: int, reduction: str,
             label_smoothing: float) -> bool:
    """Whether the fused loss runs for these arguments (see the module docstring)."""
    found = _arrays(input, target, weight, label_smoothing, reduction)
    return found is not None and _targets(found[1], found[0].shape[1], ignore_index) is not None


def log_softmax_rows(x: np.ndarray) -> np.ndarray:
    """log_softmax over dim 1 of 2-d x, the op's formula (x - m) - log(sum(exp(x - m))) with
    its bits, in fresh buffers written in place (about half the op's NumPy calls)."""
    m = _max(x, axis=1, keepdims=True)
    if not np.isfinite(m).all():  # a row holding nan or inf, or all -inf: the op's nan rows, no warning
        with np.errstate(all="ignore"):
            return _log_softmax_op(np, x, dim=1)
    d = np.subtract(x, m)
    s = _add(_exp(d), axis=1, keepdims=True)
    _log(s, out=s)
    return np.subtract(d, s, out=d)


def _hang(ctx: FunctionCtx, a: Tensor, out: Tensor) -> Tensor:
    """Make ctx the grad_fn of `out` when its one differentiable input `a` wants a gradient."""
    return attach1(out, ctx, a, out._data.shape) if a._requires_grad and STATE.enabled else out


class _LogSoftmaxCtx(FusedCtx):
    """The node's name is PyTorch's for log_softmax's result."""

    def name(self) -> str:
        return "LogSoftmaxBackward0"


_LogSoftmaxCtx.__name__ = _LogSoftmaxCtx.__qualname__ = "LogSoftmaxBackward0"


class LogSoftmaxFunction(Function):
    """log_softmax over the classes (dim 1) of 2-d logits: the op's forward, its gradient
    g - exp(out) * sum(g) written out (cross_entropy's first node; the graph stays PyTorch's)."""

    _ctx_class = _LogSoftmaxCtx

    @staticmethod
    def forward(ctx: Any, x: Tensor, out: np.ndarray | None = None) -> Tensor:
        """`out`: the log-probabilities when the caller computed them already."""
        out = log_softmax_rows(x._data) if out is None else out
        ctx.save_for_backward(x)
        ctx.out = out
        return Tensor._make(out)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        if STATE.enabled:
            from .. import _functional as _F  # noqa: PLC0415

            return _grads_by_recompute(ctx, lambda x: _F.log_softmax(x, 1), (g,))
        G = g._data
        grad = _native.log_softmax_backward(G, ctx.out) if type(G) is _ndarray else None
        if grad is None:
            grad = _exp(ctx.out)
            grad *= _add(G, axis=1, keepdims=True)
            np.subtract(G, grad, out=grad)
        return (Tensor._make(grad),)


def _log_softmax_node(input: Tensor, out: np.ndarray | None) -> Tensor:
    ctx = _LogSoftmaxCtx(LogSoftmaxFunction, (input,))
    return _hang(ctx, input, LogSoftmaxFunction.forward(ctx, input, out))


def cross_entropy(input: Tensor, target: Tensor, weight: Any, ignore_index: int, reduction: str,
                  label_smoothing: float) -> Tensor | None:
    """log_softmax then the loss, two nodes named as PyTorch's; None where the fused loss
    does not run (the caller takes the op path)."""
    found = _arrays(input, target, weight, label_smoothing, reduction)
    if found is None:
        return None
    x, t = found
    native = _native.cross_entropy_forward(x, t, ignore_index)
    if native is not None:
        logp, loss, total, kept = native
        # (the rows kept: a mask only when some target is ignored)
        keep = None if kept == t.shape[0] else t != ignore_index
        safe = t if keep is None else np.where(keep, t, 0)
        return _nll_node(_log_softmax_node(input, logp), target, reduction, (safe, keep, ignore_index),
                         (loss, total, kept))
    picked = _targets(t, x.shape[1], ignore_index)
    if picked is None:
        return None
    return _nll_node(_log_softmax_node(input, None), target, reduction, picked + (ignore_index,), None)


def nll_loss(input: Tensor, target: Tensor, weight: Any, ignore_index: int, reduction: str) -> Tensor | None:
    """nll_loss of log-probabilities as one node; None where the fused loss does not run."""
    found = _arrays(input, target, weight, 0.0, reduction)
    if found is None:
        return None
    picked = _targets(found[1], found[0].shape[1], ignore_index)
    if picked is None:
        return None
    return _nll_node(input, target, reduction, picked + (ignore_index,), None)


def _nll_node(logp: Tensor, target: Tensor, reduction: str, picked: tuple, computed: tuple | None) -> Tensor:
    ctx = _NllLossCtx(NllLossFunction, (logp,))
    return _hang(ctx, logp, NllLossFunction.forward(ctx, logp, target, reduction, picked, computed))


class _NllLossCtx(FusedCtx):
    """The node's name is PyTorch's for cross_entropy's result."""

    def name(self) -> str:
        return "NllLossBackward0"


_NllLossCtx.__name__ = _NllLossCtx.__qualname__ = "NllLossBackward0"


class NllLossFunction(Function):
    """-logp[i, t_i] over the rows kept (targets not equal to ignore_index), reduced by
    `reduction` ('mean' divides by the number of rows kept: nan when none is, as PyTorch).
    `picked` is (safe targets, kept rows or None, ignore_index), from _targets; `computed`
    (per-row losses, their sum, rows kept) when the native forward computed them. The node's
    one input is logp (PyTorch's edges); the target is saved, its version checked."""

    _ctx_class = _NllLossCtx

    @staticmethod
    def forward(ctx: Any, logp: Tensor, target: Tensor, reduction: str, picked: tuple,
                computed: tuple | None = None) -> Tensor:
        L = logp._data
        n, c = L.shape
        safe, keep, ctx.ignore_index = picked
        if computed is not None:
            loss, total, count = computed
        else:
            loss = np.negative(L.reshape(-1).take(safe + _row_starts(n, c)))  # (a copy only if L is strided)
            if keep is not None:
                loss *= keep  # (the op path's -(picked * w): ignored rows give 0)
            count = n if keep is None else int(np.count_nonzero(keep))
            total = _add(loss, axis=None) if reduction != "none" else None
        dt = L.dtype.type
        if reduction == "mean":
            # np.mean's division of its sum; every row ignored: nan, as PyTorch (no 0/0 warning)
            out = np.asarray(total / dt(count) if count else dt("nan"))
        elif reduction == "sum":
            out = np.asarray(dt(total))
        else:
            out = loss
        ctx.save_for_backward(logp, target)
        ctx.reduction = reduction
        ctx.shape = L.shape
        ctx.safe, ctx.keep, ctx.count = safe, keep, count
        return Tensor._make(out)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        if STATE.enabled:
            from .. import autograd  # noqa: PLC0415
            from .functional.losses import _nll_loss_ops  # noqa: PLC0415

            logp, target = ctx.saved_tensors  # differentiated op by op: a graph of the gradient
            with enable_grad():
                loss = _nll_loss_ops(logp, target, ctx.reduction, ctx.ignore_index)
                return autograd.grad([loss], [logp], [g], create_graph=True, allow_unused=True)
        ctx.saved_tensors  # noqa: B018  (raises when the target was changed in place since)
        n, c = ctx.shape
        G = g._data
        grad = np.zeros((n, c), G.dtype)
        if ctx.reduction == "mean":
            # (count 0: every row ignored, the gradient is 0, not nan, as PyTorch's)
            scale = -(G / G.dtype.type(ctx.count)) if ctx.count else G.dtype.type(0)
        else:
            scale = np.negative(G)
        if ctx.keep is not None:
            scale = scale * ctx.keep
        grad.reshape(-1)[ctx.safe + _row_starts(n, c)] = scale
        return (Tensor._make(grad),)
