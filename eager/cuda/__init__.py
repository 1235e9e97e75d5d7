"""torch.cuda, as far as a CPU-or-CuPy library has it: whether a GPU answers, the device
count and index, seeding, synchronizing, the memory pool's figures (CuPy's), and the
deprecated `torch.cuda.amp` spellings (`from torch.cuda.amp import autocast` imports).
Without CuPy and a GPU the queries answer as PyTorch's CPU build does: no device, zero
bytes, and a clear error for what needs a device."""
from __future__ import annotations

from typing import Any

from .. import _device
from . import amp  # noqa: F401  (torch.cuda.amp)

_NO_DEVICE = "Torch not compiled with CUDA enabled: no CUDA device (CuPy and a GPU are needed)"


def is_available() -> bool:
    """Whether CuPy imports and a GPU answers."""
    return bool(_device.cuda_is_available())


def _cupy() -> Any:
    """CuPy where a GPU answers, else None (looked up at each call: tests stand in for it)."""
    return _device.cupy_module() if is_available() else None


def _require() -> Any:
    cp = _cupy()
    if cp is None:
        raise RuntimeError(_NO_DEVICE)
    return cp


def manual_seed(seed: int) -> None:
    """Seed the generator of the GPU's tensors (eager has one generator for every device)."""
    from .._factories import manual_seed as _seed  # noqa: PLC0415

    _seed(seed)


manual_seed_all = manual_seed


def seed() -> None:
    """A no-op where no GPU answers (PyTorch's CPU build does nothing either)."""


def device_count() -> int:
    cp = _cupy()
    return 0 if cp is None else int(cp.cuda.runtime.getDeviceCount())


def current_device() -> int:
    return int(_require().cuda.Device().id)


def set_device(device: Any) -> None:
    index = getattr(device, "index", device)
    _require().cuda.Device(0 if index is None else int(index)).use()


def get_device_name(device: Any = None) -> str:
    cp = _require()
    index = getattr(device, "index", device)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id if index is None else int(index))
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def is_bf16_supported() -> bool:
    """False: no bfloat16 here (see eager.bfloat16)."""
    return False


def is_initialized() -> bool:
    return _cupy() is not None


def synchronize(device: Any = None) -> None:
    _require().cuda.Device().synchronize()


def empty_cache() -> None:
    """Return CuPy's pooled free blocks to the device (nothing to do without one)."""
    cp = _cupy()
    if cp is not None:
        cp.get_default_memory_pool().free_all_blocks()


def memory_allocated(device: Any = None) -> int:
    """Bytes of device memory held by live arrays (CuPy's pool); 0 without a device."""
    cp = _cupy()
    return 0 if cp is None else int(cp.get_default_memory_pool().used_bytes())


def memory_reserved(device: Any = None) -> int:
    """Bytes the pool holds, used or free (CuPy's pool); 0 without a device."""
    cp = _cupy()
    return 0 if cp is None else int(cp.get_default_memory_pool().total_bytes())


def max_memory_allocated(device: Any = None) -> int:
    """0 without a device; with CuPy, the pool's total (CuPy keeps no peak of its own)."""
    return memory_reserved(device)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Nothing to reset: no peak is tracked (see max_memory_allocated)."""


__all__ = ["amp", "current_device", "device_count", "empty_cache", "get_device_name", "is_available",
           "is_bf16_supported", "is_initialized", "manual_seed", "manual_seed_all", "max_memory_allocated",
           "memory_allocated", "memory_reserved", "reset_peak_memory_stats", "seed", "set_device", "synchronize"]
