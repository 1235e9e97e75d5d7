"""The call path of a compiled function: the last call's signature checked in generated code
(static.jit.signature.fast_call), or the entry looked up; its executable run on the call's
arrays, in-place updates written back, outputs wrapped (static.jit.bridge), the trace's Python
side effects redone; through `CompiledFunction` when the call records gradients. These are
methods of `Compiled` (static.jit.compiled binds them), written here as functions of it."""
from __future__ import annotations

import warnings

import numpy as np

import eager
from eager._dynamo import STANCE as _STANCE
from eager._tensor import Tensor
from eager.nn.module import structure_version
from gmbase import settings

from ..errors import TraceError
from ..tracing.tracer import ACTIVE
from ..training.backward import with_freed_history
from . import graph_breaks
from .bridge import CompiledFunction, as_tensor, input_arrays, input_objects, rebase, wrap_outputs, write_back, writer
from .call_plan import runner
from .check import checked_call
from .entry import Entry
from .signature import MISS, fast_call


def call(self, *args, **kwargs):
    if _STANCE.force_eager and not ACTIVE.stack:  # eager.compiler.set_stance("force_eager"), disable()
        return self.__wrapped__(*args, **kwargs)
    fast = self._fast  # (None under check=True)
    if fast is not None and not kwargs:
        out = fast(args)  # the signature of the last call, checked exactly as the key would be
        if out is not MISS:
            return out
    if self.check and not ACTIVE.stack:
        return checked_call(self, args, kwargs)
    return self._call_unchecked(args, kwargs, 3)


def call_unchecked(self, args: tuple, kwargs: dict, stacklevel: int):
    """A call (`stacklevel`: of the user's frame that made it, for warnings)."""
    if kwargs or self._needs_binding:
        args = self._arguments(args, kwargs)
    if ACTIVE.stack:
        return self._call_traceable(args)  # called while tracing another function: inline it
    leaves, key, entry = self._lookup(args, stacklevel=stacklevel, calling=True)
    if entry is None or entry.eager_reason is not None:
        if entry is not None and entry.trace.refused is not None:
            self._refused(entry, stacklevel + 1)
        return graph_breaks.run_uncompiled(self, key, args)  # its graph-break split, or eagerly
    self._last_entry = entry
    if entry is not self._fast_entry:
        self._fast_entry = entry
        self._fast = fast_call(key, entry, self._run, self._modes if self._module is not None else None) \
            if not self._needs_binding and not self.static_argnums and not self.check else None
    return self._run(entry, leaves)


def planned() -> bool:
    """Whether a cached call runs as generated code (call_plan.runner, bridge.writer), read when
    an entry makes them: GRAPHMODE_CALL_PLAN=0 keeps the general path (a comparison's baseline)."""
    return settings.switch("GRAPHMODE_CALL_PLAN")


def refused(self, entry: Entry, stacklevel: int) -> None:
    """A signature whose trace did something to Python state that a compiled call cannot
    redo runs eagerly: said once (fullgraph=True raises instead)."""
    reason = entry.trace.refused
    if self.fullgraph:
        raise TraceError(f"{self.__name__}: {reason}; fullgraph=True does not run it eagerly")
    if reason not in self._refusals_said:
        self._refusals_said.add(reason)
        warnings.warn(f"static.compile: {self.__name__} runs eagerly for this signature: {reason}",
                      RuntimeWarning, stacklevel=stacklevel)


def run(self, entry: Entry, leaves):
    """Run a cached signature's executable on the call's leaves, write in-place updates
    back and wrap the outputs."""
    trace = entry.trace
    if trace.replays is not None and trace.replays.before:  # a scheduler stepped before the optimizer
        trace.replays.run_before()
    if trace.prepare is not None:  # random draws as eager makes them, attributes the trace set (static.training)
        trace.prepare(leaves, rebind=entry.grad is None)
    plan = entry.runner
    if plan is None:  # the rest as one generated function (call_plan.runner), made at the second call
        if entry.writer is None and trace.updates:
            return run_prepared(self, entry, leaves)
        plan = entry.runner = planned() and runner(entry, leaves, lambda e, lv: run_prepared(self, e, lv)) or False
    if plan:
        return plan(leaves)
    return run_prepared(self, entry, leaves)


def run_prepared(self, entry: Entry, leaves):
    """run's general path, after the call's CallPrep ran."""
    trace = entry.trace
    if entry.grad is not None:
        return self._call_with_grad(entry, leaves)
    if entry.all_tensor_inputs:
        results = entry.forward.run([t._data for t in leaves])
    elif entry.all_array_inputs:
        results = entry.forward.run(list(leaves))
    else:
        results = entry.forward.run(input_arrays(trace, leaves))
    if entry.plain_tuple_output:
        return tuple(results)
    if entry.single_output and not entry.has_output_aliases:
        r = results[0]
        return Tensor._make(np.asarray(r) if isinstance(r, np.generic) else r) if entry.as_tensors else r
    for i in entry.fresh_copies:  # a constant the function returns: a new buffer every call
        results[i] = results[i].copy()
    if trace.updates:
        write = entry.writer
        if write is None:  # the write-back as straight-line code, made once (bridge.writer)
            write = entry.writer = planned() and writer(trace, leaves, entry.fresh_grads,
                                                        entry.fresh_grad_copies) or False
        if write:
            write(leaves, results[trace.n_outputs:])
        else:
            write_back(trace, leaves, results[trace.n_outputs:], entry.fresh_grads, entry.fresh_grad_copies)
    if entry.freed_outputs and entry.as_tensors:
        for i in entry.freed_outputs:
            results[i] = with_freed_history(as_tensor(results[i]))
    link = (entry.output_aliases, input_objects(trace, leaves)) if entry.has_output_aliases else None
    out = wrap_outputs(trace, results[:trace.n_outputs], entry.as_tensors, link)
    return _replayed(trace, out)


def modes(self) -> tuple:
    """The training flag of every submodule of a compiled module, walked again only after
    some module changed (eager.nn's structure version): no tree walk per call."""
    version = structure_version()
    if version != self._modes_version:
        assert self._module is not None
        self._modes_value = tuple(m.training for m in self._module.modules())
        self._modes_version = version
    return self._modes_value


def call_with_grad(self, entry: Entry, leaves):
    trace, grad = entry.trace, entry.grad
    assert grad is not None  # called for entries that record gradients
    tensors = [leaves[k] for k in grad.wrt_leaves] + [trace.captured[i][0] for i in grad.wrt_captured]
    with eager.enable_grad():  # an enable_grad() region inside records even under an outer no_grad
        outs = CompiledFunction.apply(entry, input_arrays(trace, leaves), leaves, *tensors)
    n_user = trace.n_outputs
    targets = _update_tensors(trace, leaves)
    for k, target in enumerate(targets):
        if target is not None and n_user + k in grad.differentiable_outputs:
            rebase(target, outs[n_user + k])
    for i in entry.freed_outputs:
        with_freed_history(outs[i])
    return _replayed(trace, wrap_outputs(trace, list(outs[:n_user]), True))


def _replayed(trace, out):
    """The function's result, after the trace's Python side effects were redone with this
    call's values (static.tracing.side_effects): the graph returned those values after the result."""
    replays = trace.replays
    if replays is None:
        return out
    if replays.n_values:
        out, values = out
        replays(list(values))
    else:
        replays([])
    return out


def _update_tensors(trace, leaves) -> list:
    out = []
    for kind, ref in trace.updates:
        target = leaves[ref] if kind == "input" else trace.captured[ref][0]
        out.append(target if isinstance(target, Tensor) else None)
    return out
