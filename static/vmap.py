"""`static.vmap`, `static.jacrev`, `static.jacfwd`, `static.hessian`: jax.vmap and the
Jacobian transforms, compiled like the other transforms (static.autodiff.transforms).

vmap is eager's (eager._vmap): the batching rules of the op records run on Tracers, so a
vmapped function traces into one graph of batched ops. Inside vmap, `static.grad` gives
per-example gradients (static.autodiff.transforms' batched form). The Jacobians are composed from
these: jacrev repeats the differentiated inputs once per output element, runs the function
batched once, and seeds one reverse pass with the identity; inside vmap (a hessian's inner
Jacobian) it stacks one per-example gradient per output element. jacfwd is forward mode,
as JAX's: vmap of jvp over the basis tangents (one batched JVP gives every column), so it
differentiates through a while_loop, which has no reverse mode, inside vmap too (the
whole batch's JVPs at once). hessian is jacfwd(jacrev(f))."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import eager
from eager import _vmap
from eager.func import _leaves, _rebuild

from .autodiff import vjp
from .autodiff.transforms import _GradTransform, _inherit
from .errors import TraceError
from .jit.compiled import Compiled, options_of
from .tracing.state import ACTIVE
from .tracing.tracer import Tracer

__all__ = ["hessian", "jacfwd", "jacrev", "vmap"]


def _traceable(fn: Callable) -> Callable:
    return fn._traceable if isinstance(fn, Compiled) else fn


class _Vmapped:
    def __init__(self, fn: Callable, in_dims: Any, out_dims: Any, randomness: str, chunk_size: int | None) -> None:
        self.fn = _traceable(fn)
        self.__name__ = f"vmap_{getattr(self.fn, '__name__', 'f')}"
        self._mapped = _vmap.vmap(self.fn, in_dims, out_dims, randomness, chunk_size=chunk_size)

    def __call__(self, *args: Any) -> Any:
        return self._mapped(*args)


def vmap(fn: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None, **options: Any) -> Compiled:
    """jax.vmap / torch.func.vmap, compiled: fn mapped over `in_dims` of its inputs, outputs
    stacked along `out_dims`; nests, and composes with static.grad (per-example gradients:
    `static.vmap(static.grad(loss), in_dims=(None, 0, 0))`)."""
    return Compiled(_Vmapped(fn, in_dims, out_dims, randomness, chunk_size), **_inherit(fn, options))


class _Jacobian:
    def __init__(self, fn: Callable, argnums: int | tuple, has_aux: bool, kind: str) -> None:
        self.fn = _traceable(fn)
        self.argnums = argnums
        self.has_aux = has_aux
        self.__name__ = f"{kind}_{getattr(self.fn, '__name__', 'f')}"
        self._kind = kind

    def __call__(self, *args: Any) -> Any:
        if not ACTIVE.stack:
            raise TraceError(f"static.{self._kind} transforms run inside a trace; call the compiled function instead")
        single = isinstance(self.argnums, int)
        nums = (self.argnums,) if single else tuple(self.argnums)  # type: ignore[arg-type]
        nums = tuple(k % len(args) for k in nums)
        if self._kind == "jacfwd":  # (under vmap too: the JVPs of the whole batch at once)
            return self._forward(args, nums, single)
        if _vmap.innermost_level([t for a in args for t in _leaves(a)]) is not None:
            return self._batched(args, nums, single)
        state = ACTIVE.stack[-1]
        result = self.fn(*args)
        output, aux = result if self.has_aux else (result, None)
        if not isinstance(output, Tracer):
            return self._per_output_leaf(args, output, aux)
        n = max(output.numel(), 1)
        reps, args_b = [], list(args)
        with eager.enable_grad():
            for k in nums:
                new = []
                for t in _leaves(args[k]):
                    if not isinstance(t, Tracer) or not t.is_floating_point():
                        raise TypeError(f"static.{self._kind}: differentiated arguments must be floating point tensors")
                    rep = t.unsqueeze(0).expand((n,) + tuple(t.shape)).clone()
                    new.append(rep)
                    reps.append(rep)
                args_b[k] = _rebuild(args[k], list(new))
            dims = tuple(0 if k in nums else None for k in range(len(args)))

            def one(*xs: Any) -> Any:
                r = self.fn(*xs)
                return r[0] if self.has_aux else r

            out_b = _vmap.vmap(one, in_dims=dims)(*args_b)
            seed = eager.eye(n, dtype=out_b.dtype).reshape((n,) + tuple(output.shape))
            grads = vjp(state, [out_b._value], [seed], [r._value for r in reps])
        flat = [g.reshape(tuple(output.shape) + tuple(r.shape[1:])) for g, r in zip(grads, reps)]
        per_arg = [_rebuild(args[k], flat) for k in nums]
        jac = per_arg[0] if single else tuple(per_arg)
        return (jac, aux) if self.has_aux else jac

    def _per_output_leaf(self, args: tuple, output: Any, aux: Any) -> Any:
        """jacrev of a function returning a pytree (JAX's: the Jacobians structured like the
        output): one Jacobian per output leaf, each by its own batched reverse pass."""
        leaves, tree = _vmap._flatten(output)
        if not leaves or not all(isinstance(leaf, Tracer) for leaf in leaves):
            raise TypeError(f"static.{self._kind}: the function must return tensors (a pytree of them), got "
                            f"{type(output).__name__}")
        jacs = []
        for j in range(len(leaves)):
            def leaf(*a: Any, j: int = j) -> Any:
                r = self.fn(*a)
                return _vmap._flatten(r[0] if self.has_aux else r)[0][j]

            jacs.append(_Jacobian(leaf, self.argnums, False, self._kind)(*args))
        jac = _vmap._unflatten(tree, jacs)
        return (jac, aux) if self.has_aux else jac

    def _forward(self, args: tuple, nums: tuple, single: bool) -> Any:
        """jacfwd as JAX computes it: the JVP along every basis tangent at once, vmap of jvp
        over the identity's columns (split per differentiated leaf), so one batched forward
        pass gives every column; a loop on the path is pushed forwards (a while_loop too)."""
        from .autodiff.vjp_jvp import _JVPTraceable  # noqa: PLC0415

        flat = [t for k in nums for t in _leaves(args[k])]
        for t in flat:
            if not _tensor_like(t) or not t.is_floating_point():
                raise TypeError(f"static.{self._kind}: differentiated arguments must be floating point tensors, got "
                                f"{type(t).__name__}" + (f" of dtype {t.dtype}" if _tensor_like(t) else ""))
        result = self.fn(*args)
        output, aux = result if self.has_aux else (result, None)
        o_leaves, o_tree = _vmap._flatten(output)
        for leaf in o_leaves:
            if not _tensor_like(leaf):
                raise TypeError(f"static.{self._kind}: the function must return tensors, got {type(leaf).__name__}")
        sizes = [t.numel() for t in flat]
        n_in = sum(sizes)
        eye = eager.eye(max(n_in, 1), dtype=flat[0].dtype)[:n_in]
        basis, offset = [], 0
        for t, size in zip(flat, sizes):
            basis.append(eye[:, offset:offset + size].reshape((n_in,) + tuple(t.shape)).to(t.dtype))
            offset += size

        def of_leaves(*diff: Any) -> Any:
            rest = list(diff)
            call = list(args)
            for k in nums:
                call[k] = _rebuild(args[k], rest)
            r = self.fn(*call)
            return r[0] if self.has_aux else r

        def push(*tangents: Any) -> Any:
            return _JVPTraceable(of_leaves, False, len(flat))(*flat, *tangents)[1]

        columns = _columns(push, basis, n_in) if n_in else [None] * len(o_leaves)
        jacs = []
        for o, col in zip(o_leaves, columns):
            shape = tuple(o.shape)
            parts, offset = [], 0
            for t, size in zip(flat, sizes):
                if col is None:
                    parts.append(eager.zeros(shape + tuple(t.shape), dtype=o.dtype))
                    continue
                block = col[offset:offset + size].movedim(0, -1) if size else None
                parts.append(block.reshape(shape + tuple(t.shape)) if block is not None
                             else eager.zeros(shape + tuple(t.shape), dtype=o.dtype))
                offset += size
            per_arg = [_rebuild(args[k], parts) for k in nums]
            jacs.append(per_arg[0] if single else tuple(per_arg))
        jac = _vmap._unflatten(o_tree, jacs)
        return (jac, aux) if self.has_aux else jac

    def _batched(self, args: tuple, nums: tuple, single: bool) -> Any:
        """Inside vmap: one per-example gradient per output element, stacked."""
        result = self.fn(*args)
        output, aux = result if self.has_aux else (result, None)
        shape = tuple(output.shape)
        rows = []
        for i in range(max(output.numel(), 1)):
            def element(*a: Any, i: int = i) -> Any:
                r = self.fn(*a)
                return (r[0] if self.has_aux else r).reshape(-1)[i]
            rows.append(_GradTransform(element, self.argnums, False, False)(*args))
        per_arg = []
        for p in range(len(nums)):
            leaves_rows = [_leaves(r if single else r[p]) for r in rows]
            stacked = [eager.stack([lr[k] for lr in leaves_rows]).reshape(shape + tuple(leaves_rows[0][k].shape))
                       for k in range(len(leaves_rows[0]))]
            per_arg.append(_rebuild(rows[0] if single else rows[0][p], stacked))
        jac = per_arg[0] if single else tuple(per_arg)
        return (jac, aux) if self.has_aux else jac


def _tensor_like(x: Any) -> bool:
    """A Tracer, or a value batched by an enclosing vmap."""
    return isinstance(x, (Tracer, _vmap.Batched))


def _columns(push: Callable, basis: list, n: int) -> list:
    """The JVPs along the `n` basis tangents, stacked on a leading axis (one leaf per output
    leaf): one batched JVP; where an op on the tangents' path has no batching rule (a VJP's
    scatter under a Jacobian of a Jacobian), one JVP per column instead, still forward mode."""
    try:
        return _vmap._flatten(_vmap.vmap(push)(*basis))[0]
    except RuntimeError as exc:
        if "has no batching rule" not in str(exc):
            raise
    rows = [_vmap._flatten(push(*[b[i] for b in basis]))[0] for i in range(n)]
    return [eager.stack([row[j] for row in rows]) for j in range(len(rows[0]))]


def jacrev(fn: Callable, argnums: int | tuple = 0, has_aux: bool = False, **options: Any) -> Compiled:
    """jax.jacrev: the Jacobian (output shape + input shape) by one batched reverse pass."""
    return Compiled(_Jacobian(fn, argnums, has_aux, "jacrev"), **_inherit(fn, options))


def jacfwd(fn: Callable, argnums: int | tuple = 0, has_aux: bool = False, **options: Any) -> Compiled:
    """jax.jacfwd: the Jacobian (output shape + input shape, for every output of a pytree) by
    forward mode: vmap of jvp over the basis tangents (see the module docstring)."""
    return Compiled(_Jacobian(fn, argnums, has_aux, "jacfwd"), **_inherit(fn, options))


def hessian(fn: Callable, argnums: int | tuple = 0, **options: Any) -> Compiled:
    """jax.hessian: jacfwd(jacrev(fn))."""
    inner = _Jacobian(fn, argnums, False, "jacrev")
    return Compiled(_Jacobian(inner, argnums, False, "jacfwd"), **{**options_of(fn), **options}
                    if isinstance(fn, Compiled) else options)
