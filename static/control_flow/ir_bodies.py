"""Bodies as IR text, after tracing: compiled at their first run by the graph's generator
(runner), differentiated (scan_vjp_body, cond_vjp_branch, the residuals a VJP's forward
keeps), batched for vmap (batched_body, batched_while) and pruned of dead loop results.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

import eager
from eager._grad_mode import enable_grad
from gmops import REGISTRY, TensorSpec
from gmops.control_flow import parsed

from ..ir import Graph, Value
from ..tracing.state import ACTIVE, TraceState
from ..tracing.tracer import Tracer
from .body import _body_text, _simplify


# -- running bodies ----------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _compiled_runner(text: str, backend: str) -> Callable[[list], list]:
    """The body optimized as a compiled graph is (simplify, fusion, memory plan) and compiled
    by `backend`'s code generator, once per body text and backend."""
    from ..jit.executable import build_executable, row_regions  # noqa: PLC0415
    from ..passes import run_pipeline  # noqa: PLC0415

    g = run_pipeline(parsed(text), [], row_regions=row_regions(backend), backend=backend)
    try:
        exe = build_executable(g, backend)
    except Exception:  # noqa: BLE001 - no code generator here: the reference interpreter runs it
        from ..interpreter import run_graph  # noqa: PLC0415

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
    from ..interpreter import run_graph  # noqa: PLC0415

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
    from ..autodiff import vjp  # noqa: PLC0415

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
    from ..autodiff import vjp  # noqa: PLC0415

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
    from ..ir import parse_ir  # noqa: PLC0415

    return parse_ir(text)


def prune_loop_results(graph: Graph) -> int:
    """DCE through loops: a scan's stacked ys that nothing reads are no longer computed (its
    body loses them and what only they needed). Carries stay: the next step reads them."""
    from gmops.control_flow import parsed as parsed_body  # noqa: PLC0415

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
