"""scan, fori_loop and while_loop: run as Python loops outside a trace, recorded as one
`scan` / `while_loop` node inside one, traced on the batch where a body reads a batched
value from its closure (_scan_batched, _while_batched).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import eager
from eager._tensor import Tensor
from gmbase import dtypes as _dtypes
from gmops import TensorSpec
from gmops.control_flow import SCAN, WHILE_LOOP

from ..tracing import pytree
from ..tracing.state import ACTIVE, TraceState, user_location
from ..tracing.tracer import Tracer
from .body import (
    RuleTypeError,
    StepChecker,
    _as_traced,
    _Body,
    _body_text,
    _cast_leaf,
    _check_carry,
    _flatten,
    _NeedsBatching,
    _spec_of,
    _trace_body,
    _tracing,
    _type_name,
    _weak_fix,
)
from .choice import _truth, _with_consts
from .unroll import unroll_factor, unrolled_scan


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1) -> tuple[Any, Any]:
    """jax.lax.scan: `carry, y = f(carry, x)` over the leading axis of `xs` (pytrees), returning
    the final carry and the ys stacked. `length` is needed when xs is None; `reverse` runs
    from the end (ys keep their index order). `unroll` puts that many copies of the body in
    each trip of the loop (True: the whole loop unrolled; static.control_flow.unroll), with the
    same values."""
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
    k = unroll_factor(unroll, n, "scan")
    if not _tracing():
        return _scan_python(f, init, xs, x_leaves, x_tree, n, reverse, user_location())
    loc = user_location()
    if k != 1 and n > 0:  # (an empty scan is the rolled one: its ys are empty arrays)
        return unrolled_scan(scan, f, init, xs, x_leaves, x_tree, n, reverse, k, loc)
    level = _batch_level(_flatten(init)[0] + x_leaves)
    if level is None:
        try:
            return _scan_traced(f, init, xs, x_leaves, x_tree, n, reverse, loc)
        except _NeedsBatching as exc:  # the body reads a batched value from its closure
            level = (exc.level, exc.size)
    return _scan_batched(f, init, xs, x_leaves, x_tree, n, reverse, loc, level)



def _batch_level(leaves: list) -> tuple | None:
    """(level, size) of the innermost vmap batching one of `leaves`, None when none is."""
    found = None
    for leaf in leaves:
        if getattr(type(leaf), "__graphmode_batched__", False) and (found is None or leaf._level > found[0]):
            found = (leaf._level, leaf._size)
    return found


def _batched_lift(state: Any, lvl: int, size: int) -> Callable[[Any], Any]:
    """A batched loop's entry for one leaf (scan's and while_loop's under vmap): a number made
    a tensor, then given the batch axis of vmap level lvl (size examples; broadcast where it
    has none) and traced in state, as the loop's body will see the whole batch."""
    from eager import _vmap  # noqa: PLC0415

    def lift(x: Any) -> Any:
        if isinstance(x, (bool, int, float, np.generic)):
            x = eager.tensor(x)
        return _as_traced(state, _vmap.per_example(x, lvl, size)._value)

    return lift


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
    lift = _batched_lift(state, lvl, size)

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


def _scan_python(f: Callable, init: Any, xs: Any, x_leaves: list, x_tree: Any, n: int, reverse: bool,
                 loc: str) -> tuple:
    """The Python loop (eager mode), each step's carry checked as the traced body's is."""
    carry = init
    ys: list = [None] * n
    check = StepChecker("scan body", loc)
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        x = pytree.unflatten(x_tree, [v[t] for v in x_leaves]) if xs is not None else None
        res = f(carry, x)
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(f"{loc}: scan body output must be a pair (carry, y), got {type(res).__name__}")
        check(carry, res[0])
        carry, ys[t] = res
    if n == 0:
        return carry, _empty_ys(f, init, xs, x_leaves, x_tree, reverse, loc)
    y_leaves = [_flatten(y)[0] for y in ys]
    y_tree = _flatten(ys[0])[1]
    stacked = [_stack([y_leaves[t][k] if not isinstance(y_leaves[t][k], (int, float)) else
                       eager.tensor(y_leaves[t][k]) for t in range(n)]) for k in range(len(y_leaves[0]))]
    return carry, pytree.unflatten(y_tree, stacked)


def _empty_ys(f: Callable, init: Any, xs: Any, x_leaves: list, x_tree: Any, reverse: bool, loc: str) -> Any:
    """The ys of a scan of length 0 in eager mode (jax.lax.scan's: arrays of leading size 0
    with the types one step would give). The body never runs, so their types come from
    tracing it once on the carry's and the xs' types (no array is computed); a body that
    cannot be traced (it needs values in Python) leaves them unknowable, and that is an
    error rather than a silent None."""
    from ..tracing.function import trace  # noqa: PLC0415

    def typed(v: Any) -> Any:  # under eager vmap, a batched leaf's logical type (its ys are broadcast)
        return eager.zeros(tuple(v.shape), dtype=v.dtype) if getattr(type(v), "__graphmode_batched__", False) else v

    init_leaves, init_tree = _flatten(init)
    init_leaves = [typed(v) for v in init_leaves]
    x_leaves = [typed(v) for v in x_leaves]
    arrays = [(k, v) for k, v in enumerate(init_leaves) if hasattr(v, "shape") and hasattr(v, "dtype")]
    as_numpy = (any(isinstance(v, np.ndarray) for v in init_leaves + x_leaves)
                and not any(isinstance(v, Tensor) for v in init_leaves + x_leaves))  # (as _stack does)
    holder: dict = {}

    def abstract(*given: Any) -> Any:
        leaves = list(init_leaves)
        for (k, _), t in zip(arrays, given[:len(arrays)]):
            leaves[k] = t
        lead = list(given[len(arrays):])
        carry = pytree.unflatten(init_tree, leaves)
        x = pytree.unflatten(x_tree, lead) if xs is not None else None
        _, ys = _scan_traced(f, carry, x, lead, x_tree, 0, reverse, loc)
        y_leaves, holder["tree"] = _flatten(ys)
        return tuple(y_leaves)

    try:
        with eager.no_grad():
            g = trace(abstract, *[v for _, v in arrays], *x_leaves)
    except TypeError:  # the body's own type errors (carry types, its output's form): the traced scan's
        raise
    except Exception as exc:  # noqa: BLE001 - a body eager mode could run but not trace
        raise ValueError(f"{loc}: scan of length 0 must return ys of the types one step of the body gives, but the "
                         f"body could not be traced to find them ({type(exc).__name__}: {exc}). Give the scan at "
                         "least one step, or write the body with tensor operations only.") from exc
    made: list[Any] = [np.zeros(tuple(v.type.shape), dtype=v.type.dtype.np) for v in g.outputs]
    if not as_numpy:
        made = [eager.from_numpy(m) for m in made]
    return pytree.unflatten(holder["tree"], made)


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *, unroll: int | bool | None = None) -> Any:
    """jax.lax.fori_loop: `val = body_fun(i, val)` for i in [lower, upper). With Python int
    bounds it is a scan (reverse-differentiable, compiled in time independent of the trip
    count); with traced bounds a while_loop, as in JAX. `unroll` (static bounds only) is
    scan's: that many body copies per trip, True for the whole loop."""
    concrete = all(isinstance(b, (int, np.integer)) and not isinstance(b, bool) for b in (lower, upper))
    if not concrete and unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are statically known.")
    if concrete and unroll is not None:
        unroll_factor(unroll, max(int(upper) - int(lower), 0), "fori_loop")
    if not _tracing():
        lo, hi = int(lower), int(upper)
        loc = user_location()
        check = StepChecker("scan body" if concrete else "while_loop body", loc)  # (what the traced loop is)
        val = init_val
        for i in range(lo, hi):
            new = body_fun(i, val)
            check(val, new)
            val = new
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
        (_, val), _ = scan(step, (i0, init_val), None, length=hi - lo,
                           unroll=1 if unroll is None else unroll)
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
        loc = user_location()
        check = StepChecker("while_loop body", loc)
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
            if hasattr(p, "shape") and hasattr(p, "dtype"):  # (JAX takes only a boolean scalar)
                spec = _spec_of(p)
                if tuple(spec.shape) != () or spec.dtype != _dtypes.bool_:
                    raise RuleTypeError(f"{loc}: cond_fun must return a boolean scalar, but got output type(s) "
                                    f"[{_type_name(spec)}].")
            if not bool(_truth(p)):
                return val
            new = body_fun(val)
            check(val, new)
            val = new
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
    lift = _batched_lift(state, lvl, size)

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
            raise RuleTypeError(f"{loc}: cond_fun must return a boolean scalar, but got output type(s) "
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
        raise RuleTypeError(f"{loc}: cond_fun must return a boolean scalar, but got output type(s) [{got}].")
    # both bodies read the same consts: the union, each body's inputs reordered to it
    consts = list(dict.fromkeys(list(body.consts) + list(test.consts)))
    body_g = _with_consts(body, consts)
    test_g = _with_consts(test, consts)
    init_t = [_cast_leaf(state, leaf, s) for leaf, s in zip(leaves, specs)]
    outs = WHILE_LOOP(*[Tracer(state, v) for v in consts], *init_t, cond=_body_text(test_g), body=_body_text(body_g),
                      n_consts=len(consts))
    return pytree.unflatten(tree, list(outs))
