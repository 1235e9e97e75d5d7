"""eager's general path: what `dispatch` hands over once its fast path and scan are done
(eager._dispatch). Devices checked, dtypes promoted by PyTorch's rules (with the
half-in-float32 rule of mul/div), the forward run with NumPy's reports off, the result
wrapped, its views marked and its backward node recorded (`make_node`, rendered from the fast
path's own template: eager._fast_path).
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmbase import fpstate as _fpstate
from gmops.elementwise import TO_DTYPE

from . import _fast_path
from ._device import xp_of_array
from ._grad_mode import STATE
from ._tensor import Tensor
from .autograd.anomaly import EVER_ON as _ANOMALY_EVER  # noqa: F401  (read by the rendered code)
from .autograd.anomaly import capture_stack  # noqa: F401  (read by the rendered make_node)
from .autograd.graph import SavedTensor, grad_class  # noqa: F401  (read by the rendered make_node)

if TYPE_CHECKING:
    from gmops._registry import OpDef

    from .autograd.graph import Node

_quiet_fp = _fpstate.set_fp
_restore_fp = _fpstate.restore_fp
_FP_QUIET = _fpstate.FP_QUIET
_new_tensor = Tensor._make  # a plain tensor from an array
_object_new = object.__new__
_NO_EDGE = (None, 0)  # an edge to nothing: the operand wants no gradient

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



_F16: np.dtype[Any] = np.dtype(np.float16)
_F32: np.dtype[Any] = np.dtype(np.float32)
_F64: np.dtype[Any] = np.dtype(np.float64)


# mul/div of float16 beside a scalar run at float32 precision: the dtype layer's table
_HALF_SCALAR_IN_FLOAT32: frozenset[str] = _dtypes.HALF_SCALAR_IN_FLOAT32


def half_in_float32(op: Any, operands: Sequence[Any], describe: Callable[[Any], Any]) -> bool:
    """Whether `op` on these operands is computed in float32 and rounded once to float16, as
    PyTorch's CPU kernels do ("opmath"): mul/div (`_dtypes.HALF_SCALAR_IN_FLOAT32`) of float16
    tensors beside a scalar, a Python number (`x / 100000` divides by 1e5, where float16
    would round it to inf) or a 0-d tensor of another dtype. One rule for both interpreters:
    eager's general path and static's tracer (static.trace_record) each pass their own
    `describe` (an operand's part in promotion, `_dtypes.promote_operands`: (dtype, standing)
    for a tensor, None for a Python number; a traced number is WEAK)."""
    if op.name not in _HALF_SCALAR_IN_FLOAT32:
        return False
    described = [describe(o) for o in operands]
    if _dtypes.half_beside_0d(described):
        return True
    half = number = False
    for o, d in zip(operands, described):
        if d is None:
            if type(o) is float or type(o) is int:
                number = True
        elif d[1] == _dtypes.WEAK:
            number = True
        elif d[0] is _dtypes.float16:
            half = True
        else:
            return False
    return half and number


def needs_promotion(op: Any, operands: Sequence[Any], kind: str | None) -> bool:
    """Whether promotion could cast anything, for both interpreters (see half_in_float32):
    `kind` is the NumPy kind of the one dtype every tensor operand shares, or None when they
    differ, when there is none or when a traced number (weak) is among them. False: the
    tensors share a dtype that every Python number fits in by category (and it is floating
    where the op needs that), so `_dtypes.promote_operands` would return them as they are."""
    if op.promote is None:
        return False
    if kind is None or (op.promote == "float" and kind != "f"):
        return True
    for o in operands:
        t = type(o)
        if t is float:
            if kind != "f":
                return True
        elif t is int and kind == "b":
            return True
    return False


def _on_numpy(operands: Sequence[Any]) -> bool:
    """No operand is a CuPy tensor (their kernels keep their own float16 rule)."""
    return not any(isinstance(o, Tensor) and type(o._data) is not np.ndarray for o in operands)


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
    from gmops import TensorSpec  # noqa: PLC0415

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
    if op.name in _HALF_SCALAR_IN_FLOAT32 and _on_numpy(operands) and half_in_float32(op, operands, _describe):
        return _run_half_in_float32(op, operands, attrs, wants_grad)
    if needs_promotion(op, operands, None if np_dtype is None or np_dtype is False else np_dtype.kind):
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
    if first is not None and first._data.dtype.kind in "iu" and op.name not in _OWN_INT_RULE:
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
# ops whose forward takes a Python int as it is: pow (its own rule), and those that store the
# number, which PyTorch refuses beyond the dtype's range (gmops._checks.fit_scalar)
_OWN_INT_RULE = frozenset({"pow", "clamp_min", "clamp_max", "scatter", "index_put", "fill", "full_like", "where"})


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
            _link_view(op, attrs, first, t, k if op.multi_output else None, root, register)


def _link_view(op, attrs, first, t, k, root, register) -> None:
    """t made a view of `first` (one output of _mark_views, whose arrays share memory): its
    base, its view steps, the version counter, and its registration with the root."""
    step = (op, attrs, k)
    if first._base is None:
        t._base, t._view = first, (step,)
    else:
        t._base = first._base
        t._view = None if first._view is None else first._view + (step,)
    t._vc = first._vc
    if register and t._view is not None:
        _register_view(root, t)


def _mark_view_of(op, attrs, first, t) -> None:
    """_mark_views for one NumPy output of a one-output view op: a result whose base is the
    owner of first's memory (NumPy keeps a view's base at the memory's owner) is a view
    without the overlap test; a fresh array (no base) is none; anything else asks NumPy."""
    base = t._data.base
    if base is None:
        if t._data is first._data:  # (an op that hands its operand's array back)
            _mark_views(op, attrs, first, (t,), np)
        return
    data = first._data
    if base is not data and base is not data.base:
        _mark_views(op, attrs, first, (t,), np)
        return
    root = first if first._base is None else first._base
    _link_view(op, attrs, first, t, None, root, STATE.enabled and not (root._requires_grad and root.grad_fn is None))


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



# `make_node(op, operands, attrs) -> Node`: see eager._fast_path
make_node: Callable[[OpDef, Sequence[Any], dict[str, Any]], Node] = _fast_path.define(
    "make_node", _fast_path.render_make_node(), globals())
_make_node = make_node
