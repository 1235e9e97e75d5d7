"""F.dropout in training mode as one native pass and one autograd node on the NumPy arrays.

Why: op by op, dropout is a uniform draw, a comparison, a cast, a scalar product and the
product with the input: five array passes, four eager ops and their backward nodes, about 320
us of a small GPT's training step (W5, seven dropout layers) where PyTorch's take about 150.
Here gmnative.dropout_kernels draws, compares and writes x * s (s = keep * scale) in one
threaded pass, and the node's backward is g * s: the op path's values bit for bit, from the
same draws of eager's generator (the masks, and the generator's state afterwards, are the
ones `rand_like(x) >= p` gives: manual_seed, checkpoint's replay and a compiled step's masks
see no difference). The node is MulBackward0, as PyTorch's CPU dropout (input * mask) names it.

It runs for float32/float64 plain eager tensors of NumPy memory, drawing from eager's global
generator with no dispatch mode, trace (its draw hook answering on this thread: importing static
installs the hook, which alone changes nothing) or vmap active; anything else takes the op path.
A backward that records a graph (create_graph=True) multiplies by the saved mask with eager's
ops, so it is differentiable again.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gmnative import dropout_kernels as _kernels

from .. import _dispatch
from .._factories import random as _random
from .._fused_node import attach1
from .._grad_mode import STATE
from .._tensor import Tensor
from ..autograd.function import Function, FunctionCtx

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_ndarray = np.ndarray


class _MulCtx(FunctionCtx):
    def name(self) -> str:
        return "MulBackward0"


_MulCtx.__name__ = _MulCtx.__qualname__ = "MulBackward0"


class DropoutFunction(Function):
    """x * s, s = (draw >= p) / (1 - p) (node MulBackward0); the backward g * s."""

    _ctx_class = _MulCtx

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:  # (the node is made by `dropout` below)
        raise RuntimeError("DropoutFunction is applied through eager.nn.functional.dropout only")

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        (s,) = ctx.saved_tensors  # (raises after the graph was freed)
        if STATE.enabled:  # create_graph=True: a product eager records
            return (g * s,)
        G = g._data
        if type(G) is _ndarray and G.shape == s._data.shape and G.dtype == s._data.dtype:
            return (Tensor._make(np.multiply(G, s._data)),)
        return (g * s,)


def dropout(input: Any, p: float) -> Tensor | None:
    """Dropout of `input` (0 < p < 1, training) as one pass and node; None where the fused
    path does not run (the caller takes the op path)."""
    if type(input) is not Tensor or _dispatch._n_modes_pushed:
        return None
    x = input._data
    if type(x) is not _ndarray or x.dtype not in _FLOATS or x.size == 0:
        return None
    if _random.VMAP_DRAWS.rule is not None or _random.VMAP_DRAWS.lead or _random.draw_hook_answers():
        return None  # (a trace records the draw: static installs its hook at import, so ask whether one runs)
    grad = input._requires_grad and STATE.enabled
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)  # (the draws follow the logical order, as rand_like's)
    scale = 1.0 / (1.0 - p)
    found = _kernels.dropout(_random._RNG["numpy"], x, p, scale, grad)
    if found is None:
        return None
    _random._DRAWS.count += 1  # (static counts draws to refuse traced functions that draw)
    y, s = found
    result = Tensor._make(y)
    if not grad:
        return result
    ctx = _MulCtx(DropoutFunction, (input,))
    ctx.save_for_backward(Tensor._make(s))
    return attach1(result, ctx, input, y.shape)


__all__ = ["DropoutFunction", "dropout"]
