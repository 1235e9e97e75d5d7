"""`eager.func`: torch.func's function transforms that eager's autograd answers directly:
`grad`, `grad_and_value`, `vjp` and `functional_call`, plus `vmap` (batching by each op's
rule, eager._vmap) and the Jacobians composed from vmap and grad (`jacrev`, `jacfwd`,
`hessian`). They run the function eagerly, so any Python works inside, and they nest (grad
of grad, grad under vmap for per-example gradients): each level differentiates the graph
the level below recorded. `jvp` is the VJP of the VJP (eager's autograd is reverse mode);
static.compile, static.grad, static.vjp, static.jvp and static.vmap are their compiled
counterparts."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _vmap, autograd
from ._func_more import stack_module_state  # noqa: F401  (torch.func.stack_module_state)
from ._grad_mode import enable_grad, is_grad_enabled, no_grad
from ._tensor import Tensor

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "linearize",
           "stack_module_state", "vjp", "vmap"]


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
        level = _vmap.innermost_level([t for a in args for t in _leaves(a)])
        if level is not None:
            return _batched_grad_and_value(func, args, kwargs, nums, argnums, has_aux, level)
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


def _batched_grad_and_value(func: Callable, args: tuple, kwargs: dict, nums: tuple, argnums: int | tuple,
                            has_aux: bool, level: int) -> Any:
    """grad inside vmap: per-example gradients. Each differentiated input becomes a batched
    leaf at every vmap level present (an unbatched one broadcast along the batch first); the
    batched output, seeded with ones, gives example b's gradient in slice b, since example
    b's loss reads only slice b. Nested vmaps (vmap(vmap(grad(f)))) are levels of the same."""
    levels = _vmap.levels_in([t for a in args for t in _leaves(a)])
    args_list = list(args)
    inputs = []
    for k in nums:
        lifted = []
        for t in _leaves(args[k]):
            u = _vmap.raw(_vmap.lift_all(t, levels))
            if not isinstance(u, Tensor):
                raise RuntimeError(f"grad inside vmap: expected tensors to differentiate, got {type(u).__name__}")
            u = _differentiable(u, "grad")
            inputs.append(u)
            lifted.append(_vmap.rewrap(levels, u))
        args_list[k] = _rebuild(args[k], lifted)
    outer = is_grad_enabled() and any(t.requires_grad and t.grad_fn is not None for t in inputs)
    with enable_grad():
        result = func(*args_list, **kwargs)
        output, aux = result if has_aux else (result, None)
        if output.numel() != 1:
            raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                               f"with shape {tuple(output.shape)}")
        value = _vmap.raw(_vmap.lift_all(output, levels))
        found: Any = (autograd.grad(value, inputs, value.detach() * 0 + 1, create_graph=outer, allow_unused=True)
                      if value.requires_grad else [None] * len(inputs))
    flat = [g if g is not None else inputs[i].detach() * 0 for i, g in enumerate(found)]
    if not outer:
        flat = [g.detach() for g in flat]
        value = value.detach()
    flat = [_vmap.rewrap(levels, g) for g in flat]
    output = _vmap.rewrap(levels, value)
    grads = [_rebuild(args[k], flat) for k in nums]
    result_grads = grads[0] if isinstance(argnums, int) else tuple(grads)
    return (result_grads, (output, aux)) if has_aux else (result_grads, output)


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


def _structure(x: Any) -> Any:
    """The Python structure of a primals or tangents argument, as torch.func prints it."""
    if isinstance(x, dict):
        return {k: _structure(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_structure(v) for v in x)
    return "*"


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False) -> Any:
    """(func(*primals), the Jacobian-vector product with `tangents`), or with has_aux
    (output, jvp_out, aux). Mirrors torch.func.jvp: primals and tangents are tuples of the same
    structure, each tangent of its primal's shape; the result's tangent is structured like the
    output.

    Eager's autograd is reverse mode, so the product is the VJP of the VJP: the pullback
    u -> J^T u is linear in u, and its own VJP seeded with the tangents is J t (the
    construction static.jvp uses). Code with Python loops (eager's while_loop, fori_loop,
    scan run them) is differentiated through them, step by step."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    if _structure(primals) != _structure(tangents):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, tangents also must be. Got "
                           f"primals with structure {_structure(primals)} and tangents with structure "
                           f"{_structure(tangents)}")
    p_leaves, t_leaves = _leaves(primals), _leaves(tangents)
    for p, t in zip(p_leaves, t_leaves):
        for what, v in (("primals", p), ("tangents", t)):
            if not isinstance(v, (Tensor, _vmap.Batched)):  # (a batch of tangents: jacfwd, vmap of jvp)
                raise RuntimeError(f"jvp(f, primals, tangents): Expected {what} to only contain Tensors, got "
                                   f"{type(v)}")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                               f"Tensor, this is not supported. Tensor is of size {list(p.shape)} while the given "
                               f"forward gradient is of size {list(t.shape)}.")
    level = _vmap.innermost_level(p_leaves + t_leaves)
    if level is not None:
        return _jvp_per_member(func, primals, tangents, p_leaves, t_leaves, level, strict, has_aux)
    outer = is_grad_enabled() and any(p.requires_grad or t.requires_grad for p, t in zip(p_leaves, t_leaves))
    inputs = [_differentiable(p, "jvp") for p in p_leaves]
    with enable_grad():
        result = func(*_rebuild(primals, list(inputs)))
        if has_aux:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError("jvp(f, primals, tangents): output of function f should be a tuple: (output, aux) "
                                   "if has_aux is True")
            output, aux = result
        else:
            output, aux = result, None
        outs = _leaves(output)
        for o in outs:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"jvp(f, primals, tangents): Expected f(*primals) to return only tensors, got "
                                   f"unsupported type {type(o)}")
        live = [k for k, o in enumerate(outs) if o.requires_grad and o.dtype.is_floating_point]
        found: list = [None] * len(outs)
        if live:
            # a placeholder cotangent per output: the pullback is linear in it
            us = [outs[k].detach() * 0 for k in live]
            for u in us:
                u.requires_grad_(True)
            pulled = autograd.grad([outs[k] for k in live], inputs, us, create_graph=True, allow_unused=True)
            pairs = [(g, t.to(g.dtype)) for g, t in zip(pulled, t_leaves) if g is not None and g.requires_grad]
            if pairs:
                pushed = autograd.grad([g for g, _ in pairs], us, [t for _, t in pairs], create_graph=outer,
                                       allow_unused=True)
                for k, d in zip(live, pushed):
                    found[k] = d
    tangent_out = [d if d is not None else o.detach() * 0 for d, o in zip(found, outs)]
    if not outer:
        tangent_out = [d.detach() for d in tangent_out]
        shown = _rebuild(output, [o.detach() for o in outs])
        aux = _rebuild(aux, [a.detach() if isinstance(a, Tensor) else a for a in _leaves(aux)])
    else:
        shown = output
    t_out = _rebuild(output, tangent_out)
    return (shown, t_out, aux) if has_aux else (shown, t_out)


def linearize(func: Callable, *primals: Any) -> tuple:
    """(func(*primals), jvp_fn), where jvp_fn(*tangents) is the Jacobian-vector product at the
    primals with tangents structured like them. Mirrors torch.func.linearize (each call of
    jvp_fn is one jvp: eager's autograd keeps no linearized graph between calls)."""
    output = func(*primals)
    shown = _rebuild(output, [o.detach() if isinstance(o, Tensor) else o for o in _leaves(output)])

    def jvp_fn(*tangents: Any) -> Any:
        if _structure(tangents) != _structure(primals):
            raise RuntimeError(f"Expected the tangents {_structure(tangents)} to have the same argspec as the primals "
                               f"{_structure(primals)}")
        for k, (p, t) in enumerate(zip(_leaves(primals), _leaves(tangents))):
            if tuple(getattr(p, "shape", ())) != tuple(getattr(t, "shape", ())):
                raise RuntimeError(f"tangent:{k} with shape {list(getattr(t, 'shape', ()))} in flattened pytree "
                                   f"doesn't match the shape {list(getattr(p, 'shape', ()))} of the corresponding "
                                   "primal.")
        return jvp(func, tuple(primals), tuple(tangents))[1]

    return shown, jvp_fn


def _jvp_per_member(func: Callable, primals: tuple, tangents: Any, p_leaves: list, t_leaves: list, level: int,
                    strict: bool, has_aux: bool) -> Any:
    """jvp under vmap (batched tangents: jacfwd's columns; or batched primals): eager's
    autograd takes no batched cotangent, so one JVP per member of the batch, its results
    stacked into batched values (an output the same for every member stays as it is)."""
    from ._functional import stack  # noqa: PLC0415

    size = _vmap.level_size(p_leaves + t_leaves, level)

    def member(x: Any, b: int) -> Any:
        return x._value.select(0, b) if isinstance(x, _vmap.Batched) and x._level == level else x

    batched_primals = _vmap.innermost_level(p_leaves) == level
    results = [jvp(func, _rebuild(primals, [member(p, b) for p in p_leaves]),
                   _rebuild(tangents, [member(t, b) for t in t_leaves]), strict=strict, has_aux=has_aux)
               for b in range(size)]

    def stacked(k: int) -> Any:
        rows = [_leaves(r[k]) for r in results]
        return _rebuild(results[0][k], [_vmap.Batched(stack([row[j] for row in rows]), level, size)
                                        for j in range(len(rows[0]))])

    out = stacked(0) if batched_primals else results[0][0]
    if has_aux:
        return out, stacked(1), stacked(2) if batched_primals else results[0][2]
    return out, stacked(1)


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


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """torch.func.vmap: func mapped over a dimension of its inputs by each op's batching rule
    (eager._vmap; one call of func computes the batch). Composes with grad: per-example
    gradients are `vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)`."""
    return _vmap.vmap(func, in_dims, out_dims, randomness, chunk_size=chunk_size)


def _jac_inputs(args: tuple, argnums: int | tuple) -> tuple:
    nums = _positions(argnums, len(args))
    for k in nums:
        for t in _leaves(args[k]):
            if not isinstance(t, Tensor) or not t.dtype.is_floating_point:
                raise RuntimeError(f"jacrev: expected floating-point tensors for argnums={argnums!r}, got "
                                   f"{type(t).__name__}" + (f" of dtype {t.dtype}" if isinstance(t, Tensor) else ""))
    return nums


def jacrev(func: Callable, argnums: int | tuple = 0, *, has_aux: bool = False, chunk_size: int | None = None) -> Callable:
    """torch.func.jacrev: the Jacobian of func by reverse mode, composed from vmap and grad:
    the differentiated inputs are repeated once per output element (a batch of N = number of
    outputs), func runs batched once (vmap), and one backward pass seeded with the identity
    gives every row. Shape: output shape + input shape, per output and per argnum."""

    def wrapper(*args: Any) -> Any:
        if _vmap.innermost_level([t for a in args for t in _leaves(a)]) is not None:
            return _jacrev_batched(func, args, argnums, has_aux)
        nums = _jac_inputs(args, argnums)
        result = func(*args)
        output, aux = result if has_aux else (result, None)
        outs = list(output) if isinstance(output, (tuple, list)) else [output]
        per_output = []
        for j in range(len(outs)):
            rows = _jacobian_rows(func, args, nums, has_aux, j, isinstance(output, (tuple, list)))
            per_arg = [_rebuild(args[k], rows[k]) for k in nums]
            per_output.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = type(output)(per_output) if isinstance(output, (tuple, list)) else per_output[0]
        return (jac, aux) if has_aux else jac

    return wrapper


def _jacrev_batched(func: Callable, args: tuple, argnums: int | tuple, has_aux: bool) -> Any:
    """jacrev inside vmap (a hessian's inner Jacobian, per-example Jacobians): one per-example
    gradient per output element (grad's batched form), stacked."""
    from ._functional import stack  # noqa: PLC0415

    result = func(*args)
    output, aux = result if has_aux else (result, None)
    if isinstance(output, (tuple, list)):
        raise RuntimeError("jacrev inside vmap: a function with several outputs is not supported; return one tensor")
    n = output.numel()
    shape = tuple(output.shape)
    rows = []
    for i in range(n):
        def element(*a: Any, i: int = i) -> Any:
            r = func(*a)
            return (r[0] if has_aux else r).reshape(-1)[i]
        rows.append(grad(element, argnums)(*args))
    single = isinstance(argnums, int)
    per_arg = []
    for p in range(1 if single else len(argnums)):  # type: ignore[arg-type]
        leaves_rows = [_leaves(r if single else r[p]) for r in rows]
        stacked = [stack([lr[k] for lr in leaves_rows]).reshape(shape + tuple(leaves_rows[0][k].shape))
                   for k in range(len(leaves_rows[0]))]
        per_arg.append(_rebuild(rows[0] if single else rows[0][p], stacked))
    jac = per_arg[0] if single else tuple(per_arg)
    return (jac, aux) if has_aux else jac


def _jacobian_rows(func: Callable, args: tuple, nums: tuple, has_aux: bool, j: int, multi: bool) -> dict:
    """{argnum: [d output_j / d leaf, per leaf]} from one batched run and one backward."""
    from ._factories import eye  # noqa: PLC0415

    probe = func(*args)
    probe = probe[0] if has_aux else probe
    out = probe[j] if multi else probe
    n = max(out.numel(), 1)
    outer = is_grad_enabled() and any(t.requires_grad for k in nums for t in _leaves(args[k]))
    repeated: dict = {}
    leaves_in = []
    with enable_grad():
        args_b = list(args)
        for k in nums:
            new = []
            for t in _leaves(args[k]):
                base = t if outer and t.requires_grad else t.detach()
                rep = base.unsqueeze(0).expand((n,) + tuple(t.shape))
                if not rep.requires_grad:
                    rep = rep.detach().requires_grad_(True)
                new.append(rep)
                leaves_in.append(rep)
            repeated[k] = len(new)
            args_b[k] = _rebuild(args[k], list(new))
        dims = tuple(0 if k in nums else None for k in range(len(args)))

        def one(*xs: Any) -> Any:
            r = func(*xs)
            r = r[0] if has_aux else r
            return r[j] if multi else r

        out_b = _vmap.vmap(one, in_dims=dims)(*args_b)
        seed = eye(n, dtype=out_b.dtype).reshape((n,) + tuple(out.shape))
        grads = autograd.grad(out_b, leaves_in, seed, create_graph=outer, allow_unused=True)
    rows: dict = {}
    pos = 0
    for k in nums:
        rows[k] = []
        for t in _leaves(args[k]):
            g = grads[pos]
            g = g if g is not None else leaves_in[pos].detach() * 0
            g = g.reshape(tuple(out.shape) + tuple(t.shape))
            rows[k].append(g if outer else g.detach())
            pos += 1
    return rows


def _fwd_argnums(argnums: Any, n: int) -> tuple:
    """torch.func's argnums check for jacfwd (its messages)."""
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if not isinstance(nums, tuple) or not nums or not all(isinstance(k, int) and not isinstance(k, bool)
                                                         for k in nums):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}" if not isinstance(
            nums, tuple) or nums else "argnums must be non-empty")
    for k in nums:
        if not -n <= k < n:
            raise RuntimeError(f"Got argnum={k}, but only {n} positional inputs")
    normal = tuple(k % n for k in nums)
    if len(set(normal)) != len(normal):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return normal


_NO_FAST_PATH = object()


def _jacfwd_by_rows(func: Callable, args: tuple, argnums: int | tuple, has_aux: bool) -> Any:
    """The same matrix by jacrev's one batched forward and one backward, where that gives
    torch.func.jacfwd's result exactly: unbatched arguments, randomness="error" (a draw raises
    in jacrev's vmap as in jacfwd's) and an output that is a tensor or a flat tuple or list of
    tensors (jacrev's structure is then jacfwd's). Pushing the columns one jvp each costs a
    backward pair per input element (eager has no dual numbers), about 50x this for 100
    inputs; _NO_FAST_PATH where the forward push is needed."""
    with no_grad():
        result = func(*args)
    if has_aux and not (isinstance(result, tuple) and len(result) == 2):
        return _NO_FAST_PATH  # (jvp's error for it, as torch's)
    output = result[0] if has_aux else result
    outs = list(output) if isinstance(output, (tuple, list)) else [output]
    if not outs or not all(isinstance(o, Tensor) and o.dtype.is_floating_point for o in outs):
        return _NO_FAST_PATH
    return jacrev(func, argnums, has_aux=has_aux)(*args)


def jacfwd(func: Callable, argnums: int | tuple = 0, *, has_aux: bool = False, randomness: str = "error") -> Callable:
    """torch.func.jacfwd: the Jacobian (output shape + input shape, per output leaf and per
    argnum), built as torch builds it: `jvp` pushed along every column of the identity at
    once, under `vmap(randomness=randomness)` (so random ops follow vmap's rule, and a function
    that draws raises under "error"), the columns split per input and reshaped. The push
    forward is eager.func.jvp; eager's autograd has no dual numbers (no forward-mode tangent
    is carried through its ops), so each jvp is the VJP of the VJP, which is linear in its
    placeholder cotangent and so gives forward mode's values exactly; under vmap the jvp runs
    once per column (eager.func._jvp_per_member). With randomness="different" the columns are
    pushed one by one, each with its own draws. has_aux returns (jacobian, aux), aux of the
    first column (torch's)."""

    def wrapper(*args: Any) -> Any:
        nums = _fwd_argnums(argnums, len(args))
        primals = tuple(args[k] for k in nums)
        flat = _leaves(primals)
        for p in flat:
            if not isinstance(p, (Tensor, _vmap.Batched)):
                raise RuntimeError(f"jacfwd: Expected the differentiated arguments to only contain Tensors, got "
                                   f"{type(p)}")
            if not p.dtype.is_floating_point:
                raise ValueError(f"Expected primal to be floating point or complex, but got: {p.dtype}")
        if randomness == "error" and _vmap.innermost_level(flat) is None:
            fast = _jacfwd_by_rows(func, args, argnums, has_aux)
            if fast is not _NO_FAST_PATH:
                return fast
        from ._factories import eye  # noqa: PLC0415

        numels = [int(p.numel()) for p in flat]
        total = sum(numels)
        basis = []
        start = 0
        for p, n in zip(flat, numels):
            cols = eye(total, dtype=p.dtype)[:, start:start + n] if total else eye(0, dtype=p.dtype)
            basis.append(cols.reshape((total,) + tuple(p.shape)))
            start += n

        def push(*columns: Any) -> Any:
            tangents = _rebuild(primals, list(columns))

            def at(*ps: Any) -> Any:
                full = list(args)
                for k, v in zip(nums, ps):
                    full[k] = v
                return func(*full)

            out = jvp(at, primals, tangents, has_aux=has_aux)
            return (out[1], out[2]) if has_aux else out[1]

        if randomness == "different" and total:  # a fresh draw per column: the columns one by one, stacked
            from ._functional import stack  # noqa: PLC0415

            per_col = [push(*[b[c] for b in basis]) for c in range(total)]
            tree = per_col[0]
            cols = [_leaves(r) for r in per_col]
            results = _rebuild(tree, [stack([col[j] for col in cols]) for j in range(len(cols[0]))])
        else:
            results = _vmap.vmap(push, randomness=randomness)(*basis)
        aux = None
        if has_aux:
            results, aux = results
            aux = _rebuild(aux, [a[0] if isinstance(a, Tensor) else a for a in _leaves(aux)])
        per_out = []
        for jac in _leaves(results):
            out_shape = tuple(jac.shape[1:])
            moved = jac.movedim(0, -1) if jac.dim() else jac
            parts, at_col = [], 0
            for p, n in zip(flat, numels):
                part = moved.narrow(-1, at_col, n) if n else moved[..., :0]
                parts.append(part.reshape(out_shape + tuple(p.shape)))
                at_col += n
            ins = _rebuild(primals, parts)
            per_out.append(ins[0] if isinstance(argnums, int) else ins)
        jac_tree = _rebuild(results, per_out)
        return (jac_tree, aux) if has_aux else jac_tree

    return wrapper


def hessian(func: Callable, argnums: int | tuple = 0) -> Callable:
    """torch.func.hessian: the Jacobian of the Jacobian (output shape + input shape + input
    shape), jacfwd(jacrev(func)) composed: the inner Jacobian keeps its graph (create_graph)
    for the outer one."""
    return jacfwd(jacrev(func, argnums), argnums)
