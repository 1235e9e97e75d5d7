"""Printing tensors the way PyTorch does: `tensor([1., 2.], requires_grad=True)`."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes


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


def _linewidth() -> int:
    return 80 if PRINT_OPTIONS.linewidth is None else int(PRINT_OPTIONS.linewidth)


class _Formatter:
    """PyTorch's element formatter (torch/_tensor_str.py): one width for all elements, and for
    floats one mode chosen from the nonzero finite values: integers (`1.`), fixed point with
    `precision` digits, or scientific when the largest is over 1e8, the ratio of largest to
    smallest over 1000 or the smallest under 1e-4 (unless set_printoptions set sci_mode)."""

    def __init__(self, values: np.ndarray) -> None:
        p = PRINT_OPTIONS.precision
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
        else:
            finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
            if finite.size:
                vals = finite.tolist()
                mag = np.abs(finite)
                lo, hi = float(mag.min()), float(mag.max())
                self.int_mode = bool(np.all(finite == np.ceil(finite)))
                forced = PRINT_OPTIONS.sci_mode
                self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) if forced is None else bool(forced)
                if self.sci_mode:
                    self.max_width = max(len(f"{v:.{p}e}") for v in vals)
                elif self.int_mode:  # (one more for the point: `1.`)
                    self.max_width = max(len(f"{v:.0f}") + 1 for v in vals)
                else:
                    self.max_width = max(len(f"{v:.{p}f}") for v in vals)

    def format(self, value: Any) -> str:
        p = PRINT_OPTIONS.precision
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(arr: np.ndarray) -> np.ndarray:
    """The elements a summarized print shows (PyTorch's get_summarized_data): `edgeitems`
    from each end of every dimension; the formatter's width and mode are chosen from them."""
    e = PRINT_OPTIONS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        return np.concatenate((arr[:e], arr[len(arr) - e:])) if arr.shape[0] > 2 * e else arr
    if not e:
        return arr[tuple(slice(0, 0) for _ in arr.shape)]
    rows = list(range(e)) + list(range(len(arr) - e, len(arr))) if arr.shape[0] > 2 * e else range(len(arr))
    return np.stack([_summarized(arr[i]) for i in rows])


def _vector_str(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    e = PRINT_OPTIONS.edgeitems
    per_line = max(1, int(math.floor((_linewidth() - indent) / (fmt.max_width + 2))))
    if summarize and not e:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * e:
        data = ([fmt.format(v) for v in arr[:e].tolist()] + [" ..."]
                + [fmt.format(v) for v in arr[len(arr) - e:].tolist()])
    else:
        data = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(arr: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    e = PRINT_OPTIONS.edgeitems
    if summarize and arr.shape[0] > 2 * e:
        slices = ([_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
                  + [_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(len(arr) - e, len(arr))])
    else:
        slices = [_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(arr.shape[0])]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _format_array(arr: np.ndarray, indent: int) -> str:
    """The body PyTorch prints for `arr` after a prefix `indent` characters long."""
    if arr.size == 0:
        return "[]"
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)  # (PyTorch prints half tensors as float ones)
    summarize = arr.size > PRINT_OPTIONS.threshold
    fmt = _Formatter(_summarized(arr) if summarize else arr)
    return _tensor_str(arr, indent, summarize, fmt)


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
        if t.dtype.name != _dtypes.DEFAULT_FLOAT.name:
            extras.append(f"dtype=eager.{t.dtype.name}")
    elif t.dtype.name not in (_dtypes.DEFAULT_FLOAT.name, "int64", "bool"):  # (set_default_dtype moves it)
        extras.append(f"dtype=eager.{t.dtype.name}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return prefix + body + "".join(", " + e for e in extras) + ")"
