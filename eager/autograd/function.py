"""Custom autograd Functions, as in PyTorch:

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp(); ctx.save_for_backward(y); return y
        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors; return grad * y

    Exp.apply(x)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gmbase import dtypes as _dtypes
from gmbase.dtypes import _BY_NP

from .._grad_mode import STATE, no_grad
from .._tensor_metadata import TensorMetadata as _TensorMetadata
from .anomaly import capture_stack
from .graph import _FREED_MSG, AccumulateGrad, HookMixin, Node, NodeHooks, SavedTensor

if TYPE_CHECKING:
    from .._tensor import Tensor

_Edge = tuple["Node | FunctionCtx | AccumulateGrad | None", int]  # (next backward node, its output number)
# a tensor whose class keeps these properties records its input metadata from its array (the
# properties' own values: the shape as a tuple, the dtype looked up), without a Size made
_SHAPE, _DTYPE = _TensorMetadata.__dict__["shape"], _TensorMetadata.__dict__["dtype"]


class FunctionCtx(HookMixin):
    """The `ctx` of a custom Function; after forward it is also its backward node."""

    def __init__(self, fn_cls, inputs) -> None:
        self._cls = fn_cls
        # (a list first: a generator costs a frame, and every fused op's node is made here)
        self.needs_input_grad = tuple([bool(getattr(i, "_requires_grad", False)) for i in inputs])
        self._saved: list[SavedTensor | None] | None = None
        self._freed = False
        self._non_diff: set[int] = set()  # ids of the outputs marked non-differentiable
        self._in_meta = [
            ((i._data.shape, _BY_NP[i._data.dtype]) if (t := type(i)).shape is _SHAPE and t.dtype is _DTYPE
             else (tuple(i.shape), i.dtype)) if hasattr(i, "_data") else None
            for i in inputs]
        self.next_functions: tuple[_Edge, ...] = ()
        self._hooks: NodeHooks | None = None
        self._out_meta: list[tuple[tuple[int, ...], _dtypes.dtype] | None] = []
        self._trace = capture_stack() if STATE.anomaly else None
        self.materialize_grads = True

    # -- what forward() uses --------------------------------------------------------------------
    def save_for_backward(self, *tensors) -> None:
        self._saved = [None if t is None else SavedTensor(t) for t in tensors]

    @property
    def saved_tensors(self) -> tuple:
        if self._freed:
            raise RuntimeError(_FREED_MSG)
        saved = self._saved
        if not saved:
            return ()
        # (a list first: a generator costs a frame; fused backwards read this once per node)
        return tuple([None if s is None else s.unpack(self) for s in saved])

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_diff.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors) -> None:
        """Accepted for compatibility: eager rebases in-place outputs when it wraps them."""

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    # -- the node protocol the engine uses ------------------------------------------------------
    def name(self) -> str:
        return f"{self._cls.__name__}Backward"

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def n_outputs(self) -> int:
        return len(self._out_meta)

    def release(self) -> None:
        if self._saved:
            self._freed = True
        self._saved = None

    def apply(self, grads: list) -> list:
        if self.materialize_grads:
            for g in grads:
                if g is None:  # (the import only then: it costs per node)
                    from .._factories import zeros  # noqa: PLC0415

                    grads = [zeros(meta[0], dtype=meta[1]) if g is None and meta is not None else g
                             for g, meta in zip(grads, self._out_meta)]
                    break
        result = self._cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        expected = len(self._in_meta)
        if len(result) != expected:
            if len(result) > expected and all(r is None for r in result[expected:]):
                result = result[:expected]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                                   f"(expected {expected}, got {len(result)})")
        out: list[Tensor | None] = []
        needs = self.needs_input_grad
        for i, (g, meta) in enumerate(zip(result, self._in_meta)):
            if g is None or meta is None or not needs[i]:
                if g is not None and meta is None:
                    raise RuntimeError(f"function {self.name()} returned a gradient different than None at "
                                       f"position {i + 1}, but the corresponding forward input was not a Variable")
                out.append(None)
                continue
            data = getattr(g, "_data", None)  # (an array's shape is a tuple already: no Size made)
            shape = data.shape if data is not None else tuple(g.shape)
            if shape != meta[0] and shape != tuple(meta[0]):  # (meta[0] is mostly a tuple: no copy made)
                try:
                    from gmops._registry import reduce_to_shape  # noqa: PLC0415

                    g = reduce_to_shape(g, meta[0])
                except Exception:
                    g = None
                if g is None or tuple(g.shape) != tuple(meta[0]):
                    raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {i} - got "
                                       f"{list(result[i].shape)} but expected shape compatible with {list(meta[0])}")
            out.append(g)
        return out


class _TraceHook:
    fn: Callable[..., Any] | None = None  # set by static: answers `apply` while a function is traced (NotImplemented otherwise)


TRACE_HOOK = _TraceHook()


class Function:
    """Subclass with static `forward(ctx, *args)` and `backward(ctx, *grads)`; call `.apply`."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Overridden (PyTorch 2's style), forward takes no ctx and this saves what backward
        needs from `inputs` (the apply arguments, a tuple) and `output`."""
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        from .._tensor import Tensor  # noqa: PLC0415

        if TRACE_HOOK.fn is not None:  # static traces the Function (forward recorded, backward as its VJP)
            traced = TRACE_HOOK.fn(cls, args, kwargs)
            if traced is not NotImplemented:
                return traced
        ctx_cls = cls.__dict__.get("_ctx_class")
        if ctx_cls is None:  # PyTorch's ctx (the grad_fn) is of a class named <Function>Backward
            ctx_cls = type(f"{cls.__name__}Backward", (FunctionCtx,), {"__module__": cls.__module__})
            cls._ctx_class = ctx_cls  # type: ignore[attr-defined]  # a cache set on each subclass
        ctx = ctx_cls(cls, args)
        with no_grad():
            if cls.setup_context is not Function.setup_context:  # forward without ctx, then setup_context
                raw = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, raw)
            else:
                raw = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(raw, tuple)
        outputs = (raw,) if single else raw
        record = STATE.enabled and any(ctx.needs_input_grad)
        wrapped = []
        for nr, o in enumerate(outputs):
            if not isinstance(o, Tensor):
                wrapped.append(o)
                continue
            t = Tensor._make(o._data)
            t._vc = o._vc
            if record and id(o) not in ctx._non_diff and o.is_floating_point():
                t._requires_grad = True
                t.grad_fn = ctx
                t._output_nr = nr
            wrapped.append(t)
        if record:
            ctx.next_functions = tuple(
                ((a.grad_fn, a._output_nr) if a.grad_fn is not None else (a._accumulator(), 0))
                if isinstance(a, Tensor) and a._requires_grad else (None, 0)
                for a in args
            )
            ctx._out_meta = [(tuple(o.shape), o.dtype) if isinstance(o, Tensor) else None for o in outputs]
            _save_outputs_as_returned(ctx, outputs, wrapped)
        return wrapped[0] if single else tuple(wrapped)


def _save_outputs_as_returned(ctx, outputs, wrapped) -> None:
    """A saved output is unpacked as the tensor the caller got (with this node as grad_fn),
    so a backward written with ops can itself be differentiated (create_graph=True)."""
    saved = ctx._saved or []
    for i, s in enumerate(saved):
        if s is None:
            continue
        for o, t in zip(outputs, wrapped):
            if s.tensor is o and t is not o:
                as_output = SavedTensor(t, is_output=True)
                as_output.version = s.version  # (the version it was saved at)
                saved[i] = s = as_output


_ONCE_MSG = "trying to differentiate twice a function that was marked with @once_differentiable"


class _DelayedError(Function):
    """Where a @once_differentiable backward ran in grad mode: its results carry a node whose
    own backward raises (PyTorch's DelayedError), so a second differentiation fails loudly
    instead of silently seeing no history."""

    @staticmethod
    def forward(ctx: Any, result: Any, *inputs: Any) -> Any:
        return result.clone()

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError(_ONCE_MSG)


def once_differentiable(backward: Callable) -> Callable:
    """Decorate a custom Function's backward that cannot itself be differentiated: it runs
    without recording, and where the backward was asked to build a graph (create_graph) its
    gradients carry a node that raises PyTorch's error if differentiated. Mirrors
    torch.autograd.function.once_differentiable."""
    import functools  # noqa: PLC0415

    from .._tensor import Tensor  # noqa: PLC0415

    @functools.wraps(backward)
    def wrapper(ctx: Any, *grads: Any) -> Any:
        with no_grad():
            outputs = backward(ctx, *grads)
        if not STATE.enabled:
            return outputs
        tracked = [g for g in grads if isinstance(g, Tensor) and g.requires_grad]
        if not tracked:
            return outputs
        single = not isinstance(outputs, tuple)
        wrapped = tuple(_DelayedError.apply(o, *tracked) if isinstance(o, Tensor) and o.is_floating_point() else o
                        for o in ((outputs,) if single else outputs))
        return wrapped[0] if single else wrapped

    return wrapper
