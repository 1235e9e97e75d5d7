"""`eager.utils.checkpoint`: activation checkpointing, as torch.utils.checkpoint. The forward
runs without recording a graph, so the segment's intermediate tensors are freed at once; the
backward runs it again with recording (with the random-number state it first saw, so dropout
draws the same masks) and backpropagates through that.

Inside a function static.compile traces, checkpoint is the function itself: what to keep and
what to recompute is the compiler's rematerialization pass's decision there."""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from .. import autograd
from .._api import TensorAPI
from .._factories import get_rng_state, set_rng_state, tensor
from .._grad_mode import enable_grad, no_grad
from .._tensor import Tensor
from ..autograd.function import Function

__all__ = ["checkpoint", "checkpoint_sequential"]


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx: Any, run: Callable, preserve_rng: bool, anchor: Any, *args: Any) -> Any:
        ctx.run, ctx.args = run, args
        ctx.rng_state = get_rng_state() if preserve_rng else None
        with no_grad():
            return run(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        inputs = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a for a in ctx.args]
        if ctx.rng_state is not None:
            now = get_rng_state()
            set_rng_state(ctx.rng_state)  # the draws the forward made, again
        try:
            with enable_grad():
                outputs = ctx.run(*inputs)
        finally:
            if ctx.rng_state is not None:
                set_rng_state(now)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if pairs:
            autograd.backward([o for o, _ in pairs], [g for _, g in pairs])  # parameters' .grad accumulate here
        return (None, None, None, *[a.grad if isinstance(a, Tensor) else None for a in inputs])


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None, preserve_rng_state: bool = True,
               **kwargs: Any) -> Any:
    """function(*args, **kwargs), its intermediates recomputed in backward instead of kept.

    use_reentrant=True (PyTorch's old default; None warns, as PyTorch does, and means True):
    the outputs require grad only when an input does, so a segment whose inputs need no
    gradient gives its parameters none, with PyTorch's warning. use_reentrant=False: the
    outputs require grad whenever grad mode is on, so parameters used inside get gradients
    either way (PyTorch's recommended mode). Keyword arguments are passed through."""
    if kwargs:
        def run(*a: Any) -> Any:
            return function(*a, **kwargs)
    else:
        run = function
    if any(isinstance(a, TensorAPI) and not isinstance(a, Tensor) for a in args):
        return run(*args)  # traced by static: see the module docstring
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly; it "
                      "defaults to True here, as in PyTorch", UserWarning, stacklevel=2)
        use_reentrant = True
    needs = any(isinstance(a, Tensor) and a.requires_grad for a in args)
    if use_reentrant and not needs:
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", UserWarning,
                      stacklevel=2)
    anchor = tensor(0.0, requires_grad=not use_reentrant)  # makes the node record without an input needing it
    return _Checkpoint.apply(run, preserve_rng_state, anchor, *args)


def checkpoint_sequential(functions: Sequence[Callable] | Any, segments: int, input: Any,  # noqa: A002
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run a sequence of modules (or an nn.Sequential) in `segments` checkpointed pieces; the
    last piece runs normally, as in PyTorch."""
    funcs = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be at least 1, got {segments}")
    size = max(1, len(funcs) // segments)

    def run_range(start: int, end: int) -> Callable:
        def run(x: Any) -> Any:
            for f in funcs[start:end]:
                x = f(x)
            return x
        return run

    start = 0
    for _ in range(segments - 1):
        end = min(start + size, len(funcs))
        if start >= end:
            break
        input = checkpoint(run_range(start, end), input, use_reentrant=use_reentrant, **kwargs)
        start = end
    return run_range(start, len(funcs))(input)
