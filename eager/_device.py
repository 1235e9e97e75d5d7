"""Devices: "cpu" runs on NumPy, "cuda" on CuPy when it imports and sees a GPU.

A tensor's device is read off its array's type, so there is one source of truth and no
per-tensor bookkeeping to keep in sync.
"""
from __future__ import annotations

import functools

import numpy as np

from gmops.device import cupy_module  # noqa: F401  (CuPy if a CUDA device answers: one probe, with the record that moves data)


class device:
    """`eager.device("cpu")` / `eager.device("cuda:0")`; prints as PyTorch's does."""

    __slots__ = ("type", "index")

    def __init__(self, spec: "str | device" = "cpu", index: int | None = None) -> None:
        if isinstance(spec, device):
            self.type: str = spec.type
            self.index: int | None = spec.index
            return
        if not isinstance(spec, str):
            raise TypeError(f"device(): expected a string such as 'cpu' or 'cuda', got {type(spec).__name__}")
        kind, _, idx = spec.partition(":")
        if kind not in ("cpu", "cuda"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {spec}"
            )
        self.type = kind
        self.index = int(idx) if idx else index
        if kind == "cuda" and self.index is None:
            self.index = 0

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


CPU = device("cpu")


@functools.cache


def cuda_is_available() -> bool:
    return cupy_module() is not None


def xp_for(dev: device):
    """The array module for a device, with the error PyTorch users know when CUDA is absent."""
    if dev.type == "cpu":
        return np
    cp = cupy_module()
    if cp is None:
        raise RuntimeError(
            "Torch not compiled with CUDA enabled: eager's 'cuda' device needs CuPy and a GPU "
            "(pip install 'graphmode[cuda12]'); use device='cpu' instead"
        )
    return cp


def device_of_array(arr) -> device:
    if isinstance(arr, (np.ndarray, np.generic)):
        return CPU
    return device("cuda", int(arr.device.id))


def xp_of_array(arr):
    return np if isinstance(arr, (np.ndarray, np.generic)) else cupy_module()


def is_writeable(arr) -> bool:
    """Whether writing into `arr` in place is allowed. NumPy says so in `flags.writeable`
    (False for broadcast views and read-only buffers); CuPy's flags have no such field
    because every CuPy array is writeable; anything without flags (a Python scalar) is not."""
    flags = getattr(arr, "flags", None)
    return flags is not None and getattr(flags, "writeable", True)


def may_share_memory(a, b) -> bool:
    """Whether two arrays may overlap in memory (bounds only, like NumPy's function). Arrays
    of different kinds (NumPy and CuPy) or on different GPUs never do, and asking CuPy about
    a NumPy array is a TypeError, so this is the one question every aliasing check asks."""
    if type(a) is not type(b) or device_of_array(a) != device_of_array(b):
        return False
    return bool(xp_of_array(a).may_share_memory(a, b))


def on_device_of(value, like):
    """`value` as an array on the device `like` lives on (a copy across devices, else
    `value` itself): a result computed on the GPU written back into a CPU tensor (an
    optimizer's step count) or the other way round."""
    if isinstance(like, (np.ndarray, np.generic)):
        return value.get() if not isinstance(value, (np.ndarray, np.generic)) and hasattr(value, "get") else value
    if isinstance(value, (np.ndarray, np.generic)) or device_of_array(value) != device_of_array(like):
        cp = cupy_module()
        with cp.cuda.Device(device_of_array(like).index):
            return cp.asarray(value)
    return value
