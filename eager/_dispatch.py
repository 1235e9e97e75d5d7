"""Running an op eagerly: promote dtypes, call its forward, wrap the result and, when
gradients are wanted, record a backward `Node`.

Two hooks let other code take an op over, consulted in this order:
1. an operand whose type defines `__graphmode_dispatch__(op, operands, attrs)` (static's
   tracer values): the op is applied to that type's values, so it handles it;
2. dispatch modes, a per-thread stack (`push_mode`/`pop_mode`, or `dispatch_mode` as a
   context): when no operand claims an op, the innermost mode gets it first. A tracer can
   use one to record ops on plain tensors captured from outside the traced function; a logger
   or a counter can watch every op. Only then does eager run the op itself.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

# (names the rendered `dispatch` reads as globals of this module are marked F401: only its
# text, eager._fast_path, uses them)
from gmbase import fpstate as _fpstate

from . import _fast_path
from ._grad_mode import STATE
from ._scalar_form import _F32_SCALARS, _F64_SCALARS, _SCALAR_CACHE_SIZE, _scalar_array, _scalar_form  # noqa: F401
from .autograd.anomaly import EVER_ON as _ANOMALY_EVER  # noqa: F401  (read by the rendered code)
from .autograd.anomaly import capture_stack  # noqa: F401
from .autograd.graph import COMPACT_PASSES as _COMPACT_PASSES  # noqa: F401
from .autograd.graph import SavedTensor, grad_class  # noqa: F401

if TYPE_CHECKING:
    from gmops._registry import OpDef

    from .autograd.function import FunctionCtx
    from .autograd.graph import AccumulateGrad, Node

_SCALARS = (int, float, bool)
_SCALAR_TYPES = frozenset(_SCALARS)
# An edge of the backward graph: the next node and which of its outputs; (None, 0) for none.
Edge = tuple["Node | FunctionCtx | AccumulateGrad | None", int]
_NO_EDGE: Edge = (None, 0)


# NumPy's floating-point reports are off while an op computes values (see eager._fpstate):
# `_quiet_fp(_FP_QUIET)` returns the token that `_restore_fp` takes.
_quiet_fp = _fpstate.set_fp
_restore_fp = _fpstate.restore_fp
_FP_QUIET = _fpstate.FP_QUIET


# -- dispatch modes -----------------------------------------------------------------------------
# A dispatch mode: (op, operands, attrs) -> the op's result, or NotImplemented to pass it on.
ModeHandler = Callable[["OpDef", tuple[Any, ...], dict[str, Any]], Any]


class _ModeStack(threading.local):
    def __init__(self) -> None:
        self.modes: list[ModeHandler] = []


_MODES = _ModeStack()
# Modes pushed on all threads together. The per-op check reads only this global, so eager's
# hot path costs one global load while no thread has a mode (the thread-local stack decides).
_n_modes_pushed = 0
_modes_lock = threading.Lock()


def push_mode(handler: ModeHandler) -> None:
    """Push a dispatch mode on this thread's stack: `handler(op, operands, attrs)` is called
    for every op that no operand's type claims (see the module docstring), before eager runs
    it, and returns the op's result, or NotImplemented to pass the op on to the next mode
    down and finally to eager.

    `operands` are as the op was called: eager Tensors and Python numbers, or values eager
    would convert first (lists, NumPy arrays and scalars); `attrs` is the op's keyword dict.
    While a handler runs, it and the modes above it are off, so the ops it issues itself
    (running `op` eagerly to log its result) reach only the modes below it and eager.
    A handler must leave the mode stack as it found it."""
    global _n_modes_pushed
    if not callable(handler):
        raise TypeError(f"push_mode: a dispatch mode is a callable (op, operands, attrs), got {type(handler).__name__}")
    _MODES.modes.append(handler)
    with _modes_lock:
        _n_modes_pushed += 1


def pop_mode() -> ModeHandler:
    """Pop and return this thread's innermost dispatch mode."""
    global _n_modes_pushed
    modes = _MODES.modes
    if not modes:
        raise RuntimeError("pop_mode: no dispatch mode is pushed on this thread")
    handler = modes.pop()
    with _modes_lock:
        _n_modes_pushed -= 1
    return handler


@contextlib.contextmanager
def dispatch_mode(handler: ModeHandler) -> Iterator[ModeHandler]:
    """`with dispatch_mode(handler):` pushes the mode for the block and pops it after."""
    push_mode(handler)
    try:
        yield handler
    finally:
        pop_mode()


def current_modes() -> tuple[ModeHandler, ...]:
    """This thread's dispatch modes, outermost first."""
    return tuple(_MODES.modes)


def _dispatch_modes(op, operands, attrs):
    """Offer the op to this thread's modes, innermost first; eager runs what none takes."""
    modes = _MODES.modes
    for i in range(len(modes) - 1, -1, -1):
        switched_off = modes[i:]  # the handler and those above it, while the handler runs
        del modes[i:]
        try:
            result = switched_off[0](op, operands, attrs)
        finally:
            modes.extend(switched_off)
        if result is not NotImplemented:
            return result
    return apply(op, operands, attrs)


# -- reads of a tensor's data --------------------------------------------------------------------
# `Tensor.item()`, `tolist()`, `numpy()` and NumPy's conversion hand a tensor's values to Python.
# A tracer must see those reads of the tensors it captured (a read of a value the traced call
# has already changed in place would otherwise return the value before the call, and a read of
# an unchanged one must become a guard on its value): it pushes a read hook for the trace.
DataReadHook = Callable[[Any, str], None]


class _ReadHookStack(threading.local):
    def __init__(self) -> None:
        self.hooks: list[DataReadHook] = []


_READ_HOOKS = _ReadHookStack()
n_read_hooks = 0  # hooks pushed on all threads: the per-read test is one global load while none is


@contextlib.contextmanager
def data_read_hook(hook: DataReadHook) -> Iterator[DataReadHook]:
    """`with data_read_hook(hook):` calls `hook(tensor, what)` before each read of a tensor's
    data on this thread (`what` names the read, e.g. ".item()"); the hook may raise to refuse it."""
    global n_read_hooks
    _READ_HOOKS.hooks.append(hook)
    with _modes_lock:
        n_read_hooks += 1
    try:
        yield hook
    finally:
        _READ_HOOKS.hooks.pop()
        with _modes_lock:
            n_read_hooks -= 1


def data_read(tensor: Any, what: str) -> None:
    """Tell this thread's innermost read hook (if any) that `tensor`'s data is being read."""
    hooks = _READ_HOOKS.hooks
    if hooks:
        hooks[-1](tensor, what)


# -- eager execution -----------------------------------------------------------------------------
# `dispatch(op, operands, attrs)`: rendered from eager._fast_path's template (its text:
# `_fast_path.SOURCES["dispatch"]`) and run here, so it reads this module's globals. The
# commonest case, a one-output op on one or two operands that are plain NumPy tensors of one
# float32/float64 dtype (or such a tensor and a Python number) with no dispatch mode pushed,
# is recognized with a few type checks and run at once with its tensor and node built inline.
# Everything else (Tensor subclasses, other dtypes, mixed dtypes, CuPy, views, several outputs,
# dispatch modes) is scanned once by `_dispatch_scan`. Inside a backward pass that records no
# graph (`STATE.compact_broadcasts`: the engine has NumPy's reports off for the whole pass), an
# elementwise op on a large broadcast gradient may be computed once per distinct element
# (`_on_broadcast_base`).
if TYPE_CHECKING:
    def dispatch(op: OpDef, operands: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        """(its text: eager._fast_path)"""
else:
    dispatch = _fast_path.define("dispatch", _fast_path.render_dispatch(), globals())


def _view_of(op, a, attrs):
    """A one-output view op (reshape, transpose, permute, expand, ...) of one plain NumPy
    tensor: what _dispatch_scan and _run do for it, without their scan, device check and
    promotion, which a view of one tensor never needs (a W5 step makes 130 of them: they
    cost 6-7 us each that way against PyTorch's 1.2)."""
    try:
        result = op.forward(np, a._data, **attrs) if attrs else op.forward(np, a._data)
    except (ValueError, IndexError, TypeError) as exc:
        _explain_failure(op, (a,), attrs, exc)
    out = _new_tensor(result)
    _mark_view_of(op, attrs, a, out)
    if a._requires_grad and STATE.enabled and op.vjp is not None:
        _record(op, (a,), attrs, (out,))
    return out


def _dispatch_scan(op, operands, attrs):
    """`dispatch` for all but its fast path: one scan over the operands decides."""
    first = None
    np_dtype = None  # the NumPy dtype all tensor operands share; False when they differ
    wants_grad = False
    has_number = False
    n_tensors = 0  # counts only tensors whose arrays are not NumPy's (a device check is due)
    for o in operands:
        t = type(o)
        if t is float or t is int:
            has_number = True
            continue
        # a Tensor subclass that takes ops over (eager.sparse's SparseTensor) has no dense buffer
        if t is Tensor or (isinstance(o, Tensor) and getattr(t, "__graphmode_dispatch__", None) is None):
            data = o._data
            if first is None:
                first, np_dtype = o, data.dtype
            elif np_dtype is not False and data.dtype != np_dtype:
                np_dtype = False
            if type(data) is not np.ndarray:
                n_tensors += 2
            if o._requires_grad:
                wants_grad = True
        elif t is not bool:
            return _dispatch_other(op, operands, attrs)
    if _n_modes_pushed:
        return _dispatch_modes(op, operands, attrs)
    if n_tensors == 0 and np_dtype is not None and np_dtype is not False and np_dtype.kind == "f" and op.simple:
        if not (has_number and np_dtype is _F16 and op.name in _HALF_SCALAR_IN_FLOAT32):
            return _run_float(op, operands, attrs, wants_grad)  # (else _run: the float16 rule, half_in_float32)
    return _run(op, operands, attrs, first, np_dtype, wants_grad, n_tensors)


_ndarray = np.ndarray
_object_new = object.__new__
_asarray = np.asarray


def _dispatch_other(op, operands, attrs):
    """An operand that is neither a Tensor nor a Python number: a type that takes the op
    over, or a value (list, array, NumPy scalar) to turn into a tensor or number first."""
    for o in operands:
        handler = getattr(type(o), "__graphmode_dispatch__", None)
        if handler is not None:
            return handler(op, operands, attrs)
    if _n_modes_pushed:
        return _dispatch_modes(op, operands, attrs)
    return apply(op, tuple(_as_operand(v, op) for v in operands), attrs)


def apply(op, operands, attrs):
    """The eager path for operands that are Tensors or Python numbers."""
    first = None
    np_dtype = None
    wants_grad = False
    n_tensors = 0
    for o in operands:
        if isinstance(o, Tensor):
            n_tensors += 1
            if first is None:
                first, np_dtype = o, o._data.dtype
            elif np_dtype is not False and o._data.dtype != np_dtype:
                np_dtype = False
            if o._requires_grad:
                wants_grad = True
        elif type(o) not in _SCALAR_TYPES:
            return apply(op, tuple(_as_operand(v, op) for v in operands), attrs)
    return _run(op, operands, attrs, first, np_dtype, wants_grad, n_tensors)


def _as_operand(o, op=None):
    """A Tensor or a plain Python number (NumPy scalars and number subclasses become one);
    anything else raises TypeError naming `op`."""
    if isinstance(o, Tensor):
        return o
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, bool):
        return bool(o)
    if isinstance(o, int):
        return int(o)
    if isinstance(o, float):
        return float(o)
    if isinstance(o, (list, tuple, np.ndarray)) or hasattr(o, "__cuda_array_interface__"):
        from ._factories import tensor  # noqa: PLC0415

        return tensor(o)
    raise TypeError(f"{getattr(op, 'name', 'op')}(): expected a Tensor or a number as an operand, got "
                    f"{type(o).__name__}; pass a tensor or a number")


def _register_with_the_op_registry() -> None:
    from gmops import _registry  # noqa: PLC0415

    _registry._DISPATCH["dispatch"] = dispatch


_register_with_the_op_registry()

# The class this engine makes and reads. eager._tensor takes `dispatch` from here as its op
# hook, so it is imported once everything above exists (eager/__init__ imports this module
# before it); its methods and this module's functions then see each other's names. The
# general path (eager._apply_run) makes tensors too, so it comes after.
from ._tensor import Tensor  # noqa: E402

_new_tensor = Tensor._make  # a plain tensor from an array: the hot path's constructor

from . import _apply_run  # noqa: E402

_COMPACT_MIN_ELEMS, _F16, _F32, _F64 = _apply_run._COMPACT_MIN_ELEMS, _apply_run._F16, _apply_run._F32, _apply_run._F64
_HALF_SCALAR_IN_FLOAT32 = _apply_run._HALF_SCALAR_IN_FLOAT32  # (static's tracer reads it here)
_explain_failure, _mark_views, _record = _apply_run._explain_failure, _apply_run._mark_views, _apply_run._record
_mark_view_of = _apply_run._mark_view_of
_on_broadcast_base, _run, _run_float = _apply_run._on_broadcast_base, _apply_run._run, _apply_run._run_float
_make_node = _apply_run.make_node  # (the general path's node)
