"""The in-place methods that change a tensor's shape or storage rather than its values:
t_, transpose_/swapdims_/swapaxes_, squeeze_, unsqueeze_ (in-place views), resize_,
resize_as_ and set_ (new storage), as PyTorch defines them.

Why a module of their own: eager's other in-place forms (`eager._inplace`) compute a result
of the tensor's own shape and write it into the buffer; these cannot, the tensor itself
changes. An in-place view op takes the out-of-place view's array and history: the tensor
then is that view (its gradient flows through UnsqueezeBackward1, TBackward1, ... as
PyTorch names them), still the same Python object, a leaf that requires grad refused as
for any in-place op. Views of a tensor describe themselves by the view ops leading from
their base, which an in-place write through one replays (eager._inplace); a base whose
shape changes under its live views would make those replays wrong, so the old base lives
on as a hidden base of both the views and the reshaped tensor. Each change bumps
METADATA_VERSION: a compiled entry that captured the tensor re-reads its shape."""
from __future__ import annotations

import builtins
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ._device import xp_of_array

_T = TypeVar("_T", bound="MetadataInPlace")


def _view_in_place(self: Any, make: Callable[[Any], Any], grad_name: str) -> Any:
    """Make `self` the view `make(self)` in place, with its history when recorded."""
    from . import _functional as F  # noqa: PLC0415
    from . import _tensor  # noqa: PLC0415
    from ._grad_mode import no_grad  # noqa: PLC0415
    from ._inplace import _check, _rebase  # noqa: PLC0415

    recorded = _check(self, ())
    hide = self._view is None and bool(_live_views(self))  # (before make adds its own view)
    if recorded:
        out = F._renamed(make(self), grad_name)
    else:
        with no_grad():
            out = make(self)
    if hide:
        _hide_base(self)  # (after make: its view steps lead from the hidden base, as the others')
        out._base, out._view = self._base, self._view + out._view
    self._data = out._data
    if self._view is not None:  # a view stays one, its steps now ending with this op
        self._view = out._view
    if recorded:
        _rebase(self, out)
    _tensor.METADATA_VERSION[0] += 1
    return self


def _live_views(base: Any) -> list:
    return [r for r in (base._views or ()) if r() is not None]


def _hide_base(self: Any) -> None:
    """Turn `self`, a base with live views, into a view of a new tensor holding its array and
    history before the change: the live views' steps still lead from that array."""
    from ._tensor import Tensor  # noqa: PLC0415

    hidden = Tensor._make(self._data, self._requires_grad)
    hidden.grad_fn, hidden._output_nr, hidden._vc = self.grad_fn, self._output_nr, self._vc
    live = _live_views(self)
    for ref in live:
        ref()._base = hidden
    hidden._views = live + [weakref.ref(self)]
    self._views = None
    self._base, self._view = hidden, ()


def _new_storage(self: Any, data: Any, name: str) -> Any:
    """Give `self` a new array (resize_, set_): refused where autograd would have to follow."""
    from . import _tensor  # noqa: PLC0415
    from ._grad_mode import STATE  # noqa: PLC0415

    if self._requires_grad and STATE.enabled:
        raise RuntimeError("cannot resize variables that require grad" if name.startswith("resize") else
                           f"{name}: not allowed on a tensor that requires grad; call it under no_grad() or on "
                           "a detached tensor")
    self._data = data
    _tensor.METADATA_VERSION[0] += 1
    return self


def _storage(data: Any) -> Any:
    """The memory `data` starts at, as a 1-d array: the largest contiguous array it is a view
    of from its first element (PyTorch's storage, which a resize_ reuses and reads in memory
    order), else data itself where contiguous, else None."""
    root = data
    while isinstance(getattr(root, "base", None), type(data)):
        root = root.base
    if root is not data and root.flags.c_contiguous and root.dtype == data.dtype and _address(root) == _address(data):
        return root.reshape(-1)
    return data.reshape(-1) if data.flags.c_contiguous else None


def _address(a: Any) -> int:
    """The address of an array's first element (NumPy's interface, or CuPy's pointer)."""
    return a.__array_interface__["data"][0] if type(a) is np.ndarray else a.data.ptr


def _sizes(op: str, sizes: tuple) -> tuple[int, ...]:
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) or (len(sizes) == 1 and hasattr(sizes[0], "__iter__")):
        sizes = tuple(sizes[0])
    out = tuple(int(s) for s in sizes)
    if any(s < 0 for s in out):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: {list(out)}")
    return out


class MetadataInPlace:
    """The tensor methods of this module (mixed into eager.Tensor)."""

    def unsqueeze_(self: _T, dim: builtins.int) -> _T:
        """Insert a size-1 dim at `dim`, in place. Mirrors torch.Tensor.unsqueeze_."""
        return _view_in_place(self, lambda t: t.unsqueeze(dim), "UnsqueezeBackward1")

    def squeeze_(self: _T, dim: Any = None) -> _T:
        """Drop size-1 dims (all, or those in `dim`), in place. Mirrors torch.Tensor.squeeze_."""
        if dim is None:
            return _view_in_place(self, lambda t: t.squeeze(), "SqueezeBackward3")
        return _view_in_place(self, lambda t: t.squeeze(dim),
                              "SqueezeBackward5" if isinstance(dim, (tuple, list)) else "SqueezeBackward4")

    def t_(self: _T) -> _T:
        """Transpose a tensor of at most 2 dims in place. Mirrors torch.Tensor.t_."""
        ndim = len(self.shape)  # type: ignore[attr-defined]
        if ndim > 2:
            raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {ndim}D")
        return _view_in_place(self, lambda t: t.t(), "TBackward1")

    def transpose_(self: _T, dim0: builtins.int, dim1: builtins.int) -> _T:
        """Swap dims dim0 and dim1 in place. Mirrors torch.Tensor.transpose_."""
        return _view_in_place(self, lambda t: t.transpose(dim0, dim1), "TransposeBackward1")

    def swapdims_(self: _T, dim0: builtins.int, dim1: builtins.int) -> _T:
        """transpose_ by NumPy's name. Mirrors torch.Tensor.swapdims_."""
        return self.transpose_(dim0, dim1)

    def swapaxes_(self: _T, axis0: builtins.int, axis1: builtins.int) -> _T:
        """transpose_ by NumPy's name. Mirrors torch.Tensor.swapaxes_."""
        return self.transpose_(axis0, axis1)

    def as_strided_(self: _T, size: Any, stride: Any, storage_offset: Any = None) -> _T:
        """Become the `size`/`stride` window over this tensor's memory, in place (its history
        AsStridedBackward0, as as_strided's). Mirrors torch.Tensor.as_strided_."""
        from ._functional.strided import as_strided_in_place  # noqa: PLC0415

        return as_strided_in_place(self, size, stride, storage_offset, _view_in_place)

    def resize_(self: _T, *sizes: Any, memory_format: Any = None) -> _T:
        """Give the tensor the shape `sizes`, row-major: its first elements are kept, as many
        as fit, and the memory is reused where it holds enough (new elements are
        uninitialized, as PyTorch's). Mirrors torch.Tensor.resize_."""
        shape = _sizes("resize_", sizes)
        data = self._data  # type: ignore[attr-defined]
        n = int(np.prod(shape, dtype=np.int64))
        xp = xp_of_array(data)
        storage = _storage(data)
        if storage is not None and n <= storage.size:  # (PyTorch's storage keeps what a shrink left)
            new = storage[:n].reshape(shape)
        else:
            new = xp.empty(shape, data.dtype)
            source = storage if storage is not None else data.reshape(-1)
            kept = min(n, source.size)
            new.reshape(-1)[:kept] = source[:kept]
        return _new_storage(self, new, "resize_")

    def resize_as_(self: _T, other: Any, memory_format: Any = None) -> _T:
        """resize_ to other's shape. Mirrors torch.Tensor.resize_as_."""
        return self.resize_(tuple(other.shape))

    def set_(self: _T, source: Any = None, storage_offset: builtins.int = 0, size: Any = None,
             stride: Any = None) -> _T:
        """Share `source`'s memory (the tensor becomes another name for it), or with no
        source become empty. Mirrors torch.Tensor.set_ for a tensor source."""
        data = self._data  # type: ignore[attr-defined]
        if source is None:
            return _new_storage(self, data[:0].reshape(0) if data.ndim else data.reshape(1)[:0], "set_")
        if storage_offset or size is not None or stride is not None:
            raise NotImplementedError("set_: a storage offset, size or stride is not supported; pass a tensor "
                                      "(source.as_strided views are not available in eager)")
        src = getattr(source, "_data", None)
        if src is None:
            raise TypeError(f"set_(): expected a Tensor source, got {type(source).__name__}")
        if src.dtype != data.dtype:
            raise RuntimeError(f"Could not set tensor of type {data.dtype} to a tensor of type {src.dtype}")
        result = _new_storage(self, src, "set_")
        self._vc = source._vc  # one memory, one version counter
        return result
