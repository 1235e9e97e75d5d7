"""Tensor-only conveniences: new tensors like this one (new_empty, new_empty_strided, the
legacy new), the dtype shorthands byte/char/short/bfloat16, get_device and output_nr, the
post-accumulate-grad hook, apply_/map_ and equal.

These are methods of the shared Tensor API (eager tensors and static's traced values alike);
the ones that need data (apply_, map_) or the autograd graph (the hook) say so."""
from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from .. import _functional as _F


def _size_args(name: str, size: tuple[Any, ...]) -> tuple[int, ...]:
    sizes = _F._sizes(size)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {list(sizes)} ({name})")
    return sizes


def new_empty(self: Any, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
              layout: Any = None, pin_memory: bool = False) -> Any:
    """An uninitialized tensor of `size` with this tensor's dtype and device unless given (its
    values are unspecified, as PyTorch's; here they are zeros). Mirrors torch.Tensor.new_empty."""
    from .._factories import empty  # noqa: PLC0415

    sizes = _size_args("new_empty", size)
    return empty(*sizes, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_empty_strided(self: Any, size: Any, stride: Any, *, dtype: Any = None, device: Any = None,
                      requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Any:
    """An uninitialized tensor of `size` whose elements are laid out `stride` elements apart,
    with this tensor's dtype and device unless given. The strides are honoured: the tensor is
    a strided view of a buffer just large enough (overlapping strides share elements, as in
    PyTorch). Mirrors torch.Tensor.new_empty_strided."""
    from .._tensor import Tensor  # noqa: PLC0415

    sizes = _size_args("new_empty_strided", tuple(size) if isinstance(size, (tuple, list)) else (size,))
    strides = tuple(int(s) for s in (stride if isinstance(stride, (tuple, list)) else (stride,)))
    if len(strides) != len(sizes):
        raise RuntimeError(f"dimensionality of sizes ({len(sizes)}) must match dimensionality of strides "
                           f"({len(strides)})")
    if any(s < 0 for s in strides):
        raise RuntimeError(f"new_empty_strided: strides must be non-negative, got {list(strides)}")
    d = _dtypes.as_dtype(dtype or self.dtype)
    dev = device or self.device
    if not isinstance(self, Tensor) or getattr(dev, "type", str(dev)) != "cpu":
        if strides != _row_major_strides(sizes):
            raise NotImplementedError("new_empty_strided: strides other than row-major need an eager CPU tensor")
        return new_empty(self, *sizes, dtype=d, device=dev, requires_grad=requires_grad)
    extent = 0 if 0 in sizes else 1 + builtins.sum((n - 1) * s for n, s in zip(sizes, strides))
    buffer = np.zeros(extent, dtype=d.np)
    item = buffer.itemsize
    arr = np.lib.stride_tricks.as_strided(buffer, sizes, tuple(s * item for s in strides))
    out = Tensor._make(arr)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _row_major_strides(sizes: tuple[int, ...]) -> tuple[int, ...]:
    out, step = [], 1
    for n in reversed(sizes):
        out.append(step)
        step *= builtins.max(n, 1)
    return tuple(reversed(out))


def new(self: Any, *args: Any, device: Any = None) -> Any:
    """The legacy constructor: `x.new()` an empty tensor, `x.new(2, 3)` / `x.new(torch.Size)`
    an uninitialized one of that size, `x.new(tensor)` that tensor (same dtype required),
    `x.new(data)` a tensor of data; this tensor's dtype and device. Mirrors torch.Tensor.new."""
    from .._factories import empty, tensor  # noqa: PLC0415
    from .._tensor_metadata import Size  # noqa: PLC0415

    dev = device or self.device
    if not args:
        return empty(0, dtype=self.dtype, device=dev)
    if len(args) == 1:
        (arg,) = args
        if isinstance(arg, Size):
            return empty(*tuple(arg), dtype=self.dtype, device=dev)
        if hasattr(arg, "shape") and hasattr(arg, "dtype") and not isinstance(arg, np.ndarray):
            if arg.dtype != self.dtype:
                raise TypeError(f"expected {self.dtype} (got {arg.dtype})")
            return arg
        if isinstance(arg, (list, tuple, np.ndarray)):
            return tensor(arg, dtype=self.dtype, device=dev)
    if all(isinstance(a, builtins.int) and not isinstance(a, builtins.bool) for a in args):
        return empty(*_size_args("new", args), dtype=self.dtype, device=dev)
    raise TypeError(f"new() received an invalid combination of arguments: {tuple(type(a).__name__ for a in args)}; "
                    f"expected (), (*sizes), (torch.Size), (Tensor) or (sequence data)")


def byte(self: Any) -> Any:
    """This tensor as uint8 (itself if it already is). Mirrors torch.Tensor.byte."""
    return _F.to_dtype(self, _dtypes.uint8)


def char(self: Any) -> Any:
    """This tensor as int8 (itself if it already is). Mirrors torch.Tensor.char."""
    return _F.to_dtype(self, _dtypes.int8)


def short(self: Any) -> Any:
    """This tensor as int16 (itself if it already is). Mirrors torch.Tensor.short."""
    return _F.to_dtype(self, _dtypes.int16)


def bfloat16(self: Any) -> Any:
    """This tensor as bfloat16: eager's arrays (NumPy's) have no bfloat16, so this raises the
    TypeError that names the missing dtype. Mirrors torch.Tensor.bfloat16."""
    return _F.to_dtype(self, _dtypes.as_dtype("bfloat16"))


def get_device(self: Any) -> int:
    """-1 for a CPU tensor, else the GPU's index. Mirrors torch.Tensor.get_device."""
    dev = self.device
    if getattr(dev, "type", "cpu") == "cpu":
        return -1
    index = getattr(dev, "index", None)
    return 0 if index is None else int(index)


def output_nr(self: Any) -> int:
    """Which output of its grad_fn this tensor is (0 for a leaf). Mirrors torch.Tensor.output_nr."""
    if getattr(self, "grad_fn", None) is None:
        return 0
    return int(getattr(self, "_output_nr", 0))


def register_post_accumulate_grad_hook(self: Any, hook: Callable[[Any], None]) -> Any:
    """`hook(tensor)` runs after backward has accumulated this leaf's gradient into `.grad`
    (an optimizer step fused into backward reads `tensor.grad` there); its return value is
    ignored. Returns a handle whose remove() unregisters it. Leaves only, as PyTorch.
    Mirrors torch.Tensor.register_post_accumulate_grad_hook."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    import weakref  # noqa: PLC0415

    target = weakref.ref(self)

    def after_accumulate(grad_inputs: Any, grad_outputs: Any) -> None:
        leaf = target()
        if leaf is not None:
            hook(leaf)

    return self._accumulator().register_hook(after_accumulate)


def _cpu_values(self: Any, name: str) -> np.ndarray:
    if getattr(self, "requires_grad", False):  # (a Python function per element: no gradient, as PyTorch refuses)
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    if getattr(self.device, "type", "cpu") != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    return np.asarray(_F._host(self))  # (a traced value refuses this with static's TraceError)


def _write_values(self: Any, values: list[Any], name: str) -> Any:
    from .._factories import tensor  # noqa: PLC0415
    from .._grad_mode import no_grad  # noqa: PLC0415

    new_values = tensor(np.asarray(values, dtype=self.dtype.np).reshape(tuple(self.shape)), dtype=self.dtype)
    with no_grad():
        self.copy_(new_values)
    return self


def apply_(self: Any, callable: Callable[[Any], Any]) -> Any:  # noqa: A002  (PyTorch's parameter name)
    """Replace each element with callable(element) (a Python number in, a number out), in
    place; CPU only and slow, as PyTorch warns. Mirrors torch.Tensor.apply_."""
    data = _cpu_values(self, "apply_")
    return _write_values(self, [callable(v) for v in data.reshape(-1).tolist()], "apply_")


def map_(self: Any, tensor: Any, callable: Callable[[Any, Any], Any]) -> Any:  # noqa: A002
    """Replace each element with callable(element, other element), `tensor` broadcast to this
    tensor's shape; in place, CPU only. Mirrors torch.Tensor.map_."""
    data = _cpu_values(self, "map_")
    values = _cpu_values(tensor, "map_")
    try:
        other = np.broadcast_to(values, data.shape)
    except ValueError:
        raise RuntimeError(f"map_: the tensor of shape {list(values.shape)} cannot be expanded to this tensor's "
                           f"shape {list(data.shape)}") from None
    pairs = zip(data.reshape(-1).tolist(), np.ascontiguousarray(other).reshape(-1).tolist())
    return _write_values(self, [callable(a, b) for a, b in pairs], "map_")


def equal(self: Any, other: Any) -> builtins.bool:
    """Whether other has this tensor's shape and the same elements. Mirrors torch.Tensor.equal."""
    if tuple(self.shape) != tuple(other.shape):
        return False
    return builtins.bool(_F.all(_F.eq(self, other))) if math.prod(self.shape) else True


def hardshrink(self: Any, lambd: builtins.float = 0.5) -> Any:
    """x where |x| > lambd, else 0. Mirrors torch.Tensor.hardshrink."""
    from ..nn import functional as nnf  # noqa: PLC0415

    return nnf.hardshrink(self, lambd)


def prelu(self: Any, weight: Any) -> Any:
    """max(0, x) + weight * min(0, x), weight per channel (dim 1) or one. Mirrors torch.Tensor.prelu."""
    from ..nn import functional as nnf  # noqa: PLC0415

    return nnf.prelu(self, weight)
