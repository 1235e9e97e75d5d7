"""Parametrizations (torch.nn.utils.parametrize): `register_parametrization(m, "weight", P)`
moves the tensor to `m.parametrizations.weight.original` (or `original0`, `original1`, ...
when P.right_inverse returns several tensors) and makes `m.weight` a property computing
P(original) on every access; its setter runs right_inverse. As PyTorch, the module's class is
swapped for a generated subclass `Parametrized<Class>` that carries the properties, and
`cached()` computes each parametrized tensor once inside its block."""
from __future__ import annotations

import collections.abc
import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..._grad_mode import no_grad
from ..._tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter

__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization",
           "remove_parametrizations", "transfer_parametrizations_and_params", "type_before_parametrizations"]

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor | None] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Inside the block each parametrized tensor is computed once (on first access) and reused."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, x: Tensor) -> None:
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _maybe_set(dest: Tensor, src: Tensor) -> None:
    """dest takes src's data in place (tensor.set_), so optimizers holding dest stay valid."""
    dest.set_(src)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensor(s) they
    act on (`original`, or `original0`, `original1`, ...)."""

    original: Tensor
    unsafe: bool

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new: Any = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor) and not isinstance(new, collections.abc.Sequence):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if isinstance(new, Tensor):
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            with no_grad():
                if new is not original:
                    _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                     f"(list, tuple...). Got element {i} of the sequence with type "
                                     f"{type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali.detach(), original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, "
                                 "unless `unsafe` flag is enabled.\n"
                                 f"unparametrized dtype: {original_dtype}\nparametrized dtype: {z.dtype}")
            if z.shape != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, "
                                 "unless `unsafe` flag is enabled.\n"
                                 f"unparametrized shape: {original_shape}\nparametrized shape: {z.shape}")

    def right_inverse(self, value: Tensor) -> None:
        """Set the original tensor(s) so that the parametrized value becomes `value`."""
        with no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                                     f"while `original` has dtype {self.original.dtype}")
                _maybe_set(self.original, value)
            else:
                if not isinstance(value, collections.abc.Sequence):
                    raise ValueError("'right_inverse' must return a sequence of tensors. "
                                     f"Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError("'right_inverse' must return a sequence of tensors of length "
                                     f"{self.ntensors}. Got a sequence of length {len(value)}.")
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(tensor, Tensor):
                        raise ValueError(f"`right_inverse` must return a sequence of tensors. "
                                         f"Got element {i} of type {type(tensor).__name__}")
                    if original_i.dtype != tensor.dtype:
                        raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                                         f"while `original{i}` has dtype {original_i.dtype}")
                    _maybe_set(original_i, tensor)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module: Module) -> None:
    """Give `module` a class of its own (a subclass of its class) to hang properties on;
    pickling it is refused (state_dict is the way), deepcopy copies its __dict__."""
    cls = module.__class__

    def default_deepcopy(self: Module, memo: dict) -> Module:
        obj = memo.get(id(self))
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        object.__setattr__(replica, "__dict__", copy.deepcopy(self.__dict__, memo))
        return replica

    def getstate(self: Module) -> Any:
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). "
                           "See: https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                           "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")

    dct: dict[str, Any] = {"__getstate__": getstate}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = parametrization()
                _cache[key] = tensor
            return tensor
        return parametrization()

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make `module.<tensor_name>` the output of `parametrization` applied to the stored
    original tensor; registering again on the same name chains the parametrizations."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype != y.dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, "
                                 "unless the `unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}.dtype: {y.dtype}\nparametrization(module.{tensor_name}).dtype: "
                                 f"{x.dtype}")
            if x.shape != y.shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, "
                                 "unless the `unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}.shape: {y.shape}\nparametrization(module.{tensor_name}).shape: "
                                 f"{x.shape}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Tensor):
                        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(z).__name__}")
                    if z.dtype != y.dtype or z.shape != y.shape:
                        raise ValueError("The tensor returned by parametrization.right_inverse must have the same "
                                         f"dtype and shape as module.{tensor_name}.\n"
                                         f"module.{tensor_name}: {y.dtype} {y.shape}\nreturned: {z.dtype} {z.shape}")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        module.parametrizations[tensor_name] = parametrizations
        _inject_property(module, tensor_name)
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether `module` has any parametrization (or one on `tensor_name`)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo the parametrizations on `tensor_name`: the tensor becomes a plain parameter or
    buffer again, holding its current parametrized value (leave_parametrized) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
            with no_grad():
                _maybe_set(original, t.detach() if t is not original else t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before register_parametrization swapped it."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Give `to_module` the same parametrizations (sharing the original tensors) as `from_module`."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for p in from_module.parametrizations[name]:
            if not is_parametrized(to_module, name) or p not in list(to_module.parametrizations[name]):
                register_parametrization(to_module, name, p)
        with no_grad():
            src = from_module.parametrizations[name]
            dst = to_module.parametrizations[name]
            if src.is_tensor:
                dst.original = src.original
            else:
                for i in range(src.ntensors):
                    setattr(dst, f"original{i}", getattr(src, f"original{i}"))
    return to_module
