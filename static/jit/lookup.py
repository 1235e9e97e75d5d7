"""The per-signature cache of a compiled function: the entry for a call's key, checked
(captured tensors re-read, guarded Python values unchanged) or traced anew within the retrace
limit, and the entries kept for states the function alternates between. These are methods of
`Compiled` (static.jit.compiled binds them), written here as functions of it."""
from __future__ import annotations

import time
import warnings

from eager._dynamo import STANCE as _STANCE

from .. import logs
from ..errors import TraceError
from ..tracing.function import check_hashable
from ..training.bindings import first_step_pending
from . import dynamic_shapes, graph_breaks
from .entry import Entry
from .signature import CallKey, call_key, closest, describe_change


def lookup(self, args: tuple, stacklevel: int, calling: bool = False):
    """(leaves, key, entry) for this call: the cached entry when it still fits (captured
    tensors re-read, guarded Python values unchanged), otherwise a new trace; entry None
    when the call runs eagerly (`calling`: a call, not a look inside, which may run the
    first step of an optimizer eagerly: see `_first_optimizer_step`)."""
    leaves, key = call_key(args, self._static_positions(args), self._modes() if self._module is not None else ())
    try:
        entry = self._cache.get(key)
    except TypeError:  # an unhashable non-array leaf inside a pytree argument
        for leaf in leaves:
            check_hashable(leaf, "leaf")
        raise
    if entry is not None:
        reason = entry.invalid() if entry.checks else None
        if reason is None:
            return leaves, key, entry
        other = self._alternate(key, entry)
        if other is not None:
            return leaves, key, other
    else:
        found = dynamic_shapes.lookup(self, key, leaves)  # an entry with symbolic sizes that fits
        if found is not None:
            return leaves, key, found
        reason = describe_change(closest(self._cache, key), key) if self._cache else None
        if calling and not self._cache and self._first_optimizer_step():
            return leaves, key, None
    return leaves, key, self._miss(args, key, leaves, reason, stacklevel + 1)


def first_optimizer_step(self) -> bool:
    """Whether the very first call of this function runs eagerly because it is the first
    step of an optimizer it reaches whose first step makes state from the gradient (SGD's
    momentum buffer; see `training.first_step_pending`: state that does not depend on the
    gradient is made before the trace, and that first step is compiled). Such a step's
    graph differs from every later step's and would run once: compiling it would double
    the compile time of a training loop for one call. Run eagerly, it gives eager's
    results by construction, and the second call traces the steady graph (one signature
    for a steady loop). Asked once."""
    if self._first_step_checked or self.fullgraph:  # fullgraph=True never runs the function eagerly
        return False
    self._first_step_checked = True
    pending = first_step_pending(self._traceable)
    if pending:
        logs.recompiles.debug("%s: the first call runs eagerly (an optimizer's first step makes its state from the gradient)",
                              self.__name__)
    return pending


def miss(self, args: tuple, key: CallKey, leaves, reason: str | None, stacklevel: int):
    """Trace a new entry (or replace a stale one), within the retrace limit."""
    if key in self._eager_keys or self._gave_up:
        return None
    if self._cache and _STANCE.name in ("eager_on_recompile", "fail_on_recompile"):  # eager.compiler.set_stance
        if _STANCE.name == "eager_on_recompile":
            return None
        raise RuntimeError(f"{self.__name__}: needs a new trace because {reason}, and "
                           "eager.compiler.set_stance('fail_on_recompile') is in force")
    if reason is not None and len(self.retraces) >= self.max_retraces:
        message = (f"static.compile: {self.__name__} was retraced {len(self.retraces)} times (the limit, "
                   f"max_retraces={self.max_retraces}) and needs another trace because {reason}")
        if self.fullgraph:
            raise RuntimeError(message + "; fullgraph=True does not fall back to eager. Keep shapes, dtypes "
                               "and the Python values the function reads fixed, or raise max_retraces.")
        self._gave_up = True
        remedy = (" A batch or sequence length that varies: pad it to a few fixed sizes, or drop the last "
                  "partial batch (DataLoader(drop_last=True))." if "(dimension " in message else "")
        warnings.warn(message + "; calls with new signatures run eagerly from now on. Keep shapes and dtypes "
                      "fixed, or mark changing Python values with static_argnums." + remedy, RuntimeWarning,
                      stacklevel=stacklevel + 1)
        return None
    started = time.perf_counter()
    try:
        entry = dynamic_shapes.build(self, args, key, leaves) or Entry(self, args, key, leaves)
    except TraceError as exc:
        if self.fallback != "eager":
            raise  # nothing was cached: the next valid call traces afresh
        self._eager_keys.add(key)
        if graph_breaks.split_at_break(self, key, args, exc):  # compiled pieces around the break
            return None
        if not self._warned_fallback:
            self._warned_fallback = True
            warnings.warn(f"static.compile: {self.__name__} cannot be traced ({exc}); running it eagerly "
                          "(fallback='eager').", RuntimeWarning, stacklevel=stacklevel + 1)
        return None
    self.compile_seconds.append(time.perf_counter() - started)
    if reason is not None:
        self.retraces.append(reason)
    logs.recompiles.debug("%s: %s", self.__name__, f"retraced because {reason}" if reason else "first trace")
    old = self._cache.get(key)
    if old is not None:  # kept: a state that alternates (train/eval, a toggled flag) finds it again
        self._alternates.setdefault(key, []).append(old)
    self._cache[key] = entry
    return entry


def alternate(self, key: CallKey, stale: Entry) -> Entry | None:
    """Another entry traced for this key whose checks pass now (the Python state the
    function reads alternates between values it has seen); it becomes the key's entry."""
    others = self._alternates.get(key)
    if not others:
        return None
    for i, e in enumerate(others):
        if e.invalid() is None:
            others[i] = stale
            self._cache[key] = e
            return e
    return None


def entries(self) -> list:
    """Every compiled entry: per signature the current one and those kept for states the
    function alternates between. The retrace limit counts these (less the first)."""
    out = list(self._cache.values())
    for others in self._alternates.values():
        out += others
    return out
