"""`torch._dynamo.exc`: the exception types scripts catch around `torch.compile`.

`Unsupported` is what a `fullgraph=True` compile raises where the function cannot be captured
whole (a branch on data, `.item()`, ...): static's TraceError is one, so `except
torch._dynamo.exc.Unsupported` catches it, and (as PyTorch's) it is a RuntimeError. The types
are defined in the base layer (gmbase.errors), so that static's IR layer can derive from them
without importing eager; these are the same classes."""
from __future__ import annotations

from gmbase.errors import (
    BackendCompilerFailed,
    InternalTorchDynamoError,
    TorchDynamoException,
    UncapturedHigherOrderOpError,
    Unsupported,
)

__all__ = ["BackendCompilerFailed", "InternalTorchDynamoError", "TorchDynamoException", "UncapturedHigherOrderOpError",
           "Unsupported"]
