"""Lazy modules (torch.nn.LazyLinear, LazyConv*d, LazyConvTranspose*d, LazyBatchNorm*d):
the input size is read from the first input instead of given.

Until that first call the weights are `UninitializedParameter`s (empty placeholders), so an
optimizer can already be built over `model.parameters()`; the first forward builds the
layer it becomes (its initialization draws exactly as constructing that layer would),
moves the built values into the placeholders (the same Parameter objects, so the optimizer
keeps them) and turns the module into that layer's class, as PyTorch's `cls_to_become`."""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .._factories import empty
from .._tensor import Tensor
from . import conv as _conv
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .module import Module
from .normalization import _BatchNorm, _NormBase
from .parameter import Parameter

__all__ = ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyLinear", "LazyModuleMixin",
           "UninitializedBuffer", "UninitializedParameter"]


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet (an empty placeholder). Mirrors
    torch.nn.parameter.UninitializedParameter."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> "UninitializedParameter":
        p = Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)
        return p  # type: ignore[return-value]

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        """Everything happens in __new__."""

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Give the parameter a shape (zeroed values), becoming a plain Parameter."""
        data = empty(*tuple(shape), device=device or self.device, dtype=dtype or self.dtype)
        self._take(data)

    def _take(self, data: Tensor) -> None:
        self.data = data.detach()
        self.__class__ = self.cls_to_become  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "<UninitializedParameter>"

    def __deepcopy__(self, memo: dict) -> "UninitializedParameter":
        if id(self) not in memo:
            memo[id(self)] = UninitializedParameter(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]


class UninitializedBuffer(Tensor):
    """A buffer whose shape is not known yet. Mirrors torch.nn.parameter.UninitializedBuffer."""


_LAZY_SETTINGS = ("_bias", "_device", "_dtype", "_args", "_kwargs", "_config")


def is_lazy(value: Any) -> bool:
    return isinstance(value, (UninitializedParameter, UninitializedBuffer))


class LazyModuleMixin:
    """Builds the real layer from the first input (`_build(input)`) and becomes it."""

    cls_to_become: type | None = None
    _build: Callable[..., Module]

    def has_uninitialized_params(self) -> bool:
        return any(is_lazy(p) for p in self._parameters.values())  # type: ignore[attr-defined]

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        """Build the layer for `input` and take over its state (parameters stay the same objects)."""
        real = self._build(input)
        mine: Any = self
        for name, value in real._parameters.items():
            placeholder = mine._parameters.get(name)
            if isinstance(placeholder, UninitializedParameter) and value is not None:
                placeholder._take(value)
            else:
                mine._parameters[name] = value
        for name, value in real._buffers.items():
            mine._buffers[name] = value
        for name in [n for n in mine.__dict__ if n in _LAZY_SETTINGS]:
            del mine.__dict__[name]
        for name, value in real.__dict__.items():
            if not name.startswith("_") and name != "training":  # the layer's settings (in_features, ...)
                object.__setattr__(self, name, value)
        object.__setattr__(self, "__class__", type(real))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.has_uninitialized_params():
            if not args:
                raise RuntimeError(f"{type(self).__name__}: the first call needs the input to infer its size")
            self.initialize_parameters(args[0])
        return Module.__call__(self, *args, **kwargs)  # type: ignore[arg-type]


def _placeholders(module: Module, names: tuple[str, ...], device: Any, dtype: Any) -> None:
    for name in names:
        setattr(module, name, UninitializedParameter(device=device, dtype=dtype))


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose in_features is the last dim of the first input (a Linear, as PyTorch's:
    isinstance checks see one). Mirrors torch.nn.LazyLinear."""

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        Module.__init__(self)
        self.in_features, self.out_features = 0, out_features
        self._bias, self._device, self._dtype = bias, device, dtype
        _placeholders(self, ("weight", "bias") if bias else ("weight",), device, dtype)
        if not bias:
            self.register_parameter("bias", None)

    def _build(self, input: Tensor) -> Module:
        from .linear import Linear  # noqa: PLC0415

        return Linear(input.shape[-1], self.out_features, self._bias, self._device, self._dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params():  # (nothing to draw before the first input)
            Linear.reset_parameters(self)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self._bias}"


class _LazyConvXdMixin(LazyModuleMixin):
    """What the lazy convolutions share (PyTorch's _LazyConvXdMixin); each is also its
    convolution's class, as PyTorch's, with that class's settings (in_channels 0) until the
    first input."""

    _target = ""
    _spatial = 2
    _transposed = False

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0, *rest: Any,
                 device: Any = None, dtype: Any = None, **kwargs: Any) -> None:
        me: Any = self  # (a Module: each lazy convolution is also its convolution's class)
        Module.__init__(me)
        self.out_channels = out_channels
        self._args = (kernel_size, stride, padding, *rest)
        self._kwargs = dict(kwargs, device=device, dtype=dtype)
        bias = rest[2] if len(rest) > 2 else kwargs.get("bias", True)  # (dilation | output_padding, groups, bias)
        _placeholders(me, ("weight", "bias") if bias else ("weight",), device, dtype)
        if not bias:
            me.register_parameter("bias", None)
        self._settings()

    def _settings(self) -> None:
        """The convolution's settings as its constructor would keep them (what its repr and
        scripts read before the first input), from the arguments given."""
        real = getattr(_conv, self._target)
        bound = inspect.signature(real.__init__).bind(self, 0, self.out_channels, *self._args, **self._kwargs)
        bound.apply_defaults()
        a, n = bound.arguments, self._spatial
        self.in_channels = 0
        self.kernel_size, self.stride = _conv._tuple(a["kernel_size"], n), _conv._tuple(a["stride"], n)
        padding = a["padding"]
        self.padding = padding if isinstance(padding, str) else _conv._tuple(padding, n)
        self.dilation, self.groups = _conv._tuple(a["dilation"], n), a["groups"]
        self.padding_mode, self.transposed = a["padding_mode"], self._transposed
        self.output_padding = _conv._tuple(a.get("output_padding", 0), n)

    def _build(self, input: Tensor) -> Module:
        channels = input.shape[0] if input.ndim == self._spatial + 1 else input.shape[1]
        return getattr(_conv, self._target)(channels, self.out_channels, *self._args, **self._kwargs)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params():
            getattr(_conv, self._target).reset_parameters(self)


_LazyConv = _LazyConvXdMixin  # (the name this base had before)


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    """Conv1d whose in_channels comes from the first input. Mirrors torch.nn.LazyConv1d."""
    _target, _spatial = "Conv1d", 1


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    """Conv2d whose in_channels comes from the first input. Mirrors torch.nn.LazyConv2d."""
    _target, _spatial = "Conv2d", 2


class LazyConv3d(_LazyConvXdMixin, Conv3d):
    """Conv3d whose in_channels comes from the first input. Mirrors torch.nn.LazyConv3d."""
    _target, _spatial = "Conv3d", 3


class LazyConvTranspose1d(_LazyConvXdMixin, ConvTranspose1d):
    """ConvTranspose1d whose in_channels comes from the first input. Mirrors torch.nn.LazyConvTranspose1d."""
    _target, _spatial, _transposed = "ConvTranspose1d", 1, True


class LazyConvTranspose2d(_LazyConvXdMixin, ConvTranspose2d):
    """ConvTranspose2d whose in_channels comes from the first input. Mirrors torch.nn.LazyConvTranspose2d."""
    _target, _spatial, _transposed = "ConvTranspose2d", 2, True


class LazyConvTranspose3d(_LazyConvXdMixin, ConvTranspose3d):
    """ConvTranspose3d whose in_channels comes from the first input. Mirrors torch.nn.LazyConvTranspose3d."""
    _target, _spatial, _transposed = "ConvTranspose3d", 3, True


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """What the lazy batch norms share (PyTorch's _LazyNormBase); each is also a _BatchNorm,
    as PyTorch's, with num_features 0 until the first input."""

    _target = "BatchNorm2d"

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None) -> None:
        Module.__init__(self)
        self._config = dict(eps=eps, momentum=momentum, affine=affine, track_running_stats=track_running_stats,
                            device=device, dtype=dtype)
        self.eps, self.momentum, self.affine, self.track_running_stats = eps, momentum, affine, track_running_stats
        self.num_features = 0
        if affine:
            _placeholders(self, ("weight", "bias"), device, dtype)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def has_uninitialized_params(self) -> bool:
        return type(self) is not self._real_class()

    def _real_class(self) -> Any:
        from . import normalization  # noqa: PLC0415

        return getattr(normalization, self._target)

    def _build(self, input: Tensor) -> Module:
        return self._real_class()(input.shape[1], **self._config)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params():
            self._real_class().reset_parameters(self)


_LazyBatchNorm = _LazyNormBase  # (the name this base had before)


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """BatchNorm1d whose num_features comes from the first input. Mirrors torch.nn.LazyBatchNorm1d."""
    _target = "BatchNorm1d"


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """BatchNorm2d whose num_features comes from the first input. Mirrors torch.nn.LazyBatchNorm2d."""
    _target = "BatchNorm2d"


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """BatchNorm3d whose num_features comes from the first input. Mirrors torch.nn.LazyBatchNorm3d."""
    _target = "BatchNorm3d"
