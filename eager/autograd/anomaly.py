"""Anomaly mode: when on, every node remembers the forward stack that created it, a failing
backward names that node and shows where it came from, and (unless check_nan=False) a NaN
produced in backward is an error naming the node."""
from __future__ import annotations

import functools
import os
import traceback
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from .._grad_mode import STATE

_R = TypeVar("_R")

# Whether anomaly mode was ever switched on (any thread): until then eager's hot path does not
# read the thread-local flag per recorded op.
EVER_ON = [False]


class TracedNode(Protocol):
    """A backward node as anomaly mode reads it (Node, FunctionCtx)."""

    _trace: traceback.StackSummary | None

    def name(self) -> str: ...

# Frames in files under this folder are eager's own (dispatch, Module.__call__, nn.functional):
# a forward trace leaves them out so that the user's lines are what it shows.
_EAGER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class set_detect_anomaly:
    """`set_detect_anomaly(True)` switches anomaly mode on now; as a context it restores.

    check_nan=False keeps the forward traces but lets NaN gradients through (as PyTorch's)."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev: tuple[bool, bool] | None = (STATE.anomaly, STATE.anomaly_check_nan)
        STATE.anomaly = bool(mode)
        STATE.anomaly_check_nan = bool(check_nan)
        if mode:
            EVER_ON[0] = True

    def __enter__(self) -> set_detect_anomaly:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._prev is not None  # set by __init__ or __enter__
        STATE.anomaly, STATE.anomaly_check_nan = self._prev


class detect_anomaly(set_detect_anomaly):
    """Context manager (and decorator) enabling anomaly mode. The mode it restores is read
    on entry, so one instance can be entered again later or wrap a function."""

    def __init__(self, check_nan: bool = True) -> None:
        self._check = bool(check_nan)
        self._prev = None  # read on entry

    def __enter__(self) -> detect_anomaly:
        self._prev = (STATE.anomaly, STATE.anomaly_check_nan)
        EVER_ON[0] = True
        STATE.anomaly = True
        STATE.anomaly_check_nan = self._check
        return self

    def __call__(self, fn: Callable[..., _R]) -> Callable[..., _R]:
        check = self._check

        @functools.wraps(fn)
        def wrapper(*a: Any, **k: Any) -> _R:
            with detect_anomaly(check_nan=check):
                return fn(*a, **k)

        return wrapper


def is_anomaly_enabled() -> bool:
    return STATE.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    return STATE.anomaly_check_nan


def capture_stack() -> traceback.StackSummary:
    """The stack of the forward call creating a node (anomaly mode only: it costs a stack
    walk per op). Kept whole; `_forward_trace` chooses what to show when an error needs it."""
    return traceback.extract_stack()


def _is_eager_frame(frame: traceback.FrameSummary) -> bool:
    return os.path.abspath(frame.filename).startswith(_EAGER_DIR)


def _forward_trace(node: TracedNode) -> str:
    """The node's forward stack without eager's own frames: however deep the modules nest
    (Sequential inside a Module inside ...), the user's line that made the node survives."""
    if not node._trace:
        return "(created before anomaly mode was enabled)"
    frames = [f for f in node._trace if not _is_eager_frame(f)] or list(node._trace)
    return "".join(traceback.format_list(frames))


def annotate(exc: BaseException, node: TracedNode) -> None:
    note = (f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
            + _forward_trace(node))
    if hasattr(exc, "add_note"):
        exc.add_note(note)
        return
    # Python 3.10 has no add_note, and its traceback printer does not show __notes__: set the
    # attribute (code that reads the notes finds them) and fold the note into the message,
    # where the user sees it
    exc.__notes__ = [*getattr(exc, "__notes__", []), note]  # type: ignore[attr-defined]  # typeshed: 3.11+
    if len(exc.args) == 1 and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]}\n{note}",)
    elif not exc.args:
        exc.args = (note,)


def check_nan(node: TracedNode, grads: Sequence[Any]) -> None:
    for i, g in enumerate(grads):
        if g is None:
            continue
        arr = g._data
        xp_isnan = getattr(type(arr), "__module__", "numpy").startswith("cupy")
        has_nan = bool((arr != arr).any()) if not xp_isnan else bool((arr != arr).any().get())
        if has_nan:
            err = RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
            annotate(err, node)
            raise err
