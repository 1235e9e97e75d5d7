"""Dynamic dimensions: a dimension that changes between calls becomes a symbol (`f32[s0,784]`)
so that one trace serves every size, as PyTorch's automatic dynamic shapes do.

Design. A symbolic size is a `SymInt`: an `int` subclass whose value is the size of the call
being traced (its *hint*) and which carries an integer polynomial over the symbols (`s0*784`).
Everything downstream of the tracer (the ops' abstract rules, the passes, the generators)
computes with it as with the hint; arithmetic between sizes keeps the polynomial, and the text
of a size (`str`, `repr`, f-strings) is the polynomial, so the IR prints `f32[s0,784]` and the
NumPy generator writes `s0*784` where it wrote `25088`, with `s0` bound from an input's shape
at the top of the generated function.

What is never silently wrong. A size may lose its symbol on the way (code that calls
`np.prod`, `int()` or a C function on it gets the hint back): the graph or the generated code
would then hold a number that is right only for the traced size. So a symbolic entry is made
*twice*, at two different hints (the call's sizes and the same sizes plus one), and kept only
when both traces print the same IR and the generators write the same source: any place where
a size was specialized shows up as a difference, and the function is traced statically for
that size instead (the `reason` is kept for `explain()`). Comparisons a trace makes on a
symbol (`B >= 2`, `B == other`, `B % heads == 0`) are recorded as guards and checked at each
call that reuses the entry.

This module is the policy of one compiled function (when a dimension becomes a symbol, the
checking build, the guards checked at each call); the symbolic sizes themselves, the
recording of the comparisons made on them and the tracer's symbols are `static.tracing.symbolic`.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from ..tracing.symbolic import _LOCAL, Recorder, SymInt, _eval, recording, symbols_for_trace

# -- the policy of one compiled function ---------------------------------------------------------

MIN_SYMBOLIC = 2  # sizes 0 and 1 stay numbers, as PyTorch specializes them (1 broadcasts)


@dataclass
class SymbolicEntry:
    """A compiled entry that serves every size of its symbolic dimensions."""

    entry: Any  # static.jit.entry.Entry
    pattern: Any  # the call key with the symbolic sizes as None
    positions: dict  # (leaf, dim) -> symbol name
    guards: dict  # text -> check(env)
    graph_text: str = ""

    def env_of(self, key: Any) -> dict | None:
        """The symbols' values for a call key, or None when the key's sizes do not fit
        (a symbol whose dimensions differ, a size under MIN_SYMBOLIC)."""
        env: dict = {}
        for (leaf, dim), name in self.positions.items():
            size = key.leaves[leaf][1][dim]
            if size < MIN_SYMBOLIC or env.setdefault(name, size) != size:
                return None
        return env

    def failed_guard(self, env: dict) -> str | None:
        for text, check in self.guards.items():
            try:
                ok = check(env)
            except (ZeroDivisionError, KeyError):
                ok = False
            if not ok:
                return text
        return None


class Policy:
    """Which dimensions of a compiled function's arguments are symbols, and its symbolic
    entries. `mode` is compile's `dynamic`: None (automatic: a dimension becomes a symbol
    after it changed once), True (every dimension of every array argument, from the first
    call), False (never: each size is its own trace)."""

    def __init__(self, mode: bool | None = None) -> None:
        self.mode = mode
        self.dims: dict = {}  # (leaf, dim) -> why it is symbolic
        self.entries: list = []
        self.failed: dict = {}  # frozenset of positions -> why a symbolic entry was not kept
        self.log: list = []  # one line per decision, for explain()

    # -- finding an entry for a call ---------------------------------------------------------
    def find(self, key: Any) -> Any:
        """The symbolic entry that serves this call key, or None."""
        for se in self.entries:
            if generalize(key, se.positions) != se.pattern:
                continue
            env = se.env_of(key)
            if env is None or se.failed_guard(env) is not None:
                continue
            if se.entry.checks and se.entry.invalid() is not None:
                continue
            return se.entry
        return None

    # -- deciding which dimensions are symbols -----------------------------------------------
    def note_call(self, key: Any, leaves: Any, cached: list) -> None:
        """Learn from a call that found no entry: dimensions marked with mark_dynamic, and
        (automatic mode) those in which it differs from a cached signature alike in all else."""
        if self.mode is False:
            return
        for k, leaf in enumerate(leaves):
            marked = getattr(leaf, "_dynamo_dynamic_indices", None)
            for d in marked or ():
                self.dims.setdefault((k, d), "marked with mark_dynamic")
        if self.mode is True:
            for k, lk in enumerate(key.leaves):
                if lk[0] in ("tensor", "array"):
                    for d in range(len(lk[1])):
                        self.dims.setdefault((k, d), "dynamic=True")
            return
        for old in cached:
            changed = changed_dims(old, key)
            for pos in changed or ():
                a, b = old.leaves[pos[0]][1][pos[1]], key.leaves[pos[0]][1][pos[1]]
                self.dims.setdefault(pos, f"changed size {a} -> {b} (automatic dynamic shapes)")

    def positions_for(self, key: Any, leaves: Any) -> dict:
        """(leaf, dim) -> symbol name for the symbolic trace of this call: the symbolic
        dimensions this call has (sizes of at least MIN_SYMBOLIC, not marked static); equal
        sizes share a symbol (a batch dimension of x and of y)."""
        by_size: dict = {}
        out: dict = {}
        for (k, d) in sorted(self.dims):
            if k >= len(key.leaves) or key.leaves[k][0] not in ("tensor", "array") or d >= len(key.leaves[k][1]):
                continue
            if d in (getattr(leaves[k], "_dynamo_static_indices", None) or ()):
                continue
            size = key.leaves[k][1][d]
            if size < MIN_SYMBOLIC:
                continue
            name = by_size.setdefault(size, f"s{len(by_size)}")
            out[(k, d)] = name
        return out


def generalize(key: Any, positions: dict) -> Any:
    """The key with the sizes at `positions` replaced by None."""
    if not positions:
        return key
    leaves = list(key.leaves)
    for (k, d) in positions:
        lk = leaves[k]
        shape = list(lk[1])
        shape[d] = None
        leaves[k] = (lk[0], tuple(shape)) + tuple(lk[2:])
    return key._replace(leaves=tuple(leaves))


def changed_dims(old: Any, new: Any) -> list | None:
    """The (leaf, dim) positions in which two call keys differ, when they differ in sizes only
    (same structure, kinds, dtypes, ranks, grad mode): else None."""
    if old.tree != new.tree or len(old.leaves) != len(new.leaves) or old[2:] != new[2:]:
        return None
    out = []
    for k, (a, b) in enumerate(zip(old.leaves, new.leaves)):
        if a == b:
            continue
        if a[0] != b[0] or a[0] not in ("tensor", "array") or a[2:] != b[2:] or len(a[1]) != len(b[1]):
            return None
        out += [(k, d) for d, (x, y) in enumerate(zip(a[1], b[1])) if x != y]
    return out or None


def symbols_of(key: Any, positions: dict, shift: bool = False, hints: dict | None = None) -> dict:
    """{leaf: {dim: SymInt}} for a trace: each symbol at the call's size, or at `hints`
    (name -> size); `shift`: doubled (the checking trace's default)."""
    made: dict = {}
    out: dict = {}
    for (k, d), name in positions.items():
        size = key.leaves[k][1][d]
        sym = made.get(name)
        if sym is None:
            size = hints[name] if hints and name in hints else size * 2 if shift else size
            sym = made[name] = SymInt.symbol(name, size)
        out.setdefault(k, {})[d] = sym
    return out


def other_sizes(made_at: dict, guards: dict) -> dict | None:
    """Sizes for the checking build, each symbol's differing from the first build's, at which
    every guard of the first build holds (the check must take the same branches): double
    first (keeps divisibility), then nearby sizes. None when no candidate satisfies them."""
    names = sorted(made_at)
    for step in (lambda n: 2 * n, lambda n: n + 2, lambda n: n - 1, lambda n: n + 1, lambda n: n - 2,
                 lambda n: 3 * n, lambda n: n + 4, lambda n: n - 4):
        env = {name: step(made_at[name]) for name in names}
        if any(v < MIN_SYMBOLIC or v == made_at[n] for n, v in env.items()):
            continue
        try:
            if all(check(env) for check in guards.values()):
                return env
        except (KeyError, ZeroDivisionError):
            continue
    return None


def describe(policy: Policy | None) -> str:
    """The explain() section on dynamic shapes: which dimensions are symbols and why."""
    if policy is None or (policy.mode is None and not (policy.dims or policy.entries or policy.failed)):
        return ""  # nothing changed size, nothing was asked: nothing to say
    lines = []
    mode = {None: "automatic (a dimension that changes becomes a symbol)", True: "dynamic=True",
            False: "dynamic=False (every size is its own trace)"}[policy.mode]
    lines.append(f"mode: {mode}")
    for (k, d), why in sorted(policy.dims.items()):
        lines.append(f"argument leaf {k}, dimension {d}: symbolic ({why})")
    for se in policy.entries:
        where = ", ".join(f"leaf {k} dim {d} = {name}" for (k, d), name in sorted(se.positions.items()))
        guards = "; ".join(se.guards) or "none"
        lines.append(f"symbolic entry: {where}; guards: {guards}")
    for positions, why in policy.failed.items():
        lines.append(f"not symbolic for {sorted(positions)}: {why}")
    return "\n".join(lines)


def policy_of(compiled: Any) -> Policy:
    """The policy of a static.compile wrapper, made (automatic) at its first use."""
    policy = compiled.__dict__.get("_dynamic_policy")
    if policy is None:
        policy = compiled.__dict__["_dynamic_policy"] = Policy(None)
    return policy


def set_mode(compiled: Any, mode: bool | None) -> None:
    """compile(dynamic=...): None automatic, True every dimension symbolic, False none."""
    if mode not in (None, True, False):
        raise TypeError(f"compile: dynamic must be None, True or False, got {mode!r}")
    policy_of(compiled).mode = mode


def with_mode(compiled: Any, mode: bool | None) -> Any:
    """The compiled function, its `dynamic` mode set when one is given (None: automatic)."""
    if mode is not None:
        set_mode(compiled, mode)
    return compiled


def lookup(compiled: Any, key: Any, leaves: Any) -> Any:
    """The symbolic entry serving this call (None: none does). Learns from the call first
    (mark_dynamic, automatic dynamic), so that the trace this miss leads to is symbolic."""
    policy = policy_of(compiled)
    found = policy.find(key) if policy.entries else None
    if found is None:
        policy.note_call(key, leaves, list(compiled._cache))
    return found


def build(compiled: Any, args: tuple, key: Any, leaves: Any) -> Any:
    """A symbolic entry for this call, or None (the caller traces it for its fixed sizes):
    traced with the symbolic dimensions the policy chose, then traced and generated once more
    at other sizes, and kept only when both give the same graphs and the same generated
    source (see the module docstring). Its guards are what the trace relied on."""
    policy = policy_of(compiled)
    if policy.mode is False or not policy.dims:
        return None
    positions = policy.positions_for(key, leaves)
    for _ in range(4):
        if not positions or frozenset(positions.items()) in policy.failed:
            return None
        entry, specialize = _build(compiled, policy, args, key, leaves, positions)
        if entry is not None:
            return entry
        # a size a shape rule needed equal to a number (all dimensions symbolic, dynamic=True,
        # and a matmul with a weight): that one stays a number, as PyTorch specializes it
        kept = {pos: name for pos, name in positions.items() if name not in specialize}
        if len(kept) == len(positions):
            return None
        positions = kept
    return None


def _build(compiled: Any, policy: Policy, args: tuple, key: Any, leaves: Any, positions: dict) -> tuple:
    """(entry, symbols a rule wanted to be numbers) for these symbolic positions."""
    frozen = frozenset(positions.items())
    rec = Recorder()
    backend = compiled.backend
    made_at = {name: key.leaves[k][1][d] for (k, d), name in positions.items()}
    # the native generator takes the sizes as an argument of its C functions; where its code
    # would still depend on the size (a kernel of eager's it calls, a small batched product),
    # the NumPy generator, which reads every size at run time, makes the entry
    tries = [backend] if backend in ("numpy", "cupy", "interpret") else [backend, "numpy"]
    why = None
    entry = None
    reasons = []
    prev_decisions = getattr(_LOCAL, "decisions", None)
    _LOCAL.decisions = made_at
    try:
        for attempt in tries:
            compiled.backend = attempt
            rec.guards.clear()
            rec.closed = False
            entry, why = _build_checked(compiled, args, key, leaves, positions, rec, attempt)
            if why is None:
                break
            reasons.append(f"{attempt}: {why}" if len(tries) > 1 else why)
    finally:
        compiled.backend = backend
        _LOCAL.decisions = prev_decisions
    if why is not None:
        why = "; ".join(reasons)
        policy.failed[frozen] = why
        _log(f"{compiled.__name__}: no symbolic entry for {_where(positions)} ({why}); traced for these sizes")
        return None, set(rec.specialize)
    if reasons:
        _log(f"{compiled.__name__}: symbolic entry on {tries[-1]} "
             f"({'; '.join(reasons)})")
    assert entry is not None
    # every symbol at least 2 (0 and 1 are traced as numbers), then what the trace compared
    guards = {f"{name}>={MIN_SYMBOLIC}": (lambda env, name=name: env[name] >= MIN_SYMBOLIC)
              for name in sorted(set(positions.values()))}
    guards.update(rec.guards)
    numels = _symbolic_numels(_graphs(entry))
    if numels:  # generated loops may index with int (native_gen.index_type): no tensor beyond its range
        guards[f"every tensor under {INDEX_GUARD + 1} elements"] = \
            lambda env, numels=numels: all(_eval(n, env) <= INDEX_GUARD for n in numels)
    se = SymbolicEntry(entry, generalize(key, positions), positions, guards, str(entry.graph))
    policy.entries.append(se)
    _log(f"{compiled.__name__}: symbolic entry for {_where(positions)}; guards: {'; '.join(se.guards) or 'none'}")
    return entry, set()


def _build_checked(compiled: Any, args: tuple, key: Any, leaves: Any, positions: dict, rec: Recorder,
                   backend: str) -> tuple:
    """(entry, None), or (None, why not): the symbolic entry built, then built again at other
    sizes and compared (see the module docstring)."""
    from ..passes import recording as recording_stages  # noqa: PLC0415
    from .entry import Entry  # noqa: PLC0415  (entry imports the tracer, which imports this module)

    try:
        with symbols_for_trace(symbols_of(key, positions)), recording(rec):
            entry = Entry(compiled, args, key, leaves)
        if entry.eager_reason is not None:
            return None, entry.eager_reason
        hints = other_sizes({name: key.leaves[k][1][d] for (k, d), name in positions.items()}, rec.guards)
        if hints is None:
            return None, "no other size satisfies the trace's guards, to check it at"
        # (a recorder of its own: the user's comparisons compare values there too)
        with symbols_for_trace(symbols_of(key, positions, hints=hints)), recording_stages(), recording(Recorder()):
            check = Entry(compiled, args, key, leaves)  # (recording: not from the trace cache)
        why = _difference(entry, check, backend)
    except Exception as exc:  # noqa: BLE001 - any failure of the symbolic build: trace for fixed sizes
        return None, f"{type(exc).__name__}: {exc}"
    return (entry, None) if why is None else (None, why)


def _where(positions: dict) -> str:
    return ", ".join(f"argument leaf {k} dimension {d} as {name}" for (k, d), name in sorted(positions.items()))


def _log(message: str) -> None:
    import logging  # noqa: PLC0415

    logging.getLogger("graphmode.recompiles").debug("%s", message)


INDEX_GUARD = 2**31 - 1  # the most elements a tensor of a symbolic entry may have (32-bit loop indices)


def _symbolic_numels(graphs: list) -> list:
    """The element counts of every value of symbolic shape in the graphs (one per distinct
    polynomial), for the index-range guard."""
    out: dict = {}
    stack = list(graphs)
    while stack:
        g = stack.pop()
        values = list(g.inputs) + [o for n in g.nodes for o in n.outputs]
        stack += [n.body for n in g.nodes if n.body is not None]
        for v in values:
            if any(isinstance(d, SymInt) for d in v.type.shape):
                n: Any = 1
                for d in v.type.shape:
                    n = n * d
                if isinstance(n, SymInt):
                    out.setdefault(n.text, n)
    return list(out.values())


def _graphs(entry: Any) -> list:
    graphs = [entry.graph]
    if entry.grad is not None:
        graphs.append(entry.grad.split.backward)
    return graphs


def _difference(a: Any, b: Any, backend: str) -> str | None:
    """Why two builds of one signature at different sizes differ (None: they do not)."""
    # the graphs that run, not the traced ones: the first build may come from the post-trace
    # or autodiff cache (made at another size, and checked then), the second never does
    ga, gb = _graphs(a), _graphs(b)
    if len(ga) != len(gb):
        return "the graphs depend on the size (one build records gradients, the other not)"
    for x, y in zip(ga, gb):
        if str(x) != str(y):
            return "the graph depends on the size (a size read as a number): " + _first_diff(str(x), str(y))
    if backend == "cupy":
        for g in ga:
            literal = _size_in_kernel(g)
            if literal is not None:
                return f"a size used as a number inside a CuPy kernel ({literal}): kernels take no sizes"
    for x, y in zip(ga, gb):
        sa, sb = _source(x, backend), _source(y, backend)
        if sa != sb:
            return "the generated code depends on the size: " + _first_diff(sa, sb)
    return None


def _source(graph: Any, backend: str) -> str:
    """What the backend's generator writes for the graph ('' for the interpreter)."""
    if backend == "auto":
        from codegen.native import auto_backend  # noqa: PLC0415  (codegen builds on static)

        backend = auto_backend()
    if backend in ("numpy", "cupy"):
        from codegen.executable import generate_source  # noqa: PLC0415

        return generate_source(graph, backend)[0]
    if backend == "native":
        from codegen import native_gen  # noqa: PLC0415

        return native_gen.generate(graph)[0]
    return ""


def _size_in_kernel(graph: Any) -> str | None:
    """A fused region of the graph that reads a symbolic size as a literal (a mean's count):
    CuPy kernels are compiled from text, and a size they would read is known only per call."""
    for node in graph.nodes:
        if node.body is None:
            continue
        operands = list(node.inputs) + [v for n in node.body.nodes for v in n.inputs]
        for v in operands:
            if isinstance(v, SymInt):
                return f"%{node.outputs[0].name} reads {v!s}"
    return None


def _first_diff(a: str, b: str) -> str:
    for la, lb in zip(a.splitlines(), b.splitlines()):
        if la != lb:
            at = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
            start = max(0, la.rfind(" %", 0, at))
            return f"{la[start:start + 100].strip()!r} against {lb[start:start + 100].strip()!r}"
    return "(lengths differ)"


def rebuilding(compiled: Any, entry: Any, key: Any) -> Any:
    """A context that makes a rebuild of `entry` (explain() records its stages by building the
    signature again) trace with the symbols it was traced with; no-op for other entries."""
    policy = compiled.__dict__.get("_dynamic_policy")
    for se in policy.entries if policy is not None else ():
        if se.entry is entry:
            return symbols_for_trace(symbols_of(key, se.positions))
    return contextlib.nullcontext()
