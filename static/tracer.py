"""Tracing: run the user's function on `Tracer` values that record every op into a Graph.

A Tracer implements the Tensor API users write in eager (operators, methods, `eager.*`
functions, indexing) by inheriting eager's own definitions (`eager._api.TensorAPI`): those
apply ops, and an op with a Tracer operand is handed to `record`, which appends it to the
graph. So the same source runs in both modes without a line changed."""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, ClassVar

import numpy as np

import eager
from eager import _dispatch, _dtypes, _factories
from eager import _functional as F
from eager._api import TensorAPI
from eager._device import device_of_array
from eager._grad_mode import STATE
from eager._inplace import _LEAF_MSG, _VIEW_OF_LEAF_MSG, check_result_cast
from eager._tensor import Tensor
from eager._tensor_metadata import Size
from eager.ops import REGISTRY, TensorSpec
from eager.ops.elementwise import TO_DTYPE
from eager.ops.special import STOP_GRADIENT

from .dynamic_shapes import captured_shape
from .errors import TraceError
from .ir import Graph, Node, Value
from .shared_memory import SharedMemory

_LIBRARY_DIRS = (os.path.dirname(eager.__file__) + os.sep, os.path.dirname(os.path.abspath(__file__)) + os.sep)
_SCALARS = (bool, int, float)
# How a view is made from the tensor owning its memory: (op name, sorted attrs, output number)
# per view op, as eager.ops.views.replay_view takes them.
ViewSteps = tuple[tuple[str, tuple[tuple[str, Any], ...], "int | None"], ...]


def user_location(skip_library: bool = True) -> str:
    """file:line of the innermost frame outside graphmode: the user's line. (Called for most
    traced ops: whether a code object is graphmode's, and its file's short name, are kept
    per code object rather than worked out again per frame.)"""
    frame: FrameType | None = sys._getframe(1)
    known = _USER_CODE
    while frame is not None:
        code = frame.f_code
        short = known.get(code)
        if short is None:
            filename = code.co_filename
            outside = not filename.startswith(_LIBRARY_DIRS) and "codegen" + os.sep not in filename
            if len(known) >= 4096:
                known.clear()
            short = known[code] = os.path.basename(filename) if outside else ""
        if short:
            return f"{short}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


# code object -> its file's short name when it is the user's code, "" when it is graphmode's
# (a code object is made once per definition, not per call: a few hundred; cleared at 4096)
_USER_CODE: dict = {}
_CLASS_ASKERS: dict = {}  # code object -> whether it is the user's (Tracer.__class__)
_STDLIB = os.path.dirname(os.__file__) + os.sep


@dataclass(eq=False)
class TraceState:
    """Everything one trace accumulates."""

    graph: Graph
    names: dict = field(default_factory=dict)  # id(tensor) -> the name the user's code reads it by
    captured: dict = field(default_factory=dict)  # id(tensor) -> (tensor, input Value)
    latest: dict = field(default_factory=dict)  # id(tensor) -> latest Value after in-place updates
    weak: set = field(default_factory=set)  # inputs that came from Python numbers
    counter: int = 0
    draws: int = field(default_factory=lambda: _factories.draws_on_this_thread())  # when tracing began
    finished: bool = False  # set when the trace is over: its Tracers must not record any more
    versions: dict = field(default_factory=dict)  # id(tensor or Tracer) -> in-place updates so far
    no_grad_nodes: set = field(default_factory=set)  # nodes recorded with grad mode off: no gradient flows
    created: list = field(default_factory=list)  # tensors eager's factories made during the trace: constants
    location: str | None = None  # while differentiating a node: the user's line of that node
    _created_ids: dict = field(default_factory=dict)  # ids of `created`, in order (filled as it grows)
    guards: list = field(default_factory=list)  # guards on tensor values the trace read (constant masks)
    grad_leaves: set = field(default_factory=set)  # inputs that are leaves requiring grad (no in-place writes)
    shared: SharedMemory = field(default_factory=SharedMemory)  # captured tensors over the same memory
    # the device the compiled graph runs on: a GPU as soon as an argument or a captured tensor
    # lives there (NumPy inputs are then copied over), else the CPU. Tracers report it as their
    # `.device`, so `rand_like(x)`, `zeros(..., device=x.device)` and `.to(x.device)` inside
    # the function make what eager would make on x's device
    device: Any = field(default_factory=lambda: eager.device("cpu"))
    # what the trace changed outside itself, undone (last first) when tracing fails: state a
    # compiled step made before its optimizer's first update (static.training)
    on_failure: list = field(default_factory=list)
    _names_of_inputs: tuple = field(default_factory=lambda: (set(), 0))  # (names, how many inputs they cover)

    def saw_array(self, data) -> None:
        """Note the device of an array the trace reads (an argument or a captured tensor)."""
        if self.device.type == "cpu" and not isinstance(data, (np.ndarray, np.generic)) and hasattr(data, "device"):
            self.device = device_of_array(data)

    def _input_names(self) -> set:
        """The names of the graph's inputs so far (inputs are only appended while tracing:
        the set grows with them rather than being made again per capture)."""
        inputs = self.graph.inputs
        names, seen = self._names_of_inputs
        if seen > len(inputs):
            names, seen = set(), 0
        names.update(v.name for v in inputs[seen:])
        self._names_of_inputs = (names, len(inputs))
        return names

    def fresh_name(self) -> str:
        name = str(self.counter)
        self.counter += 1
        return name

    def is_created(self, obj) -> bool:
        """Whether eager made this tensor while the function was traced (a constant of the
        trace, like `eager.zeros(3)` inside it), rather than the caller's state. (`created`
        keeps them alive, so their ids stay theirs.)"""
        ids = self._created_ids
        for t in self.created[len(ids):]:
            ids[id(t)] = None
        return id(obj) in ids

    def constant(self, arr) -> Value:
        """An array that is a constant of the trace: an implicit input that is never written back."""
        self.created.append(arr)
        return self.capture(arr)

    def constant_array(self, o):
        """The values of `o` when they are known while tracing (None otherwise): an eager
        tensor or array, or a Tracer that is still a captured one as it was read. A tensor
        from outside the function is guarded, so that a change to it retraces."""
        obj = o
        if isinstance(o, Tracer):
            obj = next((c for c, v in self.captured.values() if v is o._value and self.latest[id(c)] is v), None)
            if obj is None:
                return None
        data = obj._data if isinstance(obj, Tensor) else obj
        arr = data if isinstance(data, np.ndarray) else data.get()
        if not self.is_created(obj):
            from .guards import ArrayGuard  # noqa: PLC0415

            self.guards.append(ArrayGuard(f"the boolean mask {self.names.get(id(obj), 'read from outside')}",
                                          obj, arr.copy()))
        return arr

    def capture(self, obj) -> Value:
        """A tensor or array from outside the function: an implicit input, read at call time."""
        key = id(obj)
        alias = self.shared.aliases.get(key)
        if alias is not None:
            return self._alias_value(alias)
        if key in self.latest:
            return self.latest[key]
        if _factories.draws_on_this_thread() != self.draws:
            raise TraceError(
                f"{user_location()}: the function draws random numbers (eager.rand, randn, dropout, ...) while "
                "it is traced; the compiled graph would replay the same numbers on every call. Pass random "
                "tensors in as arguments, or put the model in eval() mode before compiling.")
        alias = self.shared.alias_entry(self, obj)  # `p.grad.detach()`: p.grad's value, not a stale input
        if alias is not None:
            return self._alias_value(alias)
        data = obj._data if isinstance(obj, Tensor) else obj
        self.saw_array(data)
        dt = _dtypes.from_numpy(data.dtype)
        base = self.names.get(key) or f"c{len(self.captured)}"
        name = base
        taken = self._input_names()
        while name in taken:
            name = f"{base}_{len(taken)}"
        v = Value(name, TensorSpec(captured_shape(data), dt))  # (symbolic for a draw over a dynamic dim)
        self.graph.inputs.append(v)
        self.captured[key] = (obj, v)
        self.latest[key] = v
        self.shared.note_captured(self, obj)
        return v

    def _alias_value(self, alias: tuple) -> Value:
        """The current value of an eager alias of a captured tensor (static.shared_memory)."""
        v = self.capture(alias[1])
        found = self.shared.canonical(self, alias[0])
        assert found is not None, "an alias entry names a captured tensor"
        target, steps = found
        if not steps:
            return v
        v = self.latest[id(target)]
        from eager.ops.views import replay_view  # noqa: PLC0415

        return replay_view(Tracer(self, v), steps)._value


class _BackwardHook:
    """Where `Tracer.backward` finds its handler, `fn(tracer, gradient, retain_graph,
    create_graph, inputs)`: the training-step module fills it when imported (the tracer itself
    knows nothing of gradients' `.grad` bookkeeping). None: backward() is refused.
    `assign_grad(tensor, tracer)` records `tensor.grad = tracer` (None: refused)."""

    fn: Callable[..., None] | None = None
    assign_grad: Callable[..., None] | None = None
    read_grad: Callable[..., object] | None = None  # `x.grad` of an argument leaf requiring grad


BACKWARD_HOOK = _BackwardHook()


class _Active(threading.local):
    stack: list

    def __init__(self) -> None:
        self.stack = []


ACTIVE = _Active()


def current_state() -> TraceState | None:
    return ACTIVE.stack[-1] if ACTIVE.stack else None


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
    The commonest case (every traced operand of one floating dtype, beside Python ints and
    floats) casts nothing and is recognized first: most of a training step's ops. (A traced
    Python number, `state.weak`, promotes as a number does: left to the full rule.)"""
    common = None
    weak = state.weak
    for v in operands:
        t = type(v)
        if t is Value:
            if v in weak:
                break
            d = v.type.dtype
            if common is None:
                common = d
            elif d is not common:
                break
        elif t is not float and t is not int:
            break
    else:
        if common is not None and common.is_floating_point:
            return operands

    def cast(v, target):
        return _emit(state, TO_DTYPE, [v], {"dtype": target})[0]

    return list(_dtypes.promote_operands(op.promote, op.mask_operands, operands, lambda v: _describe(state, v), cast))


def _emit(state: TraceState, op, operands: list, attrs: dict, types: list | None = None) -> list:
    """Check the op's abstract rule and append the node; returns its result Values. `types`:
    the result types where the caller knows them already (a replayed template whose ops and
    operand shapes were checked when it was recorded: static.update_templates)."""
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
    if op.name in _dispatch._HALF_SCALAR_IN_FLOAT32 and any(
            type(v) is Value and v.type.dtype is _dtypes.float16 for v in values) and _dtypes.half_beside_0d(
            [_describe(state, v) for v in values]):
        return Tracer(state, _half_in_float32(state, op, values, attrs))
    if op.promote is not None:
        values = _promote(state, op, values)
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
        from eager.ops.views import replay_view  # noqa: PLC0415

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


@contextlib.contextmanager
def capturing_dispatch():
    """Record ops on captured tensors for the duration of a trace (eager's dispatch modes are
    per thread, so other threads keep running eagerly)."""
    with _dispatch.dispatch_mode(_record_captured):
        yield


def _data_error(what: str, suggestion: str = "") -> TraceError:
    loc = user_location()
    return TraceError(
        f"{loc}: {what} needs the data of a traced value, which does not exist while tracing. "
        + (suggestion or "Use eager.where(cond, a, b) for data-dependent choices, or mark the argument "
           "static with static_argnums so its value is known when compiling.")
    )


class Tracer(TensorAPI):
    """A stand-in for a Tensor during tracing: it has a shape and dtype but no data.

    The operators and methods are eager's own (`TensorAPI`); this class gives the hooks:
    an op appends an IR node (`record`), and an in-place form makes this tracer name the
    new value (`_assign`: functionalization)."""

    __slots__ = ("_value", "_state", "_view_of", "_view_version", "_view_steps", "_full_alias", "__weakref__")
    __graphmode_dispatch__ = staticmethod(record)  # an op with a Tracer operand, called as a function
    _apply_op = staticmethod(record)  # the same, from TensorAPI's operators
    # an eager tensor written with a Tracer's value (set below, with the function)
    __graphmode_inplace__: ClassVar[Callable[[Any, Tracer], None]]
    __array_priority__ = 2000
    _value: Value
    _state: TraceState
    _view_of: Tracer | Tensor | None
    _view_version: int
    _full_alias: bool
    _view_steps: ViewSteps | None

    @property  # type: ignore[misc]
    def __class__(self):  # noqa: PLR0206  (what isinstance asks when type() says no)
        """Tensor, to the user's code: `isinstance(x, eager.Tensor)` is True for a traced value
        as it is for the tensor it stands for (isinstance consults `__class__` when the type
        itself does not match). Tracer to graphmode's own code and the standard library's,
        which tell the two apart."""
        code = sys._getframe(1).f_code
        user = _CLASS_ASKERS.get(code)
        if user is None:
            filename = code.co_filename
            user = _CLASS_ASKERS[code] = not filename.startswith(_LIBRARY_DIRS + (_STDLIB,)) \
                and "codegen" + os.sep not in filename and not filename.startswith("<frozen")
            if len(_CLASS_ASKERS) > 4096:
                _CLASS_ASKERS.clear()
        return Tensor if user else Tracer

    def __init__(self, state: TraceState, value: Value) -> None:
        self._state = state
        self._value = value
        self._view_of = None  # the tensor this is a view of (a Tracer, or a captured eager tensor)
        self._view_version = 0  # that tensor's in-place version when the view was taken
        self._full_alias = False  # a detach()/.data alias of all of _view_of (writes go through to it)
        self._view_steps = None  # the view ops that make this view from _view_of (None: not known)

    # -- metadata (static, so Python control flow on it unrolls) ---------------------------
    @property
    def shape(self) -> Size:
        return Size(self._value.type.shape)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    @property
    def dtype(self):
        return self._value.type.dtype

    @property
    def ndim(self) -> int:
        return len(self._value.type.shape)

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        n = 1
        for s in self._value.type.shape:
            n *= s
        return n

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    @property
    def device(self):
        """The device the traced graph runs on (see TraceState.device)."""
        return self._state.device

    requires_grad = False
    grad_fn = None

    @property
    def grad(self):
        """None, as eager's for a tensor that does not require grad; for an argument that is a
        leaf requiring grad, what backward() accumulated into it so far (BACKWARD_HOOK.read_grad)."""
        if self._value in self._state.grad_leaves and BACKWARD_HOOK.read_grad is not None:
            return BACKWARD_HOOK.read_grad(self)
        return None

    is_leaf = True

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        return iter(F.unbind(self, 0))

    def __repr__(self) -> str:
        return f"Tracer(%{self._value.name}: {self._value.type.dtype.name}{list(self.shape)})"

    # -- what needs data: refused with the user's line -----------------------------------------
    def __bool__(self):
        raise _data_error("a Python branch or bool() on a traced value")

    def __float__(self):
        raise _data_error("float() of a traced value")

    def __int__(self):
        raise _data_error("int() of a traced value")

    def __index__(self):
        raise _data_error("using a traced value as a Python index")

    def item(self):
        raise _data_error(".item() of a traced value", "Return the tensor instead, or keep the computation on tensors.")

    def tolist(self):
        raise _data_error(".tolist() of a traced value", "Return the tensor instead.")

    def numpy(self):
        raise _data_error(".numpy() of a traced value", "Return the tensor and convert it after the call.")

    def __format__(self, spec: str) -> str:
        if not spec:
            return repr(self)
        raise _data_error(f"formatting a traced value with {spec!r} (an f-string or str.format)",
                          "Return the tensor and format it after the call, or print it in eager mode.")

    def __array__(self, *args, **kwargs):
        raise _data_error("NumPy conversion of a traced value",
                          "Use eager's operations inside the function; convert the result after the call.")

    # -- autograd-flavoured API ----------------------------------------------------------------
    def detach(self) -> "Tracer":
        """A value without gradient history that shares the tensor's memory: an in-place write
        through it (`y.detach().zero_()`) changes the tensor too, as in eager."""
        return self._alias()

    def _alias(self) -> "Tracer":
        out = STOP_GRADIENT(self)
        out._view_of = self if self._view_of is None else self._view_of
        out._view_version = self._state.versions.get(id(out._view_of), 0)
        out._full_alias = self._view_of is None  # the whole tensor, not a part of it
        return out

    def requires_grad_(self, flag: bool = True) -> "Tracer":
        return self

    def contiguous(self):
        return self

    def view(self, *shape):
        return F.reshape(self, *shape)

    def to(self, *args, **kwargs):
        dt = kwargs.get("dtype")
        for a in args:
            if isinstance(a, (_dtypes.dtype, type)) or (isinstance(a, str) and a.split(":")[0] not in ("cpu", "cuda")):
                dt = a
            elif isinstance(a, Tracer):
                dt = a.dtype
        return self if dt is None else F.to_dtype(self, dt)

    def cpu(self):
        return self

    def cuda(self, device=None):
        return self  # a graph is device-agnostic: it runs where its inputs are

    @property
    def data(self) -> "Tracer":
        """The value without gradient tracking, sharing the tensor's memory (see detach)."""
        return self._alias()

    def detach_(self) -> "Tracer":
        self._value = STOP_GRADIENT(self)._value
        return self

    def nelement(self) -> int:
        return self.numel()

    def element_size(self) -> int:
        return self.dtype.np.itemsize

    def is_contiguous(self) -> bool:
        return True

    is_cuda = False

    def stride(self, dim: int | None = None) -> tuple[int, ...] | int:
        backwards, step = [], 1
        for n in reversed(self.shape):
            backwards.append(step)
            step *= n
        strides = tuple(reversed(backwards))
        return strides if dim is None else strides[dim]

    @staticmethod
    def __graphmode_grad_assign__(tensor: Tensor, value: Tracer) -> None:
        """`p.grad = traced value`: eager's .grad setter hands it here (see _assign_grad)."""
        _assign_grad(tensor, value)

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
        """`loss.backward()` inside a traced function: recorded by the handler in BACKWARD_HOOK
        (static.training installs it: the backward joins the graph, gradients become updates)."""
        handler = BACKWARD_HOOK.fn
        if handler is None:
            raise TraceError(f"{user_location()}: backward() inside a traced function; use static.grad or "
                             "static.value_and_grad to get gradients in a compiled function")
        handler(self, gradient, retain_graph, create_graph, inputs)

    def register_hook(self, hook):
        """`hook(grad)` runs on this value's gradient when a backward through the trace computes
        it (the traced backward calls it on the traced gradient; a non-None return replaces it)."""
        hooks = self._state.__dict__.setdefault("value_hooks", {}).setdefault(self._value, {})
        key = object()
        hooks[key] = hook
        return _ValueHookHandle(hooks, key)

    def retain_grad(self):
        raise TraceError(f"{user_location()}: retain_grad on a traced value; use static.grad for gradients")

    # -- in-place ops: functionalized (the tracer now names the new value) ----------------------
    def _apply_inplace(self, fn, others, name: str, saves_self: bool = True, grad_name: str | None = None) -> "Tracer":
        """TensorAPI's in-place hook: this tracer now names `fn(self, *others)`."""
        return self._assign(fn(self, *others), name)

    def zero_(self) -> "Tracer":
        return self._assign(REGISTRY["full_like"](self, value=0.0 if self.is_floating_point() else 0), "zero_")

    def fill_(self, value) -> "Tracer":
        return self._assign(REGISTRY["full_like"](self, value=value), "fill_")

    def copy_(self, src, non_blocking: bool = False) -> "Tracer":
        return self._assign(F.expand(F.to_dtype(src, self.dtype), *self.shape), "copy_")

    def _assign(self, result: "Tracer", name: str) -> "Tracer":
        if STATE.enabled:
            base = self._view_of if self._view_of is not None else self
            if isinstance(base, Tensor) and base._requires_grad and base.grad_fn is None:
                raise RuntimeError(_VIEW_OF_LEAF_MSG)
            if isinstance(base, Tracer) and base._value in self._state.grad_leaves:
                raise RuntimeError(_LEAF_MSG if base is self else _VIEW_OF_LEAF_MSG)
        if self._full_alias:
            return self._assign_through_alias(result, name)
        if self._view_of is not None and self._view_steps is not None:
            return self._assign_through_view(result, name)
        if self._view_of is not None:
            raise TraceError(f"{user_location()}: {name} writes through a view of a detach() or .data alias, "
                             "which static cannot follow back to the tensor. Write the update out of place "
                             "(y = y + 1).")
        result = self._fit_result(result, name)
        self._value = result._value
        self._state.versions[id(self)] = self._state.versions.get(id(self), 0) + 1  # its views are now stale
        return self

    def _fit_result(self, result: "Tracer", name: str) -> "Tracer":
        """An in-place op's result checked against the tensor it is written into: the same
        shape (PyTorch's message otherwise), cast to its dtype where the cast is allowed."""
        if tuple(result.shape) != tuple(self.shape):
            raise RuntimeError(f"{name}: output with shape {list(self.shape)} doesn't match the broadcast shape "
                               f"{list(result.shape)}")
        if result.dtype is not self.dtype:
            check_result_cast(result.dtype, self.dtype)
            result = F.to_dtype(result, self.dtype)
        return result

    def _assign_through_view(self, result: "Tracer", name: str) -> "Tracer":
        """A write into a view (`x[0].add_(1)`, `x.t().mul_(2)`): the tensor owning the memory
        becomes `view_scatter(base, new view value)` (PyTorch's CopySlices) and the view is made
        again from it; other views of the base are made again when next read."""
        from eager.ops.views import VIEW_SCATTER, replay_view  # noqa: PLC0415

        check_view_current(self, f"{name} writes through")
        result = self._fit_result(result, name)
        root = self._view_of
        new_root = VIEW_SCATTER(_root_now(self), result, steps=self._view_steps)
        if isinstance(root, Tracer):
            root._value = new_root._value
            self._state.versions[id(root)] = self._state.versions.get(id(root), 0) + 1
        else:  # a captured eager tensor: its update is written back after the call
            inplace_on_captured(root, new_root)
        self._value = replay_view(new_root, self._view_steps)._value
        self._view_version = self._state.versions.get(id(root), 0)
        return self

    def _assign_through_alias(self, result: "Tracer", name: str) -> "Tracer":
        """A write through detach()/.data: the tensor it aliases takes the new values. Its
        gradient history stays what it was (eager keeps the tensor's grad_fn), so under grad
        mode the base becomes `old + stop_gradient(new - old)`: the new values, the old
        history."""
        check_view_current(self, f"{name} writes through")
        base = self._view_of
        self._full_alias = False
        self._view_of = None
        try:
            self._assign(result, name)
        finally:
            self._view_of, self._full_alias = base, True
        if isinstance(base, Tracer):
            new = self
            if STATE.enabled and base.is_floating_point():
                new = base + STOP_GRADIENT(F.sub(self, base))
            base._value = new._value
            self._state.versions[id(base)] = self._state.versions.get(id(base), 0) + 1
        else:  # a captured eager tensor (`p.data.zero_()` on a parameter)
            inplace_on_captured(base, self)
        self._view_version = self._state.versions.get(id(base), 0)
        return self

    # -- in-place random fills: the draw is a graph input each call makes anew (static.randomness)
    def _draw(self, kind: str, a: float = 0.0, b: float = 1.0, high=None, generator=None) -> Tensor:
        spec = self._value.type
        return Tensor._make(_factories._rng_array(kind, tuple(spec.shape), spec.dtype, self.device, a, b, high,
                                                  generator))

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None) -> "Tracer":
        return self.copy_(self._draw("normal", mean, std, generator=generator))

    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator=None) -> "Tracer":
        return self.copy_(self._draw("uniform", a, b, generator=generator))

    def exponential_(self, lambd: float = 1.0, *, generator=None) -> "Tracer":
        return self.copy_(-(-self._draw("uniform", generator=generator)).log1p() / lambd)

    def bernoulli_(self, p=0.5, *, generator=None) -> "Tracer":
        return self.copy_((self._draw("uniform", generator=generator) < p).to(self.dtype))

    def random_(self, *args, generator=None) -> "Tracer":
        low, high = (0, args[0]) if len(args) == 1 else args
        return self.copy_(eager.randint(low, high, tuple(self.shape), dtype=self.dtype, generator=generator))

    def __setitem__(self, index, value) -> None:
        if isinstance(value, Tracer) and value.dtype is not self.dtype:
            value = F.to_dtype(value, self.dtype)
        self._assign(F.put_at_index(self, index, value, eager.tensor), "index_put_")


class _ValueHookHandle:
    """What Tracer.register_hook returns: `remove()` takes the hook out."""

    def __init__(self, hooks: dict, key: object) -> None:
        self._hooks, self._key = hooks, key

    def remove(self) -> None:
        self._hooks.pop(self._key, None)


def inplace_on_captured(target, result: Tracer) -> None:
    """An eager tensor from outside the function updated in place by a traced value (an
    optimizer step on a module's parameter): the update becomes a graph output that is
    written back after the call."""
    state = result._state
    state.capture(target)
    if tuple(result.shape) != tuple(target.shape):
        raise RuntimeError(f"in-place update of a captured tensor of shape {list(target.shape)} with a value of "
                           f"shape {list(result.shape)}")
    if result.dtype != target.dtype:
        check_result_cast(result.dtype, target.dtype)
        result = F.to_dtype(result, target.dtype)
    # an eager alias (`p.grad.detach()`, `p.data`, a view made outside) writes into the tensor it aliases
    target, steps = state.shared.canonical(state, target) or (target, ())
    if steps:
        from eager.ops.views import VIEW_SCATTER  # noqa: PLC0415

        result = VIEW_SCATTER(Tracer(state, state.latest[id(target)]), result, steps=steps)
    state.shared.before_write(target)
    state.latest[id(target)] = result._value
    for t in (target, *state.shared.sharing(target)):  # views of it (or of its aliases) are now stale
        state.versions[id(t)] = state.versions.get(id(t), 0) + 1


Tracer.__graphmode_inplace__ = staticmethod(inplace_on_captured)


def _assign_grad(tensor, value: Tracer) -> None:
    """`p.grad = traced value` (eager's .grad setter hands it here): BACKWARD_HOOK's handler."""
    if BACKWARD_HOOK.assign_grad is None:
        raise TraceError(f"{user_location()}: assigning a traced value to .grad is not supported here")
    BACKWARD_HOOK.assign_grad(tensor, value)

