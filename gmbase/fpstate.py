"""NumPy's floating-point reports, switched off around eager's own computations.

NumPy reports log(0), sqrt(-1), 0/0 and overflow as RuntimeWarnings pointing into eager's
files; PyTorch computes the same inf/nan silently. An op whose forward computes values
(`op.quiet_fp`, see gmops._registry) runs with those reports off for that call only, and
the backward engine for the whole pass, so the user's own NumPy error state is left alone.
Entering `np.errstate` costs microseconds (it builds its state object each time); setting
NumPy's error-state context variable to one prebuilt "ignore" state costs a fraction of that.
Both are the same mechanism: errstate is a context manager over this variable.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np


class _FpState(Protocol):
    """NumPy's error-state context variable (or the stand-in below): set returns a token."""

    def set(self, value: Any, /) -> Any: ...
    def reset(self, token: Any, /) -> None: ...


FP_STATE: _FpState
FP_QUIET: object
try:
    from numpy._core.umath import _extobj_contextvar, _make_extobj

    FP_STATE, FP_QUIET = _extobj_contextvar, _make_extobj(all="ignore")
except ImportError:  # a NumPy without the context variable: the public, slower context manager
    class _ErrstateVar:
        @staticmethod
        def set(value: Any, /) -> np.errstate:
            state = np.errstate(all="ignore")
            state.__enter__()
            return state

        @staticmethod
        def reset(token: Any, /) -> None:
            token.__exit__(None, None, None)

    FP_STATE, FP_QUIET = _ErrstateVar(), object()

# bound once: two lookups fewer per op
set_fp: Callable[[Any], object] = FP_STATE.set
restore_fp: Callable[[Any], None] = FP_STATE.reset


def quiet_fp() -> object:
    """Switch NumPy's floating-point reports off; returns the token for `restore_fp`."""
    return set_fp(FP_QUIET)
