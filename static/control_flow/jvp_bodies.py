"""Forward-mode bodies: a loop's or a branch's body extended with its JVP, what the
control-flow ops' forward rules (eager/ops/control_flow.py, `extra["jvp"]`) run.

JAX's rules: the JVP of `while_loop(cond, body, init)` is a while_loop over (carry, tangent)
whose body is the body's JVP and whose condition reads the primal carry only; a scan's is a
scan whose body maps (consts, d consts, carry, d carry, x, d x) to (carry', d carry', y, d y);
a cond's is a cond of the branches' JVPs. The body's JVP is built here by replaying the body
on fresh Tracers and pushing tangents through it forwards (static.autodiff.forward), so a
body that holds another loop (a while inside a scan) differentiates too.
"""
from __future__ import annotations

import functools

from eager._grad_mode import enable_grad
from gmops.control_flow import parsed

from ..tracing.state import ACTIVE
from .ir_bodies import _finish, _new_body, _replay


@functools.lru_cache(maxsize=256)
def jvp_body(text: str, in_groups: tuple, out_groups: tuple, tangents_out: bool = True) -> str:
    """`text`'s body with tangent parameters and results.

    `in_groups`: the body's parameters in groups, one mask per group saying which members get
    a tangent; each group becomes its members followed by the masked members' tangents.
    `out_groups`: the sizes of the result groups; each becomes its members followed by the
    tangents of its floating-point members (with `tangents_out` False the results stay the
    body's own: a while_loop's condition over the extended carries)."""
    from ..autodiff.forward import jvp  # noqa: PLC0415  (autodiff builds on the tracer this package uses)

    g = parsed(text)
    types = [v.type for v in g.inputs]
    params: list = []
    layout: list = []  # per new parameter: ("p", k) the body's parameter k, ("t", k) its tangent
    pos = 0
    for mask in in_groups:
        group = list(range(pos, pos + len(mask)))
        params += [types[k] for k in group]
        layout += [("p", k) for k in group]
        params += [types[k] for k, m in zip(group, mask) if m]
        layout += [("t", k) for k, m in zip(group, mask) if m]
        pos += len(mask)
    if pos != len(types):
        raise ValueError(f"jvp_body: the groups cover {pos} of the body's {len(types)} parameters")
    st, ts = _new_body(params, f"{g.name}_jvp")
    primal: dict = {}
    tangent: dict = {}
    for (kind, k), t in zip(layout, ts):
        (primal if kind == "p" else tangent)[k] = t
    args = [primal[k] for k in range(len(types))]
    ACTIVE.stack.append(st)
    try:
        with enable_grad():
            outs = _replay(g, args)
            if tangents_out:
                wrt = [args[k]._value for k in sorted(tangent)]
                d_outs = jvp(st, [o._value for o in outs], wrt, [tangent[k] for k in sorted(tangent)])
    finally:
        ACTIVE.stack.pop()
    if not tangents_out:
        return _finish(st, outs)
    if sum(out_groups) != len(outs):
        raise ValueError(f"jvp_body: the groups cover {sum(out_groups)} of the body's {len(outs)} results")
    result: list = []
    pos = 0
    for n in out_groups:
        members = range(pos, pos + n)
        result += [outs[j] for j in members]
        result += [d_outs[j] for j in members if g.outputs[j].type.dtype.is_floating_point]
        pos += n
    return _finish(st, result)
