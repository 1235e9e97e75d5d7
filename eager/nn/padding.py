"""Padding modules (constant, zero, reflection, replication, circular; 1-3 dims), each a thin
Module over nn.functional.pad with PyTorch's names, arguments and reprs."""
from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from . import functional as F
from .module import Module


def _padding(padding: Any, n: int) -> tuple:
    """PyTorch's padding argument (an int for every side, or a 2n-tuple) as a 2n-tuple."""
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(int(p) for p in padding)
    if len(padding) != 2 * n:
        raise ValueError(f"expected padding of {2 * n} values (left/right per padded dim), got {padding}")
    return padding


class _Pad(Module):
    mode = "constant"
    dims = 1

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        self.padding = _padding(padding, self.dims)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"{type(self).__name__}: expected {self.dims + 1}D or {self.dims + 2}D input, "
                             f"got {input.ndim}D (shape {tuple(input.shape)})")
        if self.mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if self.mode == "constant" else "")


def _pad_class(name: str, mode: str, dims: int, constant: bool) -> type:
    if constant:
        def __init__(self, padding: Any, value: float = 0.0) -> None:
            _Pad.__init__(self, padding, value)
    else:
        def __init__(self, padding: Any) -> None:  # type: ignore[misc]
            _Pad.__init__(self, padding)
    doc = f"Pad the last {dims} dim(s) of a {dims + 1}-D or {dims + 2}-D input ({mode}). Mirrors torch.nn.{name}."
    return type(name, (_Pad,), {"__init__": __init__, "mode": mode, "dims": dims, "__doc__": doc,
                                "__module__": __name__})


ConstantPad1d = _pad_class("ConstantPad1d", "constant", 1, True)
ConstantPad2d = _pad_class("ConstantPad2d", "constant", 2, True)
ConstantPad3d = _pad_class("ConstantPad3d", "constant", 3, True)
ReflectionPad1d = _pad_class("ReflectionPad1d", "reflect", 1, False)
ReflectionPad2d = _pad_class("ReflectionPad2d", "reflect", 2, False)
ReplicationPad1d = _pad_class("ReplicationPad1d", "replicate", 1, False)
ReplicationPad2d = _pad_class("ReplicationPad2d", "replicate", 2, False)
ReplicationPad3d = _pad_class("ReplicationPad3d", "replicate", 3, False)
CircularPad1d = _pad_class("CircularPad1d", "circular", 1, False)
CircularPad2d = _pad_class("CircularPad2d", "circular", 2, False)


class ZeroPad1d(ConstantPad1d):  # type: ignore[misc,valid-type]
    """Pad the last dim with zeros. Mirrors torch.nn.ZeroPad1d."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ZeroPad2d(ConstantPad2d):  # type: ignore[misc,valid-type]
    """Pad the last two dims with zeros. Mirrors torch.nn.ZeroPad2d."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)
