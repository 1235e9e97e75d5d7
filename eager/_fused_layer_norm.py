"""layer_norm with weight and bias as one autograd node each way on the NumPy arrays, calling
eager's native layer-norm kernels (gmnative.kernels: layer_norm, layer_norm_backward) straight.

Why: through the op record (gmops.conv LAYER_NORM) the forward is one fused kernel already, but
its gradient is a second eager op (LAYER_NORM_BACKWARD) that the engine dispatches as any op:
the dispatch, its output wrapping and the multi-output split cost about as much as the
kernel's arithmetic on a small GPT's (16, 32, 64) activations. Here the backward node calls
the kernel itself and hands back the three arrays, and the forward hands the backward each
row's mean and rstd (gmnative.layer_norm_kernels), as PyTorch's native_layer_norm does, so the
backward does not compute them again (two of its four passes over the rows). The arithmetic
is the op path's kernels', so the values are the op path's. The node is NativeLayerNormBackward0, PyTorch's, with
one edge per input (None for an input that does not require grad).

It runs for float32/float64 plain eager tensors of C-contiguous NumPy memory, all three of
one dtype, no dispatch mode or trace, with the native kernels there; anything else (float16,
a weight or bias missing or of another dtype, a tracer, CuPy, an empty input) takes the op
path. A backward that records a graph (create_graph=True) differentiates the op on the saved
tensors.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gmnative import kernels as _kernels
from gmnative import layer_norm_kernels as _ln_kernels
from gmops import REGISTRY

from . import _dispatch
from ._grad_mode import STATE, enable_grad
from ._tensor import Tensor
from .autograd.function import Function, FunctionCtx
from .nn.parameter import Parameter

_PLAIN = (Tensor, Parameter)  # exact types: a subclass may override ops (__torch_function__)

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_ndarray = np.ndarray


class _LayerNormCtx(FunctionCtx):
    ndim: int
    eps: float
    bias: Tensor
    stats: np.ndarray

    def name(self) -> str:
        return "NativeLayerNormBackward0"


_LayerNormCtx.__name__ = _LayerNormCtx.__qualname__ = "NativeLayerNormBackward0"


class LayerNormFunction(Function):
    """(x - mean) * rstd * weight + bias over the trailing `ndim` dims (node
    NativeLayerNormBackward0); the backward the native kernel's three gradients."""

    _ctx_class = _LayerNormCtx

    @staticmethod
    def forward(ctx: Any, x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:  # noqa: ARG004
        raise RuntimeError("LayerNormFunction: build it with eager._fused_layer_norm.layer_norm "
                           "(the node is made there, with its kernel's output)")

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        x, weight = ctx.saved_tensors  # (raises when either was changed in place since)
        ndim, eps = ctx.ndim, ctx.eps
        needs = ctx.needs_input_grad
        if STATE.enabled:  # create_graph=True: the op's gradient, itself differentiable
            from . import autograd  # noqa: PLC0415

            bias = ctx.bias
            with enable_grad():
                y = REGISTRY["layer_norm"](x, weight, bias, ndim=ndim, eps=eps)
                wanted = [t for t, need in zip((x, weight, bias), needs) if need]
                got = iter(autograd.grad([y], wanted, [g], create_graph=True, allow_unused=True))
                return tuple(next(got) if need else None for need in needs)
        X, W, G = x._data, weight._data, g._data
        n = W.size
        rows, w = X.reshape(-1, n), W.reshape(-1)
        if type(G) is not _ndarray or G.dtype != X.dtype or not G.flags.c_contiguous:
            G = np.ascontiguousarray(np.asarray(G), dtype=X.dtype)
        found = _ln_kernels.layer_norm_backward_stats(G.reshape(-1, n), rows, w, eps, ctx.stats)
        if found is None:
            found = _kernels.layer_norm_backward(G.reshape(-1, n), rows, w, eps)
        if found is None:  # (the kernel library went away since the forward: the op's NumPy code)
            found = REGISTRY["layer_norm_backward"].forward(np, G, X, W, ndim=ndim, eps=eps)
            gx, gw, gb = (np.asarray(a) for a in found)
        else:
            gx, gw, gb = found
        # (reshaped only where the shape differs: a reshape to the same shape is a view, which
        # a leaf's .grad then stores only after asking who else holds its base)
        return (Tensor._make(gx if gx.shape == X.shape else gx.reshape(X.shape)) if needs[0] else None,
                Tensor._make(gw if gw.shape == W.shape else gw.reshape(W.shape)) if needs[1] else None,
                Tensor._make(gb if gb.shape == W.shape else gb.reshape(W.shape)) if needs[2] else None)


def layer_norm(input: Any, weight: Any, bias: Any, ndim: int, eps: float) -> Tensor | None:
    """layer_norm of `input` over its trailing `ndim` dims as one node, or None where the fused
    path does not run (the caller takes the op path). The caller has checked the shapes."""
    if type(input) is not Tensor or type(weight) not in _PLAIN or type(bias) not in _PLAIN \
            or _dispatch._n_modes_pushed:
        return None
    X, W, B = input._data, weight._data, bias._data
    if type(X) is not _ndarray or type(W) is not _ndarray or type(B) is not _ndarray:
        return None
    dt = X.dtype
    if dt not in _FLOATS or W.dtype != dt or B.dtype != dt or not X.size or not (
            X.flags.c_contiguous and W.flags.c_contiguous and B.flags.c_contiguous):
        return None
    n = W.size
    rows = X.reshape(-1, n)
    args = (input, weight, bias)
    if not STATE.enabled or not (input._requires_grad or weight._requires_grad or bias._requires_grad):
        out = _kernels.layer_norm(rows, W.reshape(-1), B.reshape(-1), eps)
        return None if out is None else Tensor._make(out.reshape(X.shape))
    found = _ln_kernels.layer_norm_stats(rows, W.reshape(-1), B.reshape(-1), eps)
    if found is None:
        return None
    out, stats = found
    result = Tensor._make(out.reshape(X.shape))
    ctx = _LayerNormCtx(LayerNormFunction, args)
    ctx.save_for_backward(input, weight)
    ctx.ndim, ctx.eps, ctx.bias, ctx.stats = ndim, eps, bias, stats
    ctx.next_functions = tuple([  # (a list first: a generator costs a frame per call)
        ((a.grad_fn, a._output_nr) if a.grad_fn is not None else (a._accumulator(), 0))
        if a._requires_grad else (None, 0)
        for a in args])
    ctx._out_meta = [(X.shape, result.dtype)]
    result._requires_grad = True
    result.grad_fn = ctx
    result._output_nr = 0
    return result


__all__ = ["LayerNormFunction", "layer_norm"]
