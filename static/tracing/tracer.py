"""Tracing: run the user's function on `Tracer` values that record every op into a Graph.

A Tracer implements the Tensor API users write in eager (operators, methods, `eager.*`
functions, indexing) by inheriting eager's own definitions (`eager._api.TensorAPI`): those
apply ops, and an op with a Tracer operand is handed to `record`, which appends it to the
graph. So the same source runs in both modes without a line changed.

The trace's state (TraceState, the active trace, the user's location) is `static.tracing.state`;
recording one op call as a node (promotion, the half-in-float32 rule, view and capture
checks) is `static.tracing.record`.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, ClassVar

import eager
from eager import _factories
from eager import _functional as F
from eager._api import TensorAPI
from eager._grad_mode import STATE
from eager._inplace import _LEAF_MSG, _VIEW_OF_LEAF_MSG, check_result_cast
from eager._random_fills import RandomFills
from eager._tensor import Tensor
from eager._tensor_metadata import Size
from gmbase import dtypes as _dtypes
from gmops import REGISTRY
from gmops.special import STOP_GRADIENT

from ..errors import TraceError
from ..ir import Value
from .record import _data_error, _root_now, bind_tracer, check_view_current, record

# the active trace and its state, under the name eager's hooks and static's compile path ask
# (`static.tracing.tracer.ACTIVE`, `.current_state`, `.user_location`, `.TraceError`)
from .state import (
    _CLASS_ASKERS,
    _LIBRARY_DIRS,
    _STDLIB,
    ACTIVE,
    BACKWARD_HOOK,
    TraceState,
    ViewSteps,
    current_state,
    user_location,
)


class Tracer(TensorAPI, RandomFills):
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

    # -- in-place view ops (unsqueeze_, t_, ...): the tracer now names the view's value ---------
    def _reshape_in_place(self, make: Callable[["Tracer"], "Tracer"], name: str) -> "Tracer":
        """An in-place view op of a value made in the trace: the tracer names the new view
        (its views taken before are stale, as after any write). A view's own shape changed in
        place is refused: its writes could no longer be replayed onto its base."""
        if self._view_of is not None or self._full_alias:
            raise TraceError(f"{user_location()}: {name} changes the shape of a view in place, which static does "
                             f"not follow back to its base; use the out-of-place form (y = y.{name[:-1]}(...))")
        if STATE.enabled and self._value in self._state.grad_leaves:
            raise RuntimeError(_LEAF_MSG)
        self._value = make(self)._value
        self._state.versions[id(self)] = self._state.versions.get(id(self), 0) + 1
        return self

    def unsqueeze_(self, dim: int) -> "Tracer":
        return self._reshape_in_place(lambda t: t.unsqueeze(dim), "unsqueeze_")

    def squeeze_(self, dim: Any = None) -> "Tracer":
        return self._reshape_in_place(lambda t: t.squeeze() if dim is None else t.squeeze(dim), "squeeze_")

    def t_(self) -> "Tracer":
        if self.ndim > 2:
            raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return self._reshape_in_place(lambda t: t.t(), "t_")

    def transpose_(self, dim0: int, dim1: int) -> "Tracer":
        return self._reshape_in_place(lambda t: t.transpose(dim0, dim1), "transpose_")

    swapdims_ = swapaxes_ = transpose_

    def resize_(self, *sizes: Any, memory_format: Any = None) -> "Tracer":
        raise TraceError(f"{user_location()}: resize_ on a traced value (its memory is not the program's to "
                         "reuse); make a new tensor of the shape wanted (x.new_empty(...), reshape)")

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
        from gmops.views import VIEW_SCATTER, replay_view  # noqa: PLC0415

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

    # -- in-place random fills: the draw is a graph input each call makes anew (static.tracing.randomness)
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

    def _random_fill(self, kind: str, transform: Callable[[Any], Any], name: str) -> "Tracer":
        """RandomFills' hook (geometric_, log_normal_, cauchy_): the transform of a fresh draw."""
        return self.copy_(transform(self._draw(kind)))

    def bernoulli_(self, p=0.5, *, generator=None) -> "Tracer":
        return self.copy_((self._draw("uniform", generator=generator) < p).to(self.dtype))

    def random_(self, *args, generator=None) -> "Tracer":
        low, high = (0, args[0]) if len(args) == 1 else args
        return self.copy_(eager.randint(low, high, tuple(self.shape), dtype=self.dtype, generator=generator))

    def __setitem__(self, index, value) -> None:
        if isinstance(value, Tracer) and value.dtype is not self.dtype:
            value = F.to_dtype(value, self.dtype)
        elif isinstance(value, (int, float)):
            from gmops.shape_ops import fit_put_value  # noqa: PLC0415

            value = fit_put_value(value, self.dtype)  # PyTorch's overflow error at trace time, as eager's
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
        from gmops.views import VIEW_SCATTER  # noqa: PLC0415

        result = VIEW_SCATTER(Tracer(state, state.latest[id(target)]), result, steps=steps)
    state.shared.before_write(target)
    state.latest[id(target)] = result._value
    for t in (target, *state.shared.sharing(target)):  # views of it (or of its aliases) are now stale
        state.versions[id(t)] = state.versions.get(id(t), 0) + 1


Tracer.__graphmode_inplace__ = staticmethod(inplace_on_captured)
bind_tracer(Tracer)


def _assign_grad(tensor, value: Tracer) -> None:
    """`p.grad = traced value` (eager's .grad setter hands it here): BACKWARD_HOOK's handler."""
    if BACKWARD_HOOK.assign_grad is None:
        raise TraceError(f"{user_location()}: assigning a traced value to .grad is not supported here")
    BACKWARD_HOOK.assign_grad(tensor, value)

__all__ = ["Tracer", "TraceState", "TraceError", "ACTIVE", "BACKWARD_HOOK", "current_state", "user_location",
           "inplace_on_captured", "record"]
