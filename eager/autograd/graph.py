"""Nodes of the dynamic backward graph: one `Node` per recorded op, one `AccumulateGrad`
per leaf. A node keeps exactly what its op's VJP asked to save, checks version counters
when it reads them back, and frees them after a backward pass (unless retained)."""
from __future__ import annotations

import sys
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmbase.dtypes import _BY_NP  # noqa: F401  (read by the rendered Node.apply)
from gmops._registry import fit_grad  # noqa: F401  (read by the rendered Node.apply)

from .._device import is_writeable, xp_of_array
from .._fast_path import _indent, define
from .._grad_mode import STATE
from .anomaly import capture_stack

if TYPE_CHECKING:
    from gmops._registry import OpDef

    from .._tensor import Tensor
    from .function import FunctionCtx

# A hook on a tensor's gradient, on a node's output gradients (before it runs), and on its
# input and output gradients (after): each may return replacements, or None.
TensorHook = Callable[["Tensor"], "Tensor | None"]
PreHook = Callable[[tuple["Tensor | None", ...]], "Sequence[Tensor | None] | None"]
PostHook = Callable[[tuple["Tensor | None", ...], tuple["Tensor | None", ...]], "Sequence[Tensor | None] | None"]
# An edge of the backward graph: the next node and which of its outputs; (None, 0) for none.
Edge = tuple["Node | FunctionCtx | AccumulateGrad | None", int]

_FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    `is_output` marks a node's own output (PyTorch names the node itself in the error then;
    for an input it names the tensor's current grad_fn, if any). It is a class attribute (an
    output is saved as the subclass `_SavedOutput`), so that the recording hot path
    (eager._dispatch) makes an input's record with two stores and no `__init__` call."""

    __slots__ = ("tensor", "version")
    tensor: Tensor
    version: int
    is_output = False

    def __new__(cls, tensor: Tensor, is_output: bool = False) -> SavedTensor:
        self = object.__new__(_SavedOutput if is_output else cls)
        self.tensor = tensor
        self.version = tensor._vc[0]
        return self

    def unpack(self, node: object) -> Tensor:
        t = self.tensor
        if t._vc[0] != self.version:
            raise RuntimeError(_modified_message(t, node if self.is_output else None, self.version))
        return t


class _SavedOutput(SavedTensor):
    """A node's own output, saved for backward (see SavedTensor.is_output)."""

    __slots__ = ()
    is_output = True


def _modified_message(t: Tensor, owner: Any, expected: int) -> str:
    """PyTorch's text for a saved tensor that an in-place op changed after it was saved."""
    msg = ("one of the variables needed for gradient computation has been modified by an inplace "
           f"operation: [{t.type()} {list(t.shape)}]")
    if owner is not None:
        msg += f", which is output 0 of {owner.name()}"
    elif t.grad_fn is not None:
        msg += f", which is output {t._output_nr} of {t.grad_fn.name()}"
    msg += f", is at version {t._vc[0]}; expected version {expected} instead. "
    if STATE.anomaly:
        return msg + ("Hint: the backtrace further above can point to the operation that failed to "
                      "compute its gradient. The variable in question was changed in there or anywhere "
                      "later. Good luck!")
    return msg + ("Hint: enable anomaly detection to find the operation that failed to compute its "
                  "gradient, with torch.autograd.set_detect_anomaly(True).")


class RemovableHandle:
    """Returned by register_hook; `.remove()` takes the hook out again."""

    __slots__ = ("_hooks", "_entry")

    def __init__(self, hooks: list[Any], entry: object) -> None:
        self._hooks, self._entry = hooks, entry

    def remove(self) -> None:
        for i, e in enumerate(self._hooks):
            if e is self._entry:
                del self._hooks[i]
                return


class NodeHooks:
    """The hooks of one backward node, in the order PyTorch runs them: tensor hooks (from
    `tensor.register_hook`, per output), then retain_grad's, then the node's pre-hooks
    (which see all output gradients); post-hooks see inputs' and outputs' gradients."""

    __slots__ = ("tensor", "retain", "pre", "post")

    def __init__(self) -> None:
        self.tensor: list[tuple[int, TensorHook]] = []  # (output_nr, fn)
        self.retain: list[tuple[int, TensorHook]] = []  # (output_nr, fn)
        self.pre: list[PreHook] = []
        self.post: list[PostHook] = []

    def run_pre(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        for nr, fn in tuple(self.tensor):
            g = grads[nr]
            if g is not None:
                replaced = fn(g)
                if replaced is not None:
                    grads[nr] = replaced
        for nr, fn in self.retain:
            g = grads[nr]
            if g is not None:
                fn(g)
        for pre in tuple(self.pre):
            new = pre(tuple(grads))
            if new is not None:
                grads = list(new)
        return grads

    def run_post(self, grad_inputs: list[Tensor | None], grad_outputs: list[Tensor | None]) -> list[Tensor | None]:
        for fn in tuple(self.post):
            out = fn(tuple(grad_inputs), tuple(grad_outputs))
            if out is not None:
                grad_inputs = list(out)
        return grad_inputs


class HookMixin:
    """Hook registration shared by Node, AccumulateGrad and custom Function nodes."""

    __slots__ = ()
    _hooks: NodeHooks | None  # a slot or class default of each node class

    def _node_hooks(self) -> NodeHooks:
        hooks = self._hooks
        if hooks is None:
            hooks = self._hooks = NodeHooks()  # type: ignore[misc]  # a slot of each subclass, not of the mixin
            HOOKED[0] = True
        return hooks

    def _add_tensor_hook(self, nr: int, fn: TensorHook, retain: bool = False) -> RemovableHandle:
        hooks = self._node_hooks()
        lst = hooks.retain if retain else hooks.tensor
        entry = (nr, fn)
        lst.append(entry)
        return RemovableHandle(lst, entry)

    def register_prehook(self, fn: PreHook) -> RemovableHandle:
        """`fn(grad_outputs) -> new grad_outputs or None`, before this node runs."""
        lst = self._node_hooks().pre
        lst.append(fn)
        return RemovableHandle(lst, fn)

    def register_hook(self, fn: PostHook) -> RemovableHandle:
        """`fn(grad_inputs, grad_outputs) -> new grad_inputs or None`, after this node runs."""
        lst = self._node_hooks().post
        lst.append(fn)
        return RemovableHandle(lst, fn)


class _Released(dict):  # type: ignore[type-arg]  # (only ever empty)
    """What a released node's `_saved` becomes: empty (as viz reads it), and reading a saved
    value from it raises PyTorch's error, so that `Node.input` needs no check of its own
    before its lookup."""

    __slots__ = ()

    def __getitem__(self, key: object) -> Any:
        raise RuntimeError(_FREED_MSG)


# Backward passes running now, on any thread, that record no graph (where the engine sets
# STATE.compact_broadcasts): while there are none, eager's hot path does not read that
# thread-local flag (a thread-local read costs about as much as three plain ones). One entry
# per pass: a pass appends one and pops one (each a single list operation, atomic under the
# GIL, so no lock is taken), and the hot path tests the list's truth.
COMPACT_PASSES: list[bool] = []

# Whether any node was ever given hooks: until then the backward engine skips reading each
# node's `_hooks` (a class default it would look up through the instance, once per node).
HOOKED = [False]

_NOTHING_SAVED: dict[int, Any] = _Released()  # shared by released nodes; never written to
_refcount = sys.getrefcount


# -- running a node, written once ---------------------------------------------------------------
# The backward engine runs most nodes inline (its loop passes each gradient on as soon as it is
# fitted, without a call and a list per node): the steps of running a node are written here
# ONCE, as snippets over variable names, and rendered both into `Node.apply`/`Node.release`
# (below) and into the engine's loop (eager.autograd.engine), with the eager fast path's
# renderer (eager._fast_path.define: the text is kept in SOURCES and served by linecache, so
# tracebacks show the lines that ran). tests/eager/test_engine_rendering.py checks both paths.
#
# VJP: `raw`, the op's gradients for its operands, from the node `{node}`'s output gradients
# `{grads}` (a VJP may return more than one per operand: the loops' zip drops the extra ones).
VJP = """\
op = {node}.op
vjp = op.vjp
if vjp is None:  # eager records nodes of differentiable ops only
    raise RuntimeError(f"{{{node}._name}}: the op {{op.name}} has no VJP")
raw = vjp({node}, tuple({grads})) if op.multi_output else vjp({node}, {grads}[0])
if len(raw) < len({edges}):
    raise RuntimeError(f"{{{node}._name}}: the VJP of {{op.name}} returned {{len(raw)}} gradients "
                       f"for {{len({edges})}} operands")
"""

# FIT: the gradient `g` for an operand recorded as `m` = (shape, NumPy dtype), made to match it
# (a broadcast operand's gradient summed down, a float32 operand's cast back: gmops.fit_grad)
FIT = """\
data = g._data
if data.shape != m[0] or (data.dtype is not m[1] and data.dtype != m[1]):
    g = fit_grad(g, m[0], _BY_NP[m[1]])
"""

# RELEASE: free what the node saved, after it ran in a pass that does not retain the graph
# (only ops that save_output set _saved_out: the test of op first skips a class-default lookup)
RELEASE = """\
if {node}._saved:
    {node}._saved = _NOTHING_SAVED
if {node}.op.save_output and {node}._saved_out is not None:
    {node}._saved = _NOTHING_SAVED
    {node}._saved_out = None
"""

_METHODS = {
    "apply": '''\
def apply(self, grads):
    """Gradients for each next edge (None where none flows) from the gradients of this
    node's outputs (rendered by eager.autograd.graph from the snippets the engine inlines)."""
    edges = self.next_functions
{vjp}    out = []
    for g, m, (nxt, _) in zip(raw, self._in_meta, edges):
        if g is None or m is None or nxt is None:
            out.append(None)
            continue
{fit}        out.append(g)
    return out
''',
    "release": '''\
def release(self):
    """Free what this node saved (after a backward pass that does not retain the graph;
    rendered by eager.autograd.graph from the snippet the engine inlines)."""
{release}''',
}


def render_method(name: str) -> str:
    """The source of Node.apply or Node.release, from the snippets above."""
    return _METHODS[name].format(vjp=_indent(VJP.format(node="self", grads="grads", edges="edges"), 1),
                                 fit=_indent(FIT, 2), release=_indent(RELEASE.format(node="self"), 1))


def _render_method(name: str) -> Callable[..., Any]:
    """Node's method `name`, compiled from render_method's text in this module's globals (the
    name the text defines is taken out of them again: it is Node's attribute only)."""
    fn: Callable[..., Any] = define(name, render_method(name), globals(), label=f"Node.{name}")
    del globals()[name]
    fn.__qualname__ = f"Node.{name}"
    return fn


class Node(HookMixin):
    """The backward of one recorded op (PyTorch's `grad_fn`). It is also the `ctx` the op's
    VJP rule reads from (see eager.ops._registry)."""

    __slots__ = ("op", "attrs", "next_functions", "_saved", "_in_meta", "_out_meta", "_name",
                 "__weakref__", "__dict__")
    # What most nodes never set is a class default (as on Tensor), so that recording a node
    # (once per op) assigns only what every node needs.
    _hooks: NodeHooks | None = None  # set on the few nodes that get hooks
    _trace = None  # the forward stack, kept in anomaly mode only
    _saved_out: SavedTensor | None = None  # set by eager._dispatch for ops with save_output
    # per output; set by eager._dispatch when it records
    _out_meta: Sequence[tuple[tuple[int, ...], np.dtype[Any]]]

    def __init__(self, op: OpDef, attrs: dict[str, Any], edges: tuple[Edge, ...], name: str,
                 in_meta: list[tuple[tuple[int, ...], np.dtype[Any]] | None], saved: dict[int, Any]) -> None:
        """`edges` has one entry per operand, (None, 0) where it wants no gradient: a VJP's
        `ctx.needs(i)` reads it. `saved` maps the positions of the operands in `op.save` to a
        `SavedTensor`, or to the Python number itself (eager._dispatch builds both in one
        pass over the operands)."""
        self.op = op
        self.attrs = attrs
        self.next_functions = edges
        self._name = name
        self._in_meta = in_meta  # (array shape, NumPy dtype) per tensor operand, None for numbers
        self._saved = saved
        if STATE.anomaly:
            self._trace = capture_stack()

    # -- what PyTorch users inspect ---------------------------------------------------------
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name} object at {hex(id(self))}>"

    @property
    def metadata(self) -> dict[str, Any]:
        return {}

    # -- the ctx protocol of VJP rules ------------------------------------------------------
    @property
    def n_inputs(self) -> int:
        return len(self._in_meta)

    def needs(self, i: int) -> bool:
        return self.next_functions[i][0] is not None

    def input(self, i: int) -> Any:
        value = self._saved[i]  # (raises the freed error once released: see _Released)
        if type(value) is SavedTensor:  # (SavedTensor.unpack, inlined: VJPs call this per operand)
            t = value.tensor
            if t._vc[0] != value.version:
                raise RuntimeError(_modified_message(t, None, value.version))
            return t
        return value.unpack(self) if isinstance(value, SavedTensor) else value

    @property
    def out(self) -> Tensor:
        if self._freed:
            raise RuntimeError(_FREED_MSG)
        saved = self._saved_out
        if saved is None:
            raise RuntimeError(f"{self._name}: the op's output was not saved for backward (its VJP reads ctx.out "
                               "but the op does not declare save_output=True)")
        return saved.unpack(self)

    def _number_operand(self, i: int) -> TypeError:
        return TypeError(f"{self._name}: operand {i} is a Python number, not a tensor: it has no shape or dtype")

    # (the checks are inline: VJP rules call these once per operand in every backward)
    def in_shape(self, i: int) -> tuple[int, ...]:
        meta = self._in_meta[i]
        if meta is None:
            raise self._number_operand(i)
        return meta[0]

    def in_dtype(self, i: int) -> _dtypes.dtype:
        meta = self._in_meta[i]
        if meta is None:
            raise self._number_operand(i)
        return _dtypes._BY_NP[meta[1]]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return self._out_meta[0][0]

    # -- running (rendered from APPLY/RELEASE below, the engine's loop inlines the same text) --
    if TYPE_CHECKING:
        def apply(self, grads: list[Tensor | None]) -> list[Tensor | None]: ...
        def release(self) -> None: ...
    else:
        apply = _render_method("apply")
        release = _render_method("release")

    @property
    def _freed(self) -> bool:
        """Whether release() freed what this node saved (it stores no flag of its own: a
        node records no per-instance attribute outside its slots, so it makes no __dict__)."""
        return self._saved is _NOTHING_SAVED

    @property
    def n_outputs(self) -> int:
        return len(self._out_meta)


_NODE_CLASSES: dict[str, type[Node]] = {}
_OWN_COPIES = ("input", "needs")  # the methods VJP rules call once per operand
# Node and every class node_class made: the backward engine's inlined path runs exactly these
# (Node.apply as written, no override), so it asks this set rather than `type(node) is Node`
PLAIN_NODE_TYPES: set[type] = {Node}


def node_class(name: str) -> type[Node]:
    """The Node subclass named `name` (`MulBackward0`), made once per name: in PyTorch each
    grad_fn's type is its own class, and scripts read it (torchviz labels the graph's nodes
    with `type(fn).__name__`; tutorials print `type(loss.grad_fn)`). The class carries the
    name as `_name` (read through the instance, shadowing Node's slot), so eager's hot path
    records a node without storing it; a node renamed later (`_renamed`) stores its own."""
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        namespace: dict[str, Any] = {"__slots__": (), "__module__": "eager.autograd.graph", "__doc__": Node.__doc__,
                                     "_name": name}
        for method in _OWN_COPIES:
            # a copy of the method's code per class: CPython specializes attribute access per
            # code object and type, and `ctx.input(i)` shared by every grad_fn class would see
            # a new type at nearly every call of a backward pass (polymorphic: unspecialized)
            fn = Node.__dict__[method]
            namespace[method] = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__,
                                                   fn.__defaults__, fn.__closure__)
            namespace[method].__qualname__ = f"{name}.{method}"
        cls = _NODE_CLASSES[name] = type(name, (Node,), namespace)
        PLAIN_NODE_TYPES.add(cls)
    return cls


def grad_class(op: OpDef, operands: Sequence[Any], attrs: dict[str, Any]) -> type[Node]:
    """The grad_fn class of `op` applied to `operands` (node_class of its backward name).
    A name that does not depend on the call (`op.grad_name` a string or None) is resolved
    once and kept on the record (`op.grad_class`), which eager's hot path reads first:
    `op.grad_class or grad_class(op, operands, attrs)`."""
    g = op.grad_name
    if callable(g):
        return node_class(g(operands, attrs))
    cls = op.grad_class = node_class(op.backward_name(operands, attrs))
    return cls


class AccumulateGrad(HookMixin):
    """The sink for a leaf: adds the incoming gradient into `leaf.grad`."""

    __slots__ = ("variable", "next_functions", "_hooks", "__weakref__")

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable
        self.next_functions: tuple[Edge, ...] = ()
        self._hooks = None

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def release(self) -> None:
        """Nothing saved to free (the engine releases every node that ran)."""

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"

    n_outputs = 1
    _out_meta = (None,)  # (one output, as the engine sizes a node's gradient slots by _out_meta)

    def accumulate(self, grad: Tensor, create_graph: bool, owned: set[int]) -> None:
        var = self.variable
        arr = grad._data
        if var._grad is None and not create_graph and type(arr) is np.ndarray and (
                arr.base is None or _private_view(arr)):
            # the common first gradient of a step: a fresh row-major array no one else holds,
            # for a row-major leaf (what the general branch below decides, in fewer steps)
            flags = arr.flags
            if flags.c_contiguous and flags.writeable and var._data.flags.c_contiguous and id(arr) not in owned:
                owned.add(id(arr))
                var._grad = grad._make(arr)
                return
        if var._grad is None:
            # PyTorch's gradient layout contract: `.grad` is laid out like the leaf (a
            # transposed matmul's gradient is copied to row-major for a row-major weight), so
            # `p.grad.view(-1)` works wherever `p.view(-1)` does.
            fitted = layout_like(arr, var._data)
            if fitted is not arr:  # a fresh array nothing else sees
                if create_graph:
                    grad = _clone(grad)  # keeps the graph; only the copy's layout differs
                    grad._data = fitted
                else:
                    grad = grad._make(fitted)  # (a tensor of no graph: what detach would make)
                owned.add(id(fitted))
                var._grad = grad
            # Store without a copy only when nothing else can see the array.
            elif create_graph or (getattr(arr, "base", None) is None and id(arr) not in owned
                                  and is_writeable(arr)):
                owned.add(id(arr))
                # PyTorch's .grad is no one's alias: not the detached gradient (whose _base, the
                # backward's tensor, static's capture would read in place of p.grad), a tensor
                # of its own made once here (no detached one made first)
                var._grad = grad if create_graph else grad._make(arr)
            else:
                var._grad = grad.detach().clone()
                var._grad._data = layout_like(var._grad._data, var._data)
                owned.add(id(var._grad._data))
        elif create_graph:
            var._grad = var._grad + grad
        elif var._grad.requires_grad:
            var._grad = var._grad + grad.detach()
        else:
            current = var._grad._data
            if current.shape == arr.shape and is_writeable(current):
                current += arr
                var._grad._vc[0] += 1
            else:
                var._grad = var._grad + grad.detach()


def _private_view(arr: np.ndarray) -> bool:
    """Whether `arr` is a whole-buffer view (a reshape) of an array that nothing but `arr`
    holds: a gradient a fused backward computed flat and reshaped to its operand's shape (a
    layer norm's weight gradient). Such an array is as private as a fresh one, and storing it
    as `.grad` spares the copy the general branch makes of a view. The counts: the base is
    held by arr, the local `base` and getrefcount's argument."""
    base = arr.base
    return (type(base) is np.ndarray and base.base is None and base.nbytes == arr.nbytes
            and _refcount(base) == 3)


def _clone(t: Tensor) -> Tensor:
    from .._functional import clone  # noqa: PLC0415  (eager._functional imports the autograd package)

    return clone(t)


def _dense_order(arr: Any) -> list[int] | None:
    """The dimensions of `arr` from outermost to innermost when its elements fill one block of
    memory without gaps or overlaps (PyTorch's "non-overlapping and dense"), else None."""
    shape, strides = arr.shape, arr.strides
    order = sorted(range(arr.ndim), key=lambda d: -abs(strides[d]))
    expected = arr.itemsize
    for d in reversed(order):
        n = shape[d]
        if n == 1:
            continue
        if strides[d] != expected:
            return None
        expected *= n
    return order


def layout_like(arr: Any, like: Any) -> Any:
    """`arr` itself when its layout obeys PyTorch's gradient layout contract for the leaf
    `like` (same strides on every dimension longer than one when `like` is dense, row-major
    otherwise), else a copy of `arr` laid out that way."""
    if arr.ndim != like.ndim or arr.shape != like.shape:
        return arr  # (a broadcast gradient; fit_grad has already reduced the ones that reach here)
    if like.flags.c_contiguous:
        if arr.flags.c_contiguous:  # (NumPy never flags an array with a 0 stride on a long dim so)
            return arr
        order = None
    else:
        order = _dense_order(like)
        if order is None:  # a leaf with gaps (a strided view): the gradient is row-major
            if arr.flags.c_contiguous:
                return arr
        elif all(n == 1 or a == b for n, a, b in zip(arr.shape, arr.strides, like.strides)):
            return arr
    xp = xp_of_array(arr)  # type: ignore[no-untyped-call]
    if order is None:
        return xp.ascontiguousarray(arr)
    out = xp.empty(tuple(arr.shape[d] for d in order), dtype=arr.dtype)
    inverse = [0] * len(order)
    for pos, d in enumerate(order):
        inverse[d] = pos
    view = out.transpose(inverse)
    view[...] = arr
    return view


class save_on_cpu:  # noqa: N801  (PyTorch's name)
    """torch.autograd.graph.save_on_cpu: a context whose saved tensors live in host memory.
    Eager's tensors on the CPU are saved where they are already; a CuPy tensor stays on its
    device (the same values, the device's memory instead of the host's)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        self.pin_memory, self.device_type = pin_memory, device_type

    def __enter__(self) -> "save_on_cpu":
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class saved_tensors_hooks:  # noqa: N801  (PyTorch's name)
    """torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook): refused with a clear
    error. Eager's backward nodes hold their saved tensors directly (the op nodes as well as
    custom Functions), so hooks that pack them would be called for some saves and not others;
    rather than run them on part of the graph, this says so."""

    def __init__(self, pack_hook: Any, unpack_hook: Any) -> None:
        raise NotImplementedError(
            "torch.autograd.graph.saved_tensors_hooks: packing and unpacking saved tensors is not supported here "
            "(backward nodes keep the tensors they save); save_on_cpu is, and activation checkpointing "
            "(eager.utils.checkpoint) recomputes instead of saving")
