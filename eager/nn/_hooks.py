"""Module hooks that need autograd: `register_full_backward_hook`'s hook sees the gradients
of a module's inputs and outputs, as PyTorch's does.

The module's tensor inputs pass through one identity Function before forward and its tensor
outputs through another after it. The outputs' backward records grad_output; the inputs'
backward, which runs once all of the module's gradients have arrived, calls each hook with
(module, grad_input, grad_output) and may replace grad_input. Where no input requires grad,
the hooks run from the outputs' backward with grad_input all None, as in PyTorch."""
from __future__ import annotations

from typing import Any

from .._api import TensorAPI
from .._tensor import Tensor
from ..autograd.function import Function


class _Record:
    """What one call of a hooked module shares between its two identity Functions."""

    def __init__(self, module: Any, n_inputs: int) -> None:
        self.module = module
        self.n_inputs = n_inputs
        self.grad_output: tuple | None = None
        self.inputs_wait = False  # the inputs' identity will call the hooks


def _call_hooks(record: _Record, grad_input: tuple) -> tuple:
    for hook in list(record.module._backward_hooks.values()):
        replaced = hook(record.module, grad_input, record.grad_output)
        if replaced is not None:
            replaced = tuple(replaced) if isinstance(replaced, (tuple, list)) else (replaced,)
            if len(replaced) != len(grad_input):
                raise RuntimeError(f"backward hook of {type(record.module).__name__} returned {len(replaced)} "
                                   f"gradient(s), but the module has {len(grad_input)} tensor input(s)")
            grad_input = replaced
    return grad_input


class _Identity(Function):
    """Views of the tensors (new autograd nodes, same data); subclasses say what backward does."""

    @staticmethod
    def forward(ctx: Any, record: _Record, *tensors: Tensor) -> Any:
        ctx.record = record
        return tuple(t.view_as(t) for t in tensors) if len(tensors) > 1 else tensors[0].view_as(tensors[0])


class _InputIdentity(_Identity):
    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        return (None, *_call_hooks(ctx.record, tuple(grads)))


class _OutputIdentity(_Identity):
    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        record = ctx.record
        record.grad_output = tuple(grads)
        if not record.inputs_wait:
            _call_hooks(record, (None,) * record.n_inputs)
        return (None, *grads)


def _refuse_inside_a_trace(module: Any, args: tuple, kwargs: dict) -> None:
    """A backward hook is Python run during backward: traced, it would run once, at tracing,
    and never again. As Tensor.register_hook on a traced value does, refuse (a compiled
    function with fallback="eager" then runs eagerly)."""
    values = list(args) + list(kwargs.values())
    if any(isinstance(v, TensorAPI) and not isinstance(v, Tensor) for v in values):
        import importlib  # noqa: PLC0415

        static_tracer = importlib.import_module("static.tracing.tracer")
        raise static_tracer.TraceError(
            f"{static_tracer.user_location()}: {type(module).__name__} has a full backward hook, which runs "
            "eagerly only (traced, it would run once, when compiling); remove it, or compile with "
            "fallback='eager'")


def call_with_backward_hooks(module: Any, args: tuple, kwargs: dict) -> Any:
    """module.forward(*args, **kwargs) with its tensor inputs and outputs wrapped (see above)."""
    _refuse_inside_a_trace(module, args, kwargs)
    positions = [k for k, a in enumerate(args) if isinstance(a, Tensor)]
    record = _Record(module, len(positions))
    if any(args[k].requires_grad for k in positions):
        record.inputs_wait = True
        wrapped = _InputIdentity.apply(record, *(args[k] for k in positions))
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        replaced = list(args)
        for k, t in zip(positions, wrapped):
            replaced[k] = t
        args = tuple(replaced)
    result = module.forward(*args, **kwargs)
    outputs = result if isinstance(result, tuple) else (result,)
    tensor_at = [k for k, o in enumerate(outputs) if isinstance(o, Tensor) and o.requires_grad]
    if not tensor_at:
        return result
    wrapped = _OutputIdentity.apply(record, *(outputs[k] for k in tensor_at))
    wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
    out = list(outputs)
    for k, t in zip(tensor_at, wrapped):
        out[k] = t
    return tuple(out) if isinstance(result, tuple) else out[0]
