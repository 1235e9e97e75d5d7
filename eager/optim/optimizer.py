"""`Optimizer`: parameter groups, per-parameter state and the bookkeeping every optimizer
shares. Subclasses implement `step()`, which must run under `no_grad()` and update the
parameters in place, so the Parameter objects a model holds stay the same."""
from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from .._device import xp_of_array
from .._grad_mode import no_grad
from .._tensor import METADATA_VERSION, Tensor
from ..nn.module import _clear_grad
from ._hooks import OptimizerHooks, register_optimizer_step_post_hook, register_optimizer_step_pre_hook  # noqa: F401


def eager_arrays(*tensors: Any) -> list | None:
    """The NumPy arrays of plain eager CPU tensors, or None when any is something else (a
    traced step's tracer, a CUDA tensor): an optimizer then takes its op-by-op path, which
    every kind of tensor supports. Updating the arrays in place with `out=` ufuncs spares an
    update's temporaries and the dispatch of about ten small ops per parameter."""
    arrays = []
    for t in tensors:
        if not isinstance(t, Tensor):
            return None
        data = t._data
        if type(data) is not np.ndarray:
            return None
        arrays.append(data)
    return arrays


_native: Any = None


def native_updates() -> Any:
    """gmnative.optim_kernels (the multi-tensor updates in one native pass), imported on first
    use; None where eager's native kernels are switched off (GRAPHMODE_EAGER_NATIVE=0) or
    cannot be built: the NumPy updates run then, with the same bits."""
    global _native
    if _native is None:
        try:
            import gmnative.optim_kernels as module  # noqa: PLC0415

            _native = module
        except ImportError:  # a partial install: NumPy code only
            _native = False
    return _native if _native and _native._kernels.kernels() is not None else None


def state_arrays(states: list, names: tuple) -> list | None:
    """For each state name, the NumPy arrays of that state tensor of every parameter; None where
    one is missing or not a plain eager CPU tensor (the NumPy update runs then)."""
    out = []
    for name in names:
        col = []
        for st in states:
            t = st.get(name)
            data = getattr(t, "_data", None)
            if type(data) is not np.ndarray:
                return None
            col.append(data)
        out.append(col)
    return out


def bump_versions(*tensors: Tensor) -> None:
    """Count an in-place write into each tensor, as an op-by-op update would."""
    for t in tensors:
        t._vc[0] += 1  # (the counter `_version` reads, shared with the tensor's views)


# -- the step count ---------------------------------------------------------------------------------
# PyTorch keeps a parameter's step count (and NAdam's running product) as a 0-d tensor of its
# scalar dtype, on the CPU, and scripts read it so (`state['step'].item()`, `int(state['step'])`,
# `state['step'] += 1`). The updates below count in that tensor too: an eager CPU one is written
# through its array (no op dispatched), and the update reads the count as a Python number, as
# PyTorch's `_get_value` does; while a step is traced the tensor itself is the count, so the
# graph reads and updates the caller's tensor.

def scalar_dtype() -> np.dtype:
    """The dtype of an optimizer's 0-d state numbers (PyTorch's `_get_scalar_dtype`): float64
    when the default dtype is float64, float32 otherwise."""
    return np.dtype(np.float64) if _dtypes.DEFAULT_FLOAT.np == np.float64 else np.dtype(np.float32)


def step_tensor(value: float = 0.0) -> Tensor:
    """A step count as PyTorch keeps it: a 0-d CPU tensor of the scalar dtype."""
    return Tensor._make(np.array(value, dtype=scalar_dtype()))


def tracing() -> bool:
    """Whether a compiled function is being traced on this thread (static loaded and active):
    the update's numbers are then the graph's, not read out of the tensors."""
    tracer = sys.modules.get("static.tracing.tracer")
    return tracer is not None and bool(tracer.ACTIVE.stack)


def next_step(state: dict, key: str = "step") -> Any:
    """One more step counted in `state[key]` (PyTorch's `step_t += 1`), and the count as the
    update reads it: a Python number for an eager tensor or a number (a count set by hand,
    SparseAdam's int), the tensor itself while the step is traced."""
    t = state[key]
    if type(t) is Tensor:
        data = t._data
        if type(data) is np.ndarray and not tracing():
            data[()] = data.item() + 1  # (in place: the same tensor, no op dispatched)
            t._vc[0] += 1
            return data.item()
        t += 1
        state[key] = t
        return t if tracing() else t.item()
    if isinstance(t, Tensor):  # (a tracer's value, or a subclass)
        t += 1
        state[key] = t
        return t
    state[key] = t = t + 1
    return t


def advance_steps(states: list) -> float | None:
    """Every state's step counted once more when they are all eager CPU tensors at one count
    (a whole-group update's precondition); the new count, or None with nothing changed."""
    if tracing():
        return None
    arrays = []
    count = None
    for st in states:
        t = st.get("step")
        if type(t) is not Tensor:
            return None
        data = t._data
        if type(data) is not np.ndarray or data.ndim != 0:
            return None
        value = data.item()
        if count is None:
            count = value
        elif value != count:
            return None
        arrays.append(data)
    if count is None:
        return None
    count += 1
    for st, data in zip(states, arrays):
        data[()] = count
        st["step"]._vc[0] += 1
    return arrays[0].item()


def filled_like(p: Tensor, value: float = 0.0) -> Tensor:
    """A state tensor of p's shape, dtype and device holding `value`, made from p's array
    without dispatching an op: while a step is compiled it is then the caller's tensor (an
    implicit input of the graph) rather than a constant recorded into it."""
    data = p._data
    xp = xp_of_array(data)
    return Tensor._make(xp.zeros_like(data) if value == 0 else xp.full_like(data, value))


class FlatState:
    """The state tensors named `names` of a group's parameters (those with gradients, in
    order) as views of one buffer per name, plus scratch buffers for the parameters and the
    gradients laid end to end: a multi-tensor ("foreach") update then runs each of its ufuncs
    once over every parameter instead of once per parameter, as PyTorch's foreach updates do
    with their multi-tensor kernels. The update's arithmetic is the same, element by element,
    as the per-parameter path's, so the results are the same bits.

    The state tensors stay the objects `Optimizer.state` holds (their arrays become views of
    the buffers); a state replaced from outside (load_state_dict) no longer is one, and the
    next step lays the buffers out again."""

    __slots__ = ("ids", "slices", "shapes", "dtype", "buffers", "views", "P", "G")

    def __init__(self, params: list, arrays: list, dtype: np.dtype, names: tuple) -> None:
        self.ids = tuple(id(p) for p in params)
        bounds = [0]
        for a in arrays:
            bounds.append(bounds[-1] + a.size)
        self.slices = [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
        self.shapes = [a.shape for a in arrays]
        self.dtype = dtype
        total = bounds[-1]
        self.buffers = {name: np.zeros(total, dtype) for name in names}
        self.views = {name: [buf[sl].reshape(shape) for sl, shape in zip(self.slices, self.shapes)]
                      for name, buf in self.buffers.items()}
        self.P = np.empty(total, dtype)
        self.G = np.empty(total, dtype)

    def adopt(self, states: list, name: str) -> None:
        """Copy each parameter's state tensor `name` into its place in the buffer and make the
        tensor a view of it (a missing one starts at the buffer's zeros)."""
        for state, view in zip(states, self.views[name]):
            t = state.get(name)
            if t is None:
                state[name] = Tensor._make(view)
                continue
            view[...] = t._data
            if t._data.dtype != view.dtype or t._data.shape != view.shape:
                METADATA_VERSION[0] += 1  # a compiled step that captured t re-checks it (static.entry)
            t._data = view
            t._vc[0] += 1

    def holds(self, params: list, states: list, names: tuple) -> bool:
        """Whether these are still the parameters laid out and their state tensors the views."""
        if len(params) != len(self.ids) or any(id(p) != i for p, i in zip(params, self.ids)):
            return False
        if len(names) != len(self.buffers) or any(name not in self.buffers for name in names):
            return False  # (a hyper-parameter changed what state the update keeps)
        for name in names:
            for state, view in zip(states, self.views[name]):
                t = state.get(name)
                if t is None or t._data is not view:
                    return False
        return True

    def gather(self, params_arrays: list, grad_arrays: list, negate: bool) -> None:
        """Parameters and gradients into P and G (the gradients negated for maximize)."""
        np.concatenate([a.reshape(-1) for a in params_arrays], out=self.P)
        np.concatenate([a.reshape(-1) for a in grad_arrays], out=self.G)
        if negate:
            np.negative(self.G, out=self.G)

    def scatter(self, params_arrays: list) -> None:
        """P back into the parameters' own arrays."""
        P = self.P
        for a, sl, shape in zip(params_arrays, self.slices, self.shapes):
            np.copyto(a, P[sl].reshape(shape))


def foreach_arrays(params_grads: list) -> tuple[list, list, np.dtype] | None:
    """(parameter arrays, gradient arrays, dtype) when every parameter and gradient is a plain
    eager CPU tensor over a NumPy float array of one dtype, the gradient of its parameter's
    shape; None otherwise (the per-parameter path runs then)."""
    if len(params_grads) < 2:
        return None
    ps, gs = [], []
    dtype = None
    for p, g in params_grads:
        if type(g) is not Tensor or not isinstance(p, Tensor):
            return None
        pa, ga = p._data, g._data
        if type(pa) is not np.ndarray or type(ga) is not np.ndarray:
            return None
        if dtype is None:
            dtype = pa.dtype
            if dtype.kind != "f":
                return None
        if pa.dtype is not dtype or ga.dtype is not dtype or pa.shape != ga.shape:
            return None
        ps.append(pa)
        gs.append(ga)
    return (ps, gs, dtype) if dtype is not None else None


def foreach_group(group: dict, numbers: tuple) -> tuple[list, list, list, np.dtype] | None:
    """(the group's parameters with gradients, their arrays, the gradients' arrays, dtype) for
    an optimizer's whole-group update (FlatState), where each hyper-parameter in `numbers` is a
    plain int or float and foreach_arrays applies; None otherwise (the per-parameter path runs)."""
    for v in numbers:
        if type(v) is not float and type(v) is not int:
            return None
    pairs = [(p, p.grad) for p in group["params"] if p.grad is not None]
    found = foreach_arrays(pairs)
    return None if found is None else ([p for p, _ in pairs], *found)


class _Required:
    """Marks a hyper-parameter with no default (PyTorch's `required`)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


class _TraceHook:
    # set by static: answers `step` while a function is traced (NotImplemented otherwise)
    fn: Callable[..., Any] | None = None


TRACE_HOOK = _TraceHook()

OPTIMIZER_VERSION = [0]
"""Bumped by every change of an optimizer's `state` (the attribute rebound, an entry of a
`StateDict` set or removed). A compiled training step (static.training's
OptimizerStateGuard) re-reads the state dicts it depends on only after it moved."""

PARAM_GROUPS_VERSION = [0]
"""The same for `param_groups`: the attribute rebound, the list or a group's `params` list
changed (`ParamList`), an entry of a group set (`ParamGroup`: a scheduler setting lr moves
it). Static's GroupGuard and FedGuard re-read a group only after it moved. Apart from
OPTIMIZER_VERSION so that a scheduler's step does not make the state be compared again."""


class StateDict(dict):
    """A dict that counts its changes (in OPTIMIZER_VERSION): an optimizer's `state` and each
    parameter's state dict, so that a compiled step need not compare some hundred state
    entries on every call to know that none was replaced. Otherwise a plain dict."""

    __slots__ = ()
    _counter = OPTIMIZER_VERSION

    def __setitem__(self, key, value) -> None:
        self._counter[0] += 1
        dict.__setitem__(self, key, value)

    def __delitem__(self, key) -> None:
        self._counter[0] += 1
        dict.__delitem__(self, key)

    def setdefault(self, key, default=None):
        if key not in self:
            self._counter[0] += 1
        return dict.setdefault(self, key, default)

    def pop(self, *args):
        self._counter[0] += 1
        return dict.pop(self, *args)

    def popitem(self):
        self._counter[0] += 1
        return dict.popitem(self)

    def clear(self) -> None:
        self._counter[0] += 1
        dict.clear(self)

    def update(self, *args, **kwargs) -> None:
        self._counter[0] += 1
        dict.update(self, *args, **kwargs)

    def __ior__(self, other):  # type: ignore[misc]  # (dict's |=, counted: mypy wants __or__ to match)
        self._counter[0] += 1
        return dict.__ior__(self, other)


class ParamGroup(StateDict):
    """A parameter group (a dict) counting its changes in PARAM_GROUPS_VERSION."""

    __slots__ = ()
    _counter = PARAM_GROUPS_VERSION


def _counted(name: str):
    method = getattr(list, name)

    def counted(self, *args):
        PARAM_GROUPS_VERSION[0] += 1
        return method(self, *args)

    counted.__name__ = name
    return counted


class ParamList(list):
    """A list counting its changes in PARAM_GROUPS_VERSION: `param_groups` and each group's
    `params`. Otherwise a plain list."""

    __slots__ = ()


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend", "insert", "pop", "remove",
              "clear", "sort", "reverse"):
    setattr(ParamList, _name, _counted(_name))
del _name


class Optimizer(OptimizerHooks):
    """Holds `param_groups` (dicts with 'params' and hyper-parameters) and `state` (per
    parameter, keyed by the parameter object)."""

    def __init__(self, params: Iterable[Any], defaults: dict) -> None:
        self.defaults = defaults
        self.state: dict = StateDict()
        self._flat: dict[int, FlatState] = {}  # id(group) -> its multi-tensor layout (FlatState)
        self.param_groups: list[dict] = ParamList()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "state":  # a compiled step that read the old state dict re-reads it
            OPTIMIZER_VERSION[0] += 1
        elif name == "param_groups":
            PARAM_GROUPS_VERSION[0] += 1
        object.__setattr__(self, name, value)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group (e.g. layers with their own lr); unset options take the defaults."""
        group = ParamGroup(param_group)
        params = group["params"]
        group["params"] = ParamList([params] if isinstance(params, Tensor) else params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]) or len({id(p) for p in group["params"]}) != len(group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                _clear_grad(p, set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter group (under no_grad, in place); returns the
        closure's loss when a closure is given."""
        if TRACE_HOOK.fn is not None:  # static traces the step (state and lr become graph inputs)
            traced = TRACE_HOOK.fn(self, closure)
            if traced is not NotImplemented:
                return traced
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss

    def _update_group(self, group: dict) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define _update_group(group)")

    def _initial_state(self, p: Tensor, group: dict) -> dict | None:
        """The state p's first step creates before it updates p, when that state does not
        depend on the gradient (zeros, a constant, a step count of 0); {} when the optimizer
        keeps none for p. None (the default, and what a subclass that does not say gets) when
        the first step differs from the later ones otherwise: SGD's momentum buffer starts as
        a copy of the gradient.

        One place for it because two callers need the same answer: an update makes p's state
        from it (`_state_of`), and a compiled training step makes it before tracing its first
        call, so that the first step and every later one are one graph (static.training)."""
        return None

    def _first_state_reads_gradient(self, group: dict) -> bool:
        """Whether a parameter's first step in `group` makes its state from the gradient
        (`_initial_state` then gives None): asked without making any state. True for an
        optimizer that does not define `_initial_state`."""
        return type(self)._initial_state is Optimizer._initial_state

    def _state_of(self, p: Tensor, group: dict) -> dict:
        """p's state, made from `_initial_state` on its first step."""
        state = self.state.get(p)
        if not state:
            made = self._initial_state(p, group)
            if made is None:
                raise NotImplementedError(f"{type(self).__name__}._initial_state gives no state for its first step")
            state = self.state[p] = StateDict(made)
        return state

    def _flat_state(self, group: dict, params: list, arrays: list, dtype: np.dtype, names: tuple,
                    states: list) -> FlatState:
        """The group's FlatState for these parameters and state names, laid out anew when the
        parameters with gradients or the state tensors changed since the last step."""
        flats = self.__dict__.setdefault("_flat", {})  # (an optimizer unpickled from an older version)
        flat = flats.get(id(group))
        if flat is None or flat.dtype != dtype or not flat.holds(params, states, names):
            flat = flats[id(group)] = FlatState(params, arrays, dtype, names)
            for name in names:
                flat.adopt(states, name)
        return flat

    def _foreach_wanted(self, group: dict) -> bool:
        """foreach=None (the default) and True take the multi-tensor path where it applies."""
        return group.get("foreach") is not False

    @staticmethod
    def _gradients(group: dict) -> Iterator[tuple[Tensor, Tensor]]:
        """(p, g) for each parameter of `group` that has a gradient, g negated when the group
        maximizes: the direction every update rule then descends along."""
        for p in group["params"]:
            g = p.grad
            if g is None:
                continue
            yield p, (-g if group.get("maximize") else g)

    def _closure_loss(self, closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            return None
        from .._grad_mode import enable_grad  # noqa: PLC0415

        with enable_grad():
            return closure()

    # -- saving -----------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}: parameters
        are named by their position across groups, as PyTorch does."""
        self._state_dict_hooks("pre")
        index: dict = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {index[id(p)]: {k: self._saved_state_value(k, v) for k, v in s.items()}
                 for p, s in self.state.items() if id(p) in index}
        return self._state_dict_hooks("post", {"state": state, "param_groups": groups})

    # the state numbers PyTorch keeps as 0-d tensors of its scalar dtype (`step_tensor`; a
    # checkpoint holding a Python number for one is loaded as such a tensor, as PyTorch's
    # __setstate__ converts it). SparseAdam keeps an int step: ()
    _tensor_numbers: tuple = ("step",)

    def _saved_state_value(self, key: str, value: Any) -> Any:
        """The live value, as PyTorch's state_dict holds it (not a copy: a dict taken before
        more steps sees them, and torch.save or copy.deepcopy freeze it), except a step
        count kept as a number, given as PyTorch's tensor."""
        if key in self._tensor_numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
            return step_tensor(float(value))
        return value

    def _loaded_state_value(self, key: str, value: Any, p: Any) -> Any:
        """A saved state entry as p's state holds it: tensors copied to p's device, and to p's
        dtype where p is floating point, except the step count (as PyTorch's load_state_dict)."""
        if isinstance(value, Tensor):
            value = value.detach().clone()
            if key != "step" and p.is_floating_point() and value.is_floating_point():
                return value.to(device=p.device, dtype=p.dtype)
            return value if key == "step" else value.to(p.device)
        if key in self._tensor_numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
            return step_tensor(float(value))
        return copy.deepcopy(value)

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = self._state_dict_hooks("load_pre", state_dict)
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        params: list[tuple[Any, Any]] = []  # (saved id, parameter)
        for mine, saved in zip(self.param_groups, groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
            params.extend(zip(saved["params"], mine["params"]))
        by_index = dict(params)
        self.state = StateDict()
        for i, s in state_dict["state"].items():
            p = by_index[i]
            self.state[p] = StateDict({k: self._loaded_state_value(k, v, p) for k, v in s.items()})
        for mine, saved in zip(self.param_groups, groups):
            mine.update({k: v for k, v in saved.items() if k != "params"})
        self._state_dict_hooks("load_post")

    def __repr__(self) -> str:
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            if i:
                lines.append("")  # (PyTorch's: a blank line between groups)
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)
