"""JAX-style transforms: `static.grad` and `static.value_and_grad`, compiled.

A transform runs on Tracers, inside the trace of the compiled function it becomes: the
gradient is recorded into the same graph as the function itself, so forward and backward
are optimized together. Conventions follow JAX: `argnums` picks the differentiated
arguments (an int gives one gradient, a tuple a tuple), each a pytree like its argument;
with `has_aux=True` the function returns `(output, aux)`, `grad` returns `(grads, aux)` and
`value_and_grad` returns `((value, aux), grads)`."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import eager
from eager import _vmap
from eager.func import _leaves as _eager_leaves
from eager.func import _rebuild as _eager_rebuild
from gmops.special import FULL_LIKE

from ..errors import TraceError
from ..jit.compiled import OPTIONS, Compiled, options_of
from ..tracing import pytree
from ..tracing.function import is_leaf
from ..tracing.state import ACTIVE
from ..tracing.tracer import Tracer
from .graph_vjp import vjp


class _GradTransform:
    """fn -> a function of the same arguments returning gradients (see the module docstring)."""

    def __init__(self, fn: Callable, argnums: int | Iterable[int], has_aux: bool, with_value: bool) -> None:
        self.fn = fn._traceable if isinstance(fn, Compiled) else fn
        kind = "value_and_grad" if with_value else "grad"
        self.argnums = _check_argnums(kind, self.fn, argnums)
        self.has_aux = has_aux
        self.with_value = with_value
        self.__name__ = f"{kind}_{getattr(self.fn, '__name__', 'f')}"
        self._kind = kind
        functools.update_wrapper(self, self.fn, assigned=("__doc__", "__module__"), updated=())

    def __call__(self, *args):
        state = ACTIVE.stack[-1] if ACTIVE.stack else None
        if state is None:
            raise TraceError(f"static.{self._kind} transforms run inside a trace; call the compiled function "
                             "instead")
        single = isinstance(self.argnums, int)
        nums: tuple[int, ...] = (self.argnums,) if isinstance(self.argnums, int) else self.argnums
        for n in nums:
            if not -len(args) <= n < len(args):
                raise ValueError(f"static.{self._kind}: argnums={self.argnums!r} refers to argument {n}, but the "
                                 f"call passes {len(args)} positional argument(s)")
        positions = sorted({n % len(args) for n in nums})
        level = _vmap.innermost_level([t for a in args for t in _eager_leaves(a)])
        if level is not None:  # inside vmap: per-example gradients
            return self._batched(state, args, nums, positions, level)
        wrt_trees: dict[int, tuple[Any, int]] = {}
        flat_wrt: dict[int, list[Tracer]] = {}
        for n in positions:
            leaves, tree = pytree.flatten(args[n], is_leaf)
            for leaf in leaves:
                if not isinstance(leaf, Tracer) or not leaf.is_floating_point():
                    raise TypeError(f"static.{self._kind}: differentiated arguments (argnums={self.argnums!r}) "
                                    "must be floating point tensors or numbers")
            wrt_trees[n] = (tree, len(leaves))
            flat_wrt[n] = leaves
        # as torch.func.grad: an outer no_grad does not stop the transform; a no_grad() region
        # inside the function still does
        with eager.enable_grad():
            # each differentiated position is its own input with value semantics, as in JAX: a
            # fresh copy of every leaf, so that an array passed twice (or a tensor and a view
            # of it, or a pytree sharing a leaf) gives each position its own gradient instead
            # of their sum, and the caller's value is never written through
            call_args = list(args)
            for n in positions:
                flat_wrt[n] = [leaf.clone() for leaf in flat_wrt[n]]
                call_args[n] = pytree.unflatten(wrt_trees[n][0], flat_wrt[n])
            # the values as the function receives them: an in-place write inside it rebinds
            # a Tracer to the written value, and the gradient is that of the input
            wrt_values = [t._value for n in positions for t in flat_wrt[n]]
            out = self.fn(*call_args)
        aux = None
        if self.has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError(f"static.{self._kind}(has_aux=True): the function must return a pair "
                                "(output, aux)")
            out, aux = out
        if not isinstance(out, Tracer) or out.numel() != 1 or not out.is_floating_point():
            shape = list(out.shape) if hasattr(out, "shape") else type(out).__name__
            raise TypeError(f"static.{self._kind}: {getattr(self.fn, '__name__', 'f')} must return a scalar "
                            f"floating point value (got {shape}); reduce the output to a scalar (e.g. .sum()) "
                            "before differentiating, or use static.vjp for the vector-Jacobian product of a "
                            "non-scalar output")
        seed = FULL_LIKE(out, value=1.0)
        grads = vjp(state, [out._value], [seed], wrt_values)
        by_position, pos = {}, 0
        for n in positions:
            tree, count = wrt_trees[n]
            by_position[n] = pytree.unflatten(tree, grads[pos:pos + count])
            pos += count
        grouped = [by_position[n % len(args)] for n in nums]
        g = grouped[0] if single else tuple(grouped)
        if self.with_value:
            return ((out, aux), g) if self.has_aux else (out, g)
        return (g, aux) if self.has_aux else g


    def _batched(self, state, args: tuple, nums: tuple, positions: list, level: int):
        """grad under vmap (static.vmap(static.grad(loss))): each differentiated input a batched
        copy at every vmap level present (an unbatched one broadcast along the batch), the
        batched output seeded with ones; slice b of the gradient is example b's (its loss reads
        only slice b)."""
        levels = _vmap.levels_in([t for a in args for t in _eager_leaves(a)])
        call_args = list(args)
        wrt_values = []
        for n in positions:
            new = []
            for leaf in _eager_leaves(args[n]):
                u = _vmap.raw(_vmap.lift_all(leaf, levels))
                if not isinstance(u, Tracer) or not u.is_floating_point():
                    raise TypeError(f"static.{self._kind}: differentiated arguments (argnums={self.argnums!r}) must "
                                    "be floating point tensors")
                with eager.enable_grad():
                    u = u.clone()
                wrt_values.append(u._value)
                new.append(_vmap.rewrap(levels, u))
            call_args[n] = _eager_rebuild(args[n], new)
        with eager.enable_grad():
            out = self.fn(*call_args)
        aux = None
        if self.has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError(f"static.{self._kind}(has_aux=True): the function must return a pair (output, aux)")
            out, aux = out
        if out.numel() != 1 or not out.is_floating_point():
            raise TypeError(f"static.{self._kind}: {getattr(self.fn, '__name__', 'f')} must return a scalar floating "
                            f"point value (got {list(out.shape)})")
        value = _vmap.raw(_vmap.lift_all(out, levels))
        grads = vjp(state, [value._value], [FULL_LIKE(value, value=1.0)], wrt_values)
        out = _vmap.rewrap(levels, value)
        flat = [_vmap.rewrap(levels, g) for g in grads]
        by_position = {n: _eager_rebuild(args[n], flat) for n in positions}
        grouped = [by_position[n % len(args)] for n in nums]
        g = grouped[0] if isinstance(self.argnums, int) else tuple(grouped)
        if self.with_value:
            return ((out, aux), g) if self.has_aux else (out, g)
        return (g, aux) if self.has_aux else g


def _check_argnums(kind: str, fn: Callable, argnums) -> int | tuple:
    """argnums as JAX takes it (an int or a non-empty sequence of ints), checked against the
    function's positional parameters when they are known."""
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple, list)):
        raise TypeError(f"static.{kind}: argnums must be an int or a tuple of ints, got "
                        f"{type(argnums).__name__} {argnums!r}")
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise ValueError(f"static.{kind}: argnums is empty; name at least one argument to differentiate")
    bad = [n for n in nums if isinstance(n, bool) or not isinstance(n, int)]
    if bad:
        raise TypeError(f"static.{kind}: argnums must be ints, got {bad[0]!r} in {argnums!r}")
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = None
    if params is not None and not any(p.kind == p.VAR_POSITIONAL for p in params):
        n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        for i in nums:
            if not -n <= i < n:
                raise ValueError(f"static.{kind}: argnums={argnums!r} refers to argument {i}, but "
                                 f"{getattr(fn, '__name__', 'the function')} has {n} positional parameter(s)")
    return argnums if isinstance(argnums, int) else nums


def grad(fn: Callable, argnums: int | Iterable[int] = 0, has_aux: bool = False, **options: Any) -> Compiled:
    """The gradient of scalar `fn` with respect to argument(s) `argnums`, compiled (jax.grad).
    With has_aux=True, `fn` returns `(output, aux)` and the result is `(grads, aux)`. Options
    are static.compile's; a compiled `fn` lends its own."""
    return Compiled(_GradTransform(fn, argnums, has_aux, with_value=False), **_inherit(fn, options))


def value_and_grad(fn: Callable, argnums: int | Iterable[int] = 0, has_aux: bool = False,
                   **options: Any) -> Compiled:
    """`(fn(*args), grads)` in one compiled graph (jax.value_and_grad). With has_aux=True,
    `fn` returns `(output, aux)` and the result is `((output, aux), grads)`."""
    return Compiled(_GradTransform(fn, argnums, has_aux, with_value=True), **_inherit(fn, options))


def _inherit(fn, options: dict) -> dict:
    """static.compile's options for the transform: those given, over those of a compiled `fn`."""
    unknown = [k for k in options if k not in OPTIONS]
    if unknown:
        raise TypeError(f"static.grad got an unexpected option {unknown[0]!r}; valid options: {', '.join(OPTIONS)}")
    return {**options_of(fn), **options} if isinstance(fn, Compiled) else options
