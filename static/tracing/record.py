"""Recording one op call in a trace: operands as IR values (tensors it captures included),
promotion and the half-in-float32 rule as eager applies them, the node appended with its
abstract types, constant masks folded, and the checks that a view is still current and that
data is not read while tracing (TraceError naming what to do).
"""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import numpy as np

import eager
from eager import _dispatch
from eager._apply_run import _HALF_SCALAR_IN_FLOAT32, _OWN_INT_RULE, _wrap_ints, half_in_float32, needs_promotion
from eager._grad_mode import STATE
from eager._tensor import Tensor
from gmbase import dtypes as _dtypes
from gmops import TensorSpec
from gmops._checks import fit_scalar
from gmops.elementwise import TO_DTYPE
from gmops.index_checks import CHECK_INDEX_RANGE

from ..errors import TraceError
from ..ir import Node, Value
from .state import _SCALARS, ACTIVE, TraceState, ViewSteps, current_state, user_location

if TYPE_CHECKING:
    from .tracer import Tracer
else:
    # The value class records through this module (`Tracer._apply_op = record`), so it is
    # defined after it: static.tracing.tracer binds the name here once the class exists (bind_tracer).
    Tracer = None


def bind_tracer(cls: type) -> None:
    """Called by static.tracing.tracer with the Tracer class, the type every recorded output gets."""
    globals()["Tracer"] = cls


def _operand(state: TraceState, o):
    if isinstance(o, Tracer):
        if o._state is not state and hasattr(state, "foreign"):  # a control-flow body reads an outer value
            return state.foreign(o)  # (static.control_flow.BodyState: it enters as an input of the body)
        return o._value
    if isinstance(o, _SCALARS):
        return o
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, Tensor) or isinstance(o, np.ndarray) or hasattr(o, "__cuda_array_interface__"):
        return state.capture(o)
    if isinstance(o, (list, tuple)):
        return state.capture(eager.tensor(o))
    raise TypeError(f"expected a tensor or a number as an operand, got {type(o).__name__}")


def _describe(state: TraceState, v: object) -> tuple[_dtypes.dtype, int] | None:
    """A traced operand's part in promotion (see `_dtypes.promote_operands`): an input that
    came from a Python number promotes as one (weak), as eager's number would."""
    if not isinstance(v, Value):
        return None
    if v in state.weak:
        return v.dtype, _dtypes.WEAK
    return v.dtype, _dtypes.DIMENSIONED if v.type.shape else _dtypes.ZERO_DIM


def _promote(state: TraceState, op, operands: list) -> list:
    """eager's promotion (`_dtypes.promote_operands`), with the casts recorded into the graph.
    Whether anything would be cast is eager's own rule (`eager._apply_run.needs_promotion`),
    asked with the dtype every traced operand shares: most of a training step's ops cast
    nothing. (A traced Python number, `state.weak`, promotes as a number does: left to the
    full rule.)"""
    common = None  # the dtype every traced operand shares, None when they differ (or a weak one)
    weak = state.weak
    for v in operands:
        t = type(v)
        if t is Value:
            d = v.type.dtype
            if v in weak or (common is not None and d is not common):
                common = None
                break
            common = d
        elif t is not float and t is not int and t is not bool:
            common = None
            break
    if not needs_promotion(op, operands, None if common is None else common.np.kind):
        return operands

    def cast(v, target):
        return _emit(state, TO_DTYPE, [v], {"dtype": target})[0]

    return list(_dtypes.promote_operands(op.promote, op.mask_operands, operands, lambda v: _describe(state, v), cast))


def _wrap_int_literals(op, values: list) -> list:
    """A Python int beyond the range of the integer tensor it meets, wrapped into that dtype as
    eager and PyTorch cast it (int8 & 255 ands with -1, int8 < 300 compares with 44): kept
    as it is, the graph's constant would not fit its dtype (NumPy's OverflowError in the
    generated code) or compare exactly. eager's own rule (`_wrap_ints`), for every op but pow,
    decided by the first traced operand's dtype. The ops that store the number
    (eager._apply_run._OWN_INT_RULE) take it as that dtype stores it, or raise PyTorch's
    overflow error, as eager's forward does (gmops._checks.fit_scalar: uint8's -1 is 255)."""
    if op.name == "pow":
        return values
    for v in values:
        if type(v) is Value:
            npd = v.type.dtype.np
            if npd.kind not in "iu":
                return values
            if op.name in _OWN_INT_RULE:
                return [fit_scalar(op.name, a, v.type.dtype) if type(a) is int else a for a in values]
            return _wrap_ints(values, npd)
    return values


def _emit(state: TraceState, op, operands: list, attrs: dict, types: list | None = None) -> list:
    """Check the op's abstract rule and append the node; returns its result Values. `types`:
    the result types where the caller knows them already (a replayed template whose ops and
    operand shapes were checked when it was recorded: static.training.update_templates)."""
    if types is None:
        specs = [v.type if isinstance(v, Value) else v for v in operands]
        try:
            result = op.abstract(*specs, **attrs)
        except (TypeError, ValueError, RuntimeError, IndexError) as exc:
            loc = user_location()
            raise type(exc)(f"{exc} (traced at {loc})") from None
        types = [result] if isinstance(result, TensorSpec) else list(result)
    # (Node copies its inputs into a list itself; its outputs are set straight into its dict:
    # only `inputs` keeps use lists, see Node.__setattr__)
    node = Node(op=op.name, inputs=operands, attrs=dict(attrs), loc=state.location or user_location())
    node.__dict__["outputs"] = [Value(state.fresh_name(), t, node, i) for i, t in enumerate(types)]
    state.graph.nodes.append(node)
    if not STATE.enabled:  # a no_grad() region of the traced program: autodiff stops here, as eager does
        state.no_grad_nodes.add(node)
    return node.outputs


def _half_in_float32(state: TraceState, op, values: list, attrs: dict) -> Value:
    """The op on float32 casts of its operands, rounded once to float16, as eager runs it."""
    f32 = [_emit(state, TO_DTYPE, [v], {"dtype": _dtypes.float32})[0] if isinstance(v, Value) else v
           for v in values]
    out = _emit(state, op, f32, attrs)[0]
    return _emit(state, TO_DTYPE, [out], {"dtype": _dtypes.float16})[0]


def record(op, operands, attrs):
    """The registry's hook: an op applied to at least one Tracer, or, while a trace is active on
    this thread, to tensors captured from outside the function (see `capturing_dispatch`)."""
    state = None
    for o in operands:
        if isinstance(o, Tracer):
            state = o._state
            break
    else:
        state = current_state()
    for o in operands:
        if getattr(type(o), "__graphmode_batched__", False):  # vmap's batched values take the op over
            return type(o).__graphmode_dispatch__(op, operands, attrs)
    top = ACTIVE.stack[-1] if ACTIVE.stack else None
    if top is not None and top is not state and hasattr(top, "foreign"):
        state = top  # tracing a control-flow body: the op belongs to the body, whatever its operands' trace
    if state is None or state.finished:
        raise TraceError(f"{user_location()}: {op.name} is applied to a traced value whose trace has ended "
                         "(a Tracer leaked out of the traced function, e.g. into a global or a list); return "
                         "values from the function instead of storing them.")
    if op.name in _MASKABLE and any(getattr(o, "dtype", None) is _dtypes.bool_ for o in operands[_MASKABLE[op.name]:]):
        operands, attrs = _constant_masks(state, op.name, list(operands), attrs)
    for o in operands:
        if isinstance(o, Tracer) and o._view_of is not None:
            check_view_current(o)
    values = [_operand(state, o) for o in operands]
    if op.name in _HALF_SCALAR_IN_FLOAT32 and half_in_float32(op, values, lambda v: _describe(state, v)):
        return Tracer(state, _half_in_float32(state, op, values, attrs))  # (eager's rule: one function)
    if op.promote is not None:
        values = _promote(state, op, values)
    values = _wrap_int_literals(op, values)
    if "index_checks" in op.extra:  # eager's forward checks index values: so does the graph, before the op
        values = _index_checked(state, op, values, attrs)
    outs = _emit(state, op, values, attrs)
    wrapped = (Tracer(state, outs[0]),) if len(outs) == 1 else tuple(Tracer(state, v) for v in outs)
    if op.is_view and not attrs.get("n_index"):  # indexing with tensors copies, as in eager
        base = operands[0] if operands else None
        # a view of a Tracer or of a captured tensor: writing through it must not be silently lost
        marker: object
        steps: ViewSteps | None
        if isinstance(base, Tracer) and base._view_of is not None:
            marker, steps = base._view_of, base._view_steps
        else:  # an eager alias of a captured tensor is a view of that tensor
            marker, steps = (state.shared.canonical(state, base) or (base, ())) if isinstance(base, Tensor) else (base, ())
        if isinstance(marker, (Tracer, Tensor)):
            items = tuple(sorted(attrs.items()))
            for k, t in enumerate(wrapped):
                t._view_of = marker
                t._view_version = state.versions.get(id(marker), 0)
                # how the view is made from the tensor owning the memory (eager's view_scatter steps)
                t._view_steps = None if steps is None else steps + ((op.name, items, k if op.multi_output else None),)
    return wrapped if op.multi_output else wrapped[0]


def _index_checked(state: TraceState, op, values: list, attrs: dict) -> list:
    """The operands with each index operand passed through a `check_index_range` node
    (eager.ops.index_checks: the same rule, exception and message as eager's forward)."""
    values = list(values)
    specs = [v.type if isinstance(v, Value) else v for v in values]
    for c in op.extra["index_checks"](*specs, **attrs):
        v = values[c.position]
        if isinstance(v, Value):
            values[c.position] = _emit(state, CHECK_INDEX_RANGE, [v], {"low": c.low, "high": c.high,
                                                                      "error": c.error, "message": c.message})[0]
    return values


_MASKABLE = {"index": 1, "index_grad": 1, "index_put": 2}  # op -> position of its first index operand


def _constant_masks(state: TraceState, name: str, operands: list, attrs: dict) -> tuple[list, dict]:
    """Boolean masks whose values are known while tracing (a tensor made inside the function,
    or one read from outside, then guarded: a change retraces) become the integer indices of
    their True elements, as NumPy defines mask indexing; the result's shape is then known.
    Reading through a mask computed from traced values is refused (its shape depends on data);
    writing through one (`x[x > 0] = 0`) keeps the shape and stays a mask."""
    first = _MASKABLE[name]
    new_ops = operands[:first]
    new_key = []
    for entry in attrs["key"]:
        if entry[0] != "tensor":
            new_key.append(entry)
            continue
        o = operands[first + entry[1]]
        if getattr(o, "dtype", None) is not _dtypes.bool_:
            new_key.append(("tensor", len(new_ops) - first))
            new_ops.append(o)
            continue
        mask = state.constant_array(o)
        if mask is None and name != "index":  # writing through a traced mask keeps the shape: fine
            new_key.append(("tensor", len(new_ops) - first))
            new_ops.append(o)
            continue
        if mask is None:
            raise TraceError(f"{user_location()}: indexing with a boolean mask (x[mask]) computed from traced "
                             "values gives a shape that depends on their data. Keep the shape with "
                             "eager.where(mask, x, 0) or x.masked_fill(~mask, 0), or pass the mask in as a static "
                             "argument (static_argnums).")
        for idx in np.nonzero(mask):
            new_key.append(("tensor", len(new_ops) - first))
            new_ops.append(Tracer(state, state.constant(np.ascontiguousarray(idx, dtype=np.int64))))
    return new_ops, {**attrs, "key": tuple(new_key), "n_index": len(new_ops) - first}


def _root_now(t: "Tracer") -> "Tracer":
    """The current value of the tensor that owns a view's memory."""
    root = t._view_of
    if isinstance(root, Tracer):
        return root
    return Tracer(t._state, t._state.capture(root))  # a captured eager tensor: its latest value


def check_view_current(t: "Tracer", what: str = "this value is") -> None:
    """A view taken before its base was updated in place shows the update in eager: it is
    made again from the base's new value (so values and gradients follow the update, as
    PyTorch regenerates a view's history). A view whose making is not known (one of a
    detach() alias) is refused rather than read stale."""
    current = t._state.versions.get(id(t._view_of), 0)
    if current == t._view_version:
        return
    if t._view_steps is not None:
        from gmops.views import replay_view  # noqa: PLC0415

        t._value = replay_view(_root_now(t), t._view_steps)._value
        t._view_version = current
        return
    raise TraceError(f"{user_location()}: {what} a view of a detach() or .data alias of a tensor that was "
                     "updated in place after the view was taken; in eager the view would show the update, which "
                     "static cannot replay through the alias. Take the view after the update.")


def _record_captured(op, operands, attrs):
    """The dispatch mode of a tracing thread. An op whose operands are all eager tensors (a
    module's `weight.t()`, `w * 2` on a global) would otherwise run at trace time and its
    result be frozen into the graph as a snapshot: stale after the next optimizer step, and cut
    off from gradients. It is recorded instead, its tensors becoming implicit inputs read at
    call time; an op with no tensor operand (a constant) becomes a node too."""
    if not ACTIVE.stack:
        return NotImplemented
    return record(op, operands, attrs)


def _read_captured(tensor, what: str) -> None:
    """The read hook of a tracing thread: Python reads the data of an eager tensor (`.item()`,
    `.tolist()`, `float(t)`, NumPy's conversion). What it gets is baked into the trace, so:
    a tensor the traced call has already written in place (`counter.add_(1)` then
    `counter.item()`) is refused, since its new value exists only when the graph runs; a
    tensor from outside the function becomes a guard on its values, so that a change to it
    retraces rather than replaying the value read here (Dynamo's rule for a Python read of a
    trace). A tensor the function made itself is a constant of the trace."""
    state = ACTIVE.stack[-1] if ACTIVE.stack else None
    if state is None or not isinstance(tensor, Tensor):
        return
    if state.versions.get(id(tensor), 0):
        name = state.names.get(id(tensor), "a tensor from outside the function")
        raise TraceError(
            f"{user_location()}: {what} of {name}, which the function updated in place earlier in the same call: "
            "its new value exists only when the compiled graph runs, so the value read while tracing would be the "
            "one before the call. Keep the computation on tensors (e.g. `1.0 / t` rather than `1.0 / t.item()`), "
            "or read it outside the compiled function.")
    if state.is_created(tensor):
        return
    from .guards import ArrayGuard  # noqa: PLC0415  (guards builds on the tracer)

    if any(type(g) is ArrayGuard and g.obj is tensor for g in state.guards):
        return
    data = tensor._data
    arr = data if isinstance(data, np.ndarray) else data.get()
    name = state.names.get(id(tensor), "a tensor from outside the function")
    state.guards.append(ArrayGuard(f"{name} (read by {what} while tracing)", tensor, arr.copy()))


@contextlib.contextmanager
def capturing_dispatch():
    """Record ops on captured tensors for the duration of a trace (eager's dispatch modes are
    per thread, so other threads keep running eagerly), and watch Python's reads of their data."""
    with _dispatch.dispatch_mode(_record_captured), _dispatch.data_read_hook(_read_captured):
        yield


def _data_error(what: str, suggestion: str = "") -> TraceError:
    loc = user_location()
    return TraceError(
        f"{loc}: {what} needs the data of a traced value, which does not exist while tracing. "
        + (suggestion or "Use eager.where(cond, a, b) for data-dependent choices, or mark the argument "
           "static with static_argnums so its value is known when compiling.")
    )
