"""Nodes of the dynamic backward graph: one `Node` per recorded op, one `AccumulateGrad`
per leaf. A node keeps exactly what its op's VJP asked to save, checks version counters
when it reads them back, and frees them after a backward pass (unless retained)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _dtypes
from .._grad_mode import STATE
from ..ops._registry import fit_grad
from .anomaly import capture_stack

if TYPE_CHECKING:
    from .._tensor import Tensor

_FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    `is_output` marks a node's own output (PyTorch names the node itself in the error then;
    for an input it names the tensor's current grad_fn, if any)."""

    __slots__ = ("tensor", "version", "is_output")

    def __init__(self, tensor, is_output: bool = False) -> None:
        self.tensor = tensor
        self.version = tensor._vc[0]
        self.is_output = is_output

    def unpack(self, node):
        t = self.tensor
        if t._vc[0] != self.version:
            raise RuntimeError(_modified_message(t, node if self.is_output else None, self.version))
        return t


def _modified_message(t, owner, expected: int) -> str:
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

    def __init__(self, hooks: list, entry) -> None:
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
        self.tensor: list = []  # (output_nr, fn)
        self.retain: list = []  # (output_nr, fn)
        self.pre: list = []
        self.post: list = []

    def run_pre(self, grads: list) -> list:
        for nr, fn in tuple(self.tensor):
            if grads[nr] is not None:
                out = fn(grads[nr])
                if out is not None:
                    grads[nr] = out
        for nr, fn in self.retain:
            if grads[nr] is not None:
                fn(grads[nr])
        for fn in tuple(self.pre):
            out = fn(tuple(grads))
            if out is not None:
                grads = list(out)
        return grads

    def run_post(self, grad_inputs: list, grad_outputs: list) -> list:
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
        return hooks

    def _add_tensor_hook(self, nr: int, fn, retain: bool = False) -> RemovableHandle:
        hooks = self._node_hooks()
        lst = hooks.retain if retain else hooks.tensor
        entry = (nr, fn)
        lst.append(entry)
        return RemovableHandle(lst, entry)

    def register_prehook(self, fn) -> RemovableHandle:
        """`fn(grad_outputs) -> new grad_outputs or None`, before this node runs."""
        lst = self._node_hooks().pre
        lst.append(fn)
        return RemovableHandle(lst, fn)

    def register_hook(self, fn) -> RemovableHandle:
        """`fn(grad_inputs, grad_outputs) -> new grad_inputs or None`, after this node runs."""
        lst = self._node_hooks().post
        lst.append(fn)
        return RemovableHandle(lst, fn)


_NOTHING_SAVED: dict = {}  # shared by released nodes; never written to


class Node(HookMixin):
    """The backward of one recorded op (PyTorch's `grad_fn`). It is also the `ctx` the op's
    VJP rule reads from (see eager.ops._registry)."""

    __slots__ = ("op", "attrs", "next_functions", "_saved", "_saved_out", "_needs", "_in_meta",
                 "_out_meta", "_name", "_freed", "__weakref__", "__dict__")
    _hooks: NodeHooks | None = None  # set on the few nodes that get hooks
    _trace = None  # the forward stack, kept in anomaly mode only
    _saved_out: SavedTensor | None
    _out_meta: list[tuple[tuple[int, ...], np.dtype[Any]]]  # per output; set by eager._dispatch when it records

    def __init__(self, op, attrs, operands, edges, needs, name, in_meta) -> None:
        self.op = op
        self.attrs = attrs
        self.next_functions = edges
        self._needs = needs
        self._name = name
        self._in_meta = in_meta  # (array shape, NumPy dtype) per tensor operand, None for numbers
        saved = {}
        n = len(operands)
        for i in op.save:
            if i < n:
                o = operands[i]
                saved[i] = SavedTensor(o) if in_meta[i] is not None else o
        self._saved = saved
        self._saved_out = None
        self._freed = False
        if STATE.anomaly:
            self._trace = capture_stack()

    # -- what PyTorch users inspect ---------------------------------------------------------
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name} object at {hex(id(self))}>"

    @property
    def metadata(self) -> dict:
        return {}

    # -- the ctx protocol of VJP rules ------------------------------------------------------
    @property
    def n_inputs(self) -> int:
        return len(self._in_meta)

    def needs(self, i: int) -> bool:
        return self._needs[i]

    def input(self, i: int):
        if self._freed:
            raise RuntimeError(_FREED_MSG)
        value = self._saved[i]
        return value.unpack(self) if isinstance(value, SavedTensor) else value

    @property
    def out(self):
        if self._freed:
            raise RuntimeError(_FREED_MSG)
        saved = self._saved_out
        if saved is None:
            raise RuntimeError(f"{self._name}: the op's output was not saved for backward (its VJP reads ctx.out "
                               "but the op does not declare save_output=True)")
        return saved.unpack(self)

    def in_shape(self, i: int) -> tuple:
        return self._in_meta[i][0]

    def in_dtype(self, i: int):
        return _dtypes._BY_NP[self._in_meta[i][1]]

    @property
    def out_shape(self) -> tuple:
        return self._out_meta[0][0]

    # -- running ----------------------------------------------------------------------------
    def apply(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        """Gradients for each next edge from the gradients of this node's outputs."""
        if self.op.multi_output:
            raw = self.op.vjp(self, tuple(grads))
        else:
            raw = self.op.vjp(self, grads[0])
        out: list[Tensor | None] = []
        meta, needs = self._in_meta, self._needs
        for i, g in enumerate(raw):
            if g is None or i >= len(meta) or meta[i] is None or not needs[i]:
                out.append(None)
                continue
            data = g._data
            shape, np_dtype = meta[i]
            if data.shape != shape or data.dtype != np_dtype:
                g = fit_grad(g, shape, _dtypes._BY_NP[np_dtype])
            out.append(g)
        return out

    def release(self) -> None:
        if self._saved or self._saved_out is not None:
            self._freed = True
            self._saved = _NOTHING_SAVED
            self._saved_out = None

    @property
    def n_outputs(self) -> int:
        return len(self._out_meta)


class AccumulateGrad(HookMixin):
    """The sink for a leaf: adds the incoming gradient into `leaf.grad`."""

    __slots__ = ("variable", "next_functions", "_hooks", "__weakref__")

    def __init__(self, variable) -> None:
        self.variable = variable
        self.next_functions = ()
        self._hooks = None

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"

    n_outputs = 1

    def accumulate(self, grad, create_graph: bool, owned: set) -> None:
        var = self.variable
        if not create_graph:
            grad = grad.detach()
        arr = grad._data
        if var._grad is None:
            # Store without a copy only when nothing else can see the array.
            if create_graph or (getattr(arr, "base", None) is None and id(arr) not in owned
                                and getattr(arr, "flags", None) is not None and arr.flags.writeable):
                owned.add(id(arr))
                var._grad = grad
            else:
                var._grad = grad.clone()
                owned.add(id(var._grad._data))
        elif create_graph or var._grad.requires_grad:
            var._grad = var._grad + grad
        else:
            current = var._grad._data
            if current.shape == arr.shape and current.flags.writeable:
                current += arr
                var._grad._vc[0] += 1
            else:
                var._grad = var._grad + grad
