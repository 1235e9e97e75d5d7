"""`eager.autograd`: backward/grad, custom Functions, gradient checks, anomaly mode."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from . import functional  # noqa: F401
from .anomaly import detect_anomaly, set_detect_anomaly
from .engine import run_backward
from .function import Function, FunctionCtx
from .gradcheck import gradcheck, gradgradcheck
from .variable import Variable

__all__ = ["backward", "grad", "Variable", "Function", "FunctionCtx", "gradcheck", "gradgradcheck",
           "detect_anomaly", "set_detect_anomaly", "functional"]


def _as_list(x) -> list:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _make_grads(outputs, grad_outputs, create_graph: bool) -> list:
    grads = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if i < len(grad_outputs) else None
        if g is None:
            data = getattr(out, "_data", None)  # (a traced value has none: the general path)
            if type(data) is np.ndarray and data.size == 1 and data.dtype.kind == "f":
                # the common `loss.backward()`: a one of the loss's dtype, made directly (ones_like's
                # factory path, its argument parsing and dispatch, and these function-level
                # imports cost as much as a tiny backward pass itself)
                # (a 0-d loss: np.array(1) is NumPy's C constructor, np.ones a Python function)
                one = np.array(1, data.dtype) if not data.ndim else np.ones(data.shape, data.dtype)
                grads.append(out._make(one))
                continue
            from .._factories import ones_like  # noqa: PLC0415

            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.is_floating_point():
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")
            g = ones_like(out)
        else:
            from .._tensor import Tensor  # noqa: PLC0415

            if not isinstance(g, Tensor):
                from .._factories import tensor  # noqa: PLC0415

                g = tensor(g, dtype=out.dtype, device=out.device)
            if tuple(g.shape) != tuple(out.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape!r} and output[{i}] "
                    f"has a shape of {out.shape!r}."
                )
            if not create_graph:
                g = g.detach()
        grads.append(g)
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
    """Accumulate d(tensors)/d(leaf) into each leaf's `.grad`."""
    tensors = _as_list(tensors)
    grads = _make_grads(tensors, _as_list(grad_tensors), create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    run_backward(tensors, grads, retain_graph, create_graph, inputs=_as_list(inputs) or None)


class _GradHook:
    """Set by static: `autograd.grad` of traced values (None until static is imported)."""

    fn: Any = None


GRAD_HOOK = _GradHook()


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused: bool | None = None, is_grads_batched: bool = False,
         materialize_grads: bool = False) -> tuple:
    """The gradients of `outputs` with respect to `inputs`, returned rather than accumulated.
    `only_inputs` is accepted and ignored, as PyTorch ignores it (WGAN-GP scripts pass it)."""
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.",
                      FutureWarning, stacklevel=2)
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(is_grads_batched=True): batched gradients are not supported here; "
                                  "call grad once per grad_outputs row, or use eager.func.vmap over a function "
                                  "that calls grad")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    allow_unused = bool(allow_unused or materialize_grads)
    outputs, inputs = _as_list(outputs), _as_list(inputs)
    if GRAD_HOOK.fn is not None and any(hasattr(type(o), "__graphmode_inplace__") for o in outputs):
        # traced values (inside a compiled function): static records the gradients into the graph
        return GRAD_HOOK.fn(outputs, inputs, _as_list(grad_outputs), create_graph, allow_unused, materialize_grads)
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads = _make_grads(outputs, _as_list(grad_outputs), create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    result = run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs, accumulate=False)
    out = []
    for t, g in zip(inputs, result):
        if g is None:
            if materialize_grads:
                from .._factories import zeros_like  # noqa: PLC0415

                g = zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the graph. "
                    "Set allow_unused=True if this is the desired behavior."
                )
        out.append(g)
    return tuple(out)
