"""`static.vjp` and `static.jvp`: jax.vjp and jax.jvp on static's reverse-mode autodiff,
compiled like the other transforms (static.autodiff.transforms).

Both stand on the same autodiff as static.grad. `vjp` records the function and its pullback
into one graph. `jvp` uses the double-VJP construction: the pullback u -> J^T u is linear in
the cotangent u, so its own VJP seeded with the tangents t gives d/du <J^T u, t> = J t. The
placeholder u never reaches the result, and the passes remove what only it fed. A function
with a loop or a choice on the path is pushed forwards node by node instead
(static.autodiff.forward: the control-flow ops' own forward rules, a while_loop's included).

Conventions and error types follow JAX: primals are pytrees of floating point values,
`vjp_fn` takes one cotangent structured like the output and returns a tuple with one
cotangent per primal, `jvp` takes tuples of primals and tangents of the same structure."""
from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, cast

import eager
from gmops.special import FULL_LIKE

from ..errors import TraceError
from ..jit.compiled import OPTIONS, Compiled, options_of
from ..tracing import pytree
from ..tracing.function import is_leaf
from ..tracing.state import ACTIVE, TraceState
from ..tracing.tracer import Tracer
from .forward import jvp as forward_jvp
from .forward import needs_forward
from .graph_vjp import vjp as reverse


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


def _aval(x: Any) -> tuple[tuple[int, ...], str | None]:
    """(shape, dtype name) of a leaf, as the messages print it; a Python float is weakly
    typed (dtype None), as in JAX: it takes the dtype of the value it stands beside."""
    if isinstance(x, bool):
        return (), "bool"
    if isinstance(x, int):
        return (), "int"
    if isinstance(x, float):
        return (), None
    dtype = getattr(x, "dtype", None)
    name = getattr(dtype, "name", None)
    return tuple(getattr(x, "shape", ())), str(name) if name is not None else type(x).__name__


def _type_str(aval: tuple[tuple[int, ...], str | None]) -> str:
    shape, name = aval
    return f"{name or 'float'}[{','.join(map(str, shape))}]"


def _is_float(aval: tuple[tuple[int, ...], str | None]) -> bool:
    return aval[1] is None or "float" in aval[1]


def _fits(given: tuple[Any, ...], expected: tuple[Any, ...]) -> bool:
    """A cotangent or tangent of `given` type for a value of `expected` type: the same shape,
    and the same dtype unless one of them is a weakly typed Python float."""
    return given[0] == expected[0] and (given[1] is None or expected[1] is None or given[1] == expected[1])


def _tree_str(structure: Any) -> str:
    """A pytree structure as JAX prints one: `(*, [*, *], {'b': *})`."""
    kind = structure[0]
    if kind == "leaf":
        return "*"
    if kind == "none":
        return "None"
    if kind == "list":
        return "[" + ", ".join(_tree_str(s) for s in structure[1]) + "]"
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {_tree_str(s)}" for k, s in zip(structure[1], structure[2])) + "}"
    items = structure[-1]
    inner = ", ".join(_tree_str(s) for s in items) + ("," if len(items) == 1 else "")
    return f"{structure[1].__name__}({inner})" if kind in ("namedtuple", "tuple_of") else f"({inner})"


def _split_aux(kind: str, fn: Callable[..., Any], result: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return result, None
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise TypeError(f"static.{kind}(has_aux=True): {_name(fn)} must return a pair (output, aux), got "
                        f"{type(result).__name__}")
    return result[0], result[1]


def _check_primals(kind: str, fn: Callable[..., Any], primals: tuple[Any, ...]) -> None:
    """Primals are pytrees of floating point arrays or Python floats (static has no float0
    tangent type for integers, which JAX would give them)."""
    for i, p in enumerate(primals):
        for leaf in pytree.flatten(p, is_leaf)[0]:
            aval = _aval(leaf)
            if not _is_float(aval):
                raise TypeError(f"static.{kind}: primal {i} of {_name(fn)} holds a value of type {_type_str(aval)}; "
                                "only floating point values can be differentiated (pass integer and other "
                                "values through a closure or functools.partial, or cast them to float)")


def _check_outputs(kind: str, fn: Callable[..., Any], leaves: list[Any]) -> None:
    for j, leaf in enumerate(leaves):
        aval = _aval(leaf)
        if not _is_float(aval):
            raise TypeError(f"static.{kind}: output {j} of {_name(fn)} has type {_type_str(aval)}; only floating "
                            "point outputs have cotangents and tangents (return other values with has_aux=True)")


def _check_options(kind: str, options: dict[str, Any]) -> None:
    unknown = [k for k in options if k not in OPTIONS]
    if unknown:
        raise TypeError(f"static.{kind} got an unexpected option {unknown[0]!r}; valid options: {', '.join(OPTIONS)}")


class _Linearized:
    """`fn` run on Tracers inside the current trace, with fresh copies of its primals so
    that only the paths through the primals are differentiated: a primal passed twice, or
    also reached through a closure, is a separate input (JAX's semantics)."""

    def __init__(self, kind: str, fn: Callable[..., Any], primals: tuple[Any, ...], has_aux: bool) -> None:
        self.state = ACTIVE.stack[-1]
        _check_primals(kind, fn, primals)
        self.trees: list[Any] = []
        self.primal_leaves: list[Any] = []
        fresh = []
        for p in primals:
            leaves, tree = pytree.flatten(p, is_leaf)
            copies = [_lift(self.state, leaf).clone() for leaf in leaves]
            self.trees.append((tree, len(copies)))
            self.primal_leaves += copies
            fresh.append(pytree.unflatten(tree, copies))
        # the values as `fn` receives them: an in-place write inside it rebinds a Tracer to the
        # written value, and the derivatives are those of the inputs
        self.primal_values = [p._value for p in self.primal_leaves]
        # as grad: an outer no_grad does not stop the transform
        with eager.enable_grad():  # type: ignore[no-untyped-call]  # eager's grad modes are untyped
            result = fn(*fresh)
        self.out, self.aux = _split_aux(kind, fn, result, has_aux)
        self.out_leaves, self.out_tree = pytree.flatten(self.out, is_leaf)
        _check_outputs(kind, fn, self.out_leaves)
        for j, leaf in enumerate(self.out_leaves):
            if not isinstance(leaf, Tracer):
                raise TypeError(f"static.{kind}: output {j} of {_name(fn)} is a constant ({type(leaf).__name__}) "
                                "that does not depend on the primals; return it with has_aux=True")

    def pullback(self, cotangents: list[Any]) -> tuple[Any, ...]:
        """The cotangent of every primal leaf, grouped back into one pytree per primal."""
        flat = reverse(self.state, [o._value for o in self.out_leaves], cotangents,
                   self.primal_values)
        grouped, pos = [], 0
        for tree, n in self.trees:
            grouped.append(pytree.unflatten(tree, flat[pos:pos + n]))
            pos += n
        return tuple(grouped)

    def push_forward(self, tangents: list[Any]) -> Any:
        """J t by the double-VJP construction (see the comment above `_name`), or pushed
        forwards node by node where a loop or a choice is on the path (a while_loop has no
        VJP; static.autodiff.forward)."""
        if needs_forward(self.state, self.primal_values):
            again: dict[Any, Any] = {}
            pushed = forward_jvp(self.state, [o._value for o in self.out_leaves], self.primal_values, tangents, again)
            # an output a loop computed is taken from the loop that carries its tangent (the
            # same values), so the first loop is dead code when nothing else reads it
            self.out_leaves = [again.get(o._value, o) for o in self.out_leaves]
            self.out = pytree.unflatten(self.out_tree, self.out_leaves)
            return pytree.unflatten(self.out_tree, pushed)
        placeholders = [FULL_LIKE(o, value=0.0) for o in self.out_leaves]
        pulled = reverse(self.state, [o._value for o in self.out_leaves], placeholders,
                     self.primal_values)
        pushed = reverse(self.state, [g._value for g in pulled], tangents, [u._value for u in placeholders])
        return pytree.unflatten(self.out_tree, pushed)


def _lift(state: TraceState, leaf: Any) -> Tracer:
    """A primal leaf as a Tracer: a constant of the traced function (an array, a tensor, a
    Python float made or read inside it) becomes an input of the graph."""
    if isinstance(leaf, Tracer):
        return leaf
    if isinstance(leaf, float):
        return Tracer(state, state.constant(eager.tensor(leaf)._data))
    return Tracer(state, state.capture(leaf))


def _traced(value: Any, like: Tracer) -> Tracer:
    """`value` (a Tracer, an array or a Python float) as a Tracer of `like`'s dtype in the
    current trace."""
    if isinstance(value, Tracer):
        return value if value.dtype == like.dtype else cast(Tracer, value.to(dtype=like.dtype))  # type: ignore[no-untyped-call]  # Tracer's
    if getattr(type(value), "__graphmode_batched__", False):  # a batch of tangents (jacfwd: vmap of jvp)
        return cast(Tracer, value if value.dtype == like.dtype else value.to(dtype=like.dtype))
    if isinstance(value, float):
        return cast(Tracer, FULL_LIKE(like, value=value))
    return cast(Tracer, FULL_LIKE(like, value=0.0) + eager.as_tensor(value).to(dtype=like.dtype))


class _VJPTraceable:
    """(*primals, *cotangent leaves) -> the primals' cotangents: what static.vjp compiles."""

    def __init__(self, fn: Callable[..., Any], has_aux: bool, n_primals: int) -> None:
        self.fn, self.has_aux, self.n_primals = fn, has_aux, n_primals
        self.__name__ = f"vjp_{_name(fn)}"

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        lin = _Linearized("vjp", self.fn, args[:self.n_primals], self.has_aux)
        cts = [_traced(c, o) for c, o in zip(args[self.n_primals:], lin.out_leaves)]
        return lin.pullback(cts)


class _JVPTraceable:
    """(*primals, *tangent leaves) -> (out, tangent_out[, aux]): what static.jvp compiles."""

    def __init__(self, fn: Callable[..., Any], has_aux: bool, n_primals: int) -> None:
        self.fn, self.has_aux, self.n_primals = fn, has_aux, n_primals
        self.__name__ = f"jvp_{_name(fn)}"

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        primals = args[:self.n_primals]
        if any(_is_batched(leaf) for p in primals for leaf in pytree.flatten(p, is_leaf)[0]):
            return self._batched(primals, list(args[self.n_primals:]))
        lin = _Linearized("jvp", self.fn, primals, self.has_aux)
        tangents = [_traced(t, p) for t, p in zip(args[self.n_primals:], lin.primal_leaves)]
        out_tangent = lin.push_forward(tangents)
        return (lin.out, out_tangent, lin.aux) if self.has_aux else (lin.out, out_tangent)

    def _batched(self, primals: tuple[Any, ...], t_leaves: list[Any]) -> tuple[Any, ...]:
        """jvp under vmap of batched primals (jax.vmap(jax.jvp)): the function of the whole
        batch (the underlying values, batched at every level present) differentiated forwards
        with the whole batch of tangents, since examples do not mix under vmap; the results
        batched again."""
        from eager import _vmap  # noqa: PLC0415

        trees = [pytree.flatten(p, is_leaf) for p in primals]
        p_leaves = [leaf for leaves, _ in trees for leaf in leaves]
        levels = _vmap.levels_in(p_leaves + t_leaves)

        def lift(x: Any) -> Any:
            return _vmap.raw(_vmap.lift_all(eager.tensor(x) if isinstance(x, float) else x, levels))

        raw_primals = [pytree.unflatten(tree, [lift(x) for x in leaves]) for leaves, tree in trees]
        raw_tangents = [lift(t if _is_batched(t) or not isinstance(p, float) else eager.tensor(t))
                        for t, p in zip(t_leaves, p_leaves)]
        out_tree: list[Any] = []

        def whole_batch(*raws: Any) -> Any:
            wrapped = [pytree.unflatten(tree, [_vmap.rewrap(levels, x) for x in pytree.flatten(r, is_leaf)[0]])
                       for r, (_, tree) in zip(raws, trees)]
            result = self.fn(*wrapped)
            out, aux = _split_aux("jvp", self.fn, result, self.has_aux)
            leaves, tree = pytree.flatten(out, _leaf_or_batched)
            out_tree.append(tree)
            flat = [lift(o) for o in leaves]
            return (pytree.unflatten(tree, flat), aux) if self.has_aux else pytree.unflatten(tree, flat)

        whole_batch.__name__ = _name(self.fn)
        res = _JVPTraceable(whole_batch, self.has_aux, len(primals))(*raw_primals, *raw_tangents)

        def batched(x: Any) -> Any:
            leaves, tree = pytree.flatten(x, is_leaf)
            return pytree.unflatten(tree, [_vmap.rewrap(levels, v) for v in leaves])

        return (batched(res[0]), batched(res[1])) + tuple(res[2:])


def _is_batched(x: Any) -> bool:
    return bool(getattr(type(x), "__graphmode_batched__", False))


def _leaf_or_batched(x: Any) -> bool:
    return is_leaf(x) or _is_batched(x)


# compiled wrappers per function, so that calling static.vjp/jvp in a loop reuses one
# compiled function (and its cache) instead of tracing anew; the traceables hold the
# function weakly, so the entry goes when the function does
_WRAPPERS: "weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], Compiled]]" = weakref.WeakKeyDictionary()


class _WeakCall:
    """Calls a function through a weak reference (see _WRAPPERS)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._ref = weakref.ref(fn)
        self.__name__ = _name(fn)

    def __call__(self, *args: Any) -> Any:
        fn = self._ref()
        if fn is None:  # the function died while a compiled transform of it was still called
            raise RuntimeError(f"{self.__name__} no longer exists")
        return fn(*args)


def _compiled(kind: str, fn: Callable[..., Any], has_aux: bool, n_primals: int,
              options: dict[str, Any]) -> Compiled:
    """The compiled transform `kind` ("forward", "vjp" or "jvp") of `fn` for these options."""
    target = fn._traceable if isinstance(fn, Compiled) else fn
    opts = {**options_of(fn), **options} if isinstance(fn, Compiled) else dict(options)
    if kind == "forward" and isinstance(fn, Compiled) and not options:
        return fn

    def make(call: Callable[..., Any]) -> Compiled:
        if kind == "forward":
            return Compiled(call, **opts, name=_name(target))
        traceable = (_VJPTraceable if kind == "vjp" else _JVPTraceable)(call, has_aux, n_primals)
        return Compiled(traceable, **opts, name=traceable.__name__)

    # a module's training mode decides what its trace records (dropout, batch norm), so each
    # mode gets its own compiled function, as static.compile(module) keys its signatures
    modes = tuple(m.training for m in target.modules()) if isinstance(target, eager.nn.Module) else ()
    try:
        key = (kind, has_aux, n_primals, modes, tuple(sorted(opts.items())))
        hash(key)
        per_fn = _WRAPPERS.setdefault(target, {})
    except TypeError:  # an unhashable option value, or a function that takes no weak reference
        return make(target)
    compiled = per_fn.get(key)
    if compiled is None:
        compiled = per_fn[key] = make(_WeakCall(target))
    return compiled


class _VJPFunction:
    """The function static.vjp returns: a cotangent structured like the function's output ->
    a tuple with the cotangent of each primal (jax.vjp's `vjp_fn`)."""

    def __init__(self, fn: Callable[..., Any], out_tree: Any, out_leaves: list[Any],
                 pull: Callable[[list[Any]], tuple[Any, ...]]) -> None:
        self._fn, self._out_tree, self._pull = fn, out_tree, pull
        self._out_avals = [_aval(o) for o in out_leaves]
        self._out_leaves = out_leaves
        self.__name__ = f"vjp_fn_{_name(fn)}"

    def __repr__(self) -> str:
        return f"<static.vjp function of {_name(self._fn)}>"

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        if len(args) != 1:
            raise TypeError(f"The function returned by static.vjp applied to {_name(self._fn)} was called with "
                            f"{len(args)} arguments, but it takes a single argument structured like the value "
                            f"{_name(self._fn)} returned (even if that value is a tuple or other container): "
                            f"call it as vjp_fn(({', '.join('ct' for _ in range(max(len(args), 2)))})) "
                            "rather than vjp_fn(ct, ct)")
        leaves, tree = pytree.flatten(args[0], is_leaf)
        if tree != self._out_tree:
            raise ValueError(f"unexpected tree structure of the argument to the function returned by static.vjp: "
                             f"got {_tree_str(tree)}, but expected {_tree_str(self._out_tree)}, the structure of "
                             f"what {_name(self._fn)} returned")
        for j, (c, expected) in enumerate(zip(leaves, self._out_avals)):
            given = _aval(c)
            if not _fits(given, expected):
                raise ValueError(f"unexpected type (shape/dtype) for the argument to the function returned by "
                                 f"static.vjp: got {_type_str(given)}, but expected {_type_str(expected)} because "
                                 f"the corresponding output {j} of {_name(self._fn)} had type "
                                 f"{_type_str(expected)}")
        return self._pull(leaves)


def _concrete_like(value: Any, like: Any) -> Any:
    """A weakly typed Python float as a 0-d value of `like`'s dtype and kind (a Tensor or an
    array); other values are passed as given."""
    if not isinstance(value, float):
        return value
    if isinstance(like, eager.Tensor):
        return eager.tensor(value, dtype=like.dtype, device=like.device)
    return like.dtype.type(value) if hasattr(like, "dtype") else value


def vjp(fn: Callable[..., Any], *primals: Any, has_aux: bool = False, **options: Any) -> tuple[Any, ...]:
    """`(out, vjp_fn)`, or `(out, vjp_fn, aux)` with has_aux=True: the value of `fn(*primals)`
    and its vector-Jacobian product (jax.vjp, torch.func.vjp). `vjp_fn(cotangent)`, with a
    cotangent structured like `out`, returns a tuple with one cotangent per primal, each
    structured like its primal.

    Primals are pytrees (tuples, lists, dicts) of floating point tensors, arrays or Python
    floats. Outside a trace the forward and the pullback run compiled (options as
    static.compile's; a compiled `fn` lends its own); `vjp_fn` runs the forward and backward
    as one graph, so what the backward needs is recomputed there rather than kept. Inside a
    traced function, vjp records into that trace, and `vjp_fn` must be called in it too.

    Bad input raises JAX's errors: TypeError for a non-float primal or output, for calling
    `vjp_fn` with more than one argument, or a bad has_aux result; ValueError for a cotangent
    of the wrong structure, shape or dtype."""
    if not callable(fn):
        raise TypeError(f"static.vjp: expected a callable value, got {type(fn).__name__} {fn!r}")
    _check_options("vjp", options)
    if ACTIVE.stack:
        lin = _Linearized("vjp", fn, primals, has_aux)
        state = lin.state

        def pull(cotangents: list[Any]) -> tuple[Any, ...]:
            if not ACTIVE.stack or ACTIVE.stack[-1] is not state:
                raise TraceError(f"the function static.vjp returned inside the trace of a compiled function is "
                                 f"called outside it; call it inside the function that called static.vjp on "
                                 f"{_name(fn)}")
            return lin.pullback([_traced(c, o) for c, o in zip(cotangents, lin.out_leaves)])

        vjp_fn = _VJPFunction(fn, lin.out_tree, lin.out_leaves, pull)
        return (lin.out, vjp_fn, lin.aux) if has_aux else (lin.out, vjp_fn)
    _check_primals("vjp", fn, primals)
    result = _compiled("forward", fn, has_aux, len(primals), options)(*primals)
    out, aux = _split_aux("vjp", fn, result, has_aux)
    out_leaves, out_tree = pytree.flatten(out, is_leaf)
    _check_outputs("vjp", fn, out_leaves)
    pullback = _compiled("vjp", fn, has_aux, len(primals), options)

    def pull_compiled(cotangents: list[Any]) -> tuple[Any, ...]:
        return cast(tuple[Any, ...], pullback(*primals, *(_concrete_like(c, o) for c, o in zip(cotangents, out_leaves))))

    vjp_fn = _VJPFunction(fn, out_tree, out_leaves, pull_compiled)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _check_tangents(fn: Callable[..., Any], primals: Any, tangents: Any) -> tuple[list[Any], list[Any]]:
    """jax.jvp's checks, with its error types: the leaves of primals and tangents."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to static.jvp must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    p_leaves, p_tree = pytree.flatten(tuple(primals), is_leaf)
    t_leaves, t_tree = pytree.flatten(tuple(tangents), is_leaf)
    if p_tree != t_tree:
        raise TypeError("primal and tangent arguments to static.jvp must have the same tree structure; primals "
                        f"have tree structure {_tree_str(p_tree)} whereas tangents have tree structure "
                        f"{_tree_str(t_tree)}")
    _check_primals("jvp", fn, tuple(primals))
    for p, t in zip(p_leaves, t_leaves):
        pa, ta = _aval(p), _aval(t)
        if not _is_float(ta) or not (pa[1] is None or ta[1] is None or pa[1] == ta[1]):
            raise TypeError("primal and tangent arguments to static.jvp do not match; dtypes must be equal. Got "
                            f"primal dtype {pa[1] or 'float'} and so expected tangent dtype {pa[1] or 'float'}, "
                            f"but got tangent dtype {ta[1] or 'float'} instead")
        if pa[0] != ta[0]:
            raise ValueError(f"static.jvp called with different primal and tangent shapes; got primal shape "
                             f"{pa[0]} and tangent shape {ta[0]}")
    return p_leaves, t_leaves


def jvp(fn: Callable[..., Any], primals: tuple[Any, ...] | list[Any], tangents: tuple[Any, ...] | list[Any],
        has_aux: bool = False, **options: Any) -> tuple[Any, ...]:
    """`(out, tangent_out)`, or `(out, tangent_out, aux)` with has_aux=True: the value of
    `fn(*primals)` and its Jacobian-vector product with `tangents` (jax.jvp, torch.func.jvp).
    `primals` and `tangents` are tuples (or lists) of the same pytree structure, each tangent
    of its primal's shape and dtype; `tangent_out` is structured like `out`.

    Computed by reverse mode twice (the VJP of the VJP, which is linear in the cotangent), in
    one compiled graph (options as static.compile's; a compiled `fn` lends its own); inside
    a traced function, recorded into that trace. Every op on the path needs a second-order
    derivative. Where a scan, while_loop or cond is on the path, the tangents are pushed
    forwards instead, through loops that carry them (JAX's rules, static.autodiff.forward):
    a while_loop has a JVP though it has no VJP.

    Bad input raises JAX's errors: TypeError for primals/tangents that are not tuples or
    lists, of different structures or dtypes, a non-float primal or output, or a bad has_aux
    result; ValueError for a tangent of another shape."""
    if not callable(fn):
        raise TypeError(f"static.jvp: expected a callable value, got {type(fn).__name__} {fn!r}")
    _check_options("jvp", options)
    _, t_leaves = _check_tangents(fn, primals, tangents)
    if ACTIVE.stack:
        return _JVPTraceable(fn, has_aux, len(primals))(*primals, *t_leaves)
    p_leaves = pytree.flatten(tuple(primals), is_leaf)[0]
    t_leaves = [_concrete_like(t, p) for t, p in zip(t_leaves, p_leaves)]
    return cast(tuple[Any, ...], _compiled("jvp", fn, has_aux, len(primals), options)(*primals, *t_leaves))
