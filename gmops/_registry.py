"""The operator registry: one `OpDef` per op, shared by eager and static.

An op is declared once with
- `forward(xp, *operands, **attrs)`: the computation on NumPy or CuPy arrays (operands may
  also be Python scalars where the op allows them);
- `abstract(*specs, **attrs)`: the result's `TensorSpec` (shape, dtype) from the operands'
  specs, raising the error a user should see on a mismatch. Static tracing runs it on every
  op; eager runs it only to explain a failed forward, so the fast path pays nothing;
- `vjp(ctx, grad)`: the gradients of the operands, written with ops (operators, methods,
  other OpDefs) and never with raw arrays. The same rule then gives eager tensors, a
  differentiable graph under `create_graph=True`, and IR when static traces it.

The `ctx` a VJP receives (an eager `Node` or static's trace-time stand-in) offers:
`ctx.attrs`, `ctx.needs(i)` (does operand i want a gradient), `ctx.input(i)` (a saved
operand, listed in `save`), `ctx.out` (the saved output, when `save_output`),
`ctx.in_shape(i)`, `ctx.in_dtype(i)` and `ctx.out_shape`.
A VJP may return gradients of the broadcast shape or of another dtype: `fit_grad` reduces
and casts them, once, for both modes.

The record also holds every *fact* about the op that passes and code generators need
(arity, kind, commutativity, fusibility, ...): they ask the record, never a list of names
of their own, so that declaring an op (plus its lowering in `codegen/lowering.py`) is all
it takes to add one. `tests/eager/test_op_registry.py` checks that every op's facts are
complete and agree with its samples.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from gmbase.dtypes import dtype

from . import _layout


class TensorSpec(NamedTuple):
    """What abstract rules see of a tensor: its shape and dtype, no data."""

    shape: tuple
    dtype: dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)


KINDS = ("elementwise", "reduction", "shape", "linalg", "index", "other")
VARIADIC = None  # the arity of an op taking any number of tensor operands (cat, stack, index)


@dataclass(frozen=True)
class Reduction:
    """How a reduction's partial results combine, for kernels that reduce block by block:
    `combiner` is the binary pointwise op (a registry name) that merges two partials,
    `identity` its neutral element (the value of an empty reduction), and
    `divide_by_count` says the combined total is divided by the number of elements (mean)."""

    combiner: str
    identity: float
    divide_by_count: bool = False


@dataclass(eq=False)
class OpDef:
    name: str
    forward: Callable
    abstract: Callable
    vjp: Callable | None = None
    grad_name: str | Callable | None = None
    save: tuple = ()  # operand indices the VJP reads with ctx.input(i)
    save_output: bool = False
    kind: str = "elementwise"  # one of KINDS; "elementwise" ops are pointwise (evaluable element by element)
    is_view: bool = False  # eager output aliases operand 0's memory (shares its version counter)
    promote: str | None = None  # "same": operands promoted to one dtype; "float": and to a float dtype
    samples: Callable | None = None  # rng -> [(operands, attrs)] for the registry-wide tests
    multi_output: bool = False
    doc: str = ""
    extra: dict = field(default_factory=dict)
    # -- facts that passes and generators ask (see the module docstring) --------------------------
    arity: int | None = 1  # tensor/scalar operands (attributes not counted); VARIADIC (None): any number
    commutative: bool = False  # op(a, b) == op(b, a) for two operands: CSE may sort them
    fusible: bool | None = None  # may join a fused region; None: pointwise ops and `reduction`s are
    batchable: bool = False  # unary pointwise op whose value on one element is the same computed in a batch
    reduction: Reduction | None = None  # a reduction that kernels may compute from combined partials
    aliases_operand: bool | None = None  # result may be operand 0 itself or a view of it; None: is_view
    mask_operands: tuple = ()  # operands that are boolean conditions, not data (where's condition)
    random: bool = False  # draws random numbers: never folded, merged by CSE or recomputed
    stateful: bool = False  # reads or writes state beyond its operands: same rules as random
    data_dependent_shape: bool = False  # the result's shape depends on operand values (nonzero, unique)
    # forward is one ufunc of its two operands and never looks at an operand's Python type:
    # eager may hand it a Python float beside a float tensor as a 0-d array of the tensor's
    # dtype (the value NumPy's weak-scalar rule converts it to), which NumPy resolves faster
    scalar_as_array: bool = False
    # how many times the op can be differentiated: math.inf when its VJP is itself written with
    # differentiable ops; k when a step of the VJP can be differentiated only k-1 more times; 0 when
    # its derivative is not implemented (differentiating it raises, it never gives zeros)
    differentiable_order: float = math.inf
    # how vmap runs the op on operands with a leading batch axis, `rule(args, batched, attrs, size)`
    # (gmops._batching: derived from the facts above for most ops, hand-written for the rest);
    # None: vmap over the op raises, naming it
    batch_rule: Callable | None = None
    # the memory layout of the result as PyTorch makes it (gmops._layout): None derives it
    # from the kind, "view" for views, "elementwise" for pointwise ops, "contiguous" otherwise
    layout: str | None = None
    # -- the op's spellings: a pointwise op is one record. codegen.lowering derives the op's
    # lowering from these where its table has no entry of its own, and eager._surface makes
    # the Python names (docs/architecture.md, "How to add an op")
    ufunc: str | None = None  # the NumPy/CuPy ufunc the forward is (np.<ufunc>, cp.<ufunc>, out= works)
    c_expr: str | None = None  # C expression of one element, {0} {1}: operands, {T}: compute type (native, CUDA)
    surface: tuple = ()  # what eager generates: "function" (eager.<name>), "method", "inplace" (Tensor.<name>_)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"op {self.name!r}: kind {self.kind!r} is not one of {KINDS}")
        if self.layout is None:
            self.layout = "view" if self.is_view else "elementwise" if self.kind == "elementwise" else "contiguous"
        self.forward = _layout.with_layout(self.forward, self.layout)
        if self.fusible is None:
            self.fusible = self.pointwise or self.reduction is not None
        if self.aliases_operand is None:
            self.aliases_operand = self.is_view
        if self.differentiable_order == 0 and self.vjp is None:
            self.vjp = _not_differentiable(self)
        # eager's hot path applies to ops with one output that is not a view
        self.simple = not self.multi_output and not self.is_view
        # An op that computes values (not one that only moves elements) can meet log(0), 0/0
        # or overflow, which NumPy reports as RuntimeWarnings where PyTorch is silent: eager
        # runs its forward with NumPy's floating-point reports off (see eager._dispatch).
        self.quiet_fp = self.kind not in ("shape", "index")
        # How eager computes the op on NumPy scalars (eager._dispatch._scalar_form derives it
        # from `forward` on first use; None until then, False where there is none).
        self.scalar_form: Callable[..., Any] | bool | None = None
        # eager's grad_fn class for this op, when its name does not depend on the call
        # (eager.autograd.graph.grad_class resolves it on first use; None until then)
        self.grad_class: type | None = None

    @property
    def pointwise(self) -> bool:
        """Evaluable element by element (with broadcasting): may be inlined in a kernel."""
        return self.kind == "elementwise"

    @property
    def pure(self) -> bool:
        """The result depends only on the operands and attributes: may be folded, merged by
        CSE and recomputed."""
        return not (self.random or self.stateful)

    def __call__(self, *operands, **attrs):
        """Apply the op to tensors, tracer values or arrays: dispatches on the operands."""
        return _DISPATCH["dispatch"](self, operands, attrs)

    def backward_name(self, operands, attrs) -> str:
        g = self.grad_name
        if callable(g):
            return g(operands, attrs)
        return g or (self.name.title().replace("_", "") + "Backward0")

    def __repr__(self) -> str:
        return f"<op {self.name}>"


def _not_differentiable(op: OpDef) -> Callable:
    """The VJP of an op whose derivative is not implemented: recording it is free, running it
    (a gradient that really flows through the op) raises, naming the op."""

    def vjp(ctx, grad):
        raise RuntimeError(f"derivative for {op.name} is not implemented: {op.doc or 'it is not differentiable'}. "
                           "Differentiate a function that does not need this step's gradient.")

    return vjp


REGISTRY: dict[str, OpDef] = {}
# eager._dispatch registers its `dispatch` here when it loads (it imports this module, so this
# module cannot import it). Other tensor types and dispatch modes take ops over through it
# (see eager._dispatch), never by replacing it.
_DISPATCH: dict = {"dispatch": None}


def defop(name: str, **kwargs: Any) -> OpDef:
    """Declare an op. Its name is its IR name; a second declaration is a bug."""
    if name in REGISTRY:
        raise ValueError(f"op {name!r} is declared twice")
    op = OpDef(name=name, **kwargs)
    REGISTRY[name] = op
    return op


def get(name: str) -> OpDef:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}") from None


_REDUCE_MODULES: list[Any] = []  # [reductions, shape_ops], bound at first use (they import this module)


def reduce_to_shape(grad, shape: tuple):
    """Sum a broadcast gradient back to an operand's shape, with ops (so it traces and
    differentiates like any other step)."""
    gshape = tuple(grad.shape)
    if gshape == tuple(shape):
        return grad
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1
    )
    if not _REDUCE_MODULES:  # (a relative import per call costs about as much as the reshape)
        from . import reductions, shape_ops

        _REDUCE_MODULES[:] = (reductions, shape_ops)
    reductions, shape_ops = _REDUCE_MODULES
    if axes:
        grad = reductions.SUM(grad, dims=axes, keepdim=True)
    if tuple(grad.shape) != tuple(shape):
        grad = shape_ops.RESHAPE(grad, shape=tuple(shape))
    return grad


def fit_grad(grad, shape: tuple, dt: dtype):
    """The one place where a VJP's gradient is made to match its operand."""
    grad = reduce_to_shape(grad, shape)
    if grad.dtype != dt:
        from .elementwise import TO_DTYPE

        grad = TO_DTYPE(grad, dtype=dt)
    return grad
