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
import operator
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _dtypes, _fpstate
from ._device import xp_of_array
from ._grad_mode import STATE
from .autograd.anomaly import capture_stack
from .autograd.graph import _NODE_CLASSES, Node, SavedTensor, node_class
from .ops.elementwise import TO_DTYPE

if TYPE_CHECKING:
    from .autograd.function import FunctionCtx
    from .autograd.graph import AccumulateGrad
    from .ops._registry import OpDef

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


# -- eager execution -----------------------------------------------------------------------------
def dispatch(op, operands, attrs):
    """Run `op` eagerly, unless an operand's type or a dispatch mode takes it over.

    The commonest case, a one-output op on one or two operands that are plain NumPy
    tensors of one float32/float64 dtype (or such a tensor and a Python number) with no
    dispatch mode pushed, is recognized with a few type checks and run here at once (the
    hot path: what `_run_float`, `Tensor._make` and `_record_one` with `_make_node` and
    `Node.__init__` do, inlined, with NumPy's reports switched off only where the engine
    has not already done it). Everything else (Tensor subclasses, other dtypes, mixed
    dtypes, CuPy, views, several outputs, dispatch modes) is scanned once by
    `_dispatch_scan`.

    Inside a backward pass that records no graph (`STATE.compact_broadcasts`: the engine
    has NumPy's reports off for the whole pass), an elementwise op on a large broadcast
    gradient may be computed once per distinct element (`_on_broadcast_base`)."""
    if not op.simple or _n_modes_pushed:
        if op.is_view and not _n_modes_pushed and not op.multi_output and len(operands) == 1:
            a = operands[0]
            if type(a) is Tensor and type(a._data) is _ndarray:
                return _view_of(op, a, attrs)
        return _dispatch_scan(op, operands, attrs)
    # x and y: the operands' arrays, or a Python number in place of one, or _UNARY for y
    n = len(operands)
    if n == 2:
        a, b = operands
        ta = type(a)
        if ta is Tensor:
            x = a._data
            dt = x.dtype
            if type(x) is not _ndarray or (dt is not _F32 and dt is not _F64):
                return _dispatch_scan(op, operands, attrs)
            tb = type(b)
            if tb is Tensor:
                y = b._data
                if type(y) is not _ndarray or y.dtype is not dt:
                    return _dispatch_scan(op, operands, attrs)
                wants_grad = a._requires_grad or b._requires_grad
            elif tb is float or tb is int:
                y = b
                wants_grad = a._requires_grad
            else:
                return _dispatch_scan(op, operands, attrs)
        elif (ta is float or ta is int) and type(b) is Tensor:
            y = b._data
            dt = y.dtype
            if type(y) is not _ndarray or (dt is not _F32 and dt is not _F64):
                return _dispatch_scan(op, operands, attrs)
            x = a
            wants_grad = b._requires_grad
        else:
            return _dispatch_scan(op, operands, attrs)
    elif n == 1:
        a = operands[0]
        if type(a) is not Tensor:
            return _dispatch_scan(op, operands, attrs)
        x = a._data
        dt = x.dtype
        if type(x) is not _ndarray or (dt is not _F32 and dt is not _F64):
            return _dispatch_scan(op, operands, attrs)
        y = _UNARY
        wants_grad = a._requires_grad
    else:
        return _dispatch_scan(op, operands, attrs)
    if STATE.compact_broadcasts:
        token = None
        if op.kind == "elementwise":
            first = x if type(x) is _ndarray else y
            if first.size >= _COMPACT_MIN_ELEMS:
                compact = _on_broadcast_base(op, operands, attrs)
                if compact is not None:
                    return _new_tensor(compact)  # nothing to record: the pass makes no graph
    else:
        token = _quiet_fp(_FP_QUIET) if op.quiet_fp else None
    result: Any = None
    if op.scalar_as_array:
        if type(y) is float:
            cached = (_F32_SCALARS if x.dtype is _F32 else _F64_SCALARS).get(y)
            y = _scalar_array(y, x.dtype) if cached is None else cached
        elif type(x) is float:
            cached = (_F32_SCALARS if y.dtype is _F32 else _F64_SCALARS).get(x)
            x = _scalar_array(x, y.dtype) if cached is None else cached
        if type(x) is _ndarray and type(y) is _ndarray and not x.shape and not y.shape and not attrs:
            # two numbers: NumPy's scalar arithmetic, bit for bit the ufunc's (see _scalar_form)
            form = op.scalar_form
            if form is None:
                form = op.scalar_form = _scalar_form(op)
            if form:
                a = x[()]
                try:
                    r = form(a, y[()])
                except Exception:  # noqa: BLE001  (not computable this way: the ufunc computes it, as always)
                    r = None
                    op.scalar_form = False
                if type(r) is type(a) and r == r:  # (a NaN: the ufunc's own bits)
                    result = _asarray(r)
    elif y is _UNARY and not x.shape and not attrs:
        # one number: the op's ufunc on NumPy's scalar (the same loop on one element), which
        # skips the 0-d array's wrapping (see _scalar_form)
        form = op.scalar_form
        if form is None:
            form = op.scalar_form = _scalar_form(op)
        if form:
            a = x[()]
            r = form(a)
            if type(r) is type(a) and r == r:  # (a NaN: the ufunc's own bits)
                result = _asarray(r)
    if result is None:
        try:
            if attrs:
                result = op.forward(np, x, **attrs) if y is _UNARY else op.forward(np, x, y, **attrs)
            else:  # (a call without `**{}` skips building the keyword dict)
                result = op.forward(np, x) if y is _UNARY else op.forward(np, x, y)
        except (ValueError, IndexError, TypeError) as exc:
            _explain_failure(op, operands, attrs, exc)
        finally:
            if token is not None:
                _restore_fp(token)
        if type(result) is not _ndarray and isinstance(result, np.generic):
            result = _asarray(result)  # a tensor holds an array, never a NumPy scalar
    elif token is not None:
        _restore_fp(token)
    out = _object_new(Tensor)
    out._data = result
    out._vc = [0]
    out._output_nr = 0
    # a float input can give a non-float result (a comparison, a cast to an integer dtype),
    # which never requires grad
    if not (wants_grad and STATE.enabled and op.vjp is not None and result.dtype.kind in "fc"):
        out._requires_grad = False
        out.grad_fn = None
        return out
    # -- the backward node (what _make_node and Node.__init__ do, for one or two operands)
    name = op.grad_name
    if type(name) is not str:
        name = op.backward_name(operands, attrs)
    node = _object_new(_NODE_CLASSES.get(name) or node_class(name))  # (each name its own type, as PyTorch's)
    node.op = op
    node.attrs = attrs
    edge_a: Edge
    edge_b: Edge
    a = operands[0]
    if type(a) is Tensor:
        data = a._data
        meta_a = (data.shape, data.dtype)
        if a._requires_grad:
            fn = a.grad_fn
            edge_a = (fn, a._output_nr) if fn is not None else (a._acc or a._accumulator(), 0)
        else:
            edge_a = _NO_EDGE
    else:
        meta_a, edge_a = None, _NO_EDGE
    n = len(operands)
    if n == 1:
        node.next_functions = (edge_a,)
        node._in_meta = [meta_a]
    else:
        b = operands[1]
        if type(b) is Tensor:
            data = b._data
            meta_b = (data.shape, data.dtype)
            if b._requires_grad:
                fn = b.grad_fn
                edge_b = (fn, b._output_nr) if fn is not None else (b._acc or b._accumulator(), 0)
            else:
                edge_b = _NO_EDGE
        else:
            meta_b, edge_b = None, _NO_EDGE
        node.next_functions = (edge_a, edge_b)
        node._in_meta = [meta_a, meta_b]
    saved: dict[int, Any] = {}
    for i in op.save:
        if i >= n:  # (an op may list positions of operands it is not always given)
            continue
        o = operands[i]
        if type(o) is Tensor:
            st = _object_new(SavedTensor)
            st.tensor = o
            st.version = o._vc[0]
            saved[i] = st
        else:
            saved[i] = o
    node._saved = saved
    node._name = name
    if STATE.anomaly:
        node._trace = capture_stack()
    node._out_meta = ((result.shape, result.dtype),)
    out._requires_grad = True
    out.grad_fn = node
    if op.save_output:
        node._saved_out = SavedTensor(out, is_output=True)
    return out


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
    _mark_views(op, attrs, a, (out,), np)
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
        if has_number and np_dtype is _F16 and op.name in _HALF_SCALAR_IN_FLOAT32:
            return _run_half_in_float32(op, operands, attrs, wants_grad)
        return _run_float(op, operands, attrs, wants_grad)
    return _run(op, operands, attrs, first, np_dtype, wants_grad, n_tensors)


def _run_float(op, operands, attrs, wants_grad):
    """A one-output op that makes no view, on NumPy tensors of one floating dtype with
    Python numbers (the float16 and Tensor-subclass cases `dispatch` leaves to the scan):
    nothing to promote (a Python number never upcasts a float tensor) and no device to
    check."""
    token = _quiet_fp(_FP_QUIET) if op.quiet_fp else None
    try:
        if STATE.compact_broadcasts and op.kind == "elementwise":
            result = _on_broadcast_base(op, operands, attrs)
            if result is not None:
                return _new_tensor(result)  # backward without create_graph: nothing to record
        result = op.forward(np, *[o._data if isinstance(o, Tensor) else o for o in operands], **attrs)
    except (ValueError, IndexError, TypeError) as exc:
        _explain_failure(op, operands, attrs, exc)
    finally:
        if token is not None:
            _restore_fp(token)
    out = _new_tensor(result)  # a NumPy scalar result becomes a 0-d array there
    # a float input can give a non-float result (a cast to an integer dtype), which never
    # requires grad
    if wants_grad and STATE.enabled and op.vjp is not None and result.dtype.kind in "fc":
        _record_one(op, operands, attrs, out)
    return out


_ndarray = np.ndarray
_UNARY = object()  # `dispatch`'s second array (y) for a one-operand op


_asarray = np.asarray


class _NotScalarForm(Exception):
    """A forward used an operand, or a name of its namespace, beyond one ufunc call."""


class _Operand:
    """Stands for an operand while `_scalar_form` runs a forward: any use of it other than
    passing it on (an attribute, an operator, a conversion) raises."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        raise _NotScalarForm(name)


class _Call:
    """What `_Probe` returns for a ufunc call: the ufunc and its arguments."""

    __slots__ = ("ufunc", "args", "kwargs")

    def __init__(self, ufunc: np.ufunc, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.ufunc, self.args, self.kwargs = ufunc, args, kwargs


class _Probe:
    """A stand-in for the NumPy namespace that offers NumPy's ufuncs only, and records calls."""

    def __init__(self) -> None:
        self.calls: list[_Call] = []

    def __getattr__(self, name: str) -> Any:
        ufunc = getattr(np, name, None)
        if type(ufunc) is not np.ufunc:
            raise _NotScalarForm(name)

        def call(*args: Any, **kwargs: Any) -> _Call:
            record = _Call(ufunc, args, kwargs)
            self.calls.append(record)
            return record
        return call


# NumPy's scalar operators for its correctly rounded arithmetic ufuncs
_SCALAR_OPERATORS: dict[Any, Callable[[Any, Any], Any]] = {
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul, np.true_divide: operator.truediv,
}


def _scalar_form(op: OpDef) -> Callable[..., Any] | bool:
    """How `dispatch` may compute `op` on NumPy scalars (its operands' elements, in order),
    or False: derived once per op by running its forward on stand-ins (`_Operand`) with a
    namespace that records ufunc calls (`_Probe`). Only a forward that is exactly one ufunc of
    all its operands, with no keywords, has a form:
    - one operand: the ufunc itself on NumPy's scalar. A ufunc call on a 0-d array costs about
      twice one on a scalar (the array's result is wrapped and unwrapped), and both run the
      same loop on the same one element, so they give the same bits;
    - two operands: for add, subtract, multiply and true_divide, NumPy's scalar operator (a
      tenth of the ufunc's dispatch cost). Both are IEEE arithmetic in the operands' own
      precision (NumPy's scalar math computes float32 in float32), so the result is the same
      number, bit for bit; only a NaN's payload could depend on the operand order the machine
      code uses, so `dispatch` computes a NaN result again by the ufunc. Other binary ufuncs
      are slower on two scalars than on 0-d arrays, so they have no form.
    Random and stateful ops have none either (their forward is not run for a probe)."""
    n = op.arity
    if op.kind != "elementwise" or op.random or op.stateful or n not in (1, 2):
        return False
    stand_ins = tuple(_Operand() for _ in range(n))
    probe = _Probe()
    try:
        result = op.forward(probe, *stand_ins)
    except Exception:  # noqa: BLE001  (more than one ufunc call: the forward runs as written)
        return False
    if len(probe.calls) != 1 or result is not probe.calls[0]:
        return False
    call = result
    ufunc = call.ufunc
    if call.kwargs or ufunc.nin != n or ufunc.nout != 1 or len(call.args) != n:
        return False
    order = []
    for arg in call.args:
        pos = next((i for i, s in enumerate(stand_ins) if s is arg), None)
        if pos is None or pos in order:
            return False
        order.append(pos)
    if n == 1:
        # (a float result for a float operand: isnan's bool would only be computed twice)
        return ufunc if "f->f" in ufunc.types and "d->d" in ufunc.types else False
    fn = _SCALAR_OPERATORS.get(ufunc)
    if fn is None:
        return False
    if order == [0, 1]:
        return fn
    return lambda a, b: fn(b, a)


_object_new = object.__new__

# 0-d read-only arrays of Python floats, per dtype of the fast path (see OpDef.scalar_as_array):
# NumPy resolves `multiply(x, 1.0001)` about a third of a microsecond slower than the same
# with a 0-d float32 array, and the numbers of a program (0.5, 1e-3) recur op after op.
_F32_SCALARS: dict[float, np.ndarray] = {}
_F64_SCALARS: dict[float, np.ndarray] = {}
_SCALAR_CACHE_SIZE = 256


def _scalar_array(v: float, dt: np.dtype[Any]) -> Any:
    """`v` as a 0-d array of the float dtype `dt` (float32 or float64), or `v` itself for a
    NaN (never equal to a cached key) and for zeros (0.0 == -0.0 would mix their signs)."""
    cache = _F32_SCALARS if dt is _F32 else _F64_SCALARS
    a = cache.get(v)
    if a is None:
        if v != v or v == 0.0:
            return v
        if len(cache) >= _SCALAR_CACHE_SIZE:
            cache.clear()
        a = np.array(v, dtype=dt)  # (an out-of-range float becomes inf, as the weak-scalar rule has it)
        a.flags.writeable = False
        cache[v] = a
    return a
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


# mul/div of float16 beside a scalar run at float32 precision: the dtype layer's table
_HALF_SCALAR_IN_FLOAT32 = _dtypes.HALF_SCALAR_IN_FLOAT32


def _half_beside_0d(operands: Sequence[Any]) -> bool:
    """float16 NumPy tensors with a 0-d tensor of another number dtype (tensor(1e5))."""
    if any(isinstance(o, Tensor) and type(o._data) is not np.ndarray for o in operands):
        return False
    return _dtypes.half_beside_0d([_describe(o) for o in operands])


def _run_half_in_float32(op, operands, attrs, wants_grad):
    """float16 tensors with a scalar operand, computed in float32 and rounded once at the
    end (see _HALF_SCALAR_IN_FLOAT32). Only the forward is upcast: the backward node records
    the operands as they are, and its ops come back here."""
    arrays = [o._data.astype(_F32) if isinstance(o, Tensor) else o for o in operands]
    token = _quiet_fp(_FP_QUIET)
    try:
        result = op.forward(np, *arrays, **attrs)
        if result.dtype.kind == "f":
            result = result.astype(_F16)  # beyond float16's range: inf, silently
    except (ValueError, IndexError, TypeError) as exc:
        _explain_failure(op, operands, attrs, exc)
    finally:
        _restore_fp(token)
    out = _new_tensor(result)
    if wants_grad and STATE.enabled and op.vjp is not None and out._data.dtype.kind in "fc":
        _record_one(op, operands, attrs, out)
    return out


_COMPACT_MIN_ELEMS = 4096


def _on_broadcast_base(op, operands, attrs):
    """An elementwise op whose tensor operands all repeat along the same dims (stride 0, as
    the expanded gradient of a sum does) computed once per distinct element and broadcast
    back, or None when that does not apply.

    The engine allows this only inside a backward pass that records no graph, where no
    one writes into the result in place. `-g` for `L = (10 - d).sum()` then costs one
    element instead of a pass over a million (a strided unary loop, slower than a copy)."""
    shape: tuple[int, ...] | None = None
    repeated: list[bool] = []
    for o in operands:
        if isinstance(o, Tensor):
            a = o._data
            if shape is None:
                shape = a.shape
                if a.size < _COMPACT_MIN_ELEMS or op.name == "clone":
                    return None
                repeated = [s == 0 or n == 1 for s, n in zip(a.strides, shape)]
            elif a.shape != shape:
                return None
            else:
                repeated = [r and (s == 0 or n == 1) for r, s, n in zip(repeated, a.strides, shape)]
    if shape is None or not any(r and n > 1 for r, n in zip(repeated, shape)):
        return None
    base = tuple(slice(0, 1) if r else slice(None) for r in repeated)
    result = op.forward(np, *[o._data[base] if isinstance(o, Tensor) else o for o in operands], **attrs)
    return np.broadcast_to(result, shape)


def _dispatch_other(op, operands, attrs):
    """An operand that is neither a Tensor nor a Python number: a type that takes the op
    over, or a value (list, array, NumPy scalar) to turn into a tensor or number first."""
    for o in operands:
        handler = getattr(type(o), "__graphmode_dispatch__", None)
        if handler is not None:
            return handler(op, operands, attrs)
    if _n_modes_pushed:
        return _dispatch_modes(op, operands, attrs)
    return apply(op, tuple(_as_operand(v) for v in operands), attrs)


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
            return apply(op, tuple(_as_operand(v) for v in operands), attrs)
    return _run(op, operands, attrs, first, np_dtype, wants_grad, n_tensors)


def _as_operand(o):
    """A Tensor or a plain Python number (NumPy scalars and number subclasses become one)."""
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
    raise TypeError(f"expected a Tensor or a number as an operand, got {type(o).__name__}")


def _describe(o):
    """An operand's part in promotion (see _dtypes.promote_operands)."""
    if isinstance(o, Tensor):
        return o.dtype, _dtypes.DIMENSIONED if o._data.ndim else _dtypes.ZERO_DIM
    return None


def _cast(o, target):
    return TO_DTYPE(o, dtype=target)


def _promote(op, operands):
    """Cast tensor operands to the op's result dtype by PyTorch's rules."""
    return tuple(_dtypes.promote_operands(op.promote, op.mask_operands, operands, _describe, _cast))


def _check_devices(op, operands):
    first = None
    for o in operands:
        if isinstance(o, Tensor):
            if first is None:
                first = o
            elif type(o._data) is not type(first._data) or (
                not isinstance(o._data, np.ndarray) and o._data.device != first._data.device
            ):
                raise RuntimeError(
                    f"{op.name}: Expected all tensors to be on the same device, but found at least two "
                    f"devices, {first.device} and {o.device}! Move them with .to(device) first."
                )
    return first


def _explain_failure(op, operands, attrs, exc):
    """Re-raise a failed forward with the op's abstract rule, which names the op and shapes."""
    from .ops import TensorSpec  # noqa: PLC0415

    specs = [TensorSpec(tuple(o.shape), o.dtype) if isinstance(o, Tensor) else o for o in operands]
    try:
        op.abstract(*specs, **attrs)  # raises the readable error when the inputs are at fault
    except Exception as readable:  # noqa: BLE001  (whatever the rule raises is the error to show)
        # one traceback: NumPy's message ("mismatch in its core dimension 0 ...") adds nothing
        # to the rule's, and the rule's own frames are not the user's business
        raise readable.with_traceback(None) from None
    raise exc


def _run(op, operands, attrs, first, np_dtype, wants_grad, n_tensors):
    """Check devices, promote (only when something would change), run the forward, wrap
    the result and record the backward node when gradients are wanted."""
    if n_tensors > 1:
        _check_devices(op, operands)
    if np_dtype is False and op.name in _HALF_SCALAR_IN_FLOAT32 and _half_beside_0d(operands):
        return _run_half_in_float32(op, operands, attrs, wants_grad)
    if op.promote is not None and not _already_promoted(op, operands, np_dtype):
        operands = _promote(op, operands)
        first = next((o for o in operands if isinstance(o, Tensor)), None)
    xp = np if first is None or type(first._data) is np.ndarray else xp_of_array(first._data)
    if len(operands) == 2:  # the common binary case, without building a list
        a, b = operands
        a = a._data if isinstance(a, Tensor) else a
        b = b._data if isinstance(b, Tensor) else b
        arrays: Sequence[Any] = (a, b)
    else:
        arrays = [o._data if isinstance(o, Tensor) else o for o in operands]
    if first is not None and first._data.dtype.kind in "iu" and op.name != "pow":  # pow: its own rule
        arrays = _wrap_ints(arrays, first._data.dtype)
    token = _quiet_fp(_FP_QUIET) if op.quiet_fp and xp is np else None
    try:
        result = op.forward(xp, *arrays, **attrs)
    except (ValueError, IndexError, TypeError) as exc:
        _explain_failure(op, operands, attrs, exc)
    finally:
        if token is not None:
            _restore_fp(token)

    # Tensor._make turns a NumPy scalar result into the 0-d array a tensor holds
    outs = tuple(Tensor._make(r) for r in result) if op.multi_output else (Tensor._make(result),)
    if op.is_view and first is not None:
        _mark_views(op, attrs, first, outs, xp)
    if wants_grad and STATE.enabled and op.vjp is not None:
        _record(op, operands, attrs, outs)
    return outs if op.multi_output else outs[0]


_INT_BOUNDS: dict = {}


def _wrap_ints(arrays, dt):
    """Python ints beyond an integer tensor's range, wrapped into it as PyTorch casts them
    (int8 + 1000 adds -24, and int8 < 1000 compares with -24; NumPy would raise
    OverflowError or compare exactly). An int beyond int64 stays an OverflowError, as in
    PyTorch."""
    bounds = _INT_BOUNDS.get(dt)
    if bounds is None:
        info = np.iinfo(dt)
        bounds = _INT_BOUNDS[dt] = (int(info.min), int(info.max))
    lo, hi = bounds
    out = None
    for i, a in enumerate(arrays):
        if type(a) is int and not lo <= a <= hi:
            if out is None:
                out = list(arrays)
            out[i] = int(np.array(a, dtype=np.int64).astype(dt))
    return arrays if out is None else out


def _already_promoted(op, operands, np_dtype) -> bool:
    """True when promotion would change nothing: the tensors share a dtype that every Python
    number operand fits in by category (and it is floating for ops that need that)."""
    if np_dtype is None or np_dtype is False:
        return False
    kind = np_dtype.kind
    if op.promote == "float" and kind != "f":
        return False
    for o in operands:
        t = type(o)
        if t is float:
            if kind != "f":
                return False
        elif t is int and kind == "b":
            return False
    return True


def _mark_views(op, attrs, first, outs, xp):
    """Outputs that alias `first`'s memory share its version counter and remember the view
    steps from the memory's owner (eager._inplace replays them for writes into a view).

    In grad mode a view is also registered (weakly) with its base, so that a recorded
    in-place write to the base or to another view of it regenerates this view's history
    from the base's new one (eager._inplace.regenerate_views), as PyTorch does. A base that
    is a leaf requiring grad never takes a recorded write, so its views (w.T of a weight,
    once per step) are not registered."""
    root = first if first._base is None else first._base
    register = STATE.enabled and not (root._requires_grad and root.grad_fn is None)
    for k, t in enumerate(outs):
        if xp.may_share_memory(t._data, first._data):
            step = (op, attrs, k if op.multi_output else None)
            if first._base is None:
                t._base, t._view = first, (step,)
            else:
                t._base = first._base
                t._view = None if first._view is None else first._view + (step,)
            t._vc = first._vc
            if register and t._view is not None:
                _register_view(root, t)


def _register_view(root, view) -> None:
    views = root._views
    if views is None:
        root._views = [weakref.ref(view)]
        return
    views.append(weakref.ref(view))
    if len(views) % 32 == 0:  # drop the dead ones now and then: amortized O(1) per view
        views[:] = [r for r in views if r() is not None]


def _record(op, operands, attrs, outs):
    """Make the backward node of this op and hang the outputs on it."""
    node = _make_node(op, operands, attrs)
    out_meta = []
    for nr, t in enumerate(outs):
        data = t._data
        out_meta.append((data.shape, data.dtype))
        if data.dtype.kind in "fc":
            t._requires_grad = True
            t.grad_fn = node
            t._output_nr = nr
    node._out_meta = out_meta
    if op.save_output:
        node._saved_out = SavedTensor(outs[0], is_output=True)


def _record_one(op, operands, attrs, out):
    """_record for the hot path: one floating output."""
    node = _make_node(op, operands, attrs)
    data = out._data
    node._out_meta = ((data.shape, data.dtype),)
    out._requires_grad = True
    out.grad_fn = node
    if op.save_output:
        node._saved_out = SavedTensor(out, is_output=True)


def _make_node(op: OpDef, operands: Sequence[Any], attrs: dict[str, Any]) -> Node:
    """The backward node of `op` applied to `operands`: its edges, the operands' shapes and
    dtypes, and what its VJP reads back (`op.save`), in one pass over the operands."""
    edges: list[Edge] = []
    meta: list[tuple[tuple[int, ...], np.dtype[Any]] | None] = []
    saved: dict[int, Any] = {}  # operand position -> SavedTensor, or the Python number itself
    save = op.save
    i = 0
    for o in operands:
        if isinstance(o, Tensor):
            data = o._data
            meta.append((data.shape, data.dtype))
            if o._requires_grad:
                fn = o.grad_fn
                edges.append((fn, o._output_nr) if fn is not None else (o._acc or o._accumulator(), 0))
            else:
                edges.append(_NO_EDGE)
            if i in save:
                saved[i] = SavedTensor(o)
        else:
            meta.append(None)
            edges.append(_NO_EDGE)
            if i in save:
                saved[i] = o
        i += 1
    name = op.grad_name
    if type(name) is not str:
        name = op.backward_name(operands, attrs)
    return (_NODE_CLASSES.get(name) or node_class(name))(op, attrs, tuple(edges), name, meta, saved)


def _register_with_the_op_registry() -> None:
    from .ops import _registry  # noqa: PLC0415

    _registry._DISPATCH["dispatch"] = dispatch


_register_with_the_op_registry()

# The class this engine makes and reads. eager._tensor takes `dispatch` from here as its op
# hook, so it is imported once everything above exists (eager/__init__ imports this module
# before it); its methods and this module's functions then see each other's names.
from ._tensor import Tensor  # noqa: E402

_new_tensor = Tensor._make  # a plain tensor from an array: the hot path's constructor
