"""`static.compile(fn, check=True)`: every call runs compiled and eagerly, and any difference
is an error that names the value.

This is the tool to reach for when a compiled run "looks different" from eager. Each call:

1. saves the state the call may touch: the arguments' tensors, every parameter, buffer and
   `.grad` of the modules the function reaches, the tensors and numbers of the state of the
   optimizers it reaches (and their param groups), the tensors it names as globals or closure
   variables, and the random generator's state;
2. runs the compiled function and keeps what it returned and the state it left;
3. puts the saved state back (the same tensor objects, their saved values) and runs the
   original function eagerly, from the same random state;
4. compares the two results and every saved tensor's value after the two runs (shape, dtype,
   values within `rtol`/`atol`, NaNs in the same places, `.grad` present in both or neither,
   the optimizer's Python numbers), and raises `CheckError` at the first difference, naming
   the value, the largest difference and where it is, and the IR line and the user's line
   that produced it in the compiled graph.

The program then continues from the compiled call's result and state (equal to eager's
within the tolerances): results keep their CompiledFunctionBackward, and the compiled entry
keeps the tensors it was traced with, so a checked loop does not retrace.
`GRAPHMODE_CHECK=1` in the environment turns the check on for every
`static.compile` of the process (`GRAPHMODE_CHECK_RTOL` / `GRAPHMODE_CHECK_ATOL` set the
tolerances). Python side effects the function has (a list it appends to) happen in both runs.
"""
from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Callable
from typing import Any

import numpy as np

import eager
from eager._tensor import Tensor

from ..tracing import pytree
from ..tracing.function import is_leaf, named_sources
from ..training.bindings import _reachable_owners


class CheckError(AssertionError):
    """A compiled call computed something other than eager did (check=True)."""


def env_check() -> bool:
    """Whether GRAPHMODE_CHECK asks every compiled function to check itself."""
    return os.environ.get("GRAPHMODE_CHECK", "").strip().lower() not in ("", "0", "false", "no", "off")


def tolerances(dtype) -> tuple[float, float]:
    """(rtol, atol) for a value of this dtype: the compiled graph may fuse and reorder
    floating-point work, so equal up to rounding; integers and booleans exactly."""
    rtol = os.environ.get("GRAPHMODE_CHECK_RTOL")
    atol = os.environ.get("GRAPHMODE_CHECK_ATOL")
    kind = np.dtype(dtype).kind
    if kind in "biu":
        base = (0.0, 0.0)
    elif np.dtype(dtype).itemsize <= 2:
        base = (2e-2, 2e-2)
    elif np.dtype(dtype).itemsize == 4 or kind == "c":
        base = (2e-4, 2e-5)
    else:
        base = (1e-9, 1e-11)
    return (float(rtol) if rtol else base[0], float(atol) if atol else base[1])


class _Saved:
    """The values of the state one call may touch (see the module docstring)."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict) -> None:
        self.tensors: list = []  # (name, tensor, read): read() is what holds its place now
        self.numbers: list = []  # (name, dict, key)
        seen: set = set()

        def add(name: str, t, read: Callable | None = None) -> None:
            if isinstance(t, Tensor) and id(t) not in seen:
                seen.add(id(t))
                self.tensors.append((name, t, read or (lambda: t)))

        leaves, _ = pytree.flatten((tuple(args), dict(kwargs)), is_leaf)
        for k, leaf in enumerate(leaves):
            if type(leaf) is np.ndarray and leaf.flags.writeable:
                leaf = eager.from_numpy(leaf)  # a view: an array the call updates in place is saved too
            add(f"argument leaf {k}", leaf)
        for name, _getter in named_sources(fn).values():
            try:
                value = _getter()
            except Exception:  # noqa: BLE001  (a name that went away: nothing to save)
                continue
            add(name, value)
        for owner in _reachable_owners(fn):
            if hasattr(owner, "named_parameters") and hasattr(owner, "forward"):
                prefix = type(owner).__name__
                for path, p in owner.named_parameters():
                    add(f"{prefix}.{path}", p)
                for path, b in owner.named_buffers():
                    add(f"{prefix}.{path}", b)
            if hasattr(owner, "param_groups"):
                opt = type(owner).__name__
                names = {}
                for gi, group in enumerate(owner.param_groups):
                    for pi, p in enumerate(group["params"]):
                        names[id(p)] = f"param {pi} of group {gi}"
                        add(f"{opt} group {gi} param {pi}", p)
                    for key, value in group.items():
                        if key != "params" and isinstance(value, (int, float)) and not isinstance(value, bool):
                            self.numbers.append((f"{opt} param group {gi} {key!r}", group, key))
                for p, st in list(owner.state.items()):
                    if not isinstance(st, dict):
                        continue
                    for key, value in st.items():
                        where = f"{opt} state[{names.get(id(p), 'a parameter')}][{key!r}]"
                        if isinstance(value, Tensor):  # read through its entry: a step may rebind it
                            add(where, value, lambda st=st, key=key: st.get(key))
                        elif isinstance(value, (int, float)) and not isinstance(value, bool):
                            self.numbers.append((where, st, key))
        self.values = [(t, t._data.copy(), t._grad, None if t._grad is None else t._grad._data.copy())
                       for _, t, _ in self.tensors]
        self.number_values = [d.get(k) for _, d, k in self.numbers]
        self.opt_states = [(o, [(p, s, dict(s)) for p, s in o.state.items() if isinstance(s, dict)])
                           for o in _reachable_owners(fn) if hasattr(o, "param_groups")]
        # a scheduler the function steps: its counters, so that the eager run steps it from the same place
        self.schedulers = [(o, dict(o.__dict__)) for o in _reachable_owners(fn) if _is_scheduler(o)]
        self.rng = eager.get_rng_state()
        self.py_rng = (random.getstate(), np.random.get_state())  # a function that draws from them runs eagerly

    def now(self) -> list:
        """The state as it is now: per saved tensor (value, whether it has a .grad, the .grad's
        value), then the numbers."""
        out: list = []
        for _, _, read in self.tensors:
            t = read()
            if not isinstance(t, Tensor):
                out.append((np.asarray(t), None))
                continue
            g = t._grad
            out.append((np.array(t._data, copy=True), None if g is None else np.array(g._data, copy=True)))
        return out + [d.get(k) for _, d, k in self.numbers]

    def restore(self) -> None:
        for t, data, grad, grad_data in self.values:
            t._data[...] = data
            t._grad = grad
            if grad is not None and grad_data is not None:
                grad._data[...] = grad_data
        for o, states in self.opt_states:  # state the compiled first step made is made again eagerly
            o.state.clear()
            for p, s, items in states:
                s.clear()
                s.update(items)
                o.state[p] = s
        for (_, d, k), v in zip(self.numbers, self.number_values):
            d[k] = v
        for o, items in self.schedulers:
            o.__dict__.clear()
            o.__dict__.update(items)
        eager.set_rng_state(self.rng)
        random.setstate(self.py_rng[0])
        np.random.set_state(self.py_rng[1])


def checked_call(compiled, args: tuple, kwargs: dict) -> Any:
    """One call under check=True (see the module docstring)."""
    fn = compiled.__wrapped__
    target = compiled._traceable
    if not hasattr(target, "with_value") and type(target).__module__.startswith("static.") \
            and not callable(getattr(target, "__code__", None) and target):
        # static's own wrappers that only run inside a trace (vjp and jvp's linearized calls):
        # no eager run to compare with; the transforms they come from are checked where compiled
        return compiled._call_unchecked(args, kwargs, 4)
    saved = _Saved(compiled._traceable, args, kwargs)
    compiled._last_entry = None  # set again only by a call that runs a compiled entry
    compiled_out = compiled._call_unchecked(args, kwargs, 4)  # the user's frame: above __call__ and this
    if compiled._last_entry is None:
        # the call ran eagerly (fallback, an optimizer's first step) or as a graph-break split,
        # whose compiled pieces check themselves: running it again eagerly would compare eager
        # with eager and repeat its Python side effects (a log appended twice, a print)
        return compiled_out
    compiled_leaves, compiled_tree = pytree.flatten(compiled_out, is_leaf)
    compiled_leaves = [_host(x) for x in compiled_leaves]
    compiled_state = saved.now()
    kept = _Kept(saved, compiled._traceable)  # the compiled call's own objects, reinstated after the eager run
    entry = compiled._last_entry
    saved.restore()
    eager_out = _eager_transform(compiled._traceable, args) if hasattr(compiled._traceable, "with_value") \
        else fn(*_as_tensors(args), **_as_tensors(kwargs))
    eager_leaves, eager_tree = pytree.flatten(eager_out, is_leaf)
    name = compiled.__name__
    if compiled_tree != eager_tree:
        raise CheckError(f"static.compile check: {name} returned a result of another structure compiled than "
                         f"eagerly ({_short(compiled_tree)} against {_short(eager_tree)})")
    for k, (c, e) in enumerate(zip(compiled_leaves, eager_leaves)):
        _compare(f"output {k} of {name}", c, _host(e), entry, ("output", k))
    eager_state = saved.now()
    for i, (c, e) in enumerate(zip(compiled_state, eager_state)):
        if i < len(saved.tensors):
            label, t, _ = saved.tensors[i]
            _compare(label, c[0], e[0], entry, ("state", t))
            if (c[1] is None) != (e[1] is None):
                raise CheckError(f"static.compile check: {name}: the .grad of {label} is "
                                 f"{'None' if c[1] is None else 'set'} after the compiled call but "
                                 f"{'None' if e[1] is None else 'set'} after the eager one")
            if c[1] is not None:
                _compare(f"the .grad of {label}", c[1], e[1], entry, ("grad", t))
        else:
            label = saved.numbers[i - len(saved.tensors)][0]
            if _number(c) != _number(e) and not np.isclose(_number(c), _number(e), rtol=1e-6, atol=0.0):
                raise CheckError(f"static.compile check: {name}: {label} is {c!r} after the compiled call but "
                                 f"{e!r} after the eager one")
    kept.reinstate(compiled_state)
    return compiled_out


class _Kept:
    """What the compiled call left bound: each saved tensor's `.grad` object, the optimizers'
    state entries and numbers. Once the eager run was compared, the program continues from
    the compiled call's objects and values (equal to eager's within the tolerances): its
    results keep their CompiledFunctionBackward, and the compiled entry keeps finding the
    tensors it was traced with (a checked loop does not retrace)."""

    def __init__(self, saved: _Saved, fn) -> None:
        self.saved = saved
        self.grads = [t._grad for _, t, _ in saved.tensors]
        self.states = [(o, [(p, s, dict(s)) for p, s in o.state.items() if isinstance(s, dict)])
                       for o in _reachable_owners(fn) if hasattr(o, "param_groups")]
        self.state_data = [(v, np.array(v._data, copy=True)) for _, entries in self.states
                           for _, _, items in entries for v in items.values() if isinstance(v, Tensor)]
        self.schedulers = [(o, dict(o.__dict__)) for o, _ in saved.schedulers]

    def reinstate(self, values: list) -> None:
        saved = self.saved
        for (_, t, _), grad, (data, grad_data) in zip(saved.tensors, self.grads, values):
            if t._data.shape == data.shape:
                t._data[...] = data
            t._grad = grad
            if grad is not None and grad_data is not None and grad._data.shape == grad_data.shape:
                grad._data[...] = grad_data
        for o, entries in self.states:
            o.state.clear()
            for p, s, items in entries:
                s.clear()
                s.update(items)
                o.state[p] = s
        for t, data in self.state_data:
            t._data[...] = data
        for (_, d, k), v in zip(saved.numbers, values[len(saved.tensors):]):
            d[k] = v
        for o, items in self.schedulers:
            o.__dict__.clear()
            o.__dict__.update(items)


def _eager_transform(transform, args: tuple) -> Any:
    """What static.grad / static.value_and_grad of `fn` computes, with eager's autograd (the
    transform object itself only runs inside a trace)."""
    nums = (transform.argnums,) if isinstance(transform.argnums, int) else tuple(transform.argnums)
    positions = sorted({n % len(args) for n in nums})
    new_args = list(args)
    wrt: dict = {}
    for n in positions:
        leaves, tree = pytree.flatten(args[n], is_leaf)
        made = [eager.tensor(np.array(_host(x), copy=True) if not isinstance(x, (int, float)) else x,
                             dtype=None if not isinstance(x, (int, float)) else eager.float64).requires_grad_()
                for x in leaves]
        wrt[n] = (tree, made)
        new_args[n] = pytree.unflatten(tree, made)
    with eager.enable_grad():
        out = transform.fn(*new_args)
        value = out[0] if transform.has_aux else out
        flat = [t for n in positions for t in wrt[n][1]]
        grads = eager.autograd.grad(value, flat, allow_unused=True)
    k = 0
    per_arg = {}
    for n in positions:
        tree, made = wrt[n]
        per_arg[n] = pytree.unflatten(tree, [g if g is not None else eager.zeros_like(t)
                                            for g, t in zip(grads[k:k + len(made)], made)])
        k += len(made)
    result = per_arg[positions[0]] if isinstance(transform.argnums, int) else tuple(per_arg[n % len(args)]
                                                                                    for n in nums)
    return (out, result) if transform.with_value else (result, out[1]) if transform.has_aux else result


def _as_tensors(tree):
    """The arguments as the compiled function takes them: NumPy arrays are eager
    tensors (views of the arrays, which an in-place update writes through), so the eager run
    computes with eager's ops and dtype rules, not NumPy's."""
    leaves, structure = pytree.flatten(tree, is_leaf)
    out = [eager.from_numpy(x) if type(x) is np.ndarray and x.flags.writeable
           else eager.tensor(x) if type(x) is np.ndarray else x for x in leaves]  # (a NumPy scalar: as eager takes it)
    return pytree.unflatten(structure, out)


def _is_scheduler(o) -> bool:
    return hasattr(o, "optimizer") and hasattr(o, "last_epoch") and callable(getattr(o, "step", None))


def _number(v) -> float:
    if isinstance(v, Tensor):
        return float(v._data)
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _short(tree) -> str:
    text = repr(tree)
    return text if len(text) < 120 else text[:117] + "..."


def _host(x):
    if isinstance(x, Tensor):
        x = x._data
    if hasattr(x, "get") and hasattr(x, "__cuda_array_interface__"):
        x = x.get()
    return x


def _compare(what: str, c, e, entry, ref) -> None:
    from ..tracing.guards import is_plain_object  # noqa: PLC0415  (guards imports the tracer, loaded by then)

    if type(c) is type(e) and (dataclasses.is_dataclass(c) or is_plain_object(c)) and not is_leaf(c):
        # a result in a dataclass or plain object: compared field by field (its __eq__ would
        # ask bool() of a tensor comparison)
        for name in vars(c):
            _compare(f"{what}.{name}", _host(getattr(c, name)), _host(getattr(e, name, None)), entry, ref)
        return
    if not isinstance(c, np.ndarray | np.generic) or not isinstance(e, np.ndarray | np.generic):
        if isinstance(c, float) and isinstance(e, float) and np.isnan(c) and np.isnan(e):
            return
        if c != e and not (isinstance(c, float | int) and isinstance(e, float | int) and np.isclose(c, e)):
            raise CheckError(f"static.compile check: {what} is {c!r} compiled but {e!r} eagerly")
        return
    c, e = np.asarray(c), np.asarray(e)
    if c.shape != e.shape or c.dtype != e.dtype:
        raise CheckError(f"static.compile check: {what} has shape {list(c.shape)} and dtype {c.dtype} compiled but "
                         f"shape {list(e.shape)} and dtype {e.dtype} eagerly{_origin(entry, ref)}")
    if c.size == 0:
        return
    rtol, atol = tolerances(c.dtype)
    if c.dtype.kind == "b":
        bad = c != e
    else:
        cf, ef = c.astype(np.float64), e.astype(np.float64)
        both_nan = np.isnan(cf) & np.isnan(ef)
        with np.errstate(invalid="ignore"):
            bad = ~both_nan & ~(cf == ef) & ~(np.abs(cf - ef) <= atol + rtol * np.abs(ef))  # (cf == ef: equal infinities)
        bad |= np.isnan(cf) != np.isnan(ef)
    if not bad.any():
        return
    if c.dtype.kind == "b":
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        detail = f"{int(bad.sum())} of {c.size} elements differ; first at index {list(at)}"
    else:
        diff = np.where(bad, np.abs(cf - ef), -1.0)
        diff = np.where(np.isnan(diff), np.inf, diff)
        flat = int(np.argmax(diff))
        at = tuple(int(i) for i in np.unravel_index(flat, c.shape)) if c.ndim else ()
        detail = (f"{int(bad.sum())} of {c.size} elements differ; the largest difference is "
                  f"{float(np.abs(cf[at] - ef[at])) if c.ndim else float(abs(cf - ef)):.6g} at index {list(at)} "
                  f"(compiled {float(cf[at]) if c.ndim else float(cf)!r}, eager {float(ef[at]) if c.ndim else float(ef)!r}; "
                  f"rtol={rtol:g}, atol={atol:g})")
    raise CheckError(f"static.compile check: {what} differs between the compiled and the eager call: "
                     f"{detail}{_origin(entry, ref)}")


def _origin(entry, ref) -> str:
    """The IR line and user line of the compiled graph's value for `ref`."""
    if entry is None:
        return ""
    graph = entry.graph
    trace = entry.trace
    kind, key = ref
    index = None
    if kind == "output":
        index = key
    else:
        for k, (where, at) in enumerate(trace.updates):
            target = trace.captured[at][0] if where == "captured" else None
            if target is key or (kind == "grad" and target is getattr(key, "_grad", None)):
                index = trace.n_outputs + k
                break
    if index is None or index >= len(graph.outputs):
        return ""
    value = graph.outputs[index]
    for node in graph.nodes:
        if value in node.outputs:
            text = _node_text(node)
            where = f" (from {node.loc})" if node.loc else ""
            return f"; the compiled graph computes it at IR line `{text}`{where}"
    return f"; the compiled graph returns %{getattr(value, 'name', value)} as it is (an input or a constant)"


def _node_text(node) -> str:
    outs = ", ".join(f"%{v.name}" for v in node.outputs)
    ins = ", ".join(f"%{v.name}" if hasattr(v, "name") else repr(v) for v in node.inputs)
    return f"{outs} = {node.op}({ins})"
