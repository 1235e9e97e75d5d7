"""torch.jit, for scripts that decorate with it: there is no TorchScript here, so `script`
and `trace` give back the function or module they are handed, which then runs as the
Python it is (same values; for a compiled graph use `static.compile` / `eager.compile`).
The decorators that steer TorchScript (ignore, unused, export, script_method) leave their
function as it is; is_scripting() and is_tracing() are False. Saving and loading
TorchScript archives is refused with a clear error (use eager.save / eager.load)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final  # noqa: F401  (torch.jit.Final)

from .nn.module import Module as ScriptModule  # noqa: F401  (annotations name torch.jit.ScriptModule)


def script(obj: Any = None, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """The function or module itself, run as Python. Mirrors torch.jit.script's call forms."""
    return obj


def trace(func: Any, example_inputs: Any = None, *args: Any, **kwargs: Any) -> Any:
    """The function or module itself, run as Python (PyTorch's trace would freeze its control
    flow at the example; running the Python keeps every branch). Mirrors torch.jit.trace."""
    return func


def trace_module(mod: Any, inputs: Any = None, *args: Any, **kwargs: Any) -> Any:
    return mod


def _identity_decorator(fn: Any = None, **kwargs: Any) -> Any:
    if fn is None:  # @torch.jit.ignore(drop=True)
        return lambda f: f
    return fn


ignore = unused = export = script_method = _unused = _identity_decorator


def script_if_tracing(fn: Callable) -> Callable:
    return fn


def is_scripting() -> bool:
    """False: nothing runs as TorchScript here."""
    return False


def is_tracing() -> bool:
    """False: nothing runs under torch.jit.trace here."""
    return False


def annotate(the_type: Any, the_value: Any) -> Any:
    """the_value (the type is for TorchScript's compiler)."""
    return the_value


def freeze(mod: Any, preserved_attrs: Any = None, optimize_numerics: bool = True) -> Any:
    return mod


def optimize_for_inference(mod: Any, other_methods: Any = None) -> Any:
    return mod


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    raise NotImplementedError("torch.jit.save: there are no TorchScript archives here; save the module's "
                              "state_dict with eager.save(model.state_dict(), path)")


def load(f: Any, map_location: Any = None, _extra_files: Any = None) -> Any:
    raise NotImplementedError("torch.jit.load: there are no TorchScript archives here; build the module in "
                              "Python and load a state_dict saved with eager.save")


__all__ = ["Final", "ScriptModule", "annotate", "export", "freeze", "ignore", "is_scripting", "is_tracing", "load",
           "optimize_for_inference", "save", "script", "script_if_tracing", "script_method", "trace",
           "trace_module", "unused"]
