"""F.linear on a batch of rows as one autograd node on the NumPy arrays (PyTorch's addmm).

Why: op by op, `x @ w.t() + b` is three ops forward (the transpose view, the product, the
bias add) and three backward nodes, each with eager's per-op cost, on products that take a
few microseconds: a (32, 128) -> 10 Linear forward and backward cost 100 us where PyTorch's
takes about 40. Here the forward is one product with the bias added in place, the backward
the three gradients written out: dX = G W, dW = G^T X, db = sum of G's rows (each only when
asked for), no transposed copies.

It runs for the common case only: 2-d input, 2-d weight and 1-d bias (or none) of one float
dtype (float32/float64), shapes that agree, plain eager tensors over NumPy arrays, no dispatch
mode or trace. Anything else (and every error message) takes the op-by-op path. A backward that
records a graph (create_graph=True) differentiates the op-by-op linear on the saved inputs, so
higher derivatives stay exact. The node is named AddmmBackward0 (MmBackward0 without a bias),
as PyTorch's.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gmnative import kernels as _gemm
from gmnative import softmax_kernels as _kernels

from .. import _dispatch
from .._fused_node import attach
from .._grad_mode import STATE
from .._tensor import Tensor
from ..autograd.function import Function, FunctionCtx
from ._fused_cells import _grads_by_recompute
from .parameter import Parameter

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_PLAIN = (Tensor, Parameter)  # exact types: a subclass may override ops (__torch_function__)


def eligible(x: Any, w: Any, b: Any) -> bool:
    """Whether the fused linear may run (see the module docstring)."""
    if _dispatch._n_modes_pushed or type(x) not in _PLAIN or type(w) not in _PLAIN:
        return False
    X, W = x._data, w._data
    if type(X) is not np.ndarray or type(W) is not np.ndarray or X.ndim != 2 or W.ndim != 2:
        return False
    dt = X.dtype
    if dt not in _FLOATS or W.dtype is not dt or X.shape[1] != W.shape[1]:
        return False
    if b is None:
        return True
    if type(b) not in _PLAIN:
        return False
    B = b._data
    return type(B) is np.ndarray and B.dtype is dt and B.shape == (W.shape[0],)


_SPLIT_MIN = _gemm.GEMM_SPLIT_MIN


def _mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for 2-d NumPy operands; a product of GEMM_SPLIT_MIN multiply-adds or more split by
    rows across the kernels' threads, one single-threaded call each (gmnative.kernels.matmul,
    what the matmul op does; float32 on the project's own sgemm, gmnative.gemm, whose bits do
    not depend on the split): BLAS runs one thread in this process, so the plain product used
    one core where PyTorch's linear uses them all (W5's products are 2-8 million
    multiply-adds). The op path's and the compiled code's bits either way."""
    if a.shape[0] * a.shape[1] * b.shape[1] >= _SPLIT_MIN:
        out = _gemm.matmul(a, b)
        if out is not None:
            return out
    return a @ b


def _linear_ops(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """The op-by-op linear (what a graph-recording backward differentiates)."""
    from .. import _functional as _F  # noqa: PLC0415

    out = _F.matmul(x, w.t())
    return out if b is None else out + b


class _AddmmCtx(FunctionCtx):
    def name(self) -> str:
        return "AddmmBackward0"


class _MmCtx(FunctionCtx):
    def name(self) -> str:
        return "MmBackward0"


_AddmmCtx.__name__ = _AddmmCtx.__qualname__ = "AddmmBackward0"
_MmCtx.__name__ = _MmCtx.__qualname__ = "MmBackward0"


def _forward(ctx: Any, x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    X, W = x._data, w._data
    out = _mm(X, W.T)
    if b is not None:
        out += b._data
    ctx.save_for_backward(x, w, b)
    return Tensor._make(out)


def _backward(ctx: Any, g: Tensor) -> tuple:
    if STATE.enabled:
        return _grads_by_recompute(ctx, _linear_ops, (g,))
    x, w, b = ctx.saved_tensors
    G = g._data
    needs = ctx.needs_input_grad
    dx = Tensor._make(_mm(G, w._data)) if needs[0] else None
    dw = Tensor._make(_mm(G.T, x._data)) if needs[1] else None
    db = None
    if b is not None and needs[2]:
        # G.sum(0) with its bits, as one native pass when the kernel runs (NumPy's reduction
        # over the rows costs 2-3x on a (1024, 128) gradient)
        found = _kernels.column_sum(G) if type(G) is np.ndarray and G.flags.c_contiguous else None
        db = Tensor._make(G.sum(0) if found is None else found)
    return dx, dw, db


class AddmmFunction(Function):
    """x w^T + b as one node named AddmmBackward0."""

    _ctx_class = _AddmmCtx
    forward = staticmethod(_forward)
    backward = staticmethod(_backward)


class MmFunction(Function):
    """x w^T as one node named MmBackward0."""

    _ctx_class = _MmCtx
    forward = staticmethod(_forward)
    backward = staticmethod(_backward)


def linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """The fused linear (call only when `eligible`).

    What Function.apply does, for this one case: one output array, the inputs saved as they
    are, so no no_grad block, no output re-wrapping and no output saving (apply's general
    machinery is about half the cost of a small forward)."""
    X, W = x._data, w._data
    out = _mm(X, W.T)
    if b is not None:
        out += b._data
    t = Tensor._make(out)
    if not STATE.enabled:
        return t
    args = (x, w, b)
    if not (x._requires_grad or w._requires_grad or (b is not None and b._requires_grad)):
        return t
    fn = MmFunction if b is None else AddmmFunction
    ctx = fn._ctx_class(fn, args)
    ctx.save_for_backward(x, w, b)
    return attach(t, ctx, args, out.shape)
