"""torch.nn.parallel.distributed: DistributedDataParallel, which here wraps a module of a
one-process job: gradients have no other replica to be averaged with, so backward is the
module's own (eager.distributed says why there are no other processes)."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..module import Module


class DistributedDataParallel(Module):
    """Wraps `module`; forward calls it. The options PyTorch takes are kept and change nothing;
    `no_sync()` is a context manager as in PyTorch (there is nothing to synchronize)."""

    def __init__(self, module: Module, device_ids: list | None = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group: Any = None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, **kwargs: Any) -> None:
        super().__init__()
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device, self.dim = output_device, dim
        self.broadcast_buffers, self.find_unused_parameters = broadcast_buffers, find_unused_parameters
        self.gradient_as_bucket_view, self.static_graph = gradient_as_bucket_view, static_graph
        self.process_group = process_group

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Gradients accumulate locally inside the block (they always do here)."""
        yield

    @contextlib.contextmanager
    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> Iterator[None]:
        """Uneven inputs across processes: with one process there is nothing to join."""
        yield
