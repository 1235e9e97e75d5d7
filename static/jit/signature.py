"""Call signatures: the cache key of a compiled call and the reason a new one retraces.

A key holds what a trace depends on: the pytree structure of the arguments, per leaf its
kind, shape, dtype, device and requires_grad (or its value, for a static leaf), the grad
mode, which arguments share memory, and the training mode of a compiled module. Python values
read from outside the function are checked separately (static.tracing.guards)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import eager
from eager._grad_mode import STATE
from eager._tensor import Tensor

from ..tracing.function import check_hashable, flatten_args, static_positions
from ..tracing.shared_memory import layout, root_array
from ..tracing.state import ACTIVE as _ACTIVE

_NO_STATIC: frozenset = frozenset()
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class Aliasing(NamedTuple):
    """Arguments that share memory. `same_as[k]` is the first leaf that leaf k is the very same
    tensor as (k itself when none); `overlaps` are groups of leaves that overlap in memory
    without being the same tensor (x and x[0])."""

    same_as: tuple
    overlaps: tuple


class CallKey(NamedTuple):
    tree: Any  # the arguments' pytree structure (None: a flat tuple of tensors or arrays)
    leaves: tuple  # one key per argument leaf (see leaf_key)
    grad_enabled: bool
    aliasing: Aliasing | None  # None when no two arguments share memory
    modes: tuple  # the training flag of every submodule of a compiled module; () otherwise

    @property
    def same_as(self) -> tuple | None:
        return None if self.aliasing is None else self.aliasing.same_as

    @property
    def overlaps(self) -> tuple:
        return () if self.aliasing is None else self.aliasing.overlaps


def device_of(data) -> str:
    return "cpu" if type(data) is np.ndarray else f"cuda:{data.device.id}"


def leaf_key(leaf, static: bool) -> tuple:
    """The part of the cache key one argument leaf contributes: what the trace depends on."""
    if static:
        return ("static", type(leaf), leaf)  # the type too: 1, 1.0 and True hash alike
    if isinstance(leaf, Tensor):
        d = leaf._data
        return ("tensor", d.shape, d.dtype, "cpu" if type(d) is np.ndarray else device_of(d), leaf._requires_grad)
    if isinstance(leaf, (np.ndarray, np.generic)):  # a NumPy scalar is a 0-d array of its dtype
        return ("array", leaf.shape, leaf.dtype, "cpu")
    if hasattr(leaf, "__cuda_array_interface__"):
        return ("array", leaf.shape, leaf.dtype, device_of(leaf))
    if type(leaf) is int and not (_INT64_MIN <= leaf <= _INT64_MAX):
        return ("static", int, leaf)  # no 0-d int64 input holds it: a compile-time constant
    if isinstance(leaf, (bool, int, float)):
        return ("number", type(leaf))
    return ("static", type(leaf), leaf)


def _flat_keys(args: tuple) -> tuple | None:
    """Leaf keys of a flat tuple of eager tensors and NumPy arrays (the common call), or None:
    the same keys `leaf_key` gives, without the general flattening."""
    keys: list[tuple[Any, ...]] = []
    for a in args:
        t = type(a)
        if t is Tensor:
            d = a._data
            keys.append(("tensor", d.shape, d.dtype, "cpu" if type(d) is np.ndarray else device_of(d),
                         a._requires_grad))
        elif t is np.ndarray:
            keys.append(("array", a.shape, a.dtype, "cpu"))
        else:
            return None
    return tuple(keys)



def aliasing(leaves) -> Aliasing | None:
    """Which array leaves share memory (None, the usual answer, when none do)."""
    seen = set()
    for leaf in leaves:  # the fast check: every array leaf owns a distinct buffer
        t = type(leaf)
        if t is Tensor:
            data = leaf._data
        elif t is np.ndarray:
            data = leaf
        elif isinstance(leaf, Tensor) or hasattr(leaf, "__cuda_array_interface__"):
            data = getattr(leaf, "_data", leaf)
        else:
            continue
        base = data.base
        if base is not None:
            data = root_array(data)
        if id(data) in seen:
            return _groups(leaves)
        seen.add(id(data))
    return None


def _groups(leaves) -> Aliasing | None:
    roots: dict = {}
    for k, leaf in enumerate(leaves):
        if isinstance(leaf, Tensor):
            data = leaf._data
        elif isinstance(leaf, np.ndarray) or hasattr(leaf, "__cuda_array_interface__"):
            data = leaf
        else:
            continue
        roots.setdefault(id(root_array(data)), []).append((k, leaf, data))
    groups = [g for g in roots.values() if len(g) > 1]
    if not groups:
        return None
    same_as = list(range(len(leaves)))
    overlaps = []
    for group in groups:
        firsts: dict = {}
        distinct = []
        for k, _leaf, data in group:
            ident = layout(data)  # where it starts, its shape, strides and dtype: the same tensor
            if ident in firsts:
                same_as[k] = firsts[ident]
            else:
                firsts[ident] = k
                distinct.append((k, data))
        if _may_share(distinct):
            overlaps.append(tuple(k for k, _, _ in group))
    if not overlaps and same_as == list(range(len(leaves))):
        return None
    return Aliasing(tuple(same_as), tuple(overlaps))


def _may_share(distinct: list) -> bool:
    """Whether two different views of one buffer may overlap."""
    for i in range(len(distinct)):
        for j in range(i + 1, len(distinct)):
            a, b = distinct[i][1], distinct[j][1]
            if eager._device.may_share_memory(a, b):
                return True
    return False


def call_key(args: tuple, static_argnums: tuple, modes: tuple = ()) -> tuple[list | tuple, CallKey]:
    """Leaves of the arguments and the cache key of this call (`modes`: the training flags of
    a compiled module's submodules, () for a function)."""
    keys = None if static_argnums else _flat_keys(args)
    leaves: list | tuple
    if keys is not None:
        leaves, tree = args, None  # the common case: a flat tuple of tensors or arrays
    else:
        static = static_positions(static_argnums, len(args)) if static_argnums else _NO_STATIC
        leaves, tree, owners = flatten_args(args, static)
        for k in static:
            check_hashable(args[k], k)  # an error, not a retrace on every call
        keys = tuple(leaf_key(leaf, owners[k] in static) for k, leaf in enumerate(leaves))
    alias = aliasing(leaves) if len(leaves) > 1 else None
    return leaves, CallKey(tree, keys, STATE.enabled, alias, modes)


def describe_change(old: CallKey, new: CallKey) -> str:
    """Which part of the cache key differs: the reason a call retraces."""
    if old.tree != new.tree:
        return "the structure of the arguments changed"
    if len(old.leaves) != len(new.leaves):
        return "the number of arguments changed"
    for i, (a, b) in enumerate(zip(old.leaves, new.leaves)):
        if a != b:
            if a[0] != b[0]:
                return f"argument leaf {i} changed kind ({a[0]} -> {b[0]})"
            if a[0] in ("tensor", "array"):
                if a[1] != b[1]:
                    return f"argument leaf {i} changed shape {a[1]} -> {b[1]}{_changed_dims(a[1], b[1])}"
                if a[2] != b[2]:
                    return f"argument leaf {i} changed dtype {a[2]} -> {b[2]}"
                if a[3] != b[3]:
                    return f"argument leaf {i} moved from {a[3]} to {b[3]}"
                return f"argument leaf {i} changed requires_grad"
            if a[0] == "static":
                return f"static argument leaf {i} changed value {a[2]!r} -> {b[2]!r}"
            return f"argument leaf {i} changed type"
    if old.grad_enabled != new.grad_enabled:
        return "grad mode changed"
    if old.aliasing != new.aliasing:
        return "which arguments share memory changed (the same tensor passed twice, or overlapping views)"
    if old.modes != new.modes:
        return "the module's training mode changed"
    return "a captured tensor changed shape or dtype"


def _changed_dims(old: tuple, new: tuple) -> str:
    """Which dimensions changed (a batch or sequence length that varies retraces per size:
    the remedy is a fixed size, e.g. padding the last batch or dropping it)."""
    if len(old) != len(new):
        return ""
    dims = [f"dimension {d}: {a} -> {b}" for d, (a, b) in enumerate(zip(old, new)) if a != b]
    return f" ({', '.join(dims)})" if dims else ""


def closest(keys, new: CallKey) -> CallKey:
    """The cached key most like `new`, so that a retrace reason names the one thing that
    differs (not everything that differs from whichever signature happened to come last)."""
    def distance(old):
        if old.tree != new.tree or len(old.leaves) != len(new.leaves):
            return 1 << 20
        return sum(a != b for a, b in zip(old.leaves, new.leaves)) + sum(a != b for a, b in zip(old[2:], new[2:]))

    return min(reversed(list(keys)), key=distance)  # ties: the most recent signature


MISS = object()  # what a fast call returns when the call is not of the last signature


def fast_call(key: CallKey, entry, run: Callable, modes: Callable[[], tuple] | None) -> Callable[[tuple], Any] | None:
    """A function `call(args)` for the common call: the same flat positional eager tensors (or
    NumPy arrays) as the call that made `key`. It returns MISS unless the call has exactly that
    signature, else the result: for one plain output it runs the executable and wraps the result
    itself, otherwise it hands the entry to `run(entry, args)`.

    It checks what the key holds and nothing less: per argument its exact type, the array type
    (so the device), shape, dtype and requires_grad; that no two arguments share memory (each
    array owns its buffer or is a direct view of one, and the buffers are distinct); the grad
    mode; that no trace is running (a compiled function called while tracing is inlined); the
    module's training modes; and the entry's own checks (captured tensors, guarded Python
    values). Any other call gets MISS and takes the full path, which computes the key. None
    when the key is not of that form.

    The function is generated source, straight-line per argument: it is what a cached call
    costs, so it does the least Python that still checks everything."""
    if key.tree is not None or key.aliasing is not None or not key.leaves:
        return None
    env: dict = {"ACTIVE": _ACTIVE, "STATE": STATE, "Tensor": Tensor, "ndarray": np.ndarray, "ENTRY": entry,
                 "MODES": modes, "KEY_MODES": key.modes, "MISS": MISS, "RUN": run, "generic": np.generic,
                 "asarray": np.asarray, "make": Tensor._make}
    n = len(key.leaves)
    args = ", ".join(f"a{i}" for i in range(n))
    datas = ", ".join(f"d{i}" for i in range(n))
    types, fetch, arrays = [], [], []
    for i, leaf in enumerate(key.leaves):
        kind, shape, dtype, device = leaf[:4]
        if device != "cpu" or kind not in ("tensor", "array"):
            return None
        env[f"S{i}"], env[f"D{i}"] = shape, dtype
        if kind == "tensor":
            types.append(f"type(a{i}) is not Tensor or a{i}._requires_grad is not {bool(leaf[4])}")
            fetch.append(f"a{i}._data")
        else:
            fetch.append(f"a{i}")
        arrays.append(f"type(d{i}) is not ndarray or d{i}.shape != S{i} or d{i}.dtype is not D{i}")
    lines = ["def call(args):",
             f"    if len(args) != {n} or ACTIVE.stack or STATE.enabled is not {bool(key.grad_enabled)}:",
             "        return MISS",
             f"    {args}, = args"]
    if types:
        lines += [f"    if {' or '.join(types)}:", "        return MISS"]
    lines += [f"    {datas}, = {', '.join(fetch)},",
              f"    if {' or '.join(arrays)}:", "        return MISS"]
    if n > 1:  # distinct buffers; a view is checked by the buffer it views (`aliasing`'s root)
        lines += [f"    if {' or '.join(f'd{i}.base is not None' for i in range(n))}:"]
        for i in range(n):
            lines += [f"        r{i} = d{i}.base",
                      f"        if r{i} is None:",
                      f"            r{i} = d{i}",
                      f"        elif type(r{i}) is not ndarray or r{i}.base is not None:",
                      "            return MISS"]
        lines += [f"        if len({{{', '.join(f'id(r{i})' for i in range(n))}}}) != {n}:",
                  "            return MISS",
                  f"    elif len({{{', '.join(f'id(d{i})' for i in range(n))}}}) != {n}:",
                  "        return MISS"]
    if modes is not None:
        lines += ["    if MODES() != KEY_MODES:", "        return MISS"]
    if entry.checks:
        lines += ["    if ENTRY.invalid() is not None:", "        return MISS"]
    if (entry.trace.prepare is None and entry.grad is None and entry.single_output and not entry.has_output_aliases
            and (entry.all_tensor_inputs or entry.all_array_inputs)):
        env["FORWARD"] = entry.forward.run
        lines += [f"    r = FORWARD([{datas}])[0]"]
        if entry.as_tensors:
            lines += ["    return make(asarray(r) if isinstance(r, generic) else r)"]
        else:
            lines += ["    return r"]
    else:
        lines.append(f"    return RUN(ENTRY, ({args},))")
    exec(compile("\n".join(lines), f"<static.compile signature check of {entry.trace.graph.name}>", "exec"),  # noqa: S102
         env)
    return env["call"]
