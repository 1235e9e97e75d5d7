"""Exact GELU (approximate='none') as one autograd node each way on the NumPy arrays, with
eager's native GELU kernels (gmnative.kernels: gelu, gelu_grad).

Why: through the op record, GELU's gradient is two eager ops run by the engine (gelu_grad(x),
then the product with the incoming gradient), each with eager's per-op cost; on a small
GPT's MLP activations (16, 32, 256) the backward took about 475 us where its arithmetic is
about 300. Here the forward is the op's forward called straight (the same kernel, its bits)
and the backward g * gelu_grad(x) in one native pass (gmnative.gelu_kernels; else the kernel's
gelu_grad(x) multiplied by g in place): the op path's product, bit for bit. A float32 forward
that records the node computes gelu_grad(x) with it (one erf for both, gelu_and_grad: about
the cost of gelu_grad alone), kept on the node until its backward, which is then one product
(W5: about 100 us less a layer a step, for one more activation-sized array held). The node is
GeluBackward0, PyTorch's, with its one edge.

It runs for float32/float64 plain eager tensors of NumPy memory, no dispatch mode or trace,
with the native kernels there; anything else (approximate='tanh', float16, a tracer, CuPy)
takes the op path. A backward that records a graph (create_graph=True) differentiates the op
on the saved input.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gmnative import gelu_kernels as _gelu_kernels
from gmnative import kernels as _kernels
from gmops import REGISTRY

from . import _dispatch
from ._fused_node import attach1
from ._grad_mode import STATE, enable_grad
from ._tensor import Tensor
from .autograd.function import Function, FunctionCtx

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_ndarray = np.ndarray


class _GeluCtx(FunctionCtx):
    deriv: np.ndarray | None = None  # gelu'(x) made with the forward (float32), or None

    def name(self) -> str:
        return "GeluBackward0"

    def release(self) -> None:
        super().release()
        self.deriv = None


_GeluCtx.__name__ = _GeluCtx.__qualname__ = "GeluBackward0"


class GeluFunction(Function):
    """x * Phi(x) (node GeluBackward0); the backward g * (Phi(x) + x phi(x))."""

    _ctx_class = _GeluCtx

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        return Tensor._make(REGISTRY["gelu"].forward(np, x._data, approximate="none"))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        (x,) = ctx.saved_tensors  # (raises when x was changed in place since)
        if STATE.enabled:  # create_graph=True: the op's gradient, itself differentiable
            from . import autograd  # noqa: PLC0415

            with enable_grad():
                y = REGISTRY["gelu"](x, approximate="none")
                return autograd.grad([y], [x], [g], create_graph=True, allow_unused=True)
        G = g._data
        d = ctx.deriv
        if d is not None and type(G) is _ndarray and G.shape == d.shape and G.dtype == d.dtype:
            return (Tensor._make(np.multiply(G, d)),)  # (g * gelu_grad(x): the forward made gelu_grad(x))
        found = _gelu_kernels.gelu_backward(G, x._data) if type(G) is _ndarray else None
        if found is not None:  # one pass: g * gelu_grad(x), the two steps' bits
            return (Tensor._make(found),)
        d = REGISTRY["gelu_grad"].forward(np, x._data)
        if type(d) is _ndarray and d.shape == np.shape(G) and d.dtype == G.dtype and d.flags.writeable:
            np.multiply(G, d, out=d)  # (g * gelu_grad(x), the op path's product)
        else:
            d = np.multiply(G, d)
        return (Tensor._make(d),)


def gelu(input: Any, approximate: str) -> Tensor | None:
    """GELU of `input` as one node; None where the fused path does not run (the caller takes
    the op path)."""
    if approximate != "none" or type(input) is not Tensor or _dispatch._n_modes_pushed:
        return None
    x = input._data
    if type(x) is not _ndarray or x.dtype not in _FLOATS or _kernels.kernels() is None:
        return None
    if not (input._requires_grad and STATE.enabled):
        return Tensor._make(REGISTRY["gelu"].forward(np, x, approximate="none"))
    ctx = _GeluCtx(GeluFunction, (input,))
    both = _gelu_kernels.gelu_and_grad(x)  # float32: the derivative with the forward, erf once
    if both is None:
        result = GeluFunction.forward(ctx, input)
    else:
        ctx.save_for_backward(input)
        result = Tensor._make(both[0])
        ctx.deriv = both[1]
    return attach1(result, ctx, input, result._data.shape)


__all__ = ["GeluFunction", "gelu"]
