"""`torch.*` factories and global queries eager lacked: the signal windows (hann, hamming,
blackman, bartlett, kaiser with PyTorch's `periodic` rule: a periodic window of N is the
symmetric window of N + 1 without its last point), empty_strided, asarray, frombuffer,
cumulative_trapezoid, typename, and the build / mode queries a script asks (has_lapack,
is_anomaly_enabled, the autocast state of a host build whose autocast is off, ...).

The windows are compositions of arange and cos / i0 in the requested dtype, as ATen's."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from .._grad_mode import STATE as _GRAD_STATE
from .histograms import histogramdd


def _window_positions(op: str, window_length: int, periodic: bool, dtype: Any, requires_grad: bool) -> Any:
    """(n, N): positions 0..length-1 in `dtype` and the symmetric length N the formula uses; None for 0 / 1."""
    from .. import arange, get_default_dtype  # noqa: PLC0415

    dtype = dtype if dtype is not None else get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{op} expects floating point dtypes, got: {dtype}")
    if window_length < 0:
        raise RuntimeError(f"{op} requires non-negative window_length, got window_length={window_length}")
    return arange(window_length, dtype=dtype), (window_length + 1 if periodic else window_length), dtype


def _trivial(window_length: int, dtype: Any, requires_grad: bool) -> Any:
    from .. import ones  # noqa: PLC0415
    return ones(window_length, dtype=dtype, requires_grad=requires_grad)


def _cosine_window(op: str, coeffs: tuple[float, ...], window_length: int, periodic: bool, dtype: Any,
                   requires_grad: bool) -> Any:
    n, N, dtype = _window_positions(op, window_length, periodic, dtype, requires_grad)
    if window_length <= 1:
        return _trivial(window_length, dtype, requires_grad)
    step = 2.0 * math.pi / (N - 1)
    out = n * 0 + coeffs[0]
    for k, c in enumerate(coeffs[1:], start=1):
        out = out + ((n * (step * k)).cos() * c)
    return out.requires_grad_(requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                device: Any = None, requires_grad: bool = False) -> Any:
    """0.5 - 0.5 cos(2 pi n / (N - 1)). Mirrors torch.hann_window."""
    return _cosine_window("hann_window", (0.5, -0.5), window_length, periodic, dtype, requires_grad)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype: Any = None, layout: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """alpha - beta cos(2 pi n / (N - 1)). Mirrors torch.hamming_window."""
    return _cosine_window("hamming_window", (alpha, -beta), window_length, periodic, dtype, requires_grad)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                    device: Any = None, requires_grad: bool = False) -> Any:
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1)). Mirrors torch.blackman_window."""
    return _cosine_window("blackman_window", (0.42, -0.5, 0.08), window_length, periodic, dtype, requires_grad)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                    device: Any = None, requires_grad: bool = False) -> Any:
    """1 - |2 n / (N - 1) - 1|. Mirrors torch.bartlett_window."""
    n, N, dtype = _window_positions("bartlett_window", window_length, periodic, dtype, requires_grad)
    if window_length <= 1:
        return _trivial(window_length, dtype, requires_grad)
    return (1 - (n * (2.0 / (N - 1)) - 1).abs()).requires_grad_(requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype: Any = None,
                  layout: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = (N - 1) / 2. Mirrors torch.kaiser_window."""
    from .. import i0, tensor  # noqa: PLC0415

    n, N, dtype = _window_positions("kaiser_window", window_length, periodic, dtype, requires_grad)
    if window_length <= 1:
        return _trivial(window_length, dtype, requires_grad)
    a = (N - 1) / 2.0
    ratio = (n - a) / a
    i0_: Any = i0
    out = i0_((1 - ratio * ratio).clamp_min(0).sqrt() * beta) / i0_(tensor(beta, dtype=dtype))
    return out.requires_grad_(requires_grad)


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Any:
    """An uninitialized tensor of `size` laid out `stride` apart. Mirrors torch.empty_strided."""
    from .. import empty  # noqa: PLC0415

    return empty(1, dtype=dtype, device=device).new_empty_strided(tuple(size), tuple(stride), dtype=dtype,
                                                                  requires_grad=requires_grad)


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool = False) -> Any:
    """A tensor from a tensor, array, or (nested) sequence / scalar; a tensor of the requested dtype is
    returned as is unless copy=True. Mirrors torch.asarray."""
    from .. import Tensor, as_tensor, tensor  # noqa: PLC0415

    if isinstance(obj, Tensor):
        out = obj if dtype is None or obj.dtype == dtype else obj.to(dtype)
        if copy and out is obj:
            out = obj.clone()
        if copy is False and out is not obj:
            raise ValueError(f"asarray: can't alias a {obj.dtype} tensor as {dtype} with copy=False")
        return out.requires_grad_(requires_grad) if requires_grad else out
    if copy:
        return tensor(np.array(obj), dtype=dtype, requires_grad=requires_grad)
    out = as_tensor(obj, dtype=dtype)
    return out.requires_grad_(requires_grad) if requires_grad else out


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Any:
    """A 1-D tensor over a Python buffer's bytes, interpreted as `dtype`. Mirrors torch.frombuffer."""
    from .. import as_tensor  # noqa: PLC0415

    np_dtype = _dtypes.as_dtype(dtype).np
    nbytes = memoryview(buffer).nbytes
    if offset < 0 or offset >= max(nbytes, 1) and nbytes:
        raise ValueError(f"both buffer length ({nbytes}) and offset ({offset}) must be a multiple of element size")
    if count <= 0 and (nbytes - offset) % np_dtype.itemsize:
        raise ValueError(f"buffer length ({nbytes - offset} after offset) must be a multiple of element size "
                         f"({np_dtype.itemsize})")
    array = np.frombuffer(buffer, dtype=np_dtype, count=count, offset=offset)
    out = as_tensor(array)
    return out.requires_grad_(requires_grad) if requires_grad else out


def cumulative_trapezoid(y: Any, x: Any = None, *, dx: float | None = None, dim: int = -1) -> Any:
    """The running trapezoid-rule integral of y along dim (one fewer point). Mirrors torch.cumulative_trapezoid."""
    n = y.shape[dim]
    if n == 0:
        return y.narrow(dim, 0, 0)
    pair_sum = y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)
    if x is None:
        return (pair_sum * ((1.0 if dx is None else dx) / 2.0)).cumsum(dim)
    if x.dim() == 1:
        shape = [1] * y.dim()
        shape[dim] = x.shape[0]
        x = x.reshape(shape)
    steps = x.narrow(dim, 1, x.shape[dim] - 1) - x.narrow(dim, 0, x.shape[dim] - 1)
    return (pair_sum * steps / 2.0).cumsum(dim)


def typename(obj: Any) -> str:
    """PyTorch's legacy type name ('torch.FloatTensor') for a tensor, else the object's qualified type name."""
    from .. import Tensor  # noqa: PLC0415

    if isinstance(obj, Tensor):
        return str(obj.type())
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", "__builtin__", None) else f"{module}.{name}"


def scalar_tensor(s: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Any:
    """A 0-d tensor holding s, of the default float dtype unless given (an int or bool too, as
    PyTorch's). Mirrors torch.scalar_tensor."""
    from .. import get_default_dtype, tensor  # noqa: PLC0415

    return tensor(s, dtype=dtype or get_default_dtype(), requires_grad=requires_grad)


def randint_like(input: Any, low: Any, high: Any = None, *, dtype: Any = None, layout: Any = None,
                 device: Any = None, requires_grad: bool = False, memory_format: Any = None,
                 generator: Any = None) -> Any:
    """Integers drawn uniformly from [low, high) (from [0, low) when high is not given) in input's shape and
    dtype unless given. Mirrors torch.randint_like."""
    from .. import randint  # noqa: PLC0415

    if high is None:
        low, high = 0, low
    return randint(int(low), int(high), tuple(input.shape), dtype=dtype or input.dtype,
                   requires_grad=requires_grad)


def matrix_rank(input: Any, tol: Any = None, symmetric: bool = False, *, out: Any = None) -> Any:
    """Removed since PyTorch 1.9: raises as PyTorch 2.x does, naming the replacement."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed.\nPlease use the "
        "`torch.linalg.matrix_rank` function instead. The parameter 'symmetric' was renamed in "
        "`torch.linalg.matrix_rank()` to 'hermitian'.")


# -- build and mode queries ----------------------------------------------------------------------------
has_lapack = True  # torch.linalg runs on the host (NumPy's LAPACK)
has_mkl = False
has_openmp = True
has_spectral = True


def is_anomaly_enabled() -> bool:
    """Whether detect_anomaly / set_detect_anomaly(True) is active. Mirrors torch.is_anomaly_enabled."""
    return bool(_GRAD_STATE.anomaly)


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly mode also checks backward results for nan. Mirrors torch.is_anomaly_check_nan_enabled."""
    return bool(_GRAD_STATE.anomaly_check_nan)


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turns anomaly mode on or off globally. Mirrors torch.set_anomaly_enabled."""
    _GRAD_STATE.anomaly = bool(enabled)
    _GRAD_STATE.anomaly_check_nan = bool(check_nan)


_AUTOCAST: dict[str, Any] = {"dtype": {"cpu": "bfloat16", "cuda": "float16"}, "cache": True,
                              "enabled": {}, "nesting": 0}
_warn_always = [False]
_debug_mode = [0]


def _autocast_dtype_of(device_type: str) -> Any:
    from .. import bfloat16, float16  # noqa: PLC0415
    name = _AUTOCAST["dtype"].get(device_type, "float16")
    return name if not isinstance(name, str) else (bfloat16 if name == "bfloat16" else float16)


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """What set_autocast_enabled last recorded for device_type ('cuda' when not given, as PyTorch's); False
    by default. Eager's ops do not change dtypes under it: the state is kept so code that saves and
    restores it round-trips. Mirrors torch.is_autocast_enabled."""
    return bool(_AUTOCAST["enabled"].get("cuda" if device_type is None else device_type, False))


def set_autocast_enabled(device_type: Any, enabled: Any = None) -> None:
    """Records the autocast flag for device_type (or, given one bool, for 'cuda'). Mirrors
    torch.set_autocast_enabled."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _AUTOCAST["enabled"][str(device_type)] = bool(enabled)


def is_autocast_cpu_enabled() -> bool:
    """Mirrors the deprecated torch.is_autocast_cpu_enabled."""
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Mirrors the deprecated torch.set_autocast_cpu_enabled."""
    set_autocast_enabled("cpu", enabled)


def autocast_increment_nesting() -> int:
    """The autocast nesting depth after entering one more region. Mirrors torch.autocast_increment_nesting."""
    _AUTOCAST["nesting"] += 1
    return int(_AUTOCAST["nesting"])


def autocast_decrement_nesting() -> int:
    """The depth after leaving one region. Mirrors torch.autocast_decrement_nesting."""
    _AUTOCAST["nesting"] = max(0, _AUTOCAST["nesting"] - 1)
    return int(_AUTOCAST["nesting"])


def get_autocast_dtype(device_type: str) -> Any:
    """The dtype autocast would use on device_type (bfloat16 on the CPU, float16 elsewhere, as PyTorch's
    defaults). Mirrors torch.get_autocast_dtype."""
    return _autocast_dtype_of(device_type)


def get_autocast_cpu_dtype() -> Any:
    """Mirrors the deprecated torch.get_autocast_cpu_dtype."""
    return _autocast_dtype_of("cpu")


def get_autocast_gpu_dtype() -> Any:
    """Mirrors the deprecated torch.get_autocast_gpu_dtype."""
    return _autocast_dtype_of("cuda")


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """Records the dtype get_autocast_dtype reports. Mirrors torch.set_autocast_dtype."""
    _AUTOCAST["dtype"][device_type] = dtype


def set_autocast_cpu_dtype(dtype: Any) -> None:
    """Mirrors the deprecated torch.set_autocast_cpu_dtype."""
    set_autocast_dtype("cpu", dtype)


def is_autocast_cache_enabled() -> bool:
    """Whether autocast caches casts (True by default, as PyTorch's). Mirrors torch.is_autocast_cache_enabled."""
    return bool(_AUTOCAST["cache"])


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Mirrors torch.set_autocast_cache_enabled."""
    _AUTOCAST["cache"] = bool(enabled)


def clear_autocast_cache() -> None:
    """Nothing is cached: autocast is off. Mirrors torch.clear_autocast_cache."""


def is_warn_always_enabled() -> bool:
    """Whether warn-once warnings warn every time. Mirrors torch.is_warn_always_enabled."""
    return _warn_always[0]


def set_warn_always(b: bool) -> None:
    """Mirrors torch.set_warn_always."""
    _warn_always[0] = bool(b)


def get_deterministic_debug_mode() -> int:
    """0 (off), 1 (warn) or 2 (error), from use_deterministic_algorithms or set_deterministic_debug_mode.
    Mirrors torch.get_deterministic_debug_mode."""
    from .._settings import are_deterministic_algorithms_enabled, is_deterministic_algorithms_warn_only_enabled  # noqa: PLC0415
    if are_deterministic_algorithms_enabled():
        return 1 if is_deterministic_algorithms_warn_only_enabled() else 2
    return 0


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """Sets use_deterministic_algorithms from 0/1/2 or 'default'/'warn'/'error'. Mirrors
    torch.set_deterministic_debug_mode."""
    from .._settings import use_deterministic_algorithms  # noqa: PLC0415

    names = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in names:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                               f"but got {debug_mode}")
        debug_mode = names[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


__all__ = [
    "autocast_decrement_nesting", "autocast_increment_nesting", "set_autocast_cpu_enabled", "set_autocast_enabled",
    "asarray", "bartlett_window", "blackman_window", "clear_autocast_cache", "cumulative_trapezoid",
    "empty_strided", "frombuffer", "randint_like",
    "scalar_tensor", "get_autocast_cpu_dtype", "get_autocast_dtype", "get_autocast_gpu_dtype",
    "get_deterministic_debug_mode", "hamming_window", "hann_window", "has_lapack", "has_mkl", "has_openmp",
    "has_spectral", "histogramdd", "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "is_autocast_cache_enabled",
    "is_autocast_cpu_enabled", "is_autocast_enabled", "is_warn_always_enabled", "kaiser_window", "matrix_rank",
    "set_anomaly_enabled", "set_autocast_cache_enabled", "set_autocast_cpu_dtype", "set_autocast_dtype",
    "set_deterministic_debug_mode", "set_warn_always", "typename",
]
