"""Structured control flow: `cond`, `switch`, `while_loop`, `fori_loop` and `scan` with JAX's
signatures and semantics (jax.lax), for both modes.

Outside a trace they run the Python loop on whatever they are given (eager tensors, arrays),
so code works both ways. Inside a trace each traces its function(s) once into a closed
body (its own `TraceState`, a `BodyState`: values of the enclosing trace that the body
reads, tensors it captures, enter as extra inputs, the loop's "consts") and records one
`scan` / `while_loop` / `cond` node (eager/ops/control_flow.py) holding the body as IR text.
A 1000-step loop is one node: tracing and compiling it costs the same as one step.

The bodies are simplified (DCE, CSE, folding) when they are made; at run time each is
compiled once by the graph's code generator with fusion inside it (`runner`), and the
node's forward loops in Python around it. Reverse mode: a scan's VJP is a scan in the
other direction over the saved carries whose body is the body's VJP (`scan_vjp_body`,
built here by static's autodiff on the body); cond's is a cond of the branches' VJPs
(`cond_vjp_branch`). Forward mode (static.jvp) comes from these through the double-VJP
construction; while_loop has neither (its trip count is data), as JAX's has no VJP.

Under vmap each has a batching rule (eager/ops/control_flow.py) with JAX's semantics: a
scan runs once over the batch, a cond with a batched predicate computes every branch and
selects per example, a while_loop runs while any example's condition holds. A body that
reads a batched value from its closure is traced on the batch (`_scan_batched`,
`_while_batched`: per-example gradients of an RNN).

Errors follow JAX's: mismatched carry or branch types raise TypeError naming the user's
line, the component and both types."""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import eager
from eager import _dtypes
from eager._grad_mode import enable_grad
from eager._tensor import Tensor
from eager.ops import REGISTRY, TensorSpec
from eager.ops.control_flow import COND, SCAN, WHILE_LOOP, parsed

from . import pytree
from .errors import TraceError
from .ir import Graph, Value
from .tracer import ACTIVE, Tracer, TraceState, user_location

__all__ = ["cond", "fori_loop", "scan", "switch", "while_loop"]


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
    from .passes.manager import SIMPLIFY, run_passes  # noqa: PLC0415

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
        raise TypeError(f"{loc}: {what} function carry input and carry output must have the same pytree structure, "
                        f"but they differ:\n  the input carry {name} is a {_tree_str(in_tree)} but the corresponding "
                        f"output carry is a {_tree_str(out_tree)}")
    problems = []
    for k, (a, b) in enumerate(zip(in_specs, out_specs)):
        if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
            why = ("the shapes do not match" if tuple(a.shape) != tuple(b.shape) else "the dtypes do not match")
            problems.append(f"  * the input carry component {_keystr(in_tree, k, name)} has type {_type_name(a)} but "
                            f"the corresponding output carry component has type {_type_name(b)}, so {why}")
    if problems:
        raise TypeError(f"{loc}: {what} function carry input and carry output must have equal types (e.g. shapes "
                        "and dtypes of arrays), but they differ:\n" + "\n".join(problems))


def _tree_str(tree: Any) -> str:
    from .vjp_jvp import _tree_str as show  # noqa: PLC0415

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


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1) -> tuple[Any, Any]:
    """jax.lax.scan: `carry, y = f(carry, x)` over the leading axis of `xs` (pytrees), returning
    the final carry and the ys stacked. `length` is needed when xs is None; `reverse` runs
    from the end (ys keep their index order). `unroll` is accepted for compatibility."""
    x_leaves, x_tree = _flatten(xs)
    lengths = {int(x.shape[0]) for x in x_leaves if hasattr(x, "shape") and len(x.shape) > 0}
    if any(not hasattr(x, "shape") or len(x.shape) == 0 for x in x_leaves):
        raise ValueError(f"{user_location()}: scan got value with no leading axis to scan over: xs leaves must be "
                         "arrays with at least one dimension")
    if length is not None:
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)):
            raise TypeError(f"scan: length must be an int, got {type(length).__name__}")
        lengths.add(int(length))
    if len(lengths) > 1:
        raise ValueError(f"{user_location()}: scan got values with different leading axis sizes: "
                         f"{', '.join(str(n) for n in sorted(lengths))}" + (f" (length={length})" if length else ""))
    if not lengths:
        raise ValueError(f"{user_location()}: scan got no values to scan over and `length` not provided")
    n = lengths.pop()
    if not _tracing():
        return _scan_python(f, init, xs, x_leaves, x_tree, n, reverse)
    loc = user_location()
    level = _batch_level(_flatten(init)[0] + x_leaves)
    if level is None:
        try:
            return _scan_traced(f, init, xs, x_leaves, x_tree, n, reverse, loc)
        except _NeedsBatching as exc:  # the body reads a batched value from its closure
            level = (exc.level, exc.size)
    return _scan_batched(f, init, xs, x_leaves, x_tree, n, reverse, loc, level)


class _NeedsBatching(Exception):
    """A body traced as unbatched produced a value batched by an enclosing vmap (it read one
    from its closure): the loop is traced again on the batch."""

    def __init__(self, level: int, size: int) -> None:
        super().__init__(level)
        self.level, self.size = level, size


def _batch_level(leaves: list) -> tuple | None:
    """(level, size) of the innermost vmap batching one of `leaves`, None when none is."""
    found = None
    for leaf in leaves:
        if getattr(type(leaf), "__graphmode_batched__", False) and (found is None or leaf._level > found[0]):
            found = (leaf._level, leaf._size)
    return found


def _scan_batched(f: Callable, init: Any, xs: Any, x_leaves: list, x_tree: Any, n: int, reverse: bool, loc: str,
                  level: tuple) -> tuple:
    """scan under vmap, traced on the batch: carries and xs enter with their batch axis (xs
    behind the scanned one), the body's values are batched values of the same vmap level (so
    values it reads from its closure, batched or not, just work), and its results are
    batched (broadcast where they do not depend on the batch)."""
    from eager import _vmap  # noqa: PLC0415

    lvl, size = level
    state = ACTIVE.stack[-1]
    init_leaves, init_tree = _flatten(init)

    def lift(x: Any) -> Any:
        if isinstance(x, (bool, int, float, np.generic)):
            x = eager.tensor(x)
        return _as_traced(state, _vmap.per_example(x, lvl, size)._value)

    init_u = [lift(leaf) for leaf in init_leaves]
    xs_u = [lift(x).movedim(0, 1) for x in x_leaves]
    specs = [_spec_of(t) for t in init_u]
    x_specs = [TensorSpec(tuple(t.shape[1:]), t.dtype) for t in xs_u]
    holder: dict = {}

    def unbatch(st: TraceState, leaf: Any) -> Any:
        if getattr(type(leaf), "__graphmode_batched__", False) and leaf._level == lvl:
            return leaf._value
        return _vmap._broadcast(_as_traced(st, leaf), size)

    def body_fn(*ts: Any) -> Any:
        st = ACTIVE.stack[-1]
        carry = pytree.unflatten(init_tree, [_vmap.Batched(t, lvl, size) for t in ts[:len(specs)]])
        x = (pytree.unflatten(x_tree, [_vmap.Batched(t, lvl, size) for t in ts[len(specs):]])
             if xs is not None else None)
        res = f(carry, x)
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(f"{loc}: scan body output must be a pair (carry, y), got {type(res).__name__}")
        c_leaves, c_tree = _flatten(res[0])
        y_leaves, y_tree = _flatten(res[1])
        holder.update(c_tree=c_tree, n_c=len(c_leaves), y_tree=y_tree)
        return [unbatch(st, leaf) for leaf in list(c_leaves) + list(y_leaves)]

    body = _trace_body(body_fn, specs + x_specs, lambda ts: tuple(ts), "scan_body")
    out_specs = [v.type for v in body.graph.outputs[:holder["n_c"]]]
    logical = [TensorSpec(tuple(s.shape[1:]), s.dtype) for s in specs]
    _check_carry("scan body", loc, init_tree, logical, holder["c_tree"],
                 [TensorSpec(tuple(s.shape[1:]), s.dtype) for s in out_specs])
    consts = [Tracer(state, v) for v in body.consts]
    outs = list(SCAN(*consts, *init_u, *xs_u, body=body.text(), length=n, reverse=bool(reverse),
                     n_consts=len(consts), n_carry=len(specs)))
    carry = pytree.unflatten(init_tree, [_vmap.Batched(o, lvl, size) for o in outs[:len(specs)]])
    ys = pytree.unflatten(holder["y_tree"], [_vmap.Batched(o.movedim(1, 0), lvl, size) for o in outs[len(specs):]])
    return carry, ys


def _scan_traced(f: Callable, init: Any, xs: Any, x_leaves: list, x_tree: Any, n: int, reverse: bool,
                 loc: str) -> tuple:
    state = ACTIVE.stack[-1]
    init_leaves, init_tree = _flatten(init)
    init_t = [_as_traced(state, leaf) for leaf in init_leaves]
    xs_t = [_as_traced(state, x) for x in x_leaves]
    specs = [_spec_of(t) for t in init_t]
    x_specs = [TensorSpec(tuple(t.shape[1:]), t.dtype) for t in xs_t]

    def trace(carry_specs: list) -> tuple[_Body, Any]:
        holder: dict = {}

        def body_fn(*ts: Any) -> Any:
            carry = pytree.unflatten(init_tree, list(ts[:len(carry_specs)]))
            x = pytree.unflatten(x_tree, list(ts[len(carry_specs):])) if xs is not None else None
            res = f(carry, x)
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise TypeError(f"{loc}: scan body output must be a pair (carry, y), got "
                                f"{type(res).__name__}")
            c_leaves, c_tree = _flatten(res[0])
            y_leaves, y_tree = _flatten(res[1])
            holder.update(c_tree=c_tree, n_c=len(c_leaves), y_tree=y_tree)
            return list(c_leaves) + list(y_leaves)

        body = _trace_body(body_fn, carry_specs + x_specs, lambda ts: tuple(ts), "scan_body")
        return body, holder

    body, info = trace(specs)
    out_specs = [v.type for v in body.graph.outputs[:info["n_c"]]]
    if info["c_tree"] == init_tree and len(out_specs) == len(specs):
        fixed = _weak_fix(init_leaves, specs, out_specs)
        if fixed is not None:
            specs = fixed
            body, info = trace(specs)
            out_specs = [v.type for v in body.graph.outputs[:info["n_c"]]]
    _check_carry("scan body", loc, init_tree, specs, info["c_tree"], out_specs)
    init_t = [_cast_leaf(state, leaf, s) for leaf, s in zip(init_leaves, specs)]
    consts = [Tracer(state, v) for v in body.consts]
    outs = SCAN(*consts, *init_t, *xs_t, body=body.text(), length=n, reverse=bool(reverse), n_consts=len(consts),
                n_carry=len(specs))
    outs = list(outs)
    carry = pytree.unflatten(init_tree, outs[:len(specs)])
    ys = pytree.unflatten(info["y_tree"], outs[len(specs):])
    return carry, ys


def _stack(items: list) -> Any:
    first = items[0]
    if isinstance(first, (Tensor, Tracer)):
        return eager.stack(items)
    return np.stack([np.asarray(i) for i in items])


def _scan_python(f: Callable, init: Any, xs: Any, x_leaves: list, x_tree: Any, n: int, reverse: bool) -> tuple:
    carry = init
    ys: list = [None] * n
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        x = pytree.unflatten(x_tree, [v[t] for v in x_leaves]) if xs is not None else None
        carry, ys[t] = f(carry, x)
    if n == 0:
        return carry, None
    y_leaves = [_flatten(y)[0] for y in ys]
    y_tree = _flatten(ys[0])[1]
    stacked = [_stack([y_leaves[t][k] if not isinstance(y_leaves[t][k], (int, float)) else
                       eager.tensor(y_leaves[t][k]) for t in range(n)]) for k in range(len(y_leaves[0]))]
    return carry, pytree.unflatten(y_tree, stacked)


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *, unroll: int | bool | None = None) -> Any:
    """jax.lax.fori_loop: `val = body_fun(i, val)` for i in [lower, upper). With Python int
    bounds it is a scan (reverse-differentiable, compiled in time independent of the trip
    count); with traced bounds a while_loop, as in JAX."""
    concrete = all(isinstance(b, (int, np.integer)) and not isinstance(b, bool) for b in (lower, upper))
    if not _tracing():
        lo, hi = int(lower), int(upper)
        val = init_val
        for i in range(lo, hi):
            val = body_fun(i, val)
        return val
    if concrete:
        lo, hi = int(lower), int(upper)
        if hi <= lo:
            return init_val

        def step(carry: Any, _: Any) -> tuple:
            i, val = carry
            return (i + 1, body_fun(i, val)), None

        state = ACTIVE.stack[-1]
        i0 = Tracer(state, state.constant(np.asarray(lo, dtype=np.int64)))
        (_, val), _ = scan(step, (i0, init_val), None, length=hi - lo)
        return val

    def cond_fun(carry: Any) -> Any:
        return carry[0] < carry[1]

    def body(carry: Any) -> tuple:
        i, hi_, val = carry
        return i + 1, hi_, body_fun(i, val)

    _, _, val = while_loop(cond_fun, body, (lower, upper, init_val))
    return val


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """jax.lax.while_loop: `while cond_fun(val): val = body_fun(val)`. Not reverse-mode
    differentiable (as in JAX)."""
    if not _tracing():
        val = init_val
        while True:
            p = cond_fun(val)
            if getattr(type(p), "__graphmode_batched__", False):  # under eager vmap: JAX's rule
                if not bool((p._value.to(eager.int64).sum() > 0).item()):
                    return val
                new_leaves, new_tree = _flatten(body_fun(val))
                old_leaves, _ = _flatten(val)
                val = pytree.unflatten(new_tree, [eager.where(p, n, c) for n, c in zip(new_leaves, old_leaves)])
                continue
            if not bool(_truth(p)):
                return val
            val = body_fun(val)
    loc = user_location()
    level = _batch_level(_flatten(init_val)[0])
    if level is None:
        try:
            return _while_traced(cond_fun, body_fun, init_val, loc)
        except _NeedsBatching as exc:  # a function reads a batched value from its closure
            level = (exc.level, exc.size)
    return _while_batched(cond_fun, body_fun, init_val, loc, level)


def _while_batched(cond_fun: Callable, body_fun: Callable, init_val: Any, loc: str, level: tuple) -> Any:
    """while_loop under vmap, traced on the batch (as _scan_batched), with JAX's rule: the loop
    runs while any example's condition holds, and an example whose condition fails keeps its
    carry (the body's results are selected per example)."""
    from eager import _vmap  # noqa: PLC0415

    lvl, size = level
    state = ACTIVE.stack[-1]
    leaves, tree = _flatten(init_val)

    def lift(x: Any) -> Any:
        if isinstance(x, (bool, int, float, np.generic)):
            x = eager.tensor(x)
        return _as_traced(state, _vmap.per_example(x, lvl, size)._value)

    init_u = [lift(leaf) for leaf in leaves]
    specs = [_spec_of(t) for t in init_u]
    holder: dict = {}

    def unbatch(st: TraceState, leaf: Any) -> Any:
        if getattr(type(leaf), "__graphmode_batched__", False) and leaf._level == lvl:
            return leaf._value
        return _vmap._broadcast(_as_traced(st, leaf), size)

    def wrapped(ts: tuple) -> Any:
        return pytree.unflatten(tree, [_vmap.Batched(t, lvl, size) for t in ts])

    def still(st: TraceState, ts: tuple) -> Any:
        p = unbatch(st, cond_fun(wrapped(ts)))
        if tuple(p.shape) != (size,) or p.dtype != _dtypes.bool_:
            raise TypeError(f"{loc}: cond_fun must return a boolean scalar, but got output type(s) "
                            f"[{_type_name(TensorSpec(tuple(p.shape[1:]), p.dtype))}].")
        return p

    def cond_wrap(*ts: Any) -> Any:
        return still(ACTIVE.stack[-1], ts).to(eager.int64).sum() > 0

    def body_wrap(*ts: Any) -> Any:
        st = ACTIVE.stack[-1]
        p = still(st, ts)
        out = body_fun(wrapped(ts))
        o_leaves, o_tree = _flatten(out)
        holder["tree"] = o_tree
        new = [unbatch(st, leaf) for leaf in o_leaves]
        if o_tree != tree or len(new) != len(ts):
            return new
        return [eager.where(p.reshape((size,) + (1,) * (len(n.shape) - 1)), n, c) if tuple(n.shape) == tuple(c.shape)
                else n for n, c in zip(new, ts)]

    body = _trace_body(body_wrap, specs, lambda ts: tuple(ts), "while_body")
    test = _trace_body(cond_wrap, specs, lambda ts: tuple(ts), "while_cond")
    logical = [TensorSpec(tuple(s.shape[1:]), s.dtype) for s in specs]
    _check_carry("while_loop body", loc, tree, logical, holder["tree"],
                 [TensorSpec(tuple(t.shape[1:]), t.dtype) for t in body.out_types])
    consts = list(dict.fromkeys(list(body.consts) + list(test.consts)))
    body_g, test_g = _with_consts(body, consts), _with_consts(test, consts)
    outs = WHILE_LOOP(*[Tracer(state, v) for v in consts], *init_u, cond=_body_text(test_g), body=_body_text(body_g),
                      n_consts=len(consts))
    return pytree.unflatten(tree, [_vmap.Batched(o, lvl, size) for o in outs])


def _while_traced(cond_fun: Callable, body_fun: Callable, init_val: Any, loc: str) -> Any:
    state = ACTIVE.stack[-1]
    leaves, tree = _flatten(init_val)
    specs = [_spec_of(_as_traced(state, leaf)) for leaf in leaves]

    def trace(specs: list) -> tuple[_Body, _Body, Any]:
        holder: dict = {}

        def body_wrap(*ts: Any) -> Any:
            out = body_fun(pytree.unflatten(tree, list(ts)))
            o_leaves, o_tree = _flatten(out)
            holder["tree"] = o_tree
            return o_leaves

        def cond_wrap(*ts: Any) -> Any:
            return cond_fun(pytree.unflatten(tree, list(ts)))

        b = _trace_body(body_wrap, specs, lambda ts: tuple(ts), "while_body")
        c = _trace_body(cond_wrap, specs, lambda ts: tuple(ts), "while_cond")
        return b, c, holder["tree"]

    body, test, out_tree = trace(specs)
    out_specs = body.out_types
    if out_tree == tree and len(out_specs) == len(specs):
        fixed = _weak_fix(leaves, specs, out_specs)
        if fixed is not None:
            specs = fixed
            body, test, out_tree = trace(specs)
            out_specs = body.out_types
    _check_carry("while_loop body", loc, tree, specs, out_tree, out_specs)
    if (len(test.graph.outputs) != 1 or tuple(test.out_types[0].shape) != ()
            or test.out_types[0].dtype != _dtypes.bool_):  # (JAX takes only a boolean scalar)
        got = ", ".join(_type_name(t) for t in test.out_types)
        raise TypeError(f"{loc}: cond_fun must return a boolean scalar, but got output type(s) [{got}].")
    # both bodies read the same consts: the union, each body's inputs reordered to it
    consts = list(dict.fromkeys(list(body.consts) + list(test.consts)))
    body_g = _with_consts(body, consts)
    test_g = _with_consts(test, consts)
    init_t = [_cast_leaf(state, leaf, s) for leaf, s in zip(leaves, specs)]
    outs = WHILE_LOOP(*[Tracer(state, v) for v in consts], *init_t, cond=_body_text(test_g), body=_body_text(body_g),
                      n_consts=len(consts))
    return pytree.unflatten(tree, list(outs))


def _truth(x: Any) -> Any:
    return x.item() if hasattr(x, "item") else x


def _with_consts(body: _Body, consts: list) -> Graph:
    """The body's graph taking all of `consts` (in order) before its parameters."""
    g = body.graph
    n_own = len(body.consts)
    own = dict(zip(body.consts, g.inputs[:n_own]))
    params = g.inputs[n_own:]
    new_inputs = []
    for k, c in enumerate(consts):
        v = own.get(c)
        if v is None:
            v = Value(f"u{k}", c.type)
        new_inputs.append(v)
    g.inputs = new_inputs + list(params)
    return g


def switch(index: Any, branches: Sequence[Callable], *operands: Any) -> Any:
    """jax.lax.switch: `branches[index](*operands)`, the index clamped into range."""
    branches = list(branches)
    if not branches:
        raise ValueError("Empty branch sequence")
    if getattr(type(index), "__graphmode_batched__", False):
        return _select(index, [b(*operands) for b in branches], "switch")
    if not _tracing():
        i = int(_truth(index))
        return branches[min(max(i, 0), len(branches) - 1)](*operands)
    return _cond_traced(index, branches, operands, "switch")


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any, operand: Any = None) -> Any:
    """jax.lax.cond: `true_fun(*operands) if pred else false_fun(*operands)`; traced, only the
    branch taken runs, and both branches must return identical types."""
    if operand is not None:
        operands = (operand,)
    if getattr(type(pred), "__graphmode_batched__", False):  # a batched predicate: both, then select (JAX)
        return _select(pred, [false_fun(*operands), true_fun(*operands)], "cond")
    if not _tracing():
        return true_fun(*operands) if bool(_truth(pred)) else false_fun(*operands)
    return _cond_traced(pred, [false_fun, true_fun], operands, "cond")


def _select(index: Any, results: list, kind: str) -> Any:
    """Per example, the result of branch `index` (every branch computed): what cond and switch
    become under vmap with a batched predicate."""
    trees = [_flatten(r) for r in results]
    if any(t[1] != trees[0][1] for t in trees):
        raise TypeError(f"{user_location()}: {kind} branch outputs must have the same pytree structure")
    n = len(results)
    if kind == "cond":
        index = index != 0 if index.dtype != _dtypes.bool_ else index
    else:
        index = eager.clamp(index, 0, n - 1)
    out = []
    for k in range(len(trees[0][0])):
        chosen = trees[0][0][k]
        for b in range(1, n):
            take = index if (kind == "cond" and n == 2) else index == b
            chosen = eager.where(take, trees[b][0][k], chosen)
        out.append(chosen)
    return pytree.unflatten(trees[0][1], out)


def _cond_traced(index: Any, branches: list, operands: tuple, kind: str) -> Any:
    loc = user_location()
    state = ACTIVE.stack[-1]
    idx = _as_traced(state, index)
    if idx.shape != ():
        raise TypeError(f"{loc}: Pred must be a scalar, got {_type_name(_spec_of(idx))}" if kind == "cond" else
                        f"{loc}: Branch index must be scalar, got {_type_name(_spec_of(idx))}")
    if idx.dtype.is_floating_point:
        raise TypeError(f"{loc}: Pred type must be either boolean or number, got {_type_name(_spec_of(idx))}"
                        if kind == "cond" else f"{loc}: Index type must be an integer, got {_type_name(_spec_of(idx))}")
    leaves, tree = _flatten(operands)
    ops_t = [_as_traced(state, leaf) for leaf in leaves]
    specs = [_spec_of(t) for t in ops_t]
    traced = []
    trees = []
    for fn in branches:
        holder: dict = {}

        def wrap(*ts: Any, fn: Callable = fn, holder: dict = holder) -> Any:
            out = fn(*pytree.unflatten(tree, list(ts)))
            o_leaves, o_tree = _flatten(out)
            holder["tree"] = o_tree
            return o_leaves

        try:
            traced.append(_trace_body(wrap, specs, lambda ts: tuple(ts), f"{kind}_branch"))
        except _NeedsBatching:
            raise TypeError(f"{loc}: vmap of a {kind} whose branches read a batched value from their closure is "
                            "not supported; pass the value in as an operand") from None
        trees.append(holder["tree"])
    names = ["false_fun", "true_fun"] if kind == "cond" else [f"branch {k}" for k in range(len(branches))]
    for k in range(1, len(traced)):
        a, b = [_type_name(t) for t in traced[0].out_types], [_type_name(t) for t in traced[k].out_types]
        if trees[k] != trees[0]:
            raise TypeError(f"{loc}: {kind} branch outputs must have the same pytree structure, got "
                            f"{_tree_str(trees[0])} for {names[0]} and {_tree_str(trees[k])} for {names[k]}")
        if a != b:
            raise TypeError(f"{loc}: {names[0]} and {names[k]} output must have identical types, got\n"
                            f"{names[0]}: ({', '.join(a)})\n{names[k]}: ({', '.join(b)})")
    if not traced[0].out_types:
        return pytree.unflatten(trees[0], [])
    consts = list(dict.fromkeys(c for b in traced for c in b.consts))
    texts = [_body_text(_with_consts(b, consts)) for b in traced]
    if idx.dtype != _dtypes.bool_ and kind == "cond":
        idx = idx != 0
    outs = COND(idx, *[Tracer(state, v) for v in consts], *ops_t, branches=texts)
    return pytree.unflatten(trees[0], list(outs))


# -- running bodies ----------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _compiled_runner(text: str, backend: str) -> Callable[[list], list]:
    """The body optimized as a compiled graph is (simplify, fusion, memory plan) and compiled
    by `backend`'s code generator, once per body text and backend."""
    from .executable import build_executable, row_regions  # noqa: PLC0415
    from .passes import run_pipeline  # noqa: PLC0415

    g = run_pipeline(parsed(text), [], row_regions=row_regions(backend), backend=backend)
    try:
        exe = build_executable(g, backend)
    except Exception:  # noqa: BLE001 - no code generator here: the reference interpreter runs it
        from .interpreter import run_graph  # noqa: PLC0415

        src = parsed(text)
        return lambda arrays: run_graph(src, arrays, np)
    return exe.run


def runner(text: str, xp: Any, backend: str = "numpy") -> Callable[[list], list]:
    """How a node's forward runs one of its bodies on arrays of `xp`: NumPy arrays through the
    body's code from `backend`'s generator (the outer graph's: "numpy", or "native" for the
    native driver, whose loop then calls the body's native kernels), CuPy arrays through the
    body's CuPy module, other array modules (the tests' host stand-in for CuPy) through the
    reference interpreter on `xp`."""
    if xp is np and backend != "interpret":
        return _compiled_runner(text, backend if backend in ("numpy", "native") else "numpy")
    if getattr(xp, "__name__", "") == "cupy":  # the body's own CuPy module (its kernels fused)
        return _compiled_runner(text, "cupy")
    from .interpreter import run_graph  # noqa: PLC0415

    g = parsed(text)
    return lambda arrays: run_graph(g, arrays, xp)


# -- VJP bodies --------------------------------------------------------------------------------
def _replay(g: Graph, args: list, env: dict | None = None) -> list:
    """Run graph `g`'s nodes on Tracers of the active trace (recording them again); `env`, when
    given, collects every value of g -> what it became."""
    env = {} if env is None else env
    env.update(zip(g.inputs, args))
    for node in g.nodes:
        operands = [env[v] if isinstance(v, Value) else v for v in node.inputs]
        res = REGISTRY[node.op](*operands, **node.attrs)
        results = list(res) if isinstance(res, tuple) else [res]
        for o, r in zip(node.outputs, results):
            env[o] = r
    return [env[v] for v in g.outputs]


def _residual_values(g: Graph) -> list:
    """The values of a scan body its backward reads rather than computes again: the results of
    its linear-algebra ops (matmul, einsum: the costly steps), in program order."""
    return [o for node in g.nodes if REGISTRY[node.op].kind == "linalg" for o in node.outputs
            if o.type.dtype.is_floating_point]


@functools.lru_cache(maxsize=256)
def residual_body(text: str) -> tuple[str, int]:
    """The body with its residuals (`_residual_values`) as extra stacked results, and how many:
    the forward a scan's VJP runs, saving them for the backward."""
    g = parse_body(text)
    extra = _residual_values(g)
    if not extra:
        return text, 0
    g.outputs = list(g.outputs) + extra
    return _body_text(g), len(extra)


@functools.lru_cache(maxsize=256)
def strip_residuals(text: str, n: int) -> str:
    """`residual_body`'s inverse: the body without its last n results."""
    if not n:
        return text
    g = parse_body(text)
    g.outputs = list(g.outputs)[:-n]
    return _body_text(g)


def _new_body(params: list, name: str) -> tuple[TraceState, list]:
    st = TraceState(graph=Graph(name=name))
    values = [Value(f"a{i}", t) for i, t in enumerate(params)]
    st.graph.inputs = list(values)
    return st, [Tracer(st, v) for v in values]


def _finish(st: TraceState, outs: list) -> str:
    st.graph.outputs = [o._value for o in outs]
    st.finished = True
    _simplify(st.graph)
    return _body_text(st.graph)


@functools.lru_cache(maxsize=256)
def scan_vjp_body(text: str, n_c: int, n_k: int, with_hist: bool = False, residuals: bool = False) -> str:
    """The body of a scan's backward: (consts, acc, ct_carry, carry_t, x_t, ct_y_t) ->
    (acc + d consts, d carry_t, d x_t), from static's autodiff on the body. `with_hist`: the
    scan's saved carries are results too, and their cotangents (ct_h_t, after ct_y_t) add to
    the carry's. `residuals`: the step's residuals (`residual_body`) come last, and the
    backward reads them instead of computing them again."""
    from .autodiff import vjp  # noqa: PLC0415

    g = parsed(text)
    types = [v.type for v in g.inputs]
    consts_t, carry_t, x_t = types[:n_c], types[n_c:n_c + n_k], types[n_c + n_k:]
    y_t = [v.type for v in g.outputs[n_k:]]
    saved = _residual_values(g) if residuals else []
    params = (consts_t + consts_t + carry_t + carry_t + x_t + y_t + (carry_t if with_hist else [])
              + [v.type for v in saved])
    st, ts = _new_body(params, "scan_vjp")
    n_saved = len(saved)
    res_t = ts[len(ts) - n_saved:] if n_saved else []
    ts = ts[:len(ts) - n_saved] if n_saved else ts
    n_x = len(x_t)
    consts, acc = ts[:n_c], ts[n_c:2 * n_c]
    ct_carry = ts[2 * n_c:2 * n_c + n_k]
    carry = ts[2 * n_c + n_k:2 * n_c + 2 * n_k]
    xs = ts[2 * n_c + 2 * n_k:2 * n_c + 2 * n_k + n_x]
    ct_y = ts[2 * n_c + 2 * n_k + n_x:2 * n_c + 2 * n_k + n_x + len(y_t)]
    ct_h = ts[2 * n_c + 2 * n_k + n_x + len(y_t):]
    ACTIVE.stack.append(st)
    env: dict = {}
    try:
        with enable_grad():
            outs = _replay(g, consts + carry + xs, env)
            wrt = [t._value for t in consts + carry + xs]
            grads = vjp(st, [o._value for o in outs], list(ct_carry) + list(ct_y), wrt)
            new_acc = [a + d if a.dtype.is_floating_point else a for a, d in zip(acc, grads[:n_c])]
            d_carry = [d + h for d, h in zip(grads[n_c:n_c + n_k], ct_h)] if with_hist else grads[n_c:n_c + n_k]
            result = new_acc + list(d_carry) + list(grads[n_c + n_k:])
    finally:
        ACTIVE.stack.pop()
    if saved:  # read the saved residuals: what computed them again is then dead code
        result_values = [r._value for r in result]
        mapping = {env[v]._value: r._value for v, r in zip(saved, res_t)}
        st.graph.outputs = result_values
        st.graph.replace_all_uses_with(mapping)
        result = [Tracer(st, v) for v in st.graph.outputs]
    return _finish(st, result)


@functools.lru_cache(maxsize=256)
def cond_vjp_branch(text: str) -> str:
    """A branch's VJP: (operands, output cotangents) -> one cotangent per operand."""
    from .autodiff import vjp  # noqa: PLC0415

    g = parsed(text)
    params = [v.type for v in g.inputs] + [v.type for v in g.outputs]
    st, ts = _new_body(params, "cond_vjp")
    n = len(g.inputs)
    ACTIVE.stack.append(st)
    try:
        with enable_grad():
            outs = _replay(g, ts[:n])
            grads = vjp(st, [o._value for o in outs], ts[n:], [t._value for t in ts[:n]])
    finally:
        ACTIVE.stack.pop()
    return _finish(st, list(grads))



# -- batching (vmap over a loop or a choice) -------------------------------------------------------
@functools.lru_cache(maxsize=256)
def batched_body(text: str, mask: tuple, size: int) -> str:
    """The body run on a batch: parameters marked in `mask` carry a leading batch axis of
    `size`, the body's ops run through their batching rules (eager._vmap), and every result
    is batched (one that does not depend on the batch is broadcast)."""
    from eager import _vmap  # noqa: PLC0415

    g = parsed(text)
    params = [TensorSpec((size,) + tuple(v.type.shape), v.type.dtype) if b else v.type for v, b in zip(g.inputs, mask)]
    st, ts = _new_body(params, g.name)
    ACTIVE.stack.append(st)
    _vmap._LEVELS.depth += 1
    level = _vmap._LEVELS.depth
    try:
        outs = _replay(g, [_vmap.Batched(t, level, size) if b else t for t, b in zip(ts, mask)])
        result = [o._value if isinstance(o, _vmap.Batched) and o._level == level else _vmap._broadcast(o, size)
                  for o in outs]
    finally:
        _vmap._LEVELS.depth -= 1
        ACTIVE.stack.pop()
    return _finish(st, result)


def replay_text(text: str, args: list) -> list:
    """A body's ops applied to `args` where the call happens (batched values included)."""
    return _replay(parsed(text), list(args))


# -- dead results of a loop ------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _without_outputs(text: str, drop: tuple) -> str:
    """The body without the results at positions `drop`, and the code only they needed."""
    g = parse_body(text)
    g.outputs = [v for k, v in enumerate(g.outputs) if k not in drop]
    _simplify(g)
    return _body_text(g)


def parse_body(text: str) -> Graph:
    from .ir import parse_ir  # noqa: PLC0415

    return parse_ir(text)


def prune_loop_results(graph: Graph) -> int:
    """DCE through loops: a scan's stacked ys that nothing reads are no longer computed (its
    body loses them and what only they needed). Carries stay: the next step reads them."""
    from eager.ops.control_flow import parsed as parsed_body  # noqa: PLC0415

    used = {v for v in graph.outputs if isinstance(v, Value)}
    for node in graph.nodes:
        used.update(node.input_values())
    pruned = 0
    for node in graph.nodes:
        if node.op != "scan" or node.attrs.get("save"):
            continue
        n_k = node.attrs["n_carry"]
        n_y = len(parsed_body(node.attrs["body"]).outputs) - n_k
        drop = tuple(n_k + j for j in range(n_y) if node.outputs[n_k + j] not in used)
        if not drop:
            continue
        node.attrs = {**node.attrs, "body": _without_outputs(node.attrs["body"], drop)}
        node.outputs = [o for k, o in enumerate(node.outputs) if k not in drop]
        for k, o in enumerate(node.outputs):
            o.index = k
        pruned += len(drop)
    return pruned


@functools.lru_cache(maxsize=128)
def batched_while(cond: str, body: str, mask: tuple, size: int) -> tuple[str, str]:
    """A while_loop on a batch, as JAX runs one: the loop goes on while any example's
    condition holds, and an example whose condition no longer holds keeps its carry (the
    body's results are selected per example). Returns (condition, body) texts over the
    batched consts (where `mask` says) and batched carries."""
    cond_b, body_b = parsed(batched_body(cond, mask, size)), parsed(batched_body(body, mask, size))
    params = [v.type for v in cond_b.inputs]
    st, ts = _new_body(params, "while_cond")
    ACTIVE.stack.append(st)
    try:
        (p,) = _replay(cond_b, ts)
        any_left = p.to(eager.int64).sum() > 0
    finally:
        ACTIVE.stack.pop()
    cond_text = _finish(st, [any_left])
    st, ts = _new_body(params, "while_body")
    n_c = sum(1 for b in mask[:len(params) - len(body_b.outputs)])
    ACTIVE.stack.append(st)
    try:
        (p,) = _replay(cond_b, ts)
        new = _replay(body_b, ts)
        kept = []
        for c, n in zip(ts[n_c:], new):
            take = p.reshape((size,) + (1,) * (len(n.shape) - 1))
            kept.append(eager.where(take, n, c))
    finally:
        ACTIVE.stack.pop()
    return cond_text, _finish(st, kept)
