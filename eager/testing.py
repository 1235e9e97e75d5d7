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
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping) or set(actual) != set(expected):
            raise AssertionError(msg or f"The mappings{where} have different keys")
        for key in expected:
            _compare(actual[key], expected[key], rtol, atol, equal_nan, check_dtype, check_device, msg,
                     f"{where}[{key!r}]")
        return
    if isinstance(expected, Sequence) and not isinstance(expected, str):
        if not isinstance(actual, Sequence) or len(actual) != len(expected):
            raise AssertionError(msg or f"The sequences{where} have different lengths")
        for k, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, rtol, atol, equal_nan, check_dtype, check_device, msg, f"{where}[{k}]")
        return
    a, e = np.asarray(_host(actual)), np.asarray(_host(expected))
    if a.shape != e.shape:
        raise AssertionError(msg or f"The values{where} are not close: shapes {a.shape} and {e.shape} differ")
    if check_dtype and isinstance(actual, Tensor) and isinstance(expected, Tensor) and actual.dtype != expected.dtype:
        raise AssertionError(msg or f"The values{where} have different dtypes: {actual.dtype} and {expected.dtype}")
    if check_device and isinstance(actual, Tensor) and isinstance(expected, Tensor) and actual.device != expected.device:
        raise AssertionError(msg or f"The values{where} are on different devices: {actual.device} and "
                                    f"{expected.device}")
    if rtol is None:
        rtol, atol = _TOLERANCES.get(np.result_type(a, e).name, (0.0, 0.0))
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
        rel = diff / np.abs(e64)
    # the worst mismatch first (a NaN counts as the worst)
    worst_abs = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(diff, nan=np.inf), -1.0)), a.shape)
    worst_rel = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(rel, nan=np.inf), -1.0)), a.shape)
    raise AssertionError(msg or (
        f"Tensor-likes{where} are not close!\n\nMismatched elements: {int(bad.sum())} / {a.size} "
        f"({100.0 * bad.sum() / max(a.size, 1):.1f}%)\n"
        f"Greatest absolute difference: {diff[worst_abs]} at index {tuple(int(i) for i in worst_abs)} "
        f"(up to {atol} allowed)\n"
        f"Greatest relative difference: {rel[worst_rel]} at index {tuple(int(i) for i in worst_rel)} "
        f"(up to {rtol} allowed)"))
