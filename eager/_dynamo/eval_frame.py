"""`torch._dynamo.eval_frame.OptimizedModule`: what `eager.compile(module)` returns.

PyTorch wraps a compiled module in an nn.Module that holds the original as its child
`_orig_mod`. Public programs rely on every consequence of that: `state_dict()` keys start
with `_orig_mod.` (nanoGPT strips the prefix before loading a checkpoint into a plain model),
`load_state_dict` wants them, `isinstance(compiled, nn.Module)` holds, and `train()`,
`eval()`, `to()`, `requires_grad_()` return the compiled module itself, so that
`model = model.eval()` keeps the model compiled. Reads and writes of any other attribute
go to the original module, as PyTorch's do; the compiler's own tools (`explain()`, `ir()`,
`source()`, `retraces`, ...) are reached after the module's attributes."""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ..nn.module import Module


class OptimizedModule(Module):
    """A compiled module: calls run the compiled forward (`_compiled`, a static.compile
    wrapper of `_orig_mod`); its parameters, buffers and mode are the original module's."""

    # attributes that belong to the wrapper; every other write goes to `_orig_mod`
    _opt_mod_attributes = frozenset({"_orig_mod", "_compiled", "_recompile", "_super_module_initialized",
                                     "forward", "__dict__"})

    def __init__(self, mod: Module, compiled: Any, recompile: Callable[[Module], Any] | None = None) -> None:
        object.__setattr__(self, "_super_module_initialized", False)
        super().__init__()
        object.__setattr__(self, "_super_module_initialized", True)
        self._modules["_orig_mod"] = mod  # the child: its state_dict keys carry `_orig_mod.`
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "_recompile", recompile)

    def __deepcopy__(self, memo: dict) -> Any:
        """A copy compiles a copy of the module with the same options, as PyTorch's (whose
        __reduce__ rebuilds the wrapper around the copied module): the compiled entries and
        their captured tensors belong to the original."""
        return _rebuild(copy.deepcopy(self._modules["_orig_mod"], memo), self.__dict__.get("_recompile"))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["_compiled"](*args, **kwargs)

    @property
    def training(self) -> bool:
        """The original module's mode (the compiled entry keys on it), as PyTorch's."""
        return self._modules["_orig_mod"].training

    @training.setter
    def training(self, value: bool) -> None:
        if self.__dict__.get("_super_module_initialized"):
            self._modules["_orig_mod"].training = value

    def __reduce__(self) -> tuple:
        """Pickled (eager.save of the whole model) as the module and how it was compiled, as
        PyTorch's: loading compiles the loaded module afresh."""
        return (_rebuild, (self._modules["_orig_mod"], self.__dict__.get("_recompile")))

    def __len__(self) -> int:
        mod = self._modules["_orig_mod"]
        if hasattr(type(mod), "__len__"):
            return len(mod)
        raise TypeError(f"{type(mod).__name__} does not support len()")

    def __getattr__(self, name: str) -> Any:
        modules = self.__dict__.get("_modules")
        if modules is None or "_orig_mod" not in modules:  # not initialised yet (copy, unpickling)
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        mod = modules["_orig_mod"]
        if name == "_orig_mod":
            return mod
        try:
            return getattr(mod, name)
        except AttributeError:
            if name.startswith("__") and name.endswith("__"):
                raise
        compiled = self.__dict__.get("_compiled")
        if compiled is not None:
            try:  # the compiler's tools: explain(), ir(), source(), retraces (not its module delegation)
                return object.__getattribute__(compiled, name)
            except AttributeError:
                pass
        return getattr(mod, name)  # raises the module's own AttributeError

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            super().__setattr__(name, value)
            return
        setattr(self._modules["_orig_mod"], name, value)

    def __delattr__(self, name: str) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            super().__delattr__(name)
            return
        delattr(self._modules["_orig_mod"], name)

    def __dir__(self) -> list[str]:
        own = self._modules["_orig_mod"].__dir__()
        return own + [a for a in super().__dir__() if a not in own]


def _rebuild(mod: Module, recompile: Callable[[Module], Any] | None) -> Any:
    """A compiled module again around `mod` (a copy, or one unpickled)."""
    return recompile(mod) if recompile is not None else OptimizedModule(mod, mod)
