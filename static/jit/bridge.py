"""The bridge between a compiled call and the caller's objects: graph input arrays from the
arguments, in-place updates written back, outputs wrapped as tensors, and the eager autograd
node (`CompiledFunctionBackward`) whose backward runs the compiled backward graph."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

import eager
from eager._grad_mode import STATE
from eager._tensor import METADATA_VERSION, Tensor

from ..tracing import pytree
from ..tracing.function import TraceResult

if TYPE_CHECKING:
    from .entry import Entry

class Executable(Protocol):
    """What a backend builds from a graph (static.jit.executable): arrays in, arrays out."""

    def run(self, arrays: list[Any]) -> list[Any]: ...


_OVERLAP_MSG = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
                "location. Please clone() the tensor before performing the operation.")


def data_of(obj):
    """The array behind a tensor (or the array itself)."""
    return obj._data if isinstance(obj, Tensor) else obj


def as_tensor(v) -> Tensor:
    return v if isinstance(v, Tensor) else Tensor._make(np.asarray(v) if isinstance(v, np.generic) else v)


def input_arrays(trace: TraceResult, leaves: list) -> list:
    """One array per graph input: the explicit leaves, then the captured tensors as they are now."""
    arrays = []
    for leaf_index, v in zip(trace.input_leaves, trace.graph.inputs):
        leaf = leaves[leaf_index]
        if isinstance(leaf, Tensor):
            arrays.append(leaf._data)
        elif isinstance(leaf, (bool, int, float)):
            arrays.append(np.asarray(leaf, dtype=v.type.dtype.np))
        else:
            arrays.append(leaf)
    for o, _ in trace.captured:
        arrays.append(o._data if isinstance(o, Tensor) else o)
    return arrays


def input_objects(trace: TraceResult, leaves: list) -> list:
    """The caller's object behind each graph input (explicit leaves, then captured tensors)."""
    return [leaves[k] for k in trace.input_leaves] + [o for o, _ in trace.captured]


def update_targets(trace: TraceResult, leaves: list) -> list:
    """What each in-place update output is written into (None: a Python number, immutable)."""
    targets = []
    for kind, ref in trace.updates:
        target = leaves[ref] if kind == "input" else trace.captured[ref][0]
        targets.append(None if isinstance(target, (bool, int, float)) else target)
    return targets


def write_back(trace: TraceResult, leaves: list, results: list, rebind: list | None = None,
               copy: frozenset = frozenset()) -> None:
    """Store in-place updates (an optimizer step inside the function) into the caller's tensors.
    Every target is checked before any is written, so a refused write leaves all of them as
    they were rather than some updated and some not. A training step writes back some 150
    parameters, gradients and optimizer states: the copies go through the native call path's
    copy_pairs in one call where it is loaded (0.05 us a pair against np.copyto's 2 us).

    `rebind`: (update index, parameter) of the `.grad`s the call makes (static.training.
    CallPrep.fresh_grads): each becomes a new tensor over its result, as eager's backward makes
    one, rather than being copied into the tensor of the last call; a result in `copy` (it may
    share memory with an input or another output, or be a constant buffer) is copied first."""
    skip = {k for k, _ in rebind} if rebind else ()
    destinations, values, tensors = [], [], []
    for k, (target, value) in enumerate(zip(update_targets(trace, leaves), results)):
        if target is None or k in skip:
            continue  # rebinding a Python number is the caller's business; fresh grads below
        if isinstance(target, Tensor):
            tensors.append(target)
            target = target._data
        destinations.append(target)
        values.append(value)
    copy_pairs = _copy_pairs()
    left = None if copy_pairs is None else copy_pairs(destinations, values)
    if left is None or left:
        _copy_rest(destinations, values, left)
    for tensor in tensors:
        tensor._vc[0] += 1  # an in-place change: saved-tensor checks must see it
    for k, owner in rebind or ():
        value = results[k]
        owner._grad = as_tensor(value.copy() if k in copy else value)


def _copy_rest(destinations: list, values: list, left: list | None) -> None:
    """The copies the batched copy did not make: all of them (`left` None: no batched copy,
    or it found a read-only destination and copied nothing), or from its first refusal on."""
    if left is None:
        if any(isinstance(d, np.ndarray) and not d.flags.writeable for d in destinations):
            raise RuntimeError(_OVERLAP_MSG)
        todo = range(len(destinations))
    else:
        # a pair it left (a cast, another layout or device) is copied here, and every pair
        # after it again: targets sharing memory end as the writes in order leave them
        todo = range(left[0], len(destinations)) if left else range(0)
    for k in todo:
        data, value = destinations[k], values[k]
        if type(data) is np.ndarray and type(value) is np.ndarray:
            np.copyto(data, value, casting="unsafe")
        else:
            xp = np if isinstance(data, np.ndarray) else eager._device.cupy_module()
            xp.copyto(data, eager._device.on_device_of(value, data), casting="unsafe")


def writer(trace: TraceResult, leaves: list, rebind: list | None = None, copy: frozenset = frozenset()):
    """`write_back(trace, leaves, results, rebind, copy)` as a generated function
    `write(leaves, results)` of this trace's updates: straight-line code that reads each
    target (the call's argument, or the captured entry as it is now), checks its type is
    the one it had when the function was made (else it runs write_back itself), and makes
    the batched copy, the version bumps and the fresh `.grad`s with no loop, set or type
    test per update. A training step writes back a few dozen parameters and optimizer
    states: W6's 36 updates took ~33 us of a call's Python in write_back's loop, run cold
    after the step's kernels. None where the plan does not apply (a target that is a Python
    number, no batched copy loaded): write_back is then called."""
    copy_pairs = _copy_pairs()
    if copy_pairs is None or not trace.updates:
        return None
    skip = {k for k, _ in rebind} if rebind else set()
    env: dict[str, Any] = {"WRITE_BACK": write_back, "TRACE": trace, "REBIND": rebind, "COPY": copy,
                           "COPY_PAIRS": copy_pairs, "REST": _copy_rest, "AS_TENSOR": as_tensor,
                           "ndarray": np.ndarray, "make": Tensor._make}
    reads, checks, datas, values, bumps = [], [], [], [], []
    for k, ((kind, ref), target) in enumerate(zip(trace.updates, update_targets(trace, leaves))):
        if k in skip:
            continue
        if target is None or not (isinstance(target, Tensor) or type(target) is np.ndarray):
            return None  # a Python number, a CuPy array: write_back's own path
        env[f"T{k}"] = type(target)
        if kind == "input":
            reads.append(f"t{k} = leaves[{int(ref)}]")
        else:
            env[f"E{k}"] = trace.captured[ref]
            reads.append(f"t{k} = E{k}[0]")
        checks.append(f"type(t{k}) is not T{k}")
        if isinstance(target, Tensor):
            datas.append(f"t{k}._data")
            bumps.append(f"t{k}._vc[0] += 1")
        else:
            datas.append(f"t{k}")
        values.append(f"results[{k}]")
    lines = ["def write(leaves, results):", *(f"    {line}" for line in reads)]
    if checks:
        lines += [f"    if {' or '.join(checks)}:", "        return WRITE_BACK(TRACE, leaves, results, REBIND, COPY)",
                  f"    d = [{', '.join(datas)}]", f"    v = [{', '.join(values)}]",
                  "    left = COPY_PAIRS(d, v)", "    if left is None or left:", "        REST(d, v, left)"]
    lines += [f"    {line}" for line in bumps]
    for n, (k, owner) in enumerate(rebind or ()):
        env[f"O{n}"] = owner
        value = f"results[{k}].copy()" if k in copy else f"results[{k}]"
        lines += [f"    r = {value}", f"    O{n}._grad = make(r) if type(r) is ndarray else AS_TENSOR(r)"]
    lines.append("    return None")
    exec(compile("\n".join(lines), f"<static.compile write-back of {trace.graph.name}>", "exec"), env)  # noqa: S102
    return env["write"]


def _copy_pairs():
    """The native call path's batched copy where it is loaded (gmnative.build), else None."""
    build = sys.modules.get("gmnative.build")
    return None if build is None else build.loaded_copy_pairs()


def wrap_outputs(trace: TraceResult, values: list, as_tensors: bool, link=None):
    """The function's result: its structure rebuilt around the output arrays (as tensors when
    tensors came in). `link` = (aliases, caller objects) shares version counters (below)."""
    it = iter(values)
    leaves, outs = [], []
    total = trace.n_outputs + len(trace.out_consts)
    for k in range(total):
        if k in trace.out_consts:
            leaves.append(trace.out_consts[k])
        else:
            v = next(it)
            v = as_tensor(v) if as_tensors else v
            outs.append(v)
            leaves.append(v)
    if link is not None and as_tensors:
        link_aliases(outs, *link)
    build = _unflattener(trace.out_tree)
    return build(leaves) if build is not None else pytree.unflatten(trace.out_tree, leaves)


# structure -> a function building it from its list of leaves (None: pytree.unflatten's walk),
# keyed by the structure's id with the structure kept, so an id is never reused while cached
_UNFLATTENERS: dict[int, tuple[Any, Any]] = {}
_UNFLATTENERS_MAX = 4096


def _unflattener(structure):
    """The result's structure rebuilt by one generated expression (`lambda l: (l[0], (l[1],
    l[2]))`) rather than pytree's recursive walk: a compiled call returning a loss and a tuple
    of parameters paid ~3 us a call for the walk's generators. Tuples, lists, dicts, None,
    named tuples and tuple subclasses; a structure holding dataclasses or objects keeps the walk."""
    found = _UNFLATTENERS.get(id(structure))
    if found is not None and found[0] is structure:
        return found[1]
    env: dict[str, Any] = {}
    count = [0]

    def expr(s) -> str | None:
        kind = s[0]
        if kind == "leaf":
            count[0] += 1
            return f"l[{count[0] - 1}]"
        if kind == "none":
            return "None"
        if kind in ("tuple", "list", "namedtuple", "tuple_of", "dict"):
            children = s[1] if kind in ("tuple", "list") else s[2]
            found = [expr(x) for x in children]
            parts = [p for p in found if p is not None]
            if len(parts) != len(found):
                return None
            if kind == "dict":
                env[f"K{len(env)}"] = s[1]
                return f"dict(zip(K{len(env) - 1}, ({', '.join(parts)}{',' if len(parts) == 1 else ''})))"
            items = ", ".join(parts) + ("," if len(parts) == 1 and kind != "list" else "")
            if kind == "tuple":
                return f"({items})"
            if kind == "list":
                return f"[{items}]"
            env[f"C{len(env)}"] = s[1]
            return f"C{len(env) - 1}({', '.join(parts)})" if kind == "namedtuple" else f"C{len(env) - 1}(({items}))"
        return None  # dataclass, object: pytree's walk

    text = expr(structure)
    build = None if text is None else eval(f"lambda l: {text}", env)  # noqa: S307  (text made above from the structure)
    if len(_UNFLATTENERS) >= _UNFLATTENERS_MAX:
        _UNFLATTENERS.clear()
    _UNFLATTENERS[id(structure)] = (structure, build)
    return build


def link_aliases(tensors, aliases: list, inputs: list) -> None:
    """An output sharing memory with a caller's tensor shares its version counter too, as an
    eager view does: an in-place write through either one is then seen by every saved-tensor
    check (a compiled `x.reshape(-1)` would otherwise hide a write into x from autograd)."""
    for t, candidates in zip(tensors, aliases):
        for i in candidates:
            src = inputs[i]
            if isinstance(src, Tensor) and isinstance(t, Tensor) and \
                    eager._device.may_share_memory(t._data, src._data):
                t._vc = src._vc
                t._base = src if src._base is None else src._base
                break


def rebase(target: Tensor, result: Tensor) -> None:
    """The caller's tensor updated in place by the compiled call takes the history of the
    update, as an eager in-place op moves its result's grad_fn onto the tensor."""
    target.grad_fn = result.grad_fn
    target._output_nr = result._output_nr
    if target._requires_grad != result._requires_grad:  # an entry that captured it must re-check it
        METADATA_VERSION[0] += 1
    target._requires_grad = result._requires_grad


def _aliasing(arrays: list, written: list) -> list[int]:
    """Positions in `arrays` of those that may share memory with one of `written` (bounds
    only). Where each written array's memory is owned by an array, host arrays are first told
    apart by the array owning their memory: arrays of different owners that own their memory
    cannot overlap, so only those of a written array's owner, or over memory no array owns,
    are asked NumPy's bounds check. W6's drop-in CNN (21 residuals against 6 running
    statistics) spent 0.2-0.3 ms a call here through the device-generic check
    (eager._device.may_share_memory, 2 us a pair), and ~25 us asking NumPy of every pair."""
    found = []
    owners = {id(o): o for o in (_owner(w) for w in written if type(w) is np.ndarray)}
    if len(owners) and all(type(w) is np.ndarray for w in written) and all(o.base is None for o in owners.values()):
        for k, a in enumerate(arrays):
            if type(a) is not np.ndarray:
                if any(eager._device.may_share_memory(a, w) for w in written):
                    found.append(k)
                continue
            owner = _owner(a)
            if (id(owner) in owners or owner.base is not None) and any(np.may_share_memory(a, w) for w in written):
                found.append(k)
        return found
    for k, a in enumerate(arrays):
        if any(eager._device.may_share_memory(a, w) for w in written):
            found.append(k)
    return found


def _owner(a: np.ndarray) -> np.ndarray:
    """The array at the end of a's chain of bases (its memory's owner where that is an array;
    where it is another object, a buffer, its `base` is that object, not None)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


class CompiledFunction(eager.autograd.Function):
    """The eager autograd node of a compiled call: its backward runs the compiled backward.

    Outputs: the user's outputs, then one per in-place update (the caller's updated tensor
    takes that output's history). Residuals are saved with `save_for_backward`, together with
    every caller tensor a residual aliases (an input saved as is, or a view of one): eager's
    engine then frees them after the backward and refuses a second backward or an in-place
    change made in between, with the messages it gives for its own nodes."""

    @staticmethod
    def forward(ctx, entry: "Entry", arrays: list, leaves: list, *diff_tensors):
        trace, grad = entry.trace, entry.grad
        if grad is None:
            raise RuntimeError("CompiledFunction: the entry was built without its backward (a call that needs "
                               "gradients must build one)")
        n_user, n_upd = trace.n_outputs, len(trace.updates)
        results = cast(Executable, entry.forward).run(arrays)
        user, updates, residuals = results[:n_user], results[n_user:n_user + n_upd], list(results[n_user + n_upd:])
        for i in entry.fresh_copies:
            user[i] = user[i].copy()
        targets = [t for t in update_targets(trace, leaves) if t is not None]
        if targets:
            # a residual that aliases a buffer about to be overwritten must keep the old values
            for k in _aliasing(residuals, [data_of(t) for t in targets]):
                residuals[k] = residuals[k].copy()
        if residuals and user:
            # nor one that is a returned output: the caller may change that in place before
            # the backward (eager's tensors are apart where the trace merged equal values)
            for k in _aliasing(residuals, [u for u in user if getattr(u, "ndim", None) is not None]):
                residuals[k] = residuals[k].copy()
        write_back(trace, leaves, updates)
        inputs = input_objects(trace, leaves)
        aliased: list[Tensor] = []
        for i in grad.aliased_inputs:
            t = inputs[i]
            if isinstance(t, Tensor) and not any(t is u for u in targets) and not any(t is a for a in aliased):
                aliased.append(t)
        ctx.save_for_backward(*[as_tensor(r) for r in residuals], *aliased)
        ctx.entry, ctx.n_residuals = entry, len(residuals)
        ctx.diff_tensors = diff_tensors
        # outputs the loss does not reach (the running statistics a module updates) get no
        # zeros made for them by eager's engine: the backward makes the seeds it lacks
        ctx.set_materialize_grads(False)
        ctx.out_meta = [(r.shape, r.dtype, np if type(r) is np.ndarray else eager._device.xp_of_array(r))
                        for r in user + updates]
        outs = tuple(as_tensor(r) for r in user + updates)
        link_aliases(outs, entry.output_aliases, inputs)
        for k, t in enumerate(outs):
            if k not in grad.differentiable_outputs:
                ctx.mark_non_differentiable(t)
        return outs

    @staticmethod
    def backward(ctx, *grads):
        saved = ctx.saved_tensors  # raises after a first backward, or if an aliased input changed
        residuals = [t._data for t in saved[:ctx.n_residuals]]
        seeds = []
        for positions in ctx.entry.grad.seed_positions:
            given = [grads[p]._data for p in positions if grads[p] is not None]
            if not given:
                shape, dtype, xp = ctx.out_meta[positions[0]]
                given = [xp.zeros(shape, dtype)]
            total = given[0]
            for g in given[1:]:
                total = total + g
            seeds.append(total)
        results = tuple(as_tensor(r) for r in ctx.entry.grad.backward.run(residuals + seeds))
        if STATE.enabled and results:  # create_graph=True: the compiled backward has no graph of its own
            results = _NotTwiceDifferentiable.apply(len(results), *results, *ctx.diff_tensors)
            results = results if isinstance(results, tuple) else (results,)
        return (None, None, None) + tuple(results)


class _NotTwiceDifferentiable(eager.autograd.Function):
    """Marks gradients computed by a compiled backward under create_graph=True: using them for
    a second derivative is an error rather than a silently missing term."""

    @staticmethod
    def forward(ctx, n: int, *tensors):
        return tuple(Tensor._make(t._data) for t in tensors[:n])

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("a compiled function's backward is not differentiable (a higher-order gradient "
                           "through CompiledFunctionBackward); use static.grad(static.grad(f)) for higher "
                           "order, or call the function uncompiled")
