"""Printing tensors the way PyTorch does: `tensor([1., 2.], requires_grad=True)`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

_DEFAULT_DTYPES = ("float32", "int64", "bool")


@dataclass
class PrintOptions:
    """What `eager.set_printoptions` sets (PyTorch's defaults): digits after the point, the
    element count above which a tensor is summarized with `edgeitems` per end, the width
    lines wrap at (None: NumPy's 75, where PyTorch's 80 also fits one element more per line
    on some rows), and scientific notation (None: chosen from the values)."""

    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int | None = None
    sci_mode: bool | None = None


PRINT_OPTIONS = PrintOptions()


def _format_array(arr: np.ndarray, indent: int) -> str:
    opts = PRINT_OPTIONS
    summary: dict[str, Any] = {"threshold": opts.threshold if opts.threshold < np.inf else np.iinfo(np.int64).max,
               "edgeitems": opts.edgeitems, "max_line_width": opts.linewidth}  # (None: NumPy's)
    if arr.dtype.kind == "f":
        # the statistics in float64: comparing float16 values with 1e8 would cast 1e8 to
        # float16 (an overflow NumPy warns about) and printing must never warn
        finite = arr[np.isfinite(arr)].astype(np.float64)
        integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
        big = finite.size and (np.abs(finite).max() >= 1e8 or (np.abs(finite[finite != 0]).min(initial=1) < 1e-4))
        big = big if opts.sci_mode is None else opts.sci_mode
        p = opts.precision
        if integral and not big:
            base = lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)  # noqa: E731
        elif big:
            base = lambda v: f"{v:.{p}e}"  # noqa: E731
        else:
            base = lambda v: f"{v:.{p}f}"  # noqa: E731
        sample = arr.reshape(-1)[:2000]
        width = max((len(base(v)) for v in sample), default=0)
        return np.array2string(arr, separator=", ", formatter={"float_kind": lambda v: base(v).rjust(width)},
                               prefix=" " * indent, **summary)
    if arr.dtype.kind == "b":
        width = 5 if arr.size and not arr.all() else 4  # PyTorch pads True to False's width
        return np.array2string(arr, separator=", ", formatter={"bool": lambda v: str(bool(v)).rjust(width)},
                               prefix=" " * indent, **summary)
    return np.array2string(arr, separator=", ", prefix=" " * indent, **summary)


def tensor_repr(t, prefix: str = "tensor(") -> str:
    data = t._data if isinstance(t._data, np.ndarray) else t._data.get()
    body = _format_array(np.asarray(data), len(prefix))
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    if data.size == 0:
        # nothing to infer the shape or dtype from: PyTorch names them unless (0,) / float32
        if data.ndim != 1:
            extras.append(f"size={tuple(data.shape)}")
        if t.dtype.name != "float32":
            extras.append(f"dtype=eager.{t.dtype.name}")
    elif t.dtype.name not in _DEFAULT_DTYPES:
        extras.append(f"dtype=eager.{t.dtype.name}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return prefix + body + "".join(", " + e for e in extras) + ")"
