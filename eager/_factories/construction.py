"""Tensors from data: `tensor`, `as_tensor`, `from_numpy` and the legacy `FloatTensor`-style
constructors, the inference of a dtype from Python values, the default device, and the
log of created tensors that static's tracing reads."""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from .._device import CPU, device, xp_for
from .._tensor import Tensor, _as_device, _legacy_init, _set_requires_grad

_DEFAULT_DEVICE = {"device": CPU}  # eager.set_default_device changes it


def _dev(dev) -> device:
    return _DEFAULT_DEVICE["device"] if dev is None else _as_device(dev)


class _Created(threading.local):
    log: list[Tensor] | None = None  # a list while static traces a function on this thread


_CREATED = _Created()


def log_created(log: list | None) -> list | None:
    """Collect the tensors the factories make on this thread into `log` (None stops); returns
    the previous log. static traces with a log: a tensor made inside the traced function is
    a constant of the trace, not state shared with the caller."""
    prev, _CREATED.log = _CREATED.log, log
    return prev


def _finish(arr, requires_grad: bool) -> Tensor:
    t = Tensor._make(arr)
    if _CREATED.log is not None:
        _CREATED.log.append(t)
    if requires_grad:
        _set_requires_grad(t, True)  # refuses non-float dtypes with PyTorch's message
    return t


_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2}


def _infer_dtype(data) -> _dtypes.dtype:
    """PyTorch's inference for tensor(data): each scalar has a dtype (a Python float the
    default float dtype, an int int64, a bool bool, a NumPy scalar or a tensor its own) and a
    sequence (list, tuple, range) takes the promotion of its elements': the highest category
    (bool < integer < floating) wins whatever the sizes, so [1, 2.5] is float32 and
    [True, 2] int64; within a category the wider type does."""
    found: dict[int, set] = {}

    def visit(x) -> None:
        if isinstance(x, (list, tuple, range)):
            for item in x:
                visit(item)
            return
        if isinstance(x, Tensor):
            dt = x._data.dtype
        elif isinstance(x, (bool, np.bool_)):
            dt = np.dtype(np.bool_)
        elif isinstance(x, np.generic):
            dt = x.dtype
        elif isinstance(x, int):
            dt = np.dtype(np.int64)
        elif isinstance(x, float):
            dt = _dtypes.DEFAULT_FLOAT.np
        elif isinstance(x, np.ndarray):
            dt = x.dtype
        else:
            name = type(x).__name__
            if isinstance(x, (str, bytes)) or hasattr(x, "__iter__") and not hasattr(x, "__len__"):
                raise TypeError(f"new(): invalid data type '{name}'") if isinstance(x, (str, bytes)) else \
                    RuntimeError(f"Could not infer dtype of {name}")
            raise RuntimeError(f"Could not infer dtype of {name}")
        found.setdefault(_KIND_RANK.get(dt.kind, 3), set()).add(dt)

    visit(data)
    if not found:
        return _dtypes.DEFAULT_FLOAT  # tensor([]) is float32, as PyTorch's
    return _dtypes.from_numpy(np.result_type(*found[max(found)]))


def index_tensor(value) -> Tensor:
    """A list, tuple or range used as an index, as a tensor: an integer index (int64 even when
    empty, as PyTorch reads `x[[]]`) or a boolean mask."""
    if isinstance(value, (list, tuple, range)) and len(value) == 0:
        return tensor([], dtype=_dtypes.int64)
    return tensor(value)


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (a number, nested lists, an array or a tensor)."""
    if isinstance(data, Tensor):
        arr = data._data
        dt = _dtypes.as_dtype(dtype) if dtype is not None else data.dtype
        dev = _dev(device) if device is not None else data.device
        xp = xp_for(dev)
        out = xp.array(arr if dev == data.device else (arr.get() if dev == CPU else arr), dtype=dt.np, copy=True)
        return _finish(out, requires_grad)
    dev = _dev(device)
    xp = xp_for(dev)
    if isinstance(data, np.ndarray) or hasattr(data, "__cuda_array_interface__"):
        src = data.get() if (dev == CPU and not isinstance(data, np.ndarray)) else data
        dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.from_numpy(data.dtype)
        with np.errstate(over="ignore", invalid="ignore"):  # beyond the dtype's range: inf, silently
            return _finish(xp.array(src, dtype=dt.np, copy=True), requires_grad)
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _infer_dtype(data)
    if isinstance(data, np.generic):
        data = data.item()
    elif isinstance(data, range):
        data = list(data)
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # 1e5 as float16 is inf, silently (PyTorch)
            arr = np.array(data, dtype=dt.np)
    except ValueError as exc:
        _check_rectangular(data, 0)
        raise TypeError(f"tensor(): could not build a {dt.name} tensor from {type(data).__name__}: {exc}") from None
    except TypeError as exc:
        raise TypeError(f"tensor(): could not build a {dt.name} tensor from {type(data).__name__}: {exc}") from None
    except OverflowError:  # a number dt cannot hold: PyTorch's RuntimeError; uint8's -1 is 255
        with np.errstate(over="ignore", invalid="ignore"):
            arr = np.array(_fit_nested(data, dt), dtype=dt.np)
    if arr.dtype == object:
        raise TypeError(f"tensor(): nested sequences must be rectangular lists of numbers, got {data!r}")
    return _finish(arr if xp is np else xp.asarray(arr), requires_grad)


def _fit_nested(data: Any, dt: _dtypes.dtype) -> Any:
    """Nested lists of numbers with each number as dt stores it (gmops._checks.fit_scalar),
    raising PyTorch's overflow error at the first that dt cannot hold: the path taken only
    when NumPy refused the data, so well-formed data pays nothing."""
    from gmops._checks import fit_scalar  # noqa: PLC0415

    if isinstance(data, (list, tuple)):
        return [_fit_nested(item, dt) for item in data]
    return fit_scalar("tensor", data, dt)


def _check_rectangular(data, dim: int) -> None:
    """PyTorch's error for ragged nested lists: the first length that differs, and where."""
    if not isinstance(data, (list, tuple)) or not data:
        return
    first = data[0]
    n = len(first) if isinstance(first, (list, tuple)) else None
    for item in data:
        m = len(item) if isinstance(item, (list, tuple)) else None
        if m != n:
            raise ValueError(f"expected sequence of length {n} at dim {dim + 1} (got {m})")
    for item in data:
        _check_rectangular(item, dim + 1)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """`data` as a tensor, sharing memory when possible: a tensor or a NumPy array of the right dtype is not copied.

    Mirrors torch.as_tensor."""
    if isinstance(data, Tensor) and dtype is None and device is None:
        return data
    if isinstance(data, np.ndarray) and device is None and (dtype is None or _dtypes.as_dtype(dtype).np == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with `array` (writes show through both ways)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    _dtypes.from_numpy(array.dtype)
    # a view: the same memory, but the tensor's own shape and dtype (assigning `array.shape`
    # afterwards does not change the tensor's, as in PyTorch)
    return Tensor._make(array.view())


class _LegacyTensor(Tensor):
    """Base of FloatTensor & co.: constructing one gives a plain Tensor of that dtype."""

    _default_dtype: _dtypes.dtype  # set by each subclass (see _legacy)

    def __new__(cls, *args, device=None):
        t = object.__new__(Tensor)
        _legacy_init(t, args, device, cls._default_dtype)
        return t

    def __init__(self, *args, **kwargs) -> None:
        pass


def _legacy(name: str, dt: _dtypes.dtype):
    return type(name, (_LegacyTensor,), {"_default_dtype": dt, "__doc__": f"Legacy constructor of {dt.name} tensors."})


FloatTensor = _legacy("FloatTensor", _dtypes.float32)
DoubleTensor = _legacy("DoubleTensor", _dtypes.float64)
HalfTensor = _legacy("HalfTensor", _dtypes.float16)
LongTensor = _legacy("LongTensor", _dtypes.int64)
IntTensor = _legacy("IntTensor", _dtypes.int32)
BoolTensor = _legacy("BoolTensor", _dtypes.bool_)
ByteTensor = _legacy("ByteTensor", _dtypes.uint8)


def set_default_device(device) -> None:
    """Where factories (zeros, randn, tensor, ...) put tensors when no device is given."""
    _DEFAULT_DEVICE["device"] = CPU if device is None else _as_device(device)


def get_default_device() -> device:
    """The device factories use when none is given (see set_default_device). Mirrors torch.get_default_device."""
    return _DEFAULT_DEVICE["device"]
