"""torch.nn.parallel.data_parallel: DataParallel, which here runs the module once on the
whole batch (there is one device to split it over)."""
from __future__ import annotations

from typing import Any

from ..module import Module


class DataParallel(Module):
    """Wraps `module`; forward calls it on the whole input. `device_ids`, `output_device` and
    `dim` are kept (scripts read them back) and change nothing."""

    def __init__(self, module: Module, device_ids: list | None = None, output_device: Any = None,
                 dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs: Any, device_ids: list | None = None, output_device: Any = None,
                  dim: int = 0, module_kwargs: dict | None = None) -> Any:
    """The functional form: `module(*inputs, **module_kwargs)` in this process."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    return module(*inputs, **(module_kwargs or {}))
