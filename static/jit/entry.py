"""One compiled signature: the trace and what runs it.

The function is traced once per signature. When the call wants gradients (grad mode on and
an input or a captured tensor requires grad), the backward is recorded into the same trace
(a joint graph), which is optimized as a whole and split by a min-cut into the forward that
runs at call time and the backward that `CompiledFunctionBackward` runs; no forward-only
module is built for it. Otherwise the forward-only pipeline runs. What the key already
decides (output kind, which inputs are differentiated) is worked out here once, so that a
cached call does no more than check, run and wrap."""
from __future__ import annotations

import functools
import gc
import itertools
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eager._tensor import METADATA_VERSION, Tensor
from eager.nn.module import structure_version

from ..autodiff import reached, vjp
from ..ir import Graph, Value
from ..passes import Split, is_recording
from ..passes.aliasing import alias_sets, aliased_inputs, input_free_outputs, output_aliases
from ..passes.rewrite import clone
from ..tracing import guards
from ..tracing.custom_function import customs_of
from ..tracing.function import TraceResult, _attribute_path, refresh_sources, trace_function
from ..tracing.tracer import Tracer, TraceState
from ..training.backward import freed_outputs
from ..training.guards import GradGuard
from . import trace_cache
from .signature import CallKey


def _through_underivable(state: TraceState, reach: set) -> set:
    """The values whose backward would run the VJP of an op PyTorch does not differentiate
    (floor_divide, heaviside: differentiable_order 0). A compiled output that depends on one
    gets no backward built at trace time (a backward through it raises in PyTorch, and here
    the output does not require grad), instead of the whole call failing for a forward that
    may never be differentiated; static.grad and a traced backward() still raise."""
    from gmops import REGISTRY  # noqa: PLC0415

    tainted: set = set()
    for node in state.graph.nodes:
        op = REGISTRY.get(node.op)
        if op is None or op.vjp is None or node in state.no_grad_nodes:
            continue
        ins = [v for v in node.inputs if isinstance(v, Value)]
        if (op.differentiable_order == 0 and any(v in reach for v in ins)) or any(v in tainted for v in ins):
            tainted.update(node.outputs)
    return tainted

if TYPE_CHECKING:
    from .compiled import Compiled


@dataclass
class GradPart:
    """What an entry that records gradients adds: the backward and how outputs map to seeds."""

    backward: Any  # the executable of the backward graph
    split: Split  # forward and backward graphs, residuals
    joint: Graph  # the joint graph as traced (what `explain` shows first)
    wrt_leaves: tuple  # argument leaf indices differentiated (each tensor once)
    wrt_captured: tuple  # captured positions differentiated
    seed_positions: list  # per backward seed: its positions among user outputs + updates
    differentiable_outputs: frozenset  # positions among user outputs + updates that get a grad_fn
    aliased_inputs: list = field(default_factory=list)  # forward inputs a residual may share memory with


class Entry:
    """One compiled signature (see the module docstring)."""

    def __init__(self, owner: "Compiled", args: tuple, key: CallKey, leaves: list) -> None:
        self.owner = owner
        self.key = key
        self.grad: GradPart | None = None
        self.stages: list = []
        # always ready to record a backward: even under an outer no_grad, an enable_grad() region
        # inside may make an output require grad (the recorder finds nothing to do otherwise)
        recorder = _GradRecorder(key, leaves, owner)
        collecting = gc.isenabled()
        try:
            # no cyclic collection while tracing: a trace makes thousands of nodes and values
            # that all live on, which each collection would walk again (a fifth of a W5
            # trace). Not while the passes run: they make garbage, and a heap grown without
            # collections made a cold build slower.
            gc.disable()
            trace = trace_function(owner._trace_target, args, owner.static_argnums, owner.__name__,
                                   same_as=key.same_as, finish=recorder, verify_graph=False,  # (trace_cache verifies)
                                   effects_kept=True)  # side effects replayed per call (static.tracing.side_effects)
        finally:
            if collecting:
                gc.enable()
        self.trace: TraceResult = trace
        # per captured tensor: shape, dtype and requires_grad (None: not a tensor) as traced
        self._captured_state = [(_data(o).shape if not _symbolic(v) else None,  # (a draw over a dynamic dim)
                                 _data(o).dtype, o._requires_grad if isinstance(o, Tensor) else None)
                                for o, v in trace.captured]
        # the same check with C-level loops (a 50-parameter step captures 150 tensors: a Python
        # loop over them was most of a cached call's checks), when every captured object is a
        # tensor of a fixed shape
        state = self._captured_state
        self._vector_check = bool(state) and all(isinstance(o, Tensor) for o, _ in trace.captured) \
            and all(shape is not None for shape, _, _ in state)
        self._shapes = [shape for shape, _, _ in state]
        self._dtypes = [dtype for _, dtype, _ in state]
        self._grads = [grad for _, _, grad in state]
        self._other_sources = [s for s in trace.sources if not _through_module(s[1])]
        self._other_guards = _merged_grad_guards([g for g in trace.guards if not _module_guard(g)] + [
            g.class_snapshot for g in trace.guards if _module_guard(g) and g.class_snapshot is not None])
        self._checked_at = -1  # the structure version of the last full check (invalid())
        # eager's tensor metadata version (eager._tensor.METADATA_VERSION) at the last check that
        # read every captured tensor: while it has not moved, no captured tensor changed shape,
        # dtype or requires_grad, and the per-tensor pass is skipped. What else puts another
        # tensor among the captured ones moves it too (the call's own preparation putting the
        # .grad it finds there: static.training.CallPrep) or is looked at (a source re-read), so
        # that every object the skipped pass would read is one the last full pass read.
        self._meta_at = -1
        self._versioned = self._vector_check
        self.n_captured = len(trace.captured)
        self.checks = bool(trace.captured or trace.guards)  # anything to re-check on a cached call
        self.eager_reason = _overlap_with_update(key, trace) or trace.refused
        if self.eager_reason is not None:
            return  # calls with this signature run the function eagerly: nothing to build
        self.stages.append(("traced", trace.graph))  # trace_cache verifies it when it builds from it
        self.stages.append(("verified", trace.graph))
        n_user, n_upd = trace.n_outputs, len(trace.updates)
        if recorder.built is not None or recorder.seeds:
            if recorder.built is not None:  # the autodiff cache answered: the backward was not recorded
                built, shown = recorder.built, trace.graph
            else:
                joint = trace.graph
                shown = clone(joint) if is_recording() else joint  # explain shows the joint before the passes
                primal = [v for v in joint.inputs if v not in recorder.seeds]
                built = trace_cache.build_joint(joint, primal, recorder.seeds, n_user + n_upd, self.stages, owner)
                if recorder.autodiff_key is not None:
                    trace_cache.remember_autodiff(recorder.autodiff_key, built)
            self.built = built  # the post-trace cache holds it weakly: alive while this signature is
            split = built.split
            assert split is not None  # build_joint always splits the joint graph (the passes verified both)
            self.graph = split.forward
            self.forward = built.forward
            self.grad = GradPart(
                backward=built.backward, split=split, joint=shown,
                wrt_leaves=recorder.wrt_leaves, wrt_captured=recorder.wrt_captured,
                seed_positions=recorder.seed_positions, differentiable_outputs=recorder.differentiable,
                aliased_inputs=aliased_inputs(split.forward, split.residuals))
            self.stages[0] = ("traced", shown)
            self.stages[1] = ("verified", shown)
        else:
            built = trace_cache.build_forward(trace.graph, self.stages, owner)  # passes skipped on a hit
            self.built = built  # the post-trace cache holds it weakly: alive while this signature is
            self.graph, self.forward = built.graph, built.forward
        differentiable = self.grad.differentiable_outputs if self.grad is not None else frozenset()
        # a loss a backward() inside went through: eager's keeps a (freed) grad_fn, and so does this one
        self.freed_outputs = [k for k in recorder.freed if k not in differentiable]
        leaf_keys = key.leaves
        kinds = {k[0] for k in leaf_keys}
        # eager tensors in (or only numbers): tensors out; NumPy/CuPy arrays in: arrays out
        self.as_tensors = "tensor" in kinds or "array" not in kinds
        # the fast paths: every leaf a graph input given as an eager tensor; one plain output
        every_leaf_an_input = trace.input_leaves == list(range(len(leaf_keys))) and not trace.captured
        self.all_tensor_inputs = every_leaf_an_input and all(k[0] == "tensor" for k in leaf_keys)
        self.all_array_inputs = every_leaf_an_input and all(k[0] == "array" for k in leaf_keys)
        self.output_aliases = output_aliases(self.graph, n_user + (n_upd if self.grad else 0))
        self.has_output_aliases = any(self.output_aliases)
        self.fresh_copies = _fresh_copies(self.graph, trace, n_user)
        self.fresh_grads = trace.prepare.rebinds() if trace.prepare is not None else []
        self.fresh_grad_copies = _shared_results(self.graph, n_user, [k for k, _ in self.fresh_grads])
        self.writer: Any = None  # bridge.writer's function for this trace's updates, made at the first call (False: none)
        self.runner: Any = None  # call_plan.runner's function for the calls, made at the second (False: none)
        self.single_output = (trace.replays is None and trace.out_tree == ("leaf",) and n_user == 1 and not trace.updates
                              and not trace.out_consts and not self.fresh_copies and not self.freed_outputs)
        # a tuple of arrays out, arrays in, nothing else to do: value_and_grad's (value, grad)
        self.plain_tuple_output = trace.replays is None and (
            trace.out_tree == ("tuple", tuple(("leaf",) for _ in range(n_user)))
            and not trace.updates and not trace.out_consts and not self.as_tensors
            and not self.has_output_aliases and not self.fresh_copies)

    def invalid(self) -> str | None:
        """Why this entry no longer fits the call (None: it does): a captured tensor re-read
        with another shape, dtype or kind, one whose requires_grad changed, or a Python value
        the trace read that has changed since.

        What is read through modules (a parameter at `model.blocks.0.weight`, a module's
        `eps`) can only change with eager.nn's structure version: while it stays as it was at
        the last full check, only the rest is re-read. The per-call cost is then one pass over
        the captured tensors (shape, dtype, requires_grad: O(parameters)), no module walk."""
        trace = self.trace
        version = structure_version()
        quick = version == self._checked_at
        meta = METADATA_VERSION[0]
        fast = quick and meta == self._meta_at and self._versioned
        # set again only when every check passes: a failed check may have swapped a source's
        # new tensor into the captured list, which must be read again next time
        self._meta_at = -1
        if trace.captured:
            sources = self._other_sources if quick else trace.sources
            if fast:
                # no tensor metadata changed since every captured tensor was read: only a
                # source now holding another tensor needs the per-tensor pass
                swapped = _swap_sources(trace, sources) if sources else False
                if swapped is None:
                    return "a captured tensor changed shape, dtype or kind"
                skip = not swapped
            else:
                if sources and not refresh_sources(trace, sources):
                    return "a captured tensor changed shape, dtype or kind"
                skip = False
            captured: list = []
            if skip:
                pass
            elif self._vector_check and all(map(isinstance, objs := list(map(_FIRST, trace.captured)),
                                               itertools.repeat(Tensor))):
                datas = list(map(_DATA, objs))
                if list(map(_SHAPE, datas)) != self._shapes or list(map(_DTYPE, datas)) != self._dtypes:
                    return "a captured tensor changed shape or dtype"
                if list(map(_REQUIRES_GRAD, objs)) != self._grads:
                    return "which captured tensors require grad changed"
            else:
                captured = trace.captured
            for (o, _), (shape, dtype, grad) in zip(captured, self._captured_state):
                d = o._data if type(o) is Tensor or isinstance(o, Tensor) else o
                if (shape is not None and d.shape != shape) or d.dtype != dtype:
                    return "a captured tensor changed shape or dtype"
                if grad is not None and o._requires_grad != grad:
                    return "which captured tensors require grad changed"
        if trace.guards:
            reason = guards.first_change(self._other_guards if quick else trace.guards)
            if reason is not None:
                return reason
        self._checked_at = version
        self._meta_at = meta
        return None


def _swap_sources(trace: TraceResult, sources: list) -> bool | None:
    """`refresh_sources`, saying also whether a source now holds another object (True: the
    captured tensors must be read again) or no longer fits (None)."""
    captured = trace.captured
    if all(_holds(captured[i][0], getter) for i, getter in sources):
        return False
    return True if refresh_sources(trace, sources) else None


def _holds(obj, getter) -> bool:
    try:
        return getter() is obj
    except Exception:  # noqa: BLE001  (the name went away: refresh_sources keeps what was traced)
        return True


class _GradGuards:
    """The GradGuards of a step (one per parameter whose .grad it read: 50 for a 50-parameter
    step with zero_grad(set_to_none=False)) checked in one C-level pass; on a difference the
    parameter's own guard says what changed."""

    __slots__ = ("guards", "params", "was_none")

    def __init__(self, guards: list) -> None:
        self.guards = guards
        self.params = [g.param for g in guards]
        self.was_none = [g.was_none for g in guards]

    def changed(self) -> str | None:
        # (a comprehension: the interpreter's specialized attribute read is twice attrgetter's)
        if [p._grad is None for p in self.params] == self.was_none:
            return None
        return guards.first_change(self.guards)


def _merged_grad_guards(found: list) -> list:
    grads = [g for g in found if type(g) is GradGuard]
    if len(grads) < 2:
        return found
    return [g for g in found if type(g) is not GradGuard] + [_GradGuards(grads)]


_FIRST = operator.itemgetter(0)
_DATA = operator.attrgetter("_data")
_SHAPE = operator.attrgetter("shape")
_DTYPE = operator.attrgetter("dtype")
_REQUIRES_GRAD = operator.attrgetter("_requires_grad")


def _symbolic(v) -> bool:
    """Whether a value's type has a symbolic size (static.jit.dynamic_shapes): a random draw's
    placeholder over a dynamic dimension, made at each call's sizes."""
    return any(type(d) is not int and isinstance(d, int) for d in v.type.shape)


def _through_module(getter) -> bool:
    """A getter that reads a parameter or buffer along a module's attribute path."""
    return isinstance(getter, functools.partial) and getter.func is _attribute_path


def _module_guard(g) -> bool:
    """A guard on a module's attributes that only an assignment can change (and an
    assignment, a submodule swapped, a hook added or removed, moves the structure version):
    none of them holds a container, which can change in place. (Its class's dict is checked
    on every call: see `Entry.__init__`.)"""
    return isinstance(g, guards.Attributes) and guards.is_module(g.module) \
        and not any(_holds_container(frozen) for _, frozen in g.snapshot)


def _holds_container(frozen) -> bool:
    if type(frozen) is guards.Same:
        return False
    kind = frozen[0]
    return isinstance(kind, type) and issubclass(kind, (dict, list, set, tuple)) and (
        kind is not tuple or any(_holds_container(v) for v in frozen[1]))


def _shared_results(graph: Graph, n_user: int, updates: list) -> frozenset:
    """Of the update outputs `updates` (indices among the updates, which follow the n_user
    user outputs), those whose buffer a caller's tensor must not take as is: one that may
    share memory with an input, one computed from no input (generated code may return the
    same buffer every call), one the graph also returns at another position."""
    if not updates:
        return frozenset()
    alias = alias_sets(graph)
    free = set(input_free_outputs(graph, len(graph.outputs)))
    count: dict = {}
    for v in graph.outputs:
        if isinstance(v, Value):
            count[v] = count.get(v, 0) + 1
    shared = set()
    for k in updates:
        v = graph.outputs[n_user + k]
        if not isinstance(v, Value) or alias.get(v) or n_user + k in free or count[v] > 1:
            shared.add(k)
    return frozenset(shared)


def _fresh_copies(graph: Graph, trace: TraceResult, n_user: int) -> list:
    """User outputs to copy on every call: constants the generated code may hand back as the
    same buffer each time, and tensors made inside the function returned as they are (a
    trace-time constant that is an input of the graph). Every call returns fresh outputs."""
    first_constant = len(trace.input_leaves)
    constant_inputs = {graph.inputs[first_constant + i] for i in trace.constants}
    out = set(input_free_outputs(graph, n_user))
    out.update(i for i, v in enumerate(graph.outputs[:n_user]) if v in constant_inputs)
    return sorted(out)


def _data(obj):
    return obj._data if isinstance(obj, Tensor) else obj


def _overlap_with_update(key: CallKey, trace: TraceResult) -> str | None:
    """Arguments that overlap in memory without being the same tensor (x and x[0]), one of
    them updated in place: a functional graph cannot show the write through the other, so
    the call runs eagerly, which gives eager's semantics by construction."""
    if not key.overlaps or not trace.updates:
        return None
    updated = {ref for kind, ref in trace.updates if kind == "input"}
    for group in key.overlaps:
        if updated & set(group):
            return ("arguments that overlap in memory (views of one tensor) are updated in place; "
                    "the call runs eagerly to keep eager's semantics")
    return None


class _GradRecorder:
    """The `finish` hook of a trace that may need gradients: after the function returned, it
    finds the outputs (and in-place updates of tensors) that depend differentiably on an input
    or captured tensor that requires grad, and records their backward into the same graph,
    seeded by new inputs `grad_out<k>`.

    Before recording, it asks the autodiff cache (static.jit.trace_cache): a forward graph that was
    differentiated, optimized and generated before, with the same outputs to differentiate,
    finds what was built then (`built`), and no backward is recorded at all."""

    def __init__(self, key: CallKey, leaves: list, owner: "Compiled") -> None:
        self.key, self.leaves, self.owner = key, leaves, owner
        self.seeds: list = []
        self.grads: list = []
        self.wrt_leaves: tuple = ()
        self.wrt_captured: tuple = ()
        self.seed_positions: list = []
        self.differentiable: frozenset = frozenset()
        self.built: trace_cache.Built | None = None  # found in the autodiff cache: nothing recorded
        self.autodiff_key: str | None = None  # where to keep what is built (None: not cacheable)
        self.freed: list = []  # user outputs a backward() inside went through (static.training)

    def __call__(self, state: TraceState, origin: list, outputs: list, updates: list, refs: list) -> list:
        self.freed = freed_outputs(state, outputs)
        wrt, wrt_leaves = [], []
        for k, leaf_key in enumerate(self.key.leaves):
            v = origin[k]
            if leaf_key[0] == "tensor" and leaf_key[4] and v is not None and v not in wrt:
                wrt.append(v)
                wrt_leaves.append(k)
        captured = list(state.captured.values())
        wrt_captured = [i for i, (o, _) in enumerate(captured) if isinstance(o, Tensor) and o._requires_grad]
        wrt += [captured[i][1] for i in wrt_captured]
        if not wrt:
            return []
        reach = reached(state, wrt)
        reach -= _through_underivable(state, reach)
        candidates = outputs + updates
        order: list = []
        positions: dict = {}
        for p, v in enumerate(candidates):
            if isinstance(v, Value) and v in reach and (p < len(outputs) or self._takes_history(refs[p - len(outputs)],
                                                                                            captured)):
                if v not in positions:
                    positions[v] = []
                    order.append(v)
                positions[v].append(p)
        if not order:
            return []
        self.wrt_leaves, self.wrt_captured = tuple(wrt_leaves), tuple(wrt_captured)
        self.seed_positions = [positions[v] for v in order]
        self.differentiable = frozenset(p for ps in self.seed_positions for p in ps)
        key = None if customs_of(state) or is_recording() else \
            trace_cache.autodiff_key(state, candidates, order, wrt, self.owner)
        if key is not None:
            self.built = trace_cache.lookup_autodiff(key, self.owner)
            if self.built is not None:
                return []
        before = (len(state.captured), len(state.guards), len(state.created))
        self.seeds = []
        for k, v in enumerate(order):
            seed = Value(f"grad_out{k}", v.type)
            state.graph.inputs.append(seed)
            self.seeds.append(seed)
        self.grads = vjp(state, order, [Tracer(state, s) for s in self.seeds], wrt)
        self.grads = [g._value for g in self.grads]
        # cacheable only when the backward is a function of the key alone: it captured no
        # tensor, read no guarded value and made no constant (those are inputs of the call)
        if key is not None and (len(state.captured), len(state.guards), len(state.created)) == before:
            self.autodiff_key = key
        return self.grads

    def _takes_history(self, ref: tuple, captured: list) -> bool:
        """An in-place update takes a history when it is written into an eager tensor (a NumPy
        array or a Python number has none)."""
        kind, index = ref
        target = self.leaves[index] if kind == "input" else captured[index][0]
        return isinstance(target, Tensor)
