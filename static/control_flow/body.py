"""Tracing a loop's or a branch's function into a closed body (BodyState: values of the
enclosing trace it reads enter as inputs, the loop's consts), and the checks of carries and
branch results against each other (JAX's TypeErrors naming the user's line).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import eager
from eager._grad_mode import enable_grad
from eager._tensor import Tensor
from gmbase import dtypes as _dtypes
from gmops import TensorSpec

from ..errors import TraceError
from ..ir import Graph, Value
from ..tracing import pytree
from ..tracing.state import ACTIVE, TraceState, user_location

# -- tracing a body ----------------------------------------------------------------------------
from ..tracing.tracer import Tracer


# -- tracing a body ----------------------------------------------------------------------------
class BodyState(TraceState):
    """The trace of a control-flow body: a closed graph. A value of an enclosing trace, or a
    tensor captured from outside, becomes an input of the body (`imports`: outer Value ->
    body input), passed to the node as a const operand."""

    def __init__(self, graph: Graph, parent: TraceState) -> None:
        super().__init__(graph=graph)
        self.parent = parent
        self.device = parent.device
        self.imports: dict = {}  # a Value of the parent's graph -> the body's input standing for it

    def import_value(self, outer: Value) -> Value:
        v = self.imports.get(outer)
        if v is None:
            v = Value(f"k{len(self.imports)}", outer.type)
            self.imports[outer] = v
            self.graph.inputs.append(v)
            if outer in self.parent.weak:
                self.weak.add(v)
        return v

    def foreign(self, t: Tracer) -> Value:
        """The body's input for a Tracer of an enclosing trace."""
        st = t._state
        if st is self.parent:
            return self.import_value(t._value)
        parent = self.parent
        if isinstance(parent, BodyState) and not st.finished:
            return self.import_value(parent.foreign(t))
        raise TraceError(f"{user_location()}: a value of a finished trace is used inside a control-flow body (a "
                         "Tracer leaked out of its function); return values from the function instead")

    def capture(self, obj: Any) -> Value:
        return self.import_value(self.parent.capture(obj))

    def constant(self, arr: Any) -> Value:
        return self.import_value(self.parent.constant(arr))

    def is_created(self, obj: Any) -> bool:
        return self.parent.is_created(obj)

    def constant_array(self, o: Any) -> Any:
        return self.parent.constant_array(o) if not isinstance(o, Tracer) or o._state is not self else None


def _spec_of(x: Any) -> TensorSpec:
    if isinstance(x, Tracer):
        return x._value.type
    return TensorSpec(tuple(x.shape), _dtypes.from_numpy(np.dtype(x.dtype)) if not isinstance(x.dtype, _dtypes.dtype)
                      else x.dtype)


def _as_traced(state: TraceState, x: Any) -> Tracer:
    """A leaf given to a traced loop as a Tracer of `state`: Python numbers become tensors
    (float32 / int64 / bool, as eager.tensor makes them), eager tensors and arrays are
    captured."""
    if isinstance(x, Tracer):
        if x._state is state:
            return x
        return Tracer(state, state.foreign(x)) if isinstance(state, BodyState) else x
    if getattr(type(x), "__graphmode_batched__", False):  # under vmap: the op's batching rule runs it
        if isinstance(state, BodyState):  # a body read a batched value from its closure: trace on the batch
            raise _NeedsBatching(x._level, x._size)
        return x
    if isinstance(x, (bool, int, float, np.generic)):
        x = eager.tensor(x)
    if isinstance(x, (list, tuple)):
        x = eager.tensor(x)
    if isinstance(x, Tensor) or isinstance(x, np.ndarray) or hasattr(x, "__cuda_array_interface__"):
        return Tracer(state, state.capture(x))
    raise TypeError(f"{user_location()}: expected tensors (or numbers) in a loop's carry or operands, got "
                    f"{type(x).__name__}")


class RuleTypeError(TypeError):
    """A control-flow function broke its operator's typing rule (JAX's TypeError): a carry whose
    structure or leaf types change, branches of different types, a cond_fun that does not
    return a boolean scalar. The PyTorch spellings raise it as torch's error type as well."""


class _Body:
    """A traced body: its graph (inputs: consts then params), the outer Values of its consts,
    and its output structure."""

    def __init__(self, graph: Graph, consts: list, out_tree: Any, n_out: int) -> None:
        self.graph, self.consts, self.out_tree, self.n_out = graph, consts, out_tree, n_out

    @property
    def out_types(self) -> list:
        return [v.type for v in self.graph.outputs]

    def text(self) -> str:
        return _body_text(self.graph)


def _trace_body(fn: Callable, params: list, build_args: Callable[[list], tuple], name: str) -> _Body:
    """Trace `fn(*build_args(tracers))` into a closed graph whose parameters have the types
    `params` (TensorSpecs)."""
    parent = ACTIVE.stack[-1]
    st = BodyState(Graph(name=name), parent)
    values = [Value(f"a{i}", spec) for i, spec in enumerate(params)]
    st.graph.inputs = list(values)
    tracers = [Tracer(st, v) for v in values]
    ACTIVE.stack.append(st)
    try:
        with enable_grad():
            out = fn(*build_args(tracers))
        leaves, tree = pytree.flatten(out, _is_leaf)
        outs = []
        for leaf in leaves:
            if leaf is None:
                raise TypeError(f"{user_location()}: {_fn_name(fn)} returned None inside its output; control-flow "
                                "bodies return tensors (or numbers)")
            outs.append(_as_traced(st, leaf)._value)
    finally:
        ACTIVE.stack.pop()
        st.finished = True
    consts = list(st.imports)
    g = st.graph
    g.inputs = [st.imports[c] for c in consts] + values
    g.outputs = outs
    _simplify(g)
    return _Body(g, consts, tree, len(outs))


def _is_leaf(x: Any) -> bool:
    return isinstance(x, (Tracer, Tensor, np.ndarray, np.generic, bool, int, float)) or x is None or getattr(
        type(x), "__graphmode_batched__", False)


def _fn_name(fn: Callable) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def _simplify(g: Graph) -> None:
    """DCE, CSE and folding inside a body (the passes the outer graph gets)."""
    from ..passes.manager import SIMPLIFY, run_passes  # noqa: PLC0415

    run_passes(g, list(SIMPLIFY), [], {})


def _body_text(g: Graph) -> str:
    g.renumber()
    return str(g)


# -- the public functions ----------------------------------------------------------------------
def _tracing() -> bool:
    return bool(ACTIVE.stack) and not ACTIVE.stack[-1].finished


def _type_name(spec: TensorSpec) -> str:
    return f"{spec.dtype.name if hasattr(spec.dtype, 'name') else spec.dtype}[{','.join(map(str, spec.shape))}]"


def _keystr(tree: Any, k: int, root: str) -> str:
    """A JAX-style path of leaf k of `tree` (`carry[1]`, `carry['h']`)."""
    paths: list = []

    def walk(s: Any, prefix: str) -> None:
        kind = s[0]
        if kind == "leaf":
            paths.append(prefix)
        elif kind == "none":
            return
        elif kind == "dict":
            for key, sub in zip(s[1], s[2]):
                walk(sub, f"{prefix}[{key!r}]")
        else:
            for i, sub in enumerate(s[-1]):
                walk(sub, f"{prefix}[{i}]")

    try:
        walk(tree, root)
    except (TypeError, IndexError):
        return f"{root} leaf {k}"
    return paths[k] if k < len(paths) else f"{root} leaf {k}"


def _check_carry(what: str, loc: str, in_tree: Any, in_specs: list, out_tree: Any, out_specs: list,
                 name: str = "carry") -> None:
    """JAX's carry check: same pytree structure, and each leaf's shape and dtype."""
    if in_tree != out_tree or len(in_specs) != len(out_specs):
        raise RuleTypeError(f"{loc}: {what} function carry input and carry output must have the same pytree "
                            f"structure, but they differ:\n  the input carry {name} is a {_tree_str(in_tree)} but "
                            f"the corresponding output carry is a {_tree_str(out_tree)}")
    problems = []
    for k, (a, b) in enumerate(zip(in_specs, out_specs)):
        if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
            why = ("the shapes do not match" if tuple(a.shape) != tuple(b.shape) else "the dtypes do not match")
            problems.append(f"  * the input carry component {_keystr(in_tree, k, name)} has type {_type_name(a)} but "
                            f"the corresponding output carry component has type {_type_name(b)}, so {why}")
    if problems:
        raise RuleTypeError(f"{loc}: {what} function carry input and carry output must have equal types (e.g. "
                            "shapes and dtypes of arrays), but they differ:\n" + "\n".join(problems) + "\n\nRevise "
                            "the function so that all output types match the corresponding input types.")


def _leaf_spec(x: Any) -> TensorSpec:
    """A carry leaf's type as the body sees it (a batched value's logical one; a Python number
    as eager.tensor makes it)."""
    if isinstance(x, (bool, int, float, np.generic, list, tuple)):
        x = eager.tensor(x)
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return _spec_of(x)
    raise TypeError(f"{user_location()}: expected tensors (or numbers) in a loop's carry, got {type(x).__name__}")


def check_step(what: str, loc: str, before: Any, after: Any) -> None:
    """One step of a loop run in Python (eager mode, or unrolled into a trace) checked as the
    traced loop checks its body: the carry keeps its structure and each leaf its shape and
    dtype (JAX's TypeError naming the user's line). A Python number in the carry is weakly
    typed: it may come back as a tensor of another dtype."""
    b_leaves, b_tree = _flatten(before)
    a_leaves, a_tree = _flatten(after)
    b_specs, a_specs = [_leaf_spec(v) for v in b_leaves], [_leaf_spec(v) for v in a_leaves]
    if b_tree == a_tree and len(b_specs) == len(a_specs):
        b_specs = [a if isinstance(v, (int, float)) and not isinstance(v, bool) and tuple(b.shape) == tuple(a.shape)
                   else b for v, b, a in zip(b_leaves, b_specs, a_specs)]
    _check_carry(what, loc, b_tree, b_specs, a_tree, a_specs)


def _signature(x: Any) -> Any:
    """A carry's structure and leaf types in a form cheap to compare (the fast path of
    StepChecker: a Python loop's steps usually keep their carry's types)."""
    if isinstance(x, Tensor):
        return x.shape, x.dtype
    if isinstance(x, (tuple, list)):
        return type(x), tuple(_signature(v) for v in x)
    if isinstance(x, dict):
        return tuple(x), tuple(_signature(v) for v in x.values())
    return type(x), getattr(x, "shape", None), getattr(x, "dtype", None)


class StepChecker:
    """check_step for every step of one Python loop, at the cost of comparing signatures
    while the carry keeps the types of the step before (the full check runs on the first
    step and whenever they change, so the error is the same)."""

    def __init__(self, what: str, loc: str) -> None:
        self.what, self.loc, self.seen = what, loc, None

    def __call__(self, before: Any, after: Any) -> None:
        sig = _signature(after)
        if self.seen is not None and sig == self.seen:
            return
        check_step(self.what, self.loc, before, after)
        self.seen = sig


def _tree_str(tree: Any) -> str:
    from ..autodiff.vjp_jvp import _tree_str as show  # noqa: PLC0415

    try:
        return show(tree)
    except (TypeError, IndexError, KeyError):
        return repr(tree)


def _flatten(x: Any) -> tuple[list, Any]:
    return pytree.flatten(x, _is_leaf)


def _weak_fix(leaves: list, specs: list, out_specs: list) -> list | None:
    """Carries given as Python numbers are weakly typed (JAX): where the body returns another
    dtype for one, the carry takes the body's dtype (None when nothing changes)."""
    changed = False
    new = list(specs)
    for k, (leaf, a, b) in enumerate(zip(leaves, specs, out_specs)):
        if isinstance(leaf, (int, float)) and not isinstance(leaf, bool) and a.dtype != b.dtype \
                and tuple(a.shape) == tuple(b.shape):
            new[k] = TensorSpec(tuple(a.shape), b.dtype)
            changed = True
    return new if changed else None


def _cast_leaf(state: TraceState, leaf: Any, spec: TensorSpec) -> Tracer:
    t = _as_traced(state, leaf)
    return t if t.dtype == spec.dtype else t.to(spec.dtype)


class _NeedsBatching(Exception):
    """A body traced as unbatched produced a value batched by an enclosing vmap (it read one
    from its closure): the loop is traced again on the batch."""

    def __init__(self, level: int, size: int) -> None:
        super().__init__(level)
        self.level, self.size = level, size
