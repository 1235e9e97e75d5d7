"""torch.nn.parallel: DataParallel and DistributedDataParallel, as wrappers that call the
module in this process (one device, one process: nothing to replicate or all-reduce).

They keep PyTorch's shape of the wrapped model, so scripts run unchanged: the model is
`.module`, its state_dict keys carry the `module.` prefix, and `no_sync()` works."""
from __future__ import annotations

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
