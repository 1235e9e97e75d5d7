"""torch.nn.utils.skip_init: build a module without running its parameter initialization."""
from __future__ import annotations

import inspect
from typing import Any


def skip_init(module_cls: Any, *args: Any, **kwargs: Any) -> Any:
    """An instance of `module_cls(*args, **kwargs)` whose parameters and buffers hold
    unspecified values (the constructor's init is skipped: its reset_parameters is not run).
    As PyTorch, the class must take a `device` argument."""
    from ..module import Module  # noqa: PLC0415

    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    reset = getattr(module_cls, "reset_parameters", None)
    if reset is None:
        return module_cls(*args, **kwargs)
    module_cls.reset_parameters = lambda self: None
    try:
        return module_cls(*args, **kwargs)
    finally:
        if "reset_parameters" in module_cls.__dict__ and module_cls.__dict__["reset_parameters"] is not reset:
            del module_cls.reset_parameters
        if getattr(module_cls, "reset_parameters", None) is not reset:
            module_cls.reset_parameters = reset
