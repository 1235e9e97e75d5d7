"""The dtype conversions of the Tensor API (`x.float()`, `x.long()`, `x.type_as(y)`) and the
factories of new tensors like this one (`x.new_zeros(...)`): what PyTorch gives every tensor
to make another of its dtype and device.
"""
from __future__ import annotations

import builtins
from typing import Any

from gmbase import dtypes as _dtypes

from .. import _functional as F
from .hooks import TensorHooks


class TensorConversions(TensorHooks):
    """Conversions to another dtype and new tensors with this one's dtype and device."""

    __slots__ = ()

    def float(self) -> Any:
        """This tensor as float32 (itself if it already is). Mirrors torch.Tensor.float."""
        return F.to_dtype(self, _dtypes.float32)

    def double(self) -> Any:
        """This tensor as float64 (itself if it already is). Mirrors torch.Tensor.double."""
        return F.to_dtype(self, _dtypes.float64)

    def half(self) -> Any:
        """This tensor as float16 (itself if it already is). Mirrors torch.Tensor.half."""
        return F.to_dtype(self, _dtypes.float16)

    def long(self) -> Any:
        """This tensor as int64 (itself if it already is). Mirrors torch.Tensor.long."""
        return F.to_dtype(self, _dtypes.int64)

    def int(self) -> Any:
        """This tensor as int32 (itself if it already is). Mirrors torch.Tensor.int."""
        return F.to_dtype(self, _dtypes.int32)

    def bool(self) -> Any:
        """This tensor as bool (itself if it already is). Mirrors torch.Tensor.bool."""
        return F.to_dtype(self, _dtypes.bool_)

    def type_as(self, other: Any) -> Any:
        """This tensor converted to `other`'s dtype. Mirrors torch.Tensor.type_as."""
        return F.to_dtype(self, other.dtype)

    # -- new tensors like this one -------------------------------------------------------------------
    def new_tensor(self, data: Any, dtype: Any = None, requires_grad: builtins.bool = False) -> Any:
        """A new tensor from `data`, with this tensor's dtype and device unless given.

        Mirrors torch.Tensor.new_tensor."""
        from .._factories import tensor  # noqa: PLC0415

        return tensor(data, dtype=dtype or self.dtype, device=self.device, requires_grad=requires_grad)

    def new_zeros(self, *size: Any, dtype: Any = None) -> Any:
        """Zeros of the given size, with this tensor's dtype and device. Mirrors torch.Tensor.new_zeros."""
        from .._factories import zeros  # noqa: PLC0415

        return zeros(*size, dtype=dtype or self.dtype, device=self.device)

    def new_ones(self, *size: Any, dtype: Any = None) -> Any:
        """Ones of the given size, with this tensor's dtype and device. Mirrors torch.Tensor.new_ones."""
        from .._factories import ones  # noqa: PLC0415

        return ones(*size, dtype=dtype or self.dtype, device=self.device)

    def new_full(self, size: Any, fill_value: Any, dtype: Any = None) -> Any:
        """`fill_value` of the given size, with this tensor's dtype and device. Mirrors torch.Tensor.new_full."""
        from .._factories import full  # noqa: PLC0415

        return full(size, fill_value, dtype=dtype or self.dtype, device=self.device)
