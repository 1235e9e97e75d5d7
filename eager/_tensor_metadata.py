"""What a tensor says about itself: its shape (eager.Size), dtype, device, layout and strides,
and the predicates PyTorch programs branch on (is_cuda, is_floating_point, is_contiguous, ...).

Tensor takes these from `TensorMetadata`, a mixin with no state of its own (it reads the
tensor's buffer, `_data`): _tensor.py keeps the data, the autograd state and the conversions."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import _layout
from gmops._checks import norm_dim

from ._device import device, device_of_array
from ._memory_format import format_name

if TYPE_CHECKING:
    from ._tensor import Tensor


class Size(tuple):
    """A shape; a tuple that prints as PyTorch's torch.Size does."""

    def __repr__(self) -> str:
        return f"eager.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n



class TensorMetadata:
    """The metadata half of eager.Tensor (shape, dtype, device, layout, strides, predicates)."""

    __slots__ = ()
    _data: Any  # the tensor's buffer (a Tensor slot): a numpy.ndarray or a cupy.ndarray

    @property
    def shape(self) -> Size:
        """The size of each dimension, as an eager.Size (a tuple). Mirrors torch.Tensor.shape."""
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        """The shape as an eager.Size, or the length of dimension `dim` (negative counts from the end).

        Mirrors torch.Tensor.size."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[norm_dim("size", dim, self._data.ndim)]

    @property
    def dtype(self) -> _dtypes.dtype:
        """The element type (an eager.dtype such as eager.float32). Mirrors torch.Tensor.dtype."""
        return _dtypes._BY_NP[self._data.dtype]

    @property
    def device(self) -> device:
        """Where the data lives: device('cpu') for NumPy, device('cuda', n) for CuPy. Mirrors torch.Tensor.device."""
        return device_of_array(self._data)

    @property
    def is_cuda(self) -> bool:
        """Whether the data lives on a CUDA device (a CuPy array). Mirrors torch.Tensor.is_cuda."""
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        """Whether the data lives on the CPU (a NumPy array). Mirrors torch.Tensor.is_cpu."""
        return isinstance(self._data, np.ndarray)

    # The other devices and layouts PyTorch can have, which eager tensors never are (devices
    # are 'cpu' and 'cuda'; tensors are dense, strided, unquantized): scripts branch on them.
    is_xpu = property(lambda self: False, doc="False: eager has no XPU device. Mirrors torch.Tensor.is_xpu.")
    is_mps = property(lambda self: False, doc="False: eager has no MPS device. Mirrors torch.Tensor.is_mps.")
    is_meta = property(lambda self: False, doc="False: every eager tensor has data. Mirrors torch.Tensor.is_meta.")
    is_ipu = property(lambda self: False, doc="False: eager has no IPU device. Mirrors torch.Tensor.is_ipu.")
    is_xla = property(lambda self: False, doc="False: eager has no XLA device. Mirrors torch.Tensor.is_xla.")
    is_mtia = property(lambda self: False, doc="False: eager has no MTIA device. Mirrors torch.Tensor.is_mtia.")
    is_maia = property(lambda self: False, doc="False: eager has no MAIA device. Mirrors torch.Tensor.is_maia.")
    is_hpu = property(lambda self: False, doc="False: eager has no HPU device. Mirrors torch.Tensor.is_hpu.")
    is_vulkan = property(lambda self: False, doc="False: eager has no Vulkan device. Mirrors torch.Tensor.is_vulkan.")
    is_mkldnn = property(lambda self: False, doc="False: no tensor is in oneDNN's layout. Mirrors torch.Tensor.is_mkldnn.")
    is_quantized = property(lambda self: False, doc="False: eager has no quantized tensors. "
                                                    "Mirrors torch.Tensor.is_quantized.")
    is_sparse = property(lambda self: False, doc="False for a dense (strided) tensor. Mirrors torch.Tensor.is_sparse.")
    is_sparse_csr = property(lambda self: False, doc="False for a dense (strided) tensor. "
                                                     "Mirrors torch.Tensor.is_sparse_csr.")
    is_nested = property(lambda self: False, doc="False: eager has no nested tensors. Mirrors torch.Tensor.is_nested.")

    def is_complex(self) -> bool:
        """False: eager has no complex dtypes. Mirrors torch.Tensor.is_complex."""
        return self._data.dtype.kind == "c"

    def is_signed(self) -> bool:
        """Whether the dtype holds negative values (every dtype but bool and uint8). Mirrors torch.Tensor.is_signed."""
        return self._data.dtype.kind in "if"

    def is_conj(self) -> bool:
        """False: no tensor here is a lazily conjugated view. Mirrors torch.Tensor.is_conj."""
        return False

    def is_neg(self) -> bool:
        """False: no tensor here is a lazily negated view. Mirrors torch.Tensor.is_neg."""
        return False

    def is_inference(self) -> bool:
        """False: inference_mode makes ordinary tensors here (it is no_grad). Mirrors torch.Tensor.is_inference."""
        return False

    def is_pinned(self, device: Any = None) -> bool:
        """False: host memory is never page-locked here. Mirrors torch.Tensor.is_pinned."""
        return False

    def is_shared(self) -> bool:
        """Whether share_memory_ was called on this tensor (eager._conveniences.tensor_extras records it).
        Mirrors torch.Tensor.is_shared."""
        from ._conveniences.tensor_extras import is_shared  # noqa: PLC0415

        return is_shared(self)

    def is_distributed(self) -> bool:
        """False. Mirrors torch.Tensor.is_distributed."""
        return False

    def is_same_size(self, other: "Tensor") -> bool:
        """Whether other has the same shape. Mirrors torch.Tensor.is_same_size."""
        return tuple(self._data.shape) == tuple(other.shape)

    def is_set_to(self, other: "Tensor") -> bool:
        """Whether both tensors view the same memory with the same offset, shape and strides.
        Mirrors torch.Tensor.is_set_to."""
        return (self.data_ptr() == other.data_ptr() and self._data.shape == other._data.shape
                and self._data.strides == other._data.strides and self._data.dtype == other._data.dtype)

    def is_nonzero(self) -> bool:
        """The truth of a one-element tensor (RuntimeError otherwise, as bool()). Mirrors torch.Tensor.is_nonzero."""
        if self._data.size == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        return bool(self)

    def is_coalesced(self) -> bool:
        """Raises for a dense tensor, as PyTorch: only sparse tensors are coalesced or not."""
        raise RuntimeError("is_coalesced expected sparse coordinate tensor layout but got Strided")

    @property
    def layout(self) -> Any:
        """eager.strided for a dense tensor (eager.sparse_coo for a sparse one). Mirrors torch.Tensor.layout."""
        from .sparse import strided  # noqa: PLC0415

        return strided

    @property
    def ndim(self) -> int:
        """The number of dimensions. Mirrors torch.Tensor.ndim."""
        return self._data.ndim

    def dim(self) -> int:
        """The number of dimensions (`ndimension` is the same method). Mirrors torch.Tensor.dim."""
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        """The number of elements (`nelement` is the same method). Mirrors torch.Tensor.numel."""
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        """The size of one element in bytes. Mirrors torch.Tensor.element_size."""
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        """The bytes of the elements (numel * element_size). Mirrors torch.Tensor.nbytes."""
        return int(self._data.nbytes)

    @property
    def itemsize(self) -> int:
        """The size of one element in bytes. Mirrors torch.Tensor.itemsize."""
        return int(self._data.itemsize)

    def data_ptr(self) -> int:
        """The address of the first element. Mirrors torch.Tensor.data_ptr."""
        data = self._data
        return int(data.data.ptr) if hasattr(data, "data") and hasattr(data.data, "ptr") else \
            int(data.__array_interface__["data"][0])

    def storage_offset(self) -> int:
        """The first element's offset, in elements, from the start of the memory this tensor
        views (0 for a tensor that owns its memory). Mirrors torch.Tensor.storage_offset."""
        data = self._data
        base = data
        while getattr(base, "base", None) is not None:
            base = base.base
        if base is data or not hasattr(base, "__array_interface__"):
            return 0
        return (self.data_ptr() - int(base.__array_interface__["data"][0])) // data.itemsize

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point one. Mirrors torch.Tensor.is_floating_point."""
        return self._data.dtype.kind == "f"

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the data is laid out in row-major (C) order, or in `memory_format`'s order
        (eager.channels_last: channels innermost). Mirrors torch.Tensor.is_contiguous."""
        name = format_name(memory_format)
        if name in ("contiguous_format", "preserve_format"):
            return bool(self._data.flags.c_contiguous)
        rank = {"channels_last": 4, "channels_last_3d": 5}[name]
        return self._data.ndim == rank and _layout.has_strides(self._data, _layout.channels_last_strides(self.shape))

    def is_non_overlapping_and_dense(self) -> bool:
        """Whether the elements cover their memory exactly once, in some order of the dims
        (what clone() keeps). Mirrors torch.Tensor.is_non_overlapping_and_dense."""
        return _layout.is_dense(self._data)

    def stride(self, dim: int | None = None):
        """The step in elements between neighbours along each dimension, or along `dim` only.

        Mirrors torch.Tensor.stride."""
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[dim]
