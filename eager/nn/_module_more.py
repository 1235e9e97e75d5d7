"""The rest of torch.nn.Module's public surface that scripts call (get_parameter, get_buffer,
set_submodule, bfloat16, type, share_memory and the class attributes scripts read), kept
apart from eager.nn.module (which is at its size limit) as a base class of Module. Each
method uses only Module's own public methods."""
from __future__ import annotations

from typing import Any


class _ModuleMore:
    """Mixed into eager.nn.Module (see the module docstring)."""

    dump_patches: bool = False
    _version: int = 1
    call_super_init: bool = False

    def get_parameter(self, target: str) -> Any:
        """The Parameter at the dotted path `target` ("encoder.0.weight"). Mirrors
        torch.nn.Module.get_parameter (AttributeError naming what is missing)."""
        from .parameter import Parameter  # noqa: PLC0415

        module_path, _, name = target.rpartition(".")
        module: Any = self.get_submodule(module_path)  # type: ignore[attr-defined]
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Any:
        """The buffer at the dotted path `target` ("bn.running_mean"). Mirrors
        torch.nn.Module.get_buffer."""
        module_path, _, name = target.rpartition(".")
        module: Any = self.get_submodule(module_path)  # type: ignore[attr-defined]
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(module, name)

    def set_submodule(self, target: str, module: Any, strict: bool = False) -> None:
        """Put `module` at the dotted path `target` (its parent must exist; with strict, the
        name too). Mirrors torch.nn.Module.set_submodule."""
        from .module import Module  # noqa: PLC0415

        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        parent_path, _, name = target.rpartition(".")
        parent: Any = self.get_submodule(parent_path)  # type: ignore[attr-defined]
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        setattr(parent, name, module)

    def bfloat16(self) -> Any:
        """Floating parameters and buffers cast to bfloat16. Mirrors torch.nn.Module.bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)  # type: ignore[attr-defined]

    def type(self, dst_type: Any) -> Any:
        """Every parameter and buffer cast to dst_type. Mirrors torch.nn.Module.type."""
        return self._apply(lambda t: t.type(dst_type))  # type: ignore[attr-defined]

    def share_memory(self) -> Any:
        """self: tensors live in this process's memory (no worker processes here to share it
        with). Mirrors torch.nn.Module.share_memory's return."""
        return self
