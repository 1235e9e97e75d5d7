"""A library optimizer's update of one parameter, traced once and replayed for each parameter
of the same kind.

An optimizer step runs the same Python code for every parameter: AdamW records 26 ops per
parameter, and W5's thirty parameters made two thirds of tracing its whole training step.
What a parameter's update records depends on the group's hyper-parameters, on the dtypes and
state entries it finds, and, through the ops' abstract rules, on the shapes. So the update of
the first parameter of a kind is traced as usual (through eager's dispatch), and its nodes are
kept as a template: the role each operand plays (the parameter, its gradient, a state tensor,
a value made earlier in the update, a 0-d value of the group such as the learning rate, a
literal) and the effects the update had (an in-place write into the parameter or a state
tensor, a state entry rebound to a new value, the state dict made). A later parameter of the
same kind gets the same nodes, each checked again by its op's abstract rule (`_emit`), and
the same effects, through the tracer's own entry point for writes (`inplace_on_captured`).

Only eager.optim's own optimizers are replayed (`training._library_update`): their update of
one parameter reads nothing of another's. A template is kept only when its recording shows
nothing a replay could not repeat exactly: no new graph input, constant, random draw or guard;
only pure elementwise ops, whose results have the parameter's shape or none; a gradient and
state that are not views or aliases of other captured memory; state entries that stay or are
rebound to traced values. Otherwise each parameter of that kind is traced on its own, as before.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eager._tensor import Tensor
from gmops import REGISTRY, TensorSpec

from ..ir import Value
from ..tracing.record import _emit
from ..tracing.shared_memory import root_array
from ..tracing.state import TraceState
from ..tracing.tracer import Tracer, inplace_on_captured

PARAM, GRAD = "param", "grad"


@dataclass
class Template:
    """The recorded update of one parameter (see the module docstring). An operand is
    ("role", name), ("node", index, output), ("outside", Value) or ("literal", value)."""

    # (op, operands, attrs, outputs): outputs as (dtype, whether of the parameter's shape, else 0-d)
    nodes: list = field(default_factory=list)
    writes: list = field(default_factory=list)  # (role, operand): the role's value after the update
    rebinds: list = field(default_factory=list)  # (state key, operand)
    makes_state: bool = False  # the update made the parameter's state dict


def update_parameters(state: TraceState, opt) -> None:
    """`opt`'s update of every parameter with a gradient, group by group in eager's order,
    each parameter's traced once per kind and replayed for the others."""
    templates: dict = {}
    for group in opt.param_groups:
        for k, v in group.items():  # a group's tensors (a learning rate fed at each call): read by every update
            if k != "params" and isinstance(v, Tensor):
                state.capture(v)
            elif k != "params" and isinstance(v, tuple):  # betas: a tuple of fed numbers
                for x in v:
                    if isinstance(x, Tensor):
                        state.capture(x)
        for p in group["params"]:
            if p._grad is None:
                continue  # eager's update skips it too
            roles = _roles(opt, p)
            values = {name: state.capture(t) for name, t in roles.items()}  # (the update reads them all)
            if isinstance(p._grad, Tracer):
                values[GRAD] = p._grad._value
            kind = _kind(state, opt, group, p, roles)
            template = templates.get(kind) if kind is not None else None
            if template is not None:
                _replay(state, opt, p, roles, values, template)
                continue
            template = _record(state, opt, group, p, roles, values)
            if kind is not None and template is not None:
                templates[kind] = template


def _roles(opt, p: Tensor) -> dict:
    """name -> the eager tensor playing that role in p's update: p, its gradient when that is
    a tensor (a traced backward's gradient is one: the holder the graph writes), each state
    tensor."""
    roles: dict[Any, Any] = {PARAM: p}
    if isinstance(p._grad, Tensor) and not isinstance(p._grad, Tracer):
        roles[GRAD] = p._grad
    for k, v in (opt.state.get(p) or {}).items():
        if isinstance(v, Tensor) and not isinstance(v, Tracer):
            roles[("state", k)] = v
    return roles


def _plain(state: TraceState, obj) -> bool:
    """A tensor whose memory no other captured tensor shares (no alias to follow)."""
    shared = state.shared
    if id(obj) in shared.aliases or shared.by_target.get(id(obj)):
        return False
    data = obj._data
    members = shared.members.get(id(root_array(data)), [])
    return all(m is obj for m in members)


def _kind(state: TraceState, opt, group: dict, p: Tensor, roles: dict) -> tuple | None:
    """What p's update depends on besides shapes, or None when it is not to be replayed."""
    g = p._grad
    shape = tuple(p.shape)
    if isinstance(g, Tracer) and g._view_of is not None:
        return None
    if not isinstance(g, (Tensor, Tracer)) or tuple(g.shape) != shape:
        return None
    entries: list[tuple] = []
    for k, v in (opt.state.get(p) or {}).items():
        if isinstance(v, Tensor) and not isinstance(v, Tracer):
            if tuple(v.shape) not in (shape, ()):
                return None
            entries.append((k, "tensor", v.dtype, v.ndim == 0))
        elif v is None or isinstance(v, (bool, str)):
            entries.append((k, "value", v))
        else:
            return None
    if not all(_plain(state, t) for t in roles.values()):
        return None
    return (id(group), p.dtype, len(shape) == 0, type(g) is Tracer, g.dtype, tuple(entries))


def _record(state: TraceState, opt, group: dict, p: Tensor, roles: dict, before: dict) -> Template | None:
    """Trace p's update through eager's dispatch; its template, or None when a replay could
    not repeat it."""
    role_of = {id(v): name for name, v in before.items()}
    graph = state.graph
    n_nodes, n_inputs, n_created, n_guards = len(graph.nodes), len(graph.inputs), len(state.created), len(state.guards)
    n_draws = len(state.__dict__.get("random_draws", ()))
    grad = p._grad
    found = opt.state.get(p)
    entries = dict(found) if found is not None else None
    opt._update_group(dict(group, params=[p]))
    # a branch on a group's fed hyper-parameter (`if weight_decay != 0`) is the same for every
    # parameter of the group (the kind holds the group): not a reason to keep no template
    new_guards = [g for g in state.guards[n_guards:] if type(g).__name__ != "FedGuard"]
    if (len(graph.inputs) != n_inputs or len(state.created) != n_created or new_guards
            or len(state.__dict__.get("random_draws", ())) != n_draws or p._grad is not grad):
        return None
    shape = tuple(p.shape)
    template = Template()
    made: dict = {}  # id(Value) -> ("node", index, output)
    for i, node in enumerate(graph.nodes[n_nodes:]):
        op = REGISTRY.get(node.op)
        if op is None or op.kind != "elementwise" or not op.pure or node.body is not None:
            return None
        if any(tuple(v.type.shape) not in (shape, ()) for v in node.outputs):
            return None
        operands = []
        for v in node.inputs:
            ref = _operand_ref(v, made, role_of)
            if ref is None:
                return None
            operands.append(ref)
        outputs = [(v.type.dtype, len(shape) > 0 and tuple(v.type.shape) == shape) for v in node.outputs]
        template.nodes.append((op, operands, dict(node.attrs), outputs))
        for k, out in enumerate(node.outputs):
            made[id(out)] = ("node", i, k)
    for name, t in roles.items():
        now = state.latest.get(id(t))
        if now is None:
            return None
        if now is not before[name]:
            ref = _operand_ref(now, made, role_of)
            if ref is None or name == GRAD:
                return None
            template.writes.append((name, ref))
    after = opt.state.get(p)
    if after is not found:
        if found is not None or after is None:
            return None
        template.makes_state = True
    for k, v in (after or {}).items():
        if entries is not None and k in entries and v is entries[k]:
            continue
        if not isinstance(v, Tracer):
            return None
        ref = _operand_ref(v._value, made, role_of)
        if ref is None:
            return None
        template.rebinds.append((k, ref))
    if entries is not None and any(k not in (after or {}) for k in entries):
        return None
    return template


def _operand_ref(v, made: dict, role_of: dict) -> tuple | None:
    """How a replay finds operand `v` (None: it cannot)."""
    if not isinstance(v, Value):
        return ("literal", v)
    if id(v) in made:
        return made[id(v)]
    if id(v) in role_of:
        return ("role", role_of[id(v)])
    if v.type.shape == ():
        return ("outside", v)  # a 0-d value made before the update: the group's (the learning rate)
    return None


def _replay(state: TraceState, opt, p: Tensor, roles: dict, values: dict, template: Template) -> None:
    """p's update as `template` recorded it for another parameter of the same kind."""
    outputs: list = []

    def find(ref):
        tag = ref[0]
        if tag == "node":
            return outputs[ref[1]][ref[2]]
        if tag == "role":
            return values[ref[1]]
        return ref[1]  # an outside value or a literal

    shape = tuple(p.shape)
    for op, operands, attrs, types in template.nodes:
        # the result types follow from the recording: an elementwise op over operands of the
        # parameter's shape or none has the parameter's shape or none (checked when recorded)
        specs = [TensorSpec(shape if full else (), dtype) for dtype, full in types]
        outputs.append(_emit(state, op, [find(r) for r in operands], attrs, specs))
    for name, ref in template.writes:
        inplace_on_captured(roles[name], Tracer(state, find(ref)))
    if template.makes_state:
        opt.state[p] = {}
    for k, ref in template.rebinds:
        opt.state[p][k] = Tracer(state, find(ref))
