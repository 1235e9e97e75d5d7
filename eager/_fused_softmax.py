"""softmax and log_softmax over the last dimension as one autograd node each way, on the
NumPy arrays, with native kernels (gmnative/softmax_kernels.py).

Why: through the op records a softmax is five NumPy passes forward and its gradient four
eager ops backward (g * y, the row sum, the subtraction, the product), each a node of the
engine and a buffer of the whole tensor; on a small GPT's attention weights the pair cost
about 4x PyTorch's. Here the forward is one native call and the backward one more: the node
is SoftmaxBackward0 (LogSoftmaxBackward0), PyTorch's, with the one edge PyTorch's has.

It runs for the common case: float32/float64 plain eager tensors of NumPy memory, rank >= 1,
non-empty, over the last dimension, no dispatch mode or trace, with the native kernels there
(GRAPHMODE_EAGER_NATIVE unset or 1 and a compiler). Anything else (float16, another dim,
0-d, empty, a tracer, CuPy memory) takes the op path, which computes the same function. A
backward that records a graph (create_graph=True) differentiates the op on the saved input.
The output's version is checked at backward, as PyTorch checks the result it saved.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gmnative import softmax_kernels as _native
from gmops import REGISTRY

from . import _dispatch
from ._fused_node import attach1
from ._grad_mode import STATE, enable_grad
from ._tensor import Tensor
from .autograd.function import Function, FunctionCtx

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_softmax_forward = REGISTRY["softmax"].forward
_log_softmax_forward = REGISTRY["log_softmax"].forward
_ndarray = np.ndarray


class _SoftmaxCtx(FunctionCtx):
    def name(self) -> str:
        return "SoftmaxBackward0"


class _LogSoftmaxCtx(FunctionCtx):
    def name(self) -> str:
        return "LogSoftmaxBackward0"


_SoftmaxCtx.__name__ = _SoftmaxCtx.__qualname__ = "SoftmaxBackward0"
_LogSoftmaxCtx.__name__ = _LogSoftmaxCtx.__qualname__ = "LogSoftmaxBackward0"


def _modified(ctx: Any, shape: tuple, dtype: Any) -> RuntimeError:
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{dtype} {list(shape)}], which is output 0 of {ctx.name()}, is at version "
        f"{ctx.vc[0]}; expected version {ctx.version} instead. Hint: the result of softmax/log_softmax "
        "is saved for its gradient; modify a clone of it (.clone()) instead.")


class _RowsFunction(Function):
    """The shared backward of both nodes; `log` says which function this is."""

    log = False

    @classmethod
    def forward(cls, ctx: Any, x: Tensor, out: np.ndarray | None = None) -> Tensor:
        """The output (`out` when the caller computed it natively), with what backward reads."""
        if out is None:
            X = x._data
            out = REGISTRY["log_softmax" if cls.log else "softmax"].forward(np, np.asarray(X), dim=X.ndim - 1)
        result = Tensor._make(out)
        ctx.save_for_backward(x)
        ctx.out, ctx.out_dtype = out, result.dtype
        ctx.vc, ctx.version = result._vc, result._vc[0]
        return result

    @classmethod
    def backward(cls, ctx: Any, g: Tensor) -> tuple:
        if ctx.vc[0] != ctx.version:
            raise _modified(ctx, ctx.out.shape, ctx.out_dtype)
        if STATE.enabled:  # create_graph=True: the op's gradient, itself differentiable
            from . import autograd  # noqa: PLC0415

            (x,) = ctx.saved_tensors
            with enable_grad():  # (the op record itself: its vjp is in ops, so it differentiates again)
                y = REGISTRY["log_softmax" if cls.log else "softmax"](x, dim=x.ndim - 1)
                return autograd.grad([y], [x], [g], create_graph=True, allow_unused=True)
        G, Y = g._data, ctx.out
        grad = None
        if type(G) is _ndarray:
            grad = _native.backward(G if G.flags.c_contiguous else np.ascontiguousarray(G), Y, cls.log)
        if grad is None:  # (no kernel: the op's formulas on the arrays)
            if cls.log:
                grad = np.exp(Y)
                grad *= np.add.reduce(G, axis=-1, keepdims=True)
                grad = np.subtract(G, grad, out=grad)
            else:
                grad = np.multiply(G, Y)
                s = np.add.reduce(grad, axis=-1, keepdims=True)
                np.subtract(G, s, out=grad)
                grad *= Y
        return (Tensor._make(grad),)


class SoftmaxFunction(_RowsFunction):
    """softmax over the last dimension (node SoftmaxBackward0)."""

    _ctx_class = _SoftmaxCtx


class LogSoftmaxFunction(_RowsFunction):
    """log_softmax over the last dimension (node LogSoftmaxBackward0)."""

    _ctx_class = _LogSoftmaxCtx
    log = True


def _softmax_rows(x: np.ndarray) -> np.ndarray | None:
    """The op's softmax steps over the last dimension (its bits): the subtraction of the row
    maxima and the division by the row sums (NumPy's pairwise order) native, NumPy's exp
    between (NumPy's maximum, sum and divide over a short last axis were three quarters of
    the forward); None when the kernel does not run or a row's maximum is not finite (the
    op's forward then)."""
    return _native.softmax(x)


def _log_softmax_rows(x: np.ndarray) -> np.ndarray | None:
    """The op's log_softmax steps over the last dimension ((x - m) - log(sum(exp(x - m))), its
    bits) with the row maxima m from the kernel, as _softmax_rows; None when the kernel does
    not run or a row's maximum is not finite (the op's forward then)."""
    found = _native.row_max(x)
    if found is None or found[1]:
        return None
    d = np.subtract(x, found[0])
    lse = np.add.reduce(np.exp(d), axis=-1, keepdims=True)
    np.log(lse, out=lse)
    return np.subtract(d, lse, out=d)


def rows(input: Any, dim: int, log: bool) -> Tensor | None:
    """softmax (log_softmax when `log`) of `input` over `dim` (already normalized) as one
    node; None where the fused path does not run (the caller takes the op path)."""
    if type(input) is not Tensor or _dispatch._n_modes_pushed:
        return None
    x = input._data
    if type(x) is not _ndarray or x.dtype not in _FLOATS or dim != x.ndim - 1 or not x.size:
        return None
    if not _native.available():
        return None
    # the op's own NumPy forward: its bits, which compiled code (the decomposed softmax) reproduces
    out = (_log_softmax_rows if log else _softmax_rows)(x)
    if out is None:
        out = (_log_softmax_forward if log else _softmax_forward)(np, x, dim=dim)
    if not (input._requires_grad and STATE.enabled):
        return Tensor._make(out)
    fn = LogSoftmaxFunction if log else SoftmaxFunction
    ctx = fn._ctx_class(fn, (input,))
    return attach1(fn.forward(ctx, input, out), ctx, input, out.shape)


__all__ = ["LogSoftmaxFunction", "SoftmaxFunction", "rows"]
