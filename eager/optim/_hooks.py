"""Optimizer hooks as PyTorch's: per-optimizer step pre/post hooks and state_dict /
load_state_dict hooks (`Optimizer.register_*_hook`), and the global step hooks every
optimizer runs (`register_optimizer_step_pre_hook`, `..._post_hook`). Kept apart from
eager.optim.optimizer (at its size limit) as a base class of Optimizer.

Every class's own `step` is wrapped when the class is made (`__init_subclass__`), so a
user's optimizer subclass runs the hooks too; a step that calls its parent's step runs them
once. With no hook registered the wrapper calls the step at once."""
from __future__ import annotations

import functools
import itertools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

_GLOBAL_PRE: OrderedDict = OrderedDict()
_GLOBAL_POST: OrderedDict = OrderedDict()
_KEYS = itertools.count()


class RemovableHandle:
    """What a register_*_hook call returns: `.remove()` takes the hook out."""

    def __init__(self, hooks: OrderedDict) -> None:
        self._hooks, self.id = hooks, next(_KEYS)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _add(hooks: OrderedDict, hook: Callable, prepend: bool = False) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """hook(optimizer, args, kwargs) before every optimizer's step; it may return
    (new_args, new_kwargs). Mirrors torch.optim.optimizer.register_optimizer_step_pre_hook."""
    return _add(_GLOBAL_PRE, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """hook(optimizer, args, kwargs) after every optimizer's step. Mirrors
    torch.optim.optimizer.register_optimizer_step_post_hook."""
    return _add(_GLOBAL_POST, hook)


def _hooks(opt: Any, name: str) -> OrderedDict:
    found = opt.__dict__.get(name)
    if found is None:
        found = OrderedDict()
        object.__setattr__(opt, name, found)
    return found


def _hooked(step: Callable) -> Callable:
    @functools.wraps(step)
    def hooked_step(self: Any, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        pre, post = d.get("_optimizer_step_pre_hooks"), d.get("_optimizer_step_post_hooks")
        if not (_GLOBAL_PRE or _GLOBAL_POST or pre or post) or d.get("_in_step_hooks"):
            return step(self, *args, **kwargs)
        args = (self, *args)  # (PyTorch's hooks see the optimizer among the step's arguments)
        for hook in list(itertools.chain(_GLOBAL_PRE.values(), (pre or {}).values())):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{hook} must return None or a tuple of (new_args, new_kwargs), but got "
                                       f"{result}.")
                args, kwargs = result
        object.__setattr__(self, "_in_step_hooks", True)
        try:
            out = step(*args, **kwargs)
        finally:
            object.__setattr__(self, "_in_step_hooks", False)
        for hook in list(itertools.chain((post or {}).values(), _GLOBAL_POST.values())):
            hook(self, args, kwargs)
        return out

    hooked_step.hooked = True  # type: ignore[attr-defined]
    return hooked_step


class OptimizerHooks:
    """The hook registrations of torch.optim.Optimizer (see the module docstring)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if callable(step) and not getattr(step, "hooked", False):
            cls.step = _hooked(step)  # type: ignore[attr-defined]

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """hook(optimizer, args, kwargs) before each step; it may return (new_args, new_kwargs)."""
        return _add(_hooks(self, "_optimizer_step_pre_hooks"), hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """hook(optimizer, args, kwargs) after each step."""
        return _add(_hooks(self, "_optimizer_step_post_hooks"), hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(optimizer) before state_dict() packs the state."""
        return _add(_hooks(self, "_optimizer_state_dict_pre_hooks"), hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(optimizer, state_dict) after state_dict(); it may return a new state_dict."""
        return _add(_hooks(self, "_optimizer_state_dict_post_hooks"), hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(optimizer, state_dict) before load_state_dict(); it may return a new state_dict."""
        return _add(_hooks(self, "_optimizer_load_state_dict_pre_hooks"), hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(optimizer) after load_state_dict()."""
        return _add(_hooks(self, "_optimizer_load_state_dict_post_hooks"), hook, prepend)

    def _state_dict_hooks(self, when: str, state_dict: Any = None) -> Any:
        """Run the state_dict (`when` "pre"/"post") or load ("load_pre"/"load_post") hooks;
        the state dict a post or load-pre hook returned, else the one given."""
        hooks = self.__dict__.get(f"_optimizer_{'load_' if when.startswith('load') else ''}state_dict_"
                                  f"{when.rpartition('_')[2]}_hooks")
        for hook in list(hooks.values()) if hooks else ():
            if when in ("pre", "load_post"):
                hook(self)
            else:
                result = hook(self, state_dict)
                if result is not None:
                    state_dict = result
        return state_dict
