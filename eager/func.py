"""`eager.func`: torch.func's function transforms that eager's autograd answers directly:
`grad`, `grad_and_value`, `vjp` and `functional_call`. They run the function eagerly, so any
Python works inside, and they nest (grad of grad): each level differentiates the graph the
level below recorded. `vmap`, `jvp`, `jacfwd` and `jacrev` are not here; static.compile,
static.grad, static.vjp and static.jvp are their compiled counterparts."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import autograd
from ._grad_mode import enable_grad, is_grad_enabled
from ._tensor import Tensor

__all__ = ["functional_call", "grad", "grad_and_value", "vjp"]


def _positions(argnums: int | tuple, n: int) -> tuple:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for k in nums:
        if isinstance(k, bool) or not isinstance(k, int) or not -n <= k < n:
            raise RuntimeError(f"Got argnums={argnums!r} for a function called with {n} positional argument(s)")
    return tuple(k % n for k in nums)


def _leaves(x: Any) -> list:
    """The tensors of an argument: itself, or the values of a dict / items of a list or tuple
    (nested), in order."""
    if isinstance(x, dict):
        return [t for v in x.values() for t in _leaves(v)]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _leaves(v)]
    return [x]


def _rebuild(x: Any, leaves: list) -> Any:
    """x with its tensors replaced, in _leaves' order, by the next of `leaves` (consumed)."""
    if isinstance(x, dict):
        return {k: _rebuild(v, leaves) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_rebuild(v, leaves) for v in x)
    return leaves.pop(0)


def _differentiable(x: Any, where: str) -> Tensor:
    """x as a tensor this level differentiates with respect to: a view when it already takes
    part in an outer level's graph (so that level still reaches it), else a detached leaf."""
    if not isinstance(x, Tensor) or not x.dtype.is_floating_point:
        raise RuntimeError(f"{where}: expected a floating-point tensor to differentiate with respect to, got "
                           f"{type(x).__name__}" + (f" of dtype {x.dtype}" if isinstance(x, Tensor) else ""))
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True)


def grad_and_value(func: Callable, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
    """A function returning (gradients of func's scalar output with respect to the arguments at
    argnums, func's output), or (gradients, (output, aux)) with has_aux. Mirrors
    torch.func.grad_and_value."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _positions(argnums, len(args))
        originals = [t for k in nums for t in _leaves(args[k])]
        outer = is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad for t in originals)
        args_list = list(args)
        for k in nums:
            args_list[k] = _rebuild(args[k], [_differentiable(t, "grad") for t in _leaves(args[k])])
        with enable_grad():
            result = func(*args_list, **kwargs)
            if has_aux:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                       "(output, aux) if has_aux is True")
                output, aux = result
            else:
                output, aux = result, None
            if not isinstance(output, Tensor) or output.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   + (f"tensor with shape {tuple(output.shape)}" if isinstance(output, Tensor)
                                      else type(output).__name__))
            inputs = [t for k in nums for t in _leaves(args_list[k])]
            found: Any = (autograd.grad(output, inputs, create_graph=outer, allow_unused=True)
                          if output.requires_grad else [None] * len(inputs))  # (not computed from them)
        flat = [g if g is not None else inputs[i].detach() * 0 for i, g in enumerate(found)]
        if not outer:
            flat = [g.detach() for g in flat]
            output = output.detach()
        grads = [_rebuild(args[k], flat) for k in nums]  # each argument's structure, its gradients
        result_grads = grads[0] if isinstance(argnums, int) else tuple(grads)
        return (result_grads, (output, aux)) if has_aux else (result_grads, output)

    return wrapper


def grad(func: Callable, argnums: int | tuple = 0, has_aux: bool = False) -> Callable:
    """A function returning the gradients of func's scalar output with respect to the
    arguments at argnums ((gradients, aux) with has_aux). Mirrors torch.func.grad."""
    both = grad_and_value(func, argnums, has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        grads, value = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> Any:
    """(func(*primals), vjp_fn) where vjp_fn(cotangents) gives the vector-Jacobian products
    with respect to every primal ((output, vjp_fn, aux) with has_aux). Mirrors torch.func.vjp."""
    outer = is_grad_enabled() and any(isinstance(p, Tensor) and p.requires_grad for p in primals)
    inputs = [_differentiable(p, "vjp") for p in primals]
    with enable_grad():
        result = func(*inputs)
    output, aux = result if has_aux else (result, None)
    outputs = output if isinstance(output, tuple) else (output,)

    def vjp_fn(*cotangents: Any) -> tuple:
        cts = cotangents[0] if len(cotangents) == 1 and isinstance(cotangents[0], tuple) else cotangents
        if len(cts) != len(outputs):
            raise RuntimeError(f"vjp_fn: expected {len(outputs)} cotangent(s), one per output, got {len(cts)}")
        with enable_grad():
            grads = autograd.grad(list(outputs), inputs, list(cts), retain_graph=True, create_graph=outer,
                                  allow_unused=True)
        return tuple(g if g is not None else p.detach() * 0 for g, p in zip(grads, inputs))

    shown = output if outer else (tuple(o.detach() for o in outputs) if isinstance(output, tuple)
                                  else output.detach())
    return (shown, vjp_fn, aux) if has_aux else (shown, vjp_fn)


def _owner(module: Any, path: str) -> tuple:
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


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = (), kwargs: Any = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """`module(*args, **kwargs)` with the named parameters and buffers replaced by the given
    values for the duration of the call (the module is left as it was afterwards): a dict,
    or a tuple of dicts merged. `args` is a tuple, or a single argument. With strict=True
    every parameter and buffer must be given. Mirrors torch.func.functional_call; it is also
    what makes a module's parameters an explicit argument of static.grad (static re-exports it)."""
    values = parameter_and_buffer_dicts
    if isinstance(values, (tuple, list)):
        merged: dict = {}
        for d in values:
            overlap = set(merged) & set(d)
            if overlap:
                raise ValueError(f"functional_call: {sorted(overlap)} appeared in multiple dictionaries")
            merged.update(d)
        values = merged
    if strict:
        names = {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}
        missing = sorted(names - set(values))
        unexpected = sorted(set(values) - names)
        if missing or unexpected:
            raise RuntimeError(f"functional_call got missing keys {missing} and unexpected keys {unexpected} "
                               "(strict=True)")
    swapped = []
    try:
        for path, value in values.items():
            registry, name = _owner(module, path)
            swapped.append((registry, name, registry[name]))
            registry[name] = value
        return module(*(args if isinstance(args, tuple) else (args,)), **(kwargs or {}))
    finally:
        for registry, name, old in reversed(swapped):
            registry[name] = old
