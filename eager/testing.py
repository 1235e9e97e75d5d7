"""`eager.testing.assert_close`, as torch.testing.assert_close: tensors (and numbers,
sequences and mappings of them) equal within tolerances that default by dtype."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._functional import _host
from ._tensor import Tensor

# PyTorch's defaults (rtol, atol) by dtype; integers and bools must be equal
_TOLERANCES = {"float16": (1e-3, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}


def assert_close(actual: Any, expected: Any, *, rtol: float | None = None, atol: float | None = None,
                 equal_nan: bool = False, check_dtype: bool = True, check_device: bool = True,
                 msg: str | None = None) -> None:
    """AssertionError unless every element satisfies |actual - expected| <= atol + rtol |expected|
    (rtol and atol both given, or both from the dtype), with equal shapes and, unless told
    otherwise, equal dtypes and devices."""
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"rtol={rtol} and atol={atol}")
    _compare(actual, expected, rtol, atol, equal_nan, check_dtype, check_device, msg, "")


def _compare(actual, expected, rtol, atol, equal_nan, check_dtype, check_device, msg, where) -> None:
    try:
        _compare_values(actual, expected, rtol, atol, equal_nan, check_dtype, check_device, msg, where)
    except _Mismatch as e:  # PyTorch names the item that failed at the end of its message
        text = str(e)
        if e.where and not msg:
            text += f"\n\nThe failure occurred for item {e.where}"
        raise AssertionError(text) from None


class _Mismatch(AssertionError):
    """A mismatch of two values, and where in the nested inputs they were (`[0]['a']`)."""

    def __init__(self, text: str, where: str) -> None:
        super().__init__(text)
        self.where = where


def _compare_values(actual, expected, rtol, atol, equal_nan, check_dtype, check_device, msg, where) -> None:
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping) or set(actual) != set(expected):
            raise AssertionError(msg or f"The mappings{where} have different keys")
        for key in expected:
            _compare_values(actual[key], expected[key], rtol, atol, equal_nan, check_dtype, check_device, msg,
                            f"{where}[{key!r}]")
        return
    if isinstance(expected, Sequence) and not isinstance(expected, str):
        if not isinstance(actual, Sequence) or len(actual) != len(expected):
            raise AssertionError(msg or f"The sequences{where} have different lengths")
        for k, (a, e) in enumerate(zip(actual, expected)):
            _compare_values(a, e, rtol, atol, equal_nan, check_dtype, check_device, msg, f"{where}[{k}]")
        return
    a, e = np.asarray(_host(actual)), np.asarray(_host(expected))
    both = isinstance(actual, Tensor) and isinstance(expected, Tensor)
    if a.shape != e.shape:
        shapes = (actual.shape, expected.shape) if both else (a.shape, e.shape)
        raise _Mismatch(msg or f"The values for attribute 'shape' do not match: {shapes[0]} != {shapes[1]}.", where)
    if check_device and both and actual.device != expected.device:
        raise _Mismatch(msg or f"The values for attribute 'device' do not match: {actual.device} != {expected.device}.",
                        where)
    if check_dtype and both and actual.dtype != expected.dtype:
        raise _Mismatch(msg or f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}.",
                        where)
    common = np.result_type(a, e)
    if rtol is None:
        rtol, atol = _TOLERANCES.get(common.name, (0.0, 0.0))
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(all="ignore"):
        diff = np.abs(a64 - e64)
        ok = diff <= atol + rtol * np.abs(e64)
        ok |= a64 == e64  # infinities of one sign
        if equal_nan:
            ok |= np.isnan(a64) & np.isnan(e64)
        if ok.all():
            return
        bad = ~ok
        # the differences PyTorch reports, in the values' common dtype (a float32 relative
        # difference of 0.2 prints 0.20000000298023224; integers' absolute one is an integer,
        # their relative one a float32)
        if common.kind == "f":
            abs_diff = np.abs(a.astype(common) - e.astype(common))
            rel_diff = abs_diff / np.abs(e.astype(common))
        else:
            abs_diff = np.abs(a.astype(np.int64) - e.astype(np.int64))
            rel_diff = abs_diff.astype(np.float32) / np.abs(e.astype(np.float32))
    equality = rtol == 0 and atol == 0

    def line(kind: str, value: Any, index: Any, tol: float) -> str:
        text = f"{kind.title()} difference: {value}" if index is None else \
            f"Greatest {kind} difference: {value} at index {index}"
        return text + ("" if equality else f" (up to {tol} allowed)")

    if a.ndim == 0:
        head = "Scalars"
        extra = f"Expected {e.item()} but got {a.item()}."
        lines = [line("absolute", abs_diff.item(), None, atol), line("relative", rel_diff.item(), None, rtol)]
    else:
        head = "Tensor-likes"
        extra = f"Mismatched elements: {int(bad.sum())} / {a.size} ({bad.sum() / max(a.size, 1):.1%})"
        # the worst mismatch first (a NaN counts as the worst)
        scores_abs = np.where(bad, np.nan_to_num(abs_diff.astype(np.float64), nan=np.inf), -1.0)
        scores_rel = np.where(bad, np.nan_to_num(rel_diff.astype(np.float64), nan=np.inf), -1.0)
        worst_abs = np.unravel_index(np.argmax(scores_abs), a.shape)
        worst_rel = np.unravel_index(np.argmax(scores_rel), a.shape)
        lines = [line("absolute", abs_diff[worst_abs].item(), tuple(int(i) for i in worst_abs), atol),
                 line("relative", rel_diff[worst_rel].item(), tuple(int(i) for i in worst_rel), rtol)]
    raise _Mismatch(msg or (f"{head} are not {'equal' if equality else 'close'}!\n\n{extra}\n" + "\n".join(lines)),
                    where)
