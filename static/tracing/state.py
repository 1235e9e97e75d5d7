"""The state of a trace being made: TraceState (the graph, the values of its inputs and
captured tensors, the views and in-place writes it saw), the trace active on this thread
(ACTIVE, current_state), the backward hook a traced backward() goes through, and the user's
`file:line` each node records (user_location, skipping graphmode's own frames).
"""
from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any

import numpy as np

import eager
from eager import _factories
from eager._device import device_of_array
from eager._tensor import Tensor
from gmbase import dtypes as _dtypes
from gmops import TensorSpec

from ..errors import TraceError
from ..ir import Graph, Value
from .shared_memory import SharedMemory
from .symbolic import captured_shape

if TYPE_CHECKING:
    pass


# graphmode's own packages (this file is static/tracing/state.py): frames in them are not the user's
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Every top-level package of graphmode, subpackages included (static.tracing, static.jit,
# gmops' records, ...): the one list guards and symbolic sizes read too, so a package moved or
# added is named once.
LIBRARY_PACKAGES = ("eager", "static", "codegen", "gmops", "gmbase", "gmnative", "graphmode")
_LIBRARY_DIRS = tuple(os.path.join(_ROOT, pkg) + os.sep for pkg in LIBRARY_PACKAGES)


def is_library_file(filename: str) -> bool:
    """Whether code in `filename` is graphmode's own (a frame a node's location skips): a file
    under one of its packages, or generated code loaded from memory (`<graphmode ...>`). A
    user's folder that happens to be named `codegen` or `static` elsewhere is the user's."""
    return filename.startswith(_LIBRARY_DIRS) or filename.startswith("<graphmode ")

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
            outside = not is_library_file(filename)
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
        from .tracer import Tracer  # noqa: PLC0415  (static.tracing.tracer builds on this module)

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
        """The current value of an eager alias of a captured tensor (static.tracing.shared_memory)."""
        v = self.capture(alias[1])
        found = self.shared.canonical(self, alias[0])
        assert found is not None, "an alias entry names a captured tensor"
        target, steps = found
        if not steps:
            return v
        v = self.latest[id(target)]
        from gmops.views import replay_view  # noqa: PLC0415

        from .tracer import Tracer  # noqa: PLC0415  (static.tracing.tracer builds on this module)

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
