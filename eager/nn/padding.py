"""Padding modules (constant, zero, reflection, replication, circular; 1-3 dims), each a thin
Module over nn.functional.pad with PyTorch's names, arguments, bases (`_ConstantPadNd`,
`_ReflectionPadNd`, `_ReplicationPadNd`, `_CircularPadNd`: what isinstance checks name),
`__constants__` and reprs."""
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


def _check_dims(module: Module, input: Tensor, dims: int) -> None:
    if input.ndim not in (dims + 1, dims + 2):
        raise ValueError(f"{type(module).__name__}: expected {dims + 1}D or {dims + 2}D input "
                         f"(got {input.ndim}D input, shape {tuple(input.shape)})")


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]
    padding: tuple

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ModePadNd(Module):
    """The padding modes without a value (reflect, replicate, circular)."""

    __constants__ = ["padding"]
    padding: tuple
    mode = "reflect"
    dims = 1

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _padding(padding, self.dims)

    def forward(self, input: Tensor) -> Tensor:
        _check_dims(self, input, self.dims)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ReflectionPadNd(_ModePadNd):
    mode = "reflect"


class _ReplicationPadNd(_ModePadNd):
    mode = "replicate"


class _CircularPadNd(_ModePadNd):
    mode = "circular"


def _constant_class(name: str, dims: int) -> type:
    def __init__(self, padding: Any, value: float) -> None:
        _ConstantPadNd.__init__(self, value)
        self.padding = _padding(padding, dims)

    doc = (f"Pad the last {dims} dim(s) with a constant value. Mirrors torch.nn.{name}.")
    return type(name, (_ConstantPadNd,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


def _mode_class(name: str, base: type[_ModePadNd], dims: int) -> type:
    doc = f"Pad the last {dims} dim(s) of a {dims + 1}-D or {dims + 2}-D input ({base.mode}). Mirrors torch.nn.{name}."
    return type(name, (base,), {"dims": dims, "__doc__": doc, "__module__": __name__})


ConstantPad1d = _constant_class("ConstantPad1d", 1)
ConstantPad2d = _constant_class("ConstantPad2d", 2)
ConstantPad3d = _constant_class("ConstantPad3d", 3)
ReflectionPad1d = _mode_class("ReflectionPad1d", _ReflectionPadNd, 1)
ReflectionPad2d = _mode_class("ReflectionPad2d", _ReflectionPadNd, 2)
ReflectionPad3d = _mode_class("ReflectionPad3d", _ReflectionPadNd, 3)
ReplicationPad1d = _mode_class("ReplicationPad1d", _ReplicationPadNd, 1)
ReplicationPad2d = _mode_class("ReplicationPad2d", _ReplicationPadNd, 2)
ReplicationPad3d = _mode_class("ReplicationPad3d", _ReplicationPadNd, 3)
CircularPad1d = _mode_class("CircularPad1d", _CircularPadNd, 1)
CircularPad2d = _mode_class("CircularPad2d", _CircularPadNd, 2)
CircularPad3d = _mode_class("CircularPad3d", _CircularPadNd, 3)


class ZeroPad1d(ConstantPad1d):  # type: ignore[misc,valid-type]
    """Pad the last dim with zeros. Mirrors torch.nn.ZeroPad1d."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):  # type: ignore[misc,valid-type]
    """Pad the last two dims with zeros. Mirrors torch.nn.ZeroPad2d."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):  # type: ignore[misc,valid-type]
    """Pad the last three dims with zeros. Mirrors torch.nn.ZeroPad3d."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"
