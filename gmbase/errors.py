"""Exception types raised across layers, defined in the lowest so that a lower layer can raise
what a higher one documents without importing it.

They are PyTorch's `torch._dynamo.exc` types (`eager._dynamo.exc` re-exports them under those
names): `Unsupported` is what a `fullgraph=True` compile raises where the function cannot be
captured whole (a branch on data, `.item()`, ...). static's TraceError, which the IR layer
defines (static.errors), is one, so `except torch._dynamo.exc.Unsupported` catches it; as
PyTorch's, it is a RuntimeError."""
from __future__ import annotations


class TorchDynamoException(RuntimeError):
    """The base of the compiler's errors (PyTorch's name)."""


class Unsupported(TorchDynamoException):
    """The function cannot be captured in one graph (static.TraceError is one)."""


class BackendCompilerFailed(TorchDynamoException):
    """A backend failed to compile a captured graph."""


class UncapturedHigherOrderOpError(TorchDynamoException):
    """A control-flow operator (torch.cond, while_loop, scan) whose functions break its rules
    (results whose types differ from the carry's or between branches)."""


class InternalTorchDynamoError(TorchDynamoException):
    """An error of the compiler itself, not of the user's program."""


__all__ = ["BackendCompilerFailed", "InternalTorchDynamoError", "TorchDynamoException", "UncapturedHigherOrderOpError",
           "Unsupported"]
