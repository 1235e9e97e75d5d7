"""Mixed precision as PyTorch scripts spell it: `autocast` and `GradScaler`
(`eager.amp`, `eager.autocast`, `eager.cuda.amp`, `eager.cpu.amp`).

Why it exists: training scripts create a GradScaler and an autocast context unconditionally
and switch them off with `enabled=` where mixed precision does not apply (nanoGPT's
`GradScaler(enabled=(dtype == 'float16'))`), so they stop at the missing names before
doing anything. The scaler is the real algorithm (scale the loss, unscale and check the
gradients, skip a step with inf/NaN gradients, grow or back off the scale), equal to
PyTorch's step by step. Autocasting itself, which rewrites the dtype of chosen ops, is not
built: an enabled autocast raises rather than compute in another precision than PyTorch
would.
"""
from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from ._device import cuda_is_available
from ._grad_mode import no_grad
from ._tensor import Tensor


class autocast:  # noqa: N801  (PyTorch's name)
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a context
    manager and decorator. Disabled (enabled=False) it does nothing, as in PyTorch. Enabled,
    it raises NotImplementedError on entry: eager has no autocasting (and no bfloat16, the
    CPU default), so running the block in float32 would silently give other numbers than
    PyTorch's."""

    def __init__(self, device_type: str = "cuda", dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"autocast: expected device_type of type str, got {type(device_type).__name__}")
        self.device = device_type
        self.fast_dtype = dtype
        self._enabled = bool(enabled)

    def __enter__(self) -> autocast:
        if self._enabled:
            raise NotImplementedError(
                f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}): eager runs every op in the dtype "
                "of its inputs and has no autocasting; run the block without it (enabled=False), or cast the model "
                "and inputs with .half()/.to(dtype) yourself")
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device, self.fast_dtype, self._enabled):
                return fn(*args, **kwargs)
        return wrapper


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be enabled for `device_type`: never here (see autocast)."""
    return False


def _f32(v: float) -> float:
    """v rounded to float32 (an overflow is inf, as in a float32 tensor)."""
    with np.errstate(over="ignore"):
        return float(np.float32(v))


class GradScaler:
    """torch.amp.GradScaler(device="cuda", init_scale=2.0**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True).

    `scale(loss)` multiplies by the current scale; `step(opt)` unscales the gradients (once:
    `unscale_(opt)` may come first, for gradient clipping), skips the step when any of them
    is inf or NaN and steps otherwise; `update()` halves the scale after a skipped step and
    doubles it after `growth_interval` clean ones. A "cuda" scaler without a GPU disables
    itself with PyTorch's warning; disabled, every method passes through."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._enabled = bool(enabled)
        if self._enabled and device == "cuda" and not cuda_is_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._scale = _f32(init_scale)  # PyTorch keeps the scale in a float32 tensor
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer: dict[int, dict[str, Any]] = {}

    # -- the loss ------------------------------------------------------------------------
    def scale(self, outputs: Any) -> Any:
        """outputs * scale: a tensor, or the tensors of a list/tuple (nested), as PyTorch."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, Iterable):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    # -- the gradients -------------------------------------------------------------------
    def _state(self, optimizer: Any) -> dict[str, Any]:
        return self._per_optimizer.setdefault(id(optimizer), {"stage": "ready", "found_inf": False})

    def unscale_(self, optimizer: Any) -> None:
        """Divide the optimizer's gradients by the scale, in place, and note whether any is
        inf or NaN. Once per optimizer between updates."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stage"] == "unscaled":
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == "stepped":
            raise RuntimeError("unscale_() is being called after step().")
        inv = _f32(1.0 / self._scale)  # PyTorch: the float64 reciprocal of the scale, rounded to float32
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if p.grad.dtype == _dtypes.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    p.grad.mul_(inv)
                    if not found and not bool(p.grad.isfinite().all()):
                        found = True
        state["found_inf"] = found
        state["stage"] = "unscaled"

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """optimizer.step(*args, **kwargs) unless a gradient is inf or NaN (None then)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._state(optimizer)
        if state["stage"] == "stepped":
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == "ready":
            self.unscale_(optimizer)
        retval = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = "stepped"
        return retval

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """The next scale: `new_scale` when given; else backoff_factor times it after any
        skipped step since the last update, growth_factor times it after growth_interval
        clean updates in a row."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = _f32(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
        else:
            if not self._per_optimizer:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(s["found_inf"] for s in self._per_optimizer.values()):
                self._scale = _f32(self._scale * _f32(self._backoff_factor))
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = _f32(self._scale * _f32(self._growth_factor))
                    if math.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0
        self._per_optimizer = {}

    # -- state ---------------------------------------------------------------------------
    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's keys: scale, growth_factor, backoff_factor, growth_interval and
        _growth_tracker (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._scale = _f32(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


class _DeviceAmp:
    """`eager.cuda.amp` / `eager.cpu.amp`: PyTorch's per-device spellings, with the device
    filled in."""

    def __init__(self, device: str) -> None:
        self._device = device

    def autocast(self, enabled: bool = True, dtype: Any = None, cache_enabled: bool | None = None) -> autocast:
        # (PyTorch's per-device spellings are deprecated; it says so, naming the new one)
        warnings.warn(f"`torch.{self._device}.amp.autocast(args...)` is deprecated. Please use "
                      f"`torch.amp.autocast('{self._device}', args...)` instead.", FutureWarning, stacklevel=2)
        return autocast(self._device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    def GradScaler(self, *args: Any, **kwargs: Any) -> GradScaler:  # noqa: N802  (PyTorch's name)
        warnings.warn(f"`torch.{self._device}.amp.GradScaler(args...)` is deprecated. Please use "
                      f"`torch.amp.GradScaler('{self._device}', args...)` instead.", FutureWarning, stacklevel=2)
        return GradScaler(self._device, *args, **kwargs)


cuda_amp = _DeviceAmp("cuda")
cpu_amp = _DeviceAmp("cpu")

__all__ = ["GradScaler", "autocast", "is_autocast_available"]
