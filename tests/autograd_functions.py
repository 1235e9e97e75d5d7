"""Custom autograd Functions shared by the eager and the static tests (the same Function
must behave the same run eagerly and traced into a compiled graph)."""
from __future__ import annotations

from eager.autograd import Function


class Exp(Function):
    """exp(x), saving its output for the backward (the PyTorch documentation's example)."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


class FailingBackward(Function):
    """x * 2 whose backward raises: what an error inside the backward pass leaves behind
    (the grad mode restored, anomaly mode's notes)."""

    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("backward of FailingBackward fails")
