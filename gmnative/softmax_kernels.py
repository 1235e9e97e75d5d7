"""eager's softmax and log_softmax gradient kernels over the last dimension
(csrc/eager_softmax.cpp): each gradient as one native call on C-contiguous float32/float64
rows, and softmax's forward around NumPy's exp (the steps before and after it native, with
the op's NumPy bits, which compiled code reproduces).

Why: op by op, softmax is five NumPy passes forward and its gradient four eager ops backward
(a small GPT's attention weights spent about 4x PyTorch's time there). Each function returns
None where it cannot run (no compiler, GRAPHMODE_EAGER_NATIVE=0, another dtype or layout):
the caller runs its NumPy code then. The unit is built on first use and cached on disk like
eager's other kernels (gmnative.kernels), through the same call path, with the same switch.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._units import LazyUnit

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_I64 = np.dtype(np.int64)
_NAMES = ("softmax_backward", "log_softmax_rows_backward")


class _Unit:
    """The loaded library, its kernels' addresses and formats, and the call path."""

    def __init__(self, library: Any, call: Any, formats: Any) -> None:
        self.call = call
        self.address: dict = {}
        for suffix, dt in (("f32", "float32"), ("f64", "float64")):
            for name in _NAMES:
                args = (dt, dt, dt, "int64")
                self.address[f"{name}_{suffix}"] = (library.address(f"gm_eager_{name}_{suffix}"), formats(args))
            self.address[f"row_max_{suffix}"] = (library.address(f"gm_eager_row_max_{suffix}"),
                                                 formats((dt, dt, "int64")))
            self.address[f"column_sum_{suffix}"] = (library.address(f"gm_eager_column_sum_{suffix}"),
                                                    formats((dt, dt, "int64")))
            self.address[f"row_max_sub_{suffix}"] = (library.address(f"gm_eager_row_max_sub_{suffix}"),
                                                     formats((dt, dt, "int64")))
            self.address[f"rows_divide_by_sum_{suffix}"] = (library.address(f"gm_eager_rows_divide_by_sum_{suffix}"),
                                                            formats((dt, "int64")))


_loader: LazyUnit[_Unit] = LazyUnit(("eager_rows.h", "eager_softmax.cpp"), "gm_eager_softmax", _Unit)
_unit = _loader.get


def reset() -> None:
    """Forget the loaded unit (the next use looks at GRAPHMODE_EAGER_NATIVE again)."""
    _loader.reset()


def _rows(x: np.ndarray) -> tuple[int, int] | None:
    """(rows, row length) of a non-empty C-contiguous float32/float64 array of rank >= 1."""
    if type(x) is not np.ndarray or x.dtype not in _SUFFIX or not x.ndim or not x.size or not x.flags.c_contiguous:
        return None
    c = x.shape[-1]
    return x.size // c, c


# elements from which softmax's row steps split their rows across the kernels' threads (as
# PyTorch's softmax splits rows above its grain of 32768): below, handing rows to another
# thread costs more than it saves
ROWS_SPLIT_MIN = 1 << 15


def _threads(size: int) -> int:
    """The team for a row kernel over `size` elements: the kernels' threads (which shrink on a
    loaded machine) from ROWS_SPLIT_MIN elements, else the calling thread alone."""
    if size < ROWS_SPLIT_MIN:
        return 1
    from . import build  # noqa: PLC0415

    return build.threads()


def available() -> bool:
    """Whether the kernels run here (a compiler, and GRAPHMODE_EAGER_NATIVE not 0)."""
    return _unit() is not None


def backward(g: np.ndarray, y: np.ndarray, log: bool) -> np.ndarray | None:
    """The gradient of softmax, y * (g - sum(g * y)), or of log_softmax, g - exp(y) * sum(g),
    over the last dimension, from the incoming gradient g and the forward's output y (one
    shape and dtype, C-contiguous); None where the kernel does not run."""
    rc = _rows(g)
    if rc is None or type(y) is not np.ndarray or y.dtype != g.dtype or y.shape != g.shape or not y.flags.c_contiguous:
        return None
    u = _unit()
    if u is None:
        return None
    name = "log_softmax_rows_backward" if log else "softmax_backward"
    addr, fmt = u.address[f"{name}_{_SUFFIX[g.dtype]}"]
    out = np.empty(g.shape, g.dtype)
    u.call(addr, 1 if log else _threads(g.size), (g.nbytes, y.nbytes, -out.nbytes, 16), fmt, g, y, out,
           np.array(rc, _I64))
    return out


def row_max(x: np.ndarray) -> tuple[np.ndarray, int] | None:
    """(the maximum over x's last dimension, kept as a dimension of 1; NaN where a row holds
    one), and how many rows' maxima are not finite; None where the kernel does not run."""
    rc = _rows(x)
    u = _unit() if rc is not None else None
    if u is None or rc is None:
        return None
    addr, fmt = u.address[f"row_max_{_SUFFIX[x.dtype]}"]
    out = np.empty(x.shape[:-1] + (1,), x.dtype)
    d = np.array([rc[0], rc[1], 0], _I64)
    u.call(addr, 1, (x.nbytes, -out.nbytes, -24), fmt, x, out, d)
    return out, int(d[2])


def softmax(x: np.ndarray) -> np.ndarray | None:
    """softmax over x's last dimension with the op's NumPy bits: e = x - max (exact, native),
    np.exp(e) (NumPy's own exp), e / (0 + NumPy's pairwise sum of the row) (native). None
    where the kernels do not run or a row's maximum is not finite (NaN, or all -inf: the
    op's forward then says what NumPy says)."""
    rc = _rows(x)
    u = _unit() if rc is not None else None
    if u is None or rc is None:
        return None
    suffix = _SUFFIX[x.dtype]
    addr, fmt = u.address[f"row_max_sub_{suffix}"]
    e = np.empty(x.shape, x.dtype)
    d = np.array([rc[0], rc[1], 0], _I64)
    nt = _threads(x.size)
    u.call(addr, nt, (x.nbytes, -e.nbytes, -24), fmt, x, e, d)
    if d[2]:
        return None
    np.exp(e, out=e)
    addr, fmt = u.address[f"rows_divide_by_sum_{suffix}"]
    u.call(addr, nt, (-e.nbytes, 24), fmt, e, d)
    return e


def column_sum(g: np.ndarray) -> np.ndarray | None:
    """g.sum(0) of a 2-d C-contiguous float32/float64 array with its bits (each column summed
    row by row from 0, as NumPy does; the columns split across the kernels' threads from
    ROWS_SPLIT_MIN elements), or None where the kernel does not run."""
    rc = _rows(g)
    if rc is None or g.ndim != 2:
        return None
    u = _unit()
    if u is None:
        return None
    addr, fmt = u.address[f"column_sum_{_SUFFIX[g.dtype]}"]
    out = np.empty(g.shape[1], g.dtype)
    u.call(addr, _threads(g.size), (g.nbytes, -out.nbytes, 16), fmt, g, out, np.array(g.shape, _I64))
    return out


__all__ = ["available", "backward", "column_sum", "reset", "row_max", "softmax"]
