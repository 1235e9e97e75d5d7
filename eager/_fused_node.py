"""The backward node of a fused eager op with one output, recorded as Function.apply records
it (nn._fused_linear, nn._fused_conv, nn._fused_cells, _fused_softmax, _fused_gelu,
nn._fused_losses).

Why one place: the fused paths skip apply's general machinery (no_grad block, output
re-wrapping) for speed, but the node they leave must be the one apply leaves (grad_fn,
output number 0, an edge per input to its node or its accumulator, the output's metadata),
and six copies of it had to be kept equal by hand. One call: the per-op cost is the
call itself (well under a microsecond beside the op's arrays)."""
from __future__ import annotations

from typing import Any

from ._tensor import Tensor


def attach(t: Tensor, ctx: Any, args: tuple, shape: tuple) -> Tensor:
    """t (of the given shape) made ctx's output 0, ctx's edges set from args (a tensor
    requiring grad links to its grad_fn, or a leaf's accumulator; anything else has none)."""
    t._requires_grad = True
    t.grad_fn = ctx
    t._output_nr = 0
    ctx.next_functions = tuple([  # (a list first: a generator costs a frame per call)
        ((a.grad_fn, a._output_nr) if a.grad_fn is not None else (a._accumulator(), 0))
        if isinstance(a, Tensor) and a._requires_grad else (None, 0)
        for a in args])
    ctx._out_meta = [(shape, t.dtype)]
    return t


def attach1(t: Tensor, ctx: Any, a: Tensor, shape: tuple) -> Tensor:
    """attach for one differentiable input `a` that requires grad (softmax, gelu, log_softmax's
    fused paths): the same node, without the loop (these paths run per op on small tensors)."""
    t._requires_grad = True
    t.grad_fn = ctx
    t._output_nr = 0
    fn = a.grad_fn
    ctx.next_functions = ((fn, a._output_nr) if fn is not None else (a._accumulator(), 0),)
    ctx._out_meta = [(shape, t.dtype)]
    return t
