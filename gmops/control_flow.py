"""Structured control flow as ops: `scan`, `while_loop` and `cond`, whose bodies are closed
IR functions held as text in an attribute.

Why text: a body is a typed sub-graph (`func @body(...) -> ... {...}`, the IR's own text
form, parsed and verified like any graph), but everything that handles ops (the verifier,
the passes, the memory planner, every code generator) handles an op node whose attributes
are literals. Keeping the body in an attribute makes a loop one ordinary node to all of
them: CSE compares bodies as it compares attributes, the printer and the parser carry it
(`static.parse_ir` reads it back and the abstract rule verifies it), and a graph with a
1000-step loop holds the body once. `static.control_flow` traces the user's functions into
these bodies, optimizes them (DCE/CSE/fusion inside) and builds the VJP bodies; the forward
here runs the loop in Python around the body's compiled code (see `_runner`).

Op layouts (operands, in order; results):
- `scan`: consts (n_consts), initial carries (n_carry), xs (the rest, each of leading size
  `length`). body(consts, carry, x[t]) -> (carry', y[t]). Results: final carries, the ys
  stacked along a new leading axis, and with `save` the carry entering each step, stacked
  (what the VJP reads: reverse mode with saved carries). `reverse` runs t = length-1 .. 0.
- `while_loop`: consts (n_consts), carries. `cond`(consts, carry) -> bool[],
  `body`(consts, carry) -> carry'. Results: the final carries. Not reverse-differentiable
  (as in JAX: the trip count is not known).
- `cond`: index (a 0-d bool or integer: the branch; an integer is clamped into range as
  lax.switch does), operands. Each of `branches` (a list of bodies of the same signature)
  maps the operands to the results; only the chosen one runs.

These ops reach eager only through their VJPs and the registry-wide tests: eager's
`eager.cond`/`scan`/`while_loop` run the Python loop themselves (eager._higher_order_ops).
The body helpers live in `static` (the IR parser, the tracer), imported at first use, as
`eager.compile` imports static at its first call.
"""
from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from ._registry import REGISTRY, VARIADIC, TensorSpec, defop

# every operand is saved for the VJP (a scan's backward reruns it and reads every input);
# positions past the actual operands are skipped by eager's dispatch
_ALL = tuple(range(512))


def _static() -> Any:
    import static.control_flow as cf  # noqa: PLC0415  (static builds on eager: imported at first use)

    return cf


@functools.lru_cache(maxsize=512)
def parsed(text: str) -> Any:
    """The verified Graph of a body's IR text (parsed once per text)."""
    from static.ir import parse_ir  # noqa: PLC0415

    return parse_ir(text)


def _caller_backend() -> str:
    """What runs the graph this op is in: "native" when the native backend's driver calls it
    (its bodies are then compiled natively too), "interpret" for the reference interpreter
    (bodies interpreted), else "numpy"."""
    frame: Any = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            break
        name = frame.f_globals.get("__name__", "")
        if name.startswith("graphmode_generated.native"):
            return "native"
        if name == "static.interpreter":  # the reference interpreter: bodies interpreted too
            return "interpret"
        frame = frame.f_back
    return "numpy"


def _fmt(spec: Any) -> str:
    return f"{_dtypes.short_name(spec.dtype)}[{','.join(map(str, spec.shape))}]"


def _check_params(op: str, specs: list, params: list, what: str) -> None:
    if len(specs) != len(params):
        raise TypeError(f"{op}: the body takes {len(params)} {what}, but {len(specs)} operands are given")
    for i, (s, p) in enumerate(zip(specs, params)):
        if not isinstance(s, TensorSpec):
            raise TypeError(f"{op}: operand {i} must be a tensor, got {type(s).__name__} {s!r}")
        if tuple(s.shape) != tuple(p.type.shape) or s.dtype != p.type.dtype:
            raise TypeError(f"{op}: operand {i} has type {_fmt(s)} but the body's parameter %{p.name} has type "
                            f"{_fmt(p.type)}")


# -- scan --------------------------------------------------------------------------------------
def _scan_abstract(*specs: Any, body: str, length: int, reverse: bool, n_consts: int, n_carry: int,
                   save: bool = False, residuals: int = 0) -> list:
    g = parsed(body)
    n_in = len(specs)
    n_x = n_in - n_consts - n_carry
    if n_x < 0 or len(g.inputs) != n_in:
        raise TypeError(f"scan: the body takes {len(g.inputs)} parameters (consts, carry, x), but {n_in} operands "
                        f"are given (n_consts={n_consts}, n_carry={n_carry})")
    if len(g.outputs) < n_carry:
        raise TypeError(f"scan: the body yields {len(g.outputs)} values, fewer than its {n_carry} carries")
    head = list(specs[:n_consts + n_carry])
    _check_params("scan", head, g.inputs[:n_consts + n_carry], "consts and carries")
    for i, (s, p) in enumerate(zip(specs[n_consts + n_carry:], g.inputs[n_consts + n_carry:])):
        if not isinstance(s, TensorSpec) or not s.shape or s.shape[0] != length:
            raise TypeError(f"scan: xs operand {i} must have leading dimension {length} (the scan's length), got "
                            f"{_fmt(s) if isinstance(s, TensorSpec) else repr(s)}")
        if tuple(s.shape[1:]) != tuple(p.type.shape) or s.dtype != p.type.dtype:
            raise TypeError(f"scan: a slice of xs operand {i} has type {_fmt(TensorSpec(tuple(s.shape[1:]), s.dtype))}"
                            f" but the body's parameter %{p.name} has type {_fmt(p.type)}")
    carry_in = [p.type for p in g.inputs[n_consts:n_consts + n_carry]]
    for k, (cin, y) in enumerate(zip(carry_in, g.outputs[:n_carry])):
        if tuple(cin.shape) != tuple(y.type.shape) or cin.dtype != y.type.dtype:
            raise TypeError(f"scan: carry {k} enters the body as {_fmt(cin)} and leaves it as {_fmt(y.type)}; a "
                            "carry keeps its type")
    out = [TensorSpec(tuple(t.shape), t.dtype) for t in carry_in]
    out += [TensorSpec((length,) + tuple(y.type.shape), y.type.dtype) for y in g.outputs[n_carry:]]
    if save:
        out += [TensorSpec((length,) + tuple(t.shape), t.dtype) for t in carry_in]
    return out


def _scan_forward(xp: Any, *operands: Any, body: str, length: int, reverse: bool, n_consts: int, n_carry: int,
                  save: bool = False, residuals: int = 0) -> tuple:
    g = parsed(body)
    run = _static().runner(body, xp, _caller_backend())
    consts = list(operands[:n_consts])
    carry = [xp.asarray(c) for c in operands[n_consts:n_consts + n_carry]]
    xs = list(operands[n_consts + n_carry:])
    ys = [xp.empty((length,) + tuple(y.type.shape), dtype=y.type.dtype.np) for y in g.outputs[n_carry:]]
    hist = [xp.empty((length,) + tuple(c.shape), dtype=c.dtype) for c in carry] if save else []
    for t in (range(length - 1, -1, -1) if reverse else range(length)):
        for h, c in zip(hist, carry):
            h[t] = c
        out = run(consts + carry + [x[t] for x in xs])
        # (copies: a compiled body may hand out a buffer it writes again at the next call)
        carry = [xp.array(c, copy=True) for c in out[:n_carry]]
        for buf, y in zip(ys, out[n_carry:]):
            buf[t] = y
    return tuple(carry + ys + hist)


def _zeros(shape: tuple, dt: Any) -> Any:
    from .special import FULL  # noqa: PLC0415

    return FULL(shape=tuple(shape), value=0.0 if dt.is_floating_point else 0, dtype=dt)


def _scan_vjp(ctx: Any, grads: tuple) -> tuple:
    """Reverse mode: the forward again with its carries saved (recomputation: the graph's
    simplification merges it with the forward when both are in one graph), then a scan in the
    opposite direction whose body is the body's VJP: it carries the cotangents of the carries
    and the consts' accumulated cotangents, and reads each step's saved carry, x and y
    cotangent."""
    a = ctx.attrs
    n_c, n_k, length = a["n_consts"], a["n_carry"], a["length"]
    ins = [ctx.input(i) for i in range(ctx.n_inputs)]
    consts, xs = ins[:n_c], ins[n_c + n_k:]
    g = parsed(a["body"])
    n_y = len(g.outputs) - n_k
    # the forward again, saving each step's carry and residuals (the results of its costly ops,
    # static.control_flow.residual_body): one loop with the forward once CSE merges them
    res_body, n_res = _static().residual_body(a["body"])
    fwd = SCAN(*ins, **{**a, "body": res_body, "save": True, "residuals": a.get("residuals", 0) + n_res})
    saved = list(fwd[n_k + n_y:n_k + n_y + n_res])
    hist = list(fwd[n_k + n_y + n_res:])
    cts = []
    for i, y in enumerate(g.outputs):
        shape = tuple(y.type.shape) if i < n_k else (length,) + tuple(y.type.shape)
        cts.append(grads[i] if grads[i] is not None else _zeros(shape, y.type.dtype))
    # with `save`, the saved carries are results too: their cotangents join the carry's
    ct_hist = [grads[n_k + n_y + k] for k in range(n_k)] if a.get("save") else []
    if ct_hist and all(c is None for c in ct_hist):
        ct_hist = []
    ct_hist = [c if c is not None else _zeros(tuple(h.shape), h.dtype) for c, h in zip(ct_hist, hist)]
    acc = [_zeros(tuple(p.type.shape), p.type.dtype) for p in g.inputs[:n_c]]
    back = _static().scan_vjp_body(a["body"], n_c, n_k, bool(ct_hist), bool(n_res))
    res = SCAN(*consts, *acc, *cts[:n_k], *hist, *xs, *cts[n_k:], *ct_hist, *saved, body=back, length=length,
               reverse=not a["reverse"], n_consts=n_c, n_carry=n_c + n_k, save=False)
    return tuple(r if r.dtype.is_floating_point else None for r in res[:n_c + n_k + len(xs)])


def _scan_samples(rng: Any) -> list:
    body = ("func @body(%w: f64[3], %h: f64[3], %x: f64[3]) -> (f64[3], f64[3]) {\n"
            "  %0 = mul %h, %w : f64[3]\n  %1 = add %0, %x : f64[3]\n  %2 = tanh %1 : f64[3]\n"
            "  %3 = mul %2, %x : f64[3]\n  return %2, %3\n}")
    w, h, xs = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal((4, 3))
    return [((w, h, xs), {"body": body, "length": 4, "reverse": False, "n_consts": 1, "n_carry": 1}),
            ((w, h, xs), {"body": body, "length": 4, "reverse": True, "n_consts": 1, "n_carry": 1, "save": True})]


def _scan_batch(args: list, batched: list, attrs: dict, size: int) -> Any:
    """vmap of a scan: one scan over the batch. Every carry is batched (one that is not is
    broadcast: a step may make it depend on the batch), batched xs move their batch behind the
    scanned axis, and the body runs through its ops' batching rules (static.control_flow.
    batched_body)."""
    n_c, n_k = attrs["n_consts"], attrs["n_carry"]
    consts = list(args[:n_c])
    carries = [a if b else a.unsqueeze(0).expand((size,) + tuple(a.shape))
               for a, b in zip(args[n_c:n_c + n_k], batched[n_c:n_c + n_k])]
    xs = [x.movedim(0, 1) if b else x for x, b in zip(args[n_c + n_k:], batched[n_c + n_k:])]
    mask = tuple(batched[:n_c]) + (True,) * n_k + tuple(batched[n_c + n_k:])
    body = _static().batched_body(attrs["body"], mask, size)
    outs = list(SCAN(*consts, *carries, *xs, **{**attrs, "body": body}))
    return tuple(outs[:n_k] + [o.movedim(1, 0) for o in outs[n_k:]])


def _cond_batch(args: list, batched: list, attrs: dict, size: int) -> Any:
    """vmap of a cond: with a batched predicate every branch runs on the batch and each example
    takes its own branch's results (JAX's select); otherwise one cond of batched branches."""
    branches = attrs["branches"]
    cf = _static()
    if batched[0]:
        from eager import _vmap  # noqa: PLC0415

        level = _vmap._LEVELS.depth + 1
        _vmap._LEVELS.depth = level
        try:
            ops = [_vmap.Batched(a, level, size) if b else a for a, b in zip(args[1:], batched[1:])]
            results = [[_vmap.per_example(r, level, size)._value for r in cf.replay_text(t, ops)] for t in branches]
        finally:
            _vmap._LEVELS.depth = level - 1
        index = args[0]
        if index.dtype.name != "bool":
            index = index.clamp(0, len(branches) - 1)
        out = []
        for k in range(len(results[0])):
            chosen = results[0][k]
            for b in range(1, len(branches)):
                take = index if index.dtype.name == "bool" else index == b
                take = take.reshape((size,) + (1,) * (len(chosen.shape) - 1))
                chosen = REGISTRY["where"](take, results[b][k], chosen)
            out.append(chosen)
        return tuple(out)
    mask = tuple(batched[1:])
    return tuple(COND(args[0], *args[1:], branches=[cf.batched_body(t, mask, size) for t in branches]))


# -- forward mode (JAX's rules: the tangents ride along as extra carries / operands) ---------------
def _float_mask(values: list) -> tuple:
    return tuple(bool(v.dtype.is_floating_point) for v in values)


def _tangents_or_zeros(values: list, tangents: list, mask: tuple) -> list:
    return [t if t is not None else _zeros(tuple(v.shape), v.dtype) for v, t, m in zip(values, tangents, mask) if m]


def _spread(outs: list, mask: tuple) -> list:
    """One entry per member of `mask`: the next of `outs` where it is set, else None."""
    it = iter(outs)
    return [next(it) if m else None for m in mask]


def _while_jvp(ctx: Any, tangents: list) -> list:
    """A while_loop over (carry, tangent): the body's JVP carries each floating-point carry's
    tangent, the condition reads the primal carry (jax.lax.while_loop's JVP). Consts without
    a tangent enter as they are."""
    a = ctx.attrs
    n_c = a["n_consts"]
    ins = [ctx.input(i) for i in range(ctx.n_inputs)]
    consts, carries = ins[:n_c], ins[n_c:]
    c_mask = tuple(t is not None for t in tangents[:n_c])
    k_mask = _float_mask(carries)
    d_consts = [t for t in tangents[:n_c] if t is not None]
    d_carries = _tangents_or_zeros(carries, list(tangents[n_c:]), k_mask)
    cf = _static()
    groups = (c_mask, k_mask)
    cond = cf.jvp_body(a["cond"], groups, (1,), tangents_out=False)
    body = cf.jvp_body(a["body"], groups, (len(carries),))
    outs = list(WHILE_LOOP(*consts, *d_consts, *carries, *d_carries, cond=cond, body=body,
                           n_consts=n_c + len(d_consts)))
    ctx.primals = outs[:len(carries)]  # the same values: static.jvp returns these, so one loop runs
    return _spread(outs[len(carries):], k_mask)


def _scan_jvp(ctx: Any, tangents: list) -> list:
    """A scan whose body is the body's JVP: (consts, d consts, carry, d carry, x, d x) ->
    (carry', d carry', y, d y); with `save`, the saved tangent carries are the tangents of
    the saved carries (jax.lax.scan's JVP)."""
    a = ctx.attrs
    n_c, n_k = a["n_consts"], a["n_carry"]
    ins = [ctx.input(i) for i in range(ctx.n_inputs)]
    consts, carries, xs = ins[:n_c], ins[n_c:n_c + n_k], ins[n_c + n_k:]
    t_c, t_k, t_x = list(tangents[:n_c]), list(tangents[n_c:n_c + n_k]), list(tangents[n_c + n_k:])
    c_mask, x_mask, k_mask = tuple(t is not None for t in t_c), tuple(t is not None for t in t_x), _float_mask(carries)
    g = parsed(a["body"])
    y_mask = tuple(bool(y.type.dtype.is_floating_point) for y in g.outputs[n_k:])
    d_carries = _tangents_or_zeros(carries, t_k, k_mask)
    body = _static().jvp_body(a["body"], (c_mask, k_mask, x_mask), (n_k, len(y_mask)))
    d_c = [t for t in t_c if t is not None]
    d_x = [t for t in t_x if t is not None]
    outs = list(SCAN(*consts, *d_c, *carries, *d_carries, *xs, *d_x,
                     **{**a, "body": body, "n_consts": n_c + len(d_c), "n_carry": n_k + len(d_carries),
                        "residuals": 0}))
    n_dk, n_y = len(d_carries), len(y_mask)
    n_dy = sum(y_mask)
    result = _spread(outs[n_k:n_k + n_dk], k_mask)
    result += _spread(outs[n_k + n_dk + n_y:n_k + n_dk + n_y + n_dy], y_mask)
    ctx.primals = outs[:n_k] + outs[n_k + n_dk:n_k + n_dk + n_y]
    if a.get("save"):
        hist = outs[n_k + n_dk + n_y + n_dy:]
        result += _spread(hist[n_k:], k_mask)
        ctx.primals += hist[:n_k]
    return result


def _cond_jvp(ctx: Any, tangents: list) -> list:
    """A cond of the branches' JVPs on the same index: only the branch taken runs, and it
    gives its results' tangents (jax.lax.cond's JVP)."""
    ins = [ctx.input(i) for i in range(ctx.n_inputs)]
    ops = ins[1:]
    mask = tuple(t is not None for t in tangents[1:])
    branches = ctx.attrs["branches"]
    g = parsed(branches[0])
    out_mask = tuple(bool(y.type.dtype.is_floating_point) for y in g.outputs)
    texts = [_static().jvp_body(b, (mask,), (len(out_mask),)) for b in branches]
    outs = list(COND(ins[0], *ops, *[t for t in tangents[1:] if t is not None], branches=texts))
    ctx.primals = outs[:len(out_mask)]
    return _spread(outs[len(out_mask):], out_mask)


SCAN = defop("scan", forward=_scan_forward, abstract=_scan_abstract, vjp=_scan_vjp, kind="other", arity=VARIADIC,
             multi_output=True, save=_ALL, fusible=False, grad_name="ScanBackward0", samples=_scan_samples,
             batch_rule=_scan_batch, extra={"jvp": _scan_jvp},
             doc="a loop over the leading axis of xs with a carried state (lax.scan): one body, run length times")


# -- while_loop --------------------------------------------------------------------------------
def _while_abstract(*specs: Any, cond: str, body: str, n_consts: int) -> list:
    c, b = parsed(cond), parsed(body)
    _check_params("while_loop", list(specs), b.inputs, "consts and carries")
    _check_params("while_loop", list(specs), c.inputs, "consts and carries (its condition)")
    if len(c.outputs) != 1 or tuple(c.outputs[0].type.shape) != () or c.outputs[0].type.dtype != _dtypes.bool_:
        got = ", ".join(_fmt(v.type) for v in c.outputs)
        raise TypeError(f"while_loop: the condition must yield one boolean scalar (bool[]), got ({got})")
    carry_in = [p.type for p in b.inputs[n_consts:]]
    if len(b.outputs) != len(carry_in):
        raise TypeError(f"while_loop: the body yields {len(b.outputs)} values for {len(carry_in)} carries")
    for k, (cin, y) in enumerate(zip(carry_in, b.outputs)):
        if tuple(cin.shape) != tuple(y.type.shape) or cin.dtype != y.type.dtype:
            raise TypeError(f"while_loop: carry {k} enters the body as {_fmt(cin)} and leaves it as {_fmt(y.type)}; "
                            "a carry keeps its type")
    return [TensorSpec(tuple(t.shape), t.dtype) for t in carry_in]


def _while_forward(xp: Any, *operands: Any, cond: str, body: str, n_consts: int) -> tuple:
    cf = _static()
    backend = _caller_backend()
    test, step = cf.runner(cond, xp, backend), cf.runner(body, xp, backend)
    consts = list(operands[:n_consts])
    carry = [xp.asarray(c) for c in operands[n_consts:]]
    while bool(test(consts + carry)[0]):
        carry = [xp.array(c, copy=True) for c in step(consts + carry)]
    return tuple(carry)


def _while_samples(rng: Any) -> list:
    cond = ("func @cond(%s: f64[], %i: i64[], %x: f64[3]) -> bool[] {\n"
            "  %0 = lt %i, 5 : bool[]\n  return %0\n}")
    body = ("func @body(%s: f64[], %i: i64[], %x: f64[3]) -> (i64[], f64[3]) {\n"
            "  %0 = add %i, 1 : i64[]\n  %1 = mul %x, %s : f64[3]\n  %2 = sin %1 : f64[3]\n  return %0, %2\n}")
    return [((rng.standard_normal(()), rng.integers(0, 3, ()), rng.standard_normal(3)),
             {"cond": cond, "body": body, "n_consts": 1})]


def _while_batch(args: list, batched: list, attrs: dict, size: int) -> Any:
    """vmap of a while_loop: every carry batched; the loop runs while any example's condition
    holds, each example keeping its carry once its own condition fails (JAX's rule)."""
    n_c = attrs["n_consts"]
    carries = [a if b else a.unsqueeze(0).expand((size,) + tuple(a.shape))
               for a, b in zip(args[n_c:], batched[n_c:])]
    mask = tuple(batched[:n_c]) + (True,) * len(carries)
    cond, body = _static().batched_while(attrs["cond"], attrs["body"], mask, size)
    return tuple(WHILE_LOOP(*args[:n_c], *carries, cond=cond, body=body, n_consts=n_c))


WHILE_LOOP = defop("while_loop", forward=_while_forward, abstract=_while_abstract, kind="other", arity=VARIADIC,
                   multi_output=True, fusible=False, differentiable_order=0, samples=_while_samples,
                   batch_rule=_while_batch, extra={"jvp": _while_jvp},
                   doc="Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
                       "start/stop values. Try using lax.scan, or using fori_loop with static start/stop")


# -- cond --------------------------------------------------------------------------------------
def _cond_abstract(index: Any, *specs: Any, branches: Any) -> list:
    if not isinstance(index, TensorSpec) or tuple(index.shape) != () or index.dtype.is_floating_point:
        shown = _fmt(index) if isinstance(index, TensorSpec) else repr(index)
        raise TypeError(f"cond: the predicate must be a scalar boolean or integer, got {shown}")
    if not branches:
        raise ValueError("cond: needs at least one branch")
    graphs = [parsed(b) for b in branches]
    first = graphs[0]
    for k, g in enumerate(graphs):
        _check_params("cond", list(specs), g.inputs, f"operands (branch {k})")
        got = [_fmt(v.type) for v in g.outputs]
        want = [_fmt(v.type) for v in first.outputs]
        if got != want:
            raise TypeError(f"cond: branch {k} yields ({', '.join(got)}) but branch 0 yields ({', '.join(want)}); "
                            "the branches must give results of identical types")
    return [TensorSpec(tuple(v.type.shape), v.type.dtype) for v in first.outputs]


def _branch(index: Any, n: int) -> int:
    i = int(index)
    return min(max(i, 0), n - 1)


def _cond_forward(xp: Any, index: Any, *operands: Any, branches: Any) -> tuple:
    chosen = branches[_branch(index, len(branches))]
    run = _static().runner(chosen, xp, _caller_backend())
    return tuple(xp.array(o, copy=True) for o in run(list(operands)))


def _cond_vjp(ctx: Any, grads: tuple) -> tuple:
    """Both branches' VJPs, as the branches of a cond on the same predicate: only the one
    taken runs."""
    branches = ctx.attrs["branches"]
    ins = [ctx.input(i) for i in range(ctx.n_inputs)]
    g = parsed(branches[0])
    cts = [gr if gr is not None else _zeros(tuple(y.type.shape), y.type.dtype) for gr, y in zip(grads, g.outputs)]
    back = [_static().cond_vjp_branch(b) for b in branches]
    res = COND(ins[0], *ins[1:], *cts, branches=back)
    return (None,) + tuple(r if r.dtype.is_floating_point else None for r in res)


def _cond_samples(rng: Any) -> list:
    t = ("func @t(%a: f64[3], %b: f64[3]) -> (f64[3], f64[]) {\n  %0 = mul %a, %b : f64[3]\n"
         "  %1 = sum %0 {dims = none, keepdim = false} : f64[]\n  return %0, %1\n}")
    f = ("func @f(%a: f64[3], %b: f64[3]) -> (f64[3], f64[]) {\n  %0 = sin %a : f64[3]\n"
         "  %1 = sum %b {dims = none, keepdim = false} : f64[]\n  return %0, %1\n}")
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    return [((np.array(True), a, b), {"branches": [f, t]}), ((np.array(False), a, b), {"branches": [f, t]}),
            ((np.array(2), a, b), {"branches": [f, t, f]})]


COND = defop("cond", forward=_cond_forward, abstract=_cond_abstract, vjp=_cond_vjp, kind="other", arity=VARIADIC,
             multi_output=True, save=_ALL, fusible=False, mask_operands=(0,), grad_name="CondBackward0",
             batch_rule=_cond_batch, extra={"jvp": _cond_jvp},
             samples=_cond_samples,
             doc="one of several bodies, chosen by a scalar predicate or index (lax.cond / lax.switch)")
