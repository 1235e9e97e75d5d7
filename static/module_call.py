"""`static.functional_call(module, params, args)`: call a module with other parameter and
buffer values, as `torch.func.functional_call` does.

It is what makes a module's parameters an explicit argument, so that `static.grad` and
`static.value_and_grad` can differentiate with respect to them:

    params = dict(model.named_parameters())
    loss = lambda params, x, y: F.mse_loss(static.functional_call(model, params, (x,)), y)
    value, grads = static.value_and_grad(loss)(params, x, y)   # grads: a dict like params
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _owner(module, path: str):
    """(registry dict, name) holding the parameter or buffer at a dotted path."""
    *parents, name = path.split(".")
    m = module
    for part in parents:
        modules = m.__dict__.get("_modules", {})
        if part not in modules:
            raise AttributeError(f"functional_call: {type(m).__name__} has no submodule {part!r} (in {path!r})")
        m = modules[part]
    for key in ("_parameters", "_buffers"):
        registry = m.__dict__.get(key)
        if registry is not None and name in registry:
            return registry, name
    raise AttributeError(f"functional_call: {path!r} is not a parameter or buffer of {type(module).__name__}")


def functional_call(module, parameters_and_buffers: Mapping[str, Any], args: Any = (),
                    kwargs: Mapping[str, Any] | None = None, *, strict: bool = False) -> Any:
    """`module(*args, **kwargs)` with the named parameters and buffers replaced by the given
    values for the duration of the call (the module is left as it was afterwards). `args`
    is a tuple, or a single argument. With strict=True every parameter and buffer must be
    given, as torch.func.functional_call requires."""
    if strict:
        names = {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}
        missing = sorted(names - set(parameters_and_buffers))
        unexpected = sorted(set(parameters_and_buffers) - names)
        if missing or unexpected:
            raise RuntimeError(f"functional_call got missing keys {missing} and unexpected keys {unexpected} "
                               "(strict=True)")
    swapped = []
    try:
        for path, value in parameters_and_buffers.items():
            registry, name = _owner(module, path)
            swapped.append((registry, name, registry[name]))
            registry[name] = value
        return module(*(args if isinstance(args, tuple) else (args,)), **(kwargs or {}))
    finally:
        for registry, name, old in reversed(swapped):
            registry[name] = old
