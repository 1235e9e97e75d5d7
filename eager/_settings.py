"""Process-wide settings PyTorch scripts make in their first lines: threads, determinism,
print options, dtype limits (`finfo`, `iinfo`); the `torch.backends` flags are the
`eager.backends` package. What has no counterpart here says so in its docstring."""
from __future__ import annotations

from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmbase import threads as _threads

from ._repr import PRINT_OPTIONS

# -- threads -------------------------------------------------------------------------------------


def set_num_threads(n: int) -> None:
    """Threads of the native kernels, of the products they split and of the compiled code's
    blocks, as torch.set_num_threads sizes PyTorch's intra-op pool (the default:
    GRAPHMODE_THREADS, else OMP_NUM_THREADS, else the cores this process may run on). NumPy's
    BLAS is kept on one thread unless the user chose its count, and large products are split
    among these threads instead, so the two pools never fight (gmbase.threads, where the one
    count lives); a kernel call still runs on fewer while other processes keep cores busy."""
    _threads.set_num_threads(n)
    if _flush["mode"]:  # workers a larger team starts get the mode too
        _apply_flush_denormal(True)


def get_num_threads() -> int:
    """The thread count set_num_threads sets (default: GRAPHMODE_THREADS, OMP_NUM_THREADS or
    the usable cores), as torch.get_num_threads."""
    return _threads.num_threads()


_flush = {"mode": False}


def _apply_flush_denormal(mode: bool) -> bool:
    from gmnative import fpmode  # noqa: PLC0415  (builds a small unit on first use)

    return fpmode.flush_denormal(mode, max(_threads.num_threads(), 1))


def set_flush_denormal(mode: bool) -> bool:
    """As torch.set_flush_denormal: with mode True, float32 and float64 arithmetic reads a
    subnormal operand as zero and writes a subnormal result as zero (the x86 MXCSR's
    denormals-are-zero and flush-to-zero bits), in the calling thread, where NumPy computes,
    and in the native kernels' OpenMP workers; False turns it off. Returns True where the mode
    could be set, False where it cannot (no native kernels on this machine, or not x86).

    Why: a model trained long on small gradients fills its gradients and optimizer buffers with
    subnormal numbers, which x86 cores compute on a slow path (W6's eager step: 6.3 against 4.8
    ms once most of its momentum values were subnormal). Threads started by Python code (a
    DataLoader's, a thread pool's) keep their own mode, as in PyTorch."""
    if not isinstance(mode, bool):
        raise RuntimeError(f"set_flush_denormal expects a bool, but got {type(mode).__name__}")
    done = _apply_flush_denormal(mode)
    if done:
        _flush["mode"] = mode
    return done


_interop_threads = 1


def set_num_interop_threads(n: int) -> None:
    """Recorded only: eager runs one op at a time, so there is no inter-op pool to size."""
    global _interop_threads
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise RuntimeError(f"set_num_interop_threads expects a positive integer, got {n!r}")
    _interop_threads = n


def get_num_interop_threads() -> int:
    """What set_num_interop_threads recorded (1 by default)."""
    return _interop_threads


# -- determinism ---------------------------------------------------------------------------------
_deterministic = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Recorded, as PyTorch records it, and it keeps every native kernel call on the team
    set_num_threads sizes: the kernels add per-thread partial sums in thread order, so a
    result depends on the thread count only, and with this on never on the machine's load
    (by default a call runs on fewer threads while other processes keep cores busy)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool, but got {type(mode).__name__}")
    _deterministic.update(mode=mode, warn_only=bool(warn_only))
    _threads.pin_team(mode)  # a kernel's team no longer shrinks with the machine's load


def are_deterministic_algorithms_enabled() -> bool:
    """What use_deterministic_algorithms recorded."""
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """The warn_only flag use_deterministic_algorithms recorded."""
    return _deterministic["warn_only"]


# -- dtype promotion -----------------------------------------------------------------------------
def promote_types(type1: Any, type2: Any) -> _dtypes.dtype:
    """The dtype two tensor dtypes promote to (int32 with float32: float32). Mirrors torch.promote_types."""
    return _dtypes.promote(_dtypes.as_dtype(type1), _dtypes.as_dtype(type2))


def result_type(tensor1: Any, tensor2: Any) -> _dtypes.dtype:
    """The dtype an arithmetic op of the two gives, by PyTorch's rules for dimensioned and 0-d
    tensors and Python numbers (torch.tensor([1]) with 1.0: float32). Mirrors torch.result_type."""
    dims: list[_dtypes.dtype] = []
    zero_dims: list[_dtypes.dtype] = []
    scalars: list[Any] = []
    for t in (tensor1, tensor2):
        if hasattr(t, "dtype") and hasattr(t, "ndim"):
            (dims if t.ndim else zero_dims).append(_dtypes.as_dtype(t.dtype))
        else:
            scalars.append(t)
    return _dtypes.result_type(dims, zero_dims, scalars)


def can_cast(from_: Any, to: Any) -> bool:
    """Whether PyTorch's casting rules allow `from_` into `to` for ops with out= and in-place
    ops: not floating into integral or bool, nor integral into bool. Mirrors torch.can_cast."""
    return _dtypes.as_dtype(from_).category <= _dtypes.as_dtype(to).category


# -- float32 matmul precision --------------------------------------------------------------------
_matmul_precision = {"value": "highest"}


def set_float32_matmul_precision(precision: str) -> None:
    """Record PyTorch's float32 matmul precision ('highest', 'high' or 'medium'; others warn
    and change nothing, as PyTorch's). NumPy's products here are always full float32, so
    'high' and 'medium' (TF32/bfloat16 on GPUs) compute the same. Mirrors
    torch.set_float32_matmul_precision."""
    if precision not in ("highest", "high", "medium"):
        import warnings  # noqa: PLC0415

        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision["value"] = precision


def get_float32_matmul_precision() -> str:
    """What set_float32_matmul_precision recorded ('highest' by default)."""
    return _matmul_precision["value"]


# -- printing ------------------------------------------------------------------------------------
_PROFILES: dict[str, dict[str, Any]] = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=None),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=None),
             "full": dict(precision=4, threshold=float("inf"), edgeitems=3, linewidth=None)}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """How tensors print, as torch.set_printoptions: a profile ("default", "short", "full")
    first, then each option given. sci_mode=None (the default) lets the values choose."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        for name, value in _PROFILES[profile].items():
            setattr(PRINT_OPTIONS, name, value)
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTIONS, name, value)
    PRINT_OPTIONS.sci_mode = sci_mode


# -- dtype limits --------------------------------------------------------------------------------
class _TypeInfo:
    """The fields finfo and iinfo share, read from NumPy's info of the dtype."""

    def __init__(self, type: Any, floating: bool) -> None:  # noqa: A002  (PyTorch's parameter name)
        dt = _dtypes.DEFAULT_FLOAT if type is None else _dtypes.as_dtype(type)
        if dt.is_floating_point != floating or dt.name == "bool":
            other = "iinfo" if floating else "finfo"
            kind = "floating point" if floating else "integer"
            raise TypeError(f"{'f' if floating else 'i'}info: torch.{dt.name} is not a{'n' if not floating else ''} "
                            f"{kind} dtype; use {other}")
        self.dtype = dt.name
        self._info: Any = np.finfo(dt.np) if floating else np.iinfo(dt.np)
        self.bits = int(self._info.bits)


class finfo(_TypeInfo):  # noqa: N801  (PyTorch's name)
    """Limits of a floating dtype (default: the default dtype), as torch.finfo."""

    def __init__(self, type: Any = None) -> None:  # noqa: A002
        super().__init__(type, floating=True)
        info = self._info
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo(_TypeInfo):  # noqa: N801  (PyTorch's name)
    """Limits of an integer dtype, as torch.iinfo."""

    def __init__(self, type: Any) -> None:  # noqa: A002
        super().__init__(type, floating=False)
        self.max, self.min = int(self._info.max), int(self._info.min)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def is_floating_point(input: Any) -> bool:  # noqa: A002
    """Whether the tensor's dtype is a floating-point one."""
    return bool(input.dtype.is_floating_point)


def is_complex(input: Any) -> bool:  # noqa: A002
    """Always False: there are no complex dtypes here."""
    return False


