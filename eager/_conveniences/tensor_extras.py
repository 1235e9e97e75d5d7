"""Tensor methods PyTorch programs call that eager lacked: the conjugate-transpose views
H / mH / adjoint, frexp, the unsafe_* splits (the same as the safe ones here: eager has no
aliasing checks to skip), nonzero_static, the deprecated out-of-place resize / resize_as, and
the memory-placement calls of a CPU-only build (pin_memory raises without an accelerator,
share_memory_ is a no-op that marks the tensor shared).

Written in eager's existing functions; frexp reads values (its result is not differentiable,
as PyTorch's)."""
from __future__ import annotations

import math
import warnings
import weakref
from typing import Any

import numpy as np

from .. import _functional as _F


def _conj_transpose_last2(self: Any, op: str) -> Any:
    if self.dim() < 2:
        raise RuntimeError(f"tensor.{op} is only supported on matrices or batches of matrices. Got {self.dim()}-D tensor.")
    return self.transpose(-2, -1).conj()


def mH(self: Any) -> Any:
    """The conjugate transpose of the last two dimensions. Mirrors torch.Tensor.mH."""
    return _conj_transpose_last2(self, "mH")


def adjoint(self: Any) -> Any:
    """The conjugate transpose of the last two dimensions. Mirrors torch.Tensor.adjoint / torch.adjoint."""
    return _conj_transpose_last2(self, "adjoint()")


def H(self: Any) -> Any:
    """The conjugate transpose of a matrix (0-D and 2-D only). Mirrors torch.Tensor.H."""
    if self.dim() not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor.")
    return self.conj() if self.dim() == 0 else self.transpose(0, 1).conj()


def frexp(self: Any) -> Any:
    """(mantissa, exponent) with self = mantissa * 2**exponent, |mantissa| in [0.5, 1); the exponent
    is int32. Floating inputs only. Mirrors torch.frexp / torch.Tensor.frexp."""
    from .. import tensor as _tensor  # noqa: PLC0415
    from ..return_types import make  # noqa: PLC0415

    if not self.is_floating_point():
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got {self.dtype}")
    mantissa, exponent = np.frexp(self.detach().numpy())
    return make("frexp", ("mantissa", "exponent"))(_tensor(mantissa, dtype=self.dtype),
                                                     _tensor(exponent.astype(np.int32)))


def unsafe_chunk(self: Any, chunks: int, dim: int = 0) -> Any:
    """chunk without aliasing checks. Mirrors torch.Tensor.unsafe_chunk."""
    return self.chunk(chunks, dim)


def unsafe_split(self: Any, split_size: int, dim: int = 0) -> Any:
    """split without aliasing checks. Mirrors torch.Tensor.unsafe_split."""
    return self.split(split_size, dim)


def unsafe_split_with_sizes(self: Any, split_sizes: Any, dim: int = 0) -> Any:
    """split_with_sizes without aliasing checks. Mirrors torch.Tensor.unsafe_split_with_sizes."""
    return self.split(list(split_sizes), dim)


def nonzero_static(self: Any, *, size: int, fill_value: int = -1) -> Any:
    """The first `size` rows of nonzero(), padded with fill_value rows: a shape known before the
    values. Mirrors torch.Tensor.nonzero_static."""
    from .. import full  # noqa: PLC0415

    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    found = self.nonzero()
    if found.shape[0] >= size:
        return found[:size]
    pad = full((size - found.shape[0], found.shape[1]), fill_value, dtype=found.dtype)
    return _F.cat([found, pad], 0)


def resize(self: Any, *sizes: Any) -> Any:
    """Deprecated out-of-place resize: a view of the same number of elements in a new shape
    (PyTorch's autograd resize; a different count is a RuntimeError). Mirrors torch.Tensor.resize."""
    shape = _F._sizes(sizes)
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resized(self, shape)


def _resized(self: Any, shape: tuple) -> Any:
    """self reshaped to `shape`, which must hold as many elements (autograd's resize)."""
    if math.prod(shape) != self.numel():
        raise RuntimeError(
            f"requested resize to {'x'.join(map(str, shape))} ({math.prod(shape)} elements in total), but the "
            f"given tensor has a size of {'x'.join(map(str, self.shape))} ({self.numel()} elements). autograd's "
            "resize can only change the shape of a given tensor, while preserving the number of elements.")
    return self.reshape(shape)


def resize_as(self: Any, other: Any) -> Any:
    """Deprecated out-of-place resize_as: resize to other's shape. Mirrors torch.Tensor.resize_as."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resized(self, tuple(other.shape))


def pin_memory(self: Any, device: Any = None) -> Any:
    """Page-locked host memory needs an accelerator: a CPU-only build raises, as PyTorch's."""
    raise RuntimeError("Cannot access accelerator device when none is available.")


# Tensors share_memory_ was called on, by id (a weak reference each: a tensor's == is elementwise, so
# no WeakSet); a collected tensor's entry is dropped when its id could be reused.
_SHARED: dict[int, weakref.ref] = {}


def is_shared(self: Any) -> bool:
    """Whether share_memory_ was called on this tensor. Mirrors torch.Tensor.is_shared."""
    ref = _SHARED.get(id(self))
    return ref is not None and ref() is self


def share_memory_(self: Any) -> Any:
    """Marks the tensor shared and returns it: eager's worker processes are not torch.multiprocessing,
    so there is no segment to move to. Mirrors torch.Tensor.share_memory_."""
    key = id(self)
    _SHARED[key] = weakref.ref(self, lambda _ref: _SHARED.pop(key, None))
    return self


def conj_physical_(self: Any) -> Any:
    """In-place conj_physical: a real tensor is unchanged. Mirrors torch.Tensor.conj_physical_."""
    if self.is_complex():
        return self.copy_(self.conj_physical())
    return self


def map2_(self: Any, x: Any, y: Any, callable: Any) -> Any:
    """self[i] = callable(self[i], x[i], y[i]) elementwise over the broadcast of x and y to self
    (CPU only, reads values). Mirrors torch.Tensor.map2_."""
    from .. import tensor as _tensor  # noqa: PLC0415

    a = self.detach().numpy()
    xb = np.broadcast_to(x.detach().numpy(), a.shape)
    yb = np.broadcast_to(y.detach().numpy(), a.shape)
    out = np.array([callable(p.item(), q.item(), r.item()) for p, q, r in zip(a.ravel(), xb.ravel(), yb.ravel())],
                   dtype=a.dtype).reshape(a.shape)
    with _no_grad():
        self.copy_(_tensor(out, dtype=self.dtype))
    return self


def _no_grad() -> Any:
    from .._grad_mode import no_grad  # noqa: PLC0415
    return no_grad()


def as_subclass(self: Any, cls: type) -> Any:
    """A `cls` instance over the same data, attached to the same autograd graph (a view of self).
    Mirrors torch.Tensor.as_subclass."""
    from .. import Tensor  # noqa: PLC0415

    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass: cls must be a subclass of Tensor, got {cls!r}")
    out = self.view_as(self)
    out.__class__ = cls
    return out


METHODS = {fn.__name__: fn for fn in (
    adjoint, frexp, unsafe_chunk, unsafe_split, unsafe_split_with_sizes, nonzero_static, resize, resize_as,
    pin_memory, is_shared, share_memory_, conj_physical_, map2_, as_subclass,
)}
PROPERTIES = {"H": H, "mH": mH}
