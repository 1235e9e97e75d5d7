"""The hook form of weight normalization (torch.nn.utils.weight_norm, deprecated in favour of
parametrizations.weight_norm): `name` becomes the parameters `name_g` (magnitude) and `name_v`
(direction), and a forward pre-hook recomputes `name = g * v / ||v||` before every call."""
from __future__ import annotations

import warnings
from typing import Any, TypeVar

from ..parameter import Parameter
from ._norm_helpers import norm_except_dim, remove_norm_hook, weight_norm_values

__all__ = ["WeightNorm", "remove_weight_norm", "weight_norm"]

T = TypeVar("T")


class WeightNorm:
    """The pre-hook: holds the parameter name and the dim kept by the norm (-1: whole tensor)."""

    name: str
    dim: int

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Any) -> Any:
        return weight_norm_values(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module: Any, name: str, dim: int | None) -> "WeightNorm":
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=3)
        for hook, _ in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        from ..lazy import UninitializedParameter  # noqa: PLC0415

        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. "
                             "Make sure to run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Any) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Any, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: T, name: str = "weight", dim: int | None = 0) -> T:
    """Reparametrize `module.<name>` as g * v / ||v|| (norm over all dims but `dim`; None: the
    whole tensor), with parameters `<name>_g` and `<name>_v` (FutureWarning: deprecated)."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T, name: str = "weight") -> T:
    """Fold g and v back into one parameter `<name>` and drop the hook."""
    return remove_norm_hook(module, WeightNorm, name, "weight_norm")
