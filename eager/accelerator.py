"""`eager.accelerator`: the device-agnostic questions tutorials start with
(`torch.accelerator.is_available()`, `current_accelerator()`); the accelerator is CUDA
through CuPy when a GPU answers."""
from __future__ import annotations

from ._device import cuda_is_available, cupy_module, device


def is_available() -> bool:
    return cuda_is_available()


def current_accelerator(check_available: bool = False) -> device | None:
    """device('cuda') when a GPU is usable, else None (there is no other accelerator)."""
    return device("cuda") if cuda_is_available() else None


def device_count() -> int:
    cp = cupy_module()
    return 0 if cp is None else int(cp.cuda.runtime.getDeviceCount())


def current_device_index() -> int:
    return 0


def synchronize(device_index: int | None = None) -> None:
    cp = cupy_module()
    if cp is not None:
        cp.cuda.Device().synchronize()
