"""vmap: batching as a transform (torch.func.vmap / jax.vmap), for eager tensors and, the same
code, for static's Tracers.

`vmap(f)(x)` wraps each batched input in a `Batched` value: the underlying tensor with the
batch moved to dimension 0, plus the logical shape f sees (without it). Every op applied to
a `Batched` value reaches `_dispatch_batched` (eager's dispatch hands operand types with a
`__graphmode_dispatch__` over to it; static's tracer does too), which runs the op's batching
rule (`OpDef.batch_rule`, eager/ops/_batching.py) on the underlying values: so one call of
f computes the whole batch with batched ops, recorded by eager's autograd or by the trace
like any other ops. Nested vmaps are levels: a value batched at an outer level is an
ordinary operand of an inner level's rule, whose ops then dispatch to the outer level.

Composition with grad (per-example gradients, `vmap(grad(loss), in_dims=(None, 0, 0))`):
`grad` run on batched arguments differentiates the underlying batched computation with
respect to per-example copies of its inputs (an unbatched parameter is broadcast along the
batch first), seeded with ones: since example b's loss depends only on slice b, the
gradient's slice b is example b's gradient (`per_example_inputs`, `unwrap`)."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from . import _factories
from ._api import TensorAPI
from ._tensor import Tensor
from ._tensor_metadata import Size

__all__ = ["vmap"]


class _Levels(threading.local):
    def __init__(self) -> None:
        self.depth = 0


_LEVELS = _Levels()


class Batched(TensorAPI):
    """A value of a vmapped function: `_value` holds the whole batch along dimension 0."""

    __slots__ = ("_value", "_level", "_size")

    def __init__(self, value: Any, level: int, size: int) -> None:
        self._value = value
        self._level = level
        self._size = size

    @staticmethod
    def _apply_op(op: Any, operands: tuple, attrs: dict) -> Any:
        return _dispatch_batched(op, operands, attrs)

    __graphmode_dispatch__ = _apply_op
    __graphmode_batched__ = True

    # -- what f sees: the logical value ---------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(tuple(self._value.shape)[1:])

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[dim]

    @property
    def dtype(self) -> Any:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return len(self._value.shape) - 1

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    @property
    def device(self) -> Any:
        return self._value.device

    @property
    def requires_grad(self) -> bool:
        return bool(getattr(self._value, "requires_grad", False))

    def view(self, *shape: Any) -> Any:
        return self.reshape(*shape)

    def contiguous(self) -> Any:
        return self

    def detach(self) -> Any:
        return Batched(self._value.detach(), self._level, self._size)

    def to(self, *args: Any, **kwargs: Any) -> Any:
        return Batched(self._value.to(*args, **kwargs), self._level, self._size)

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._value!r})"

    # -- what needs one example's data: refused, as torch.func.vmap does ----------------------
    def _needs_data(self, what: str) -> RuntimeError:
        return RuntimeError(f"vmap: It looks like you're calling {what} on a Tensor inside vmap. We don't support "
                            "vmap over calling .item() on a Tensor, please try to rewrite what you're doing with "
                            "other operations (data-dependent control flow: use eager.where or static.cond)")

    def item(self) -> Any:
        raise self._needs_data(".item()")

    def tolist(self) -> Any:
        raise self._needs_data(".tolist()")

    def __bool__(self) -> bool:
        raise RuntimeError("vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
                           "flow. We don't support that yet, please shout over at "
                           "https://github.com/pytorch/functorch/issues/257 . (Use eager.where, or static.cond / "
                           "eager.cond, instead of a Python branch on a batched value.)")

    def __float__(self) -> float:
        raise self._needs_data("float()")

    def __int__(self) -> int:
        raise self._needs_data("int()")

    def numpy(self) -> Any:
        raise self._needs_data(".numpy()")

    # -- in-place random fills: one draw through vmap's randomness rule (torch.func's): "error"
    # raises, "same" draws the logical shape once (every example gets it), "different" draws the
    # whole batch at once; no loop over the examples
    def _fill(self, value: Any, name: str) -> Any:
        return self._apply_inplace(lambda s, v: v if v.dtype == s.dtype else v.to(s.dtype), (value,), name)

    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Any:
        u = _factories.rand(tuple(self.shape), dtype=self.dtype, device=self.device, generator=generator)
        return self._fill(u * (b - a) + a if (a, b) != (0.0, 1.0) else u, "uniform_")

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Any:
        z = _factories.randn(tuple(self.shape), dtype=self.dtype, device=self.device, generator=generator)
        return self._fill(z * std + mean if (mean, std) != (0.0, 1.0) else z, "normal_")

    def bernoulli_(self, p: Any = 0.5, *, generator: Any = None) -> Any:
        u = _factories.rand(tuple(self.shape), dtype=self.dtype if self.dtype.is_floating_point else None,
                            device=self.device, generator=generator)
        return self._fill((u < p).to(self.dtype), "bernoulli_")

    def exponential_(self, lambd: float = 1.0, *, generator: Any = None) -> Any:
        u = _factories.rand(tuple(self.shape), dtype=self.dtype, device=self.device, generator=generator)
        return self._fill(-(-u).log1p() / lambd, "exponential_")

    def random_(self, *args: Any, generator: Any = None) -> Any:
        low, high = (0, args[0]) if len(args) == 1 else args
        return self._fill(_factories.randint(low, high, tuple(self.shape), dtype=self.dtype, device=self.device,
                                             generator=generator), "random_")

    # -- in place: the batched value names the result (an unbatched tensor cannot take a batch)
    def _apply_inplace(self, fn: Callable[..., Any], others: tuple, name: str, saves_self: bool = True,
                       grad_name: str | None = None) -> Any:
        result = fn(self, *others)
        if isinstance(result, Batched) and result._level == self._level:
            self._value = result._value
        else:
            self._value = _broadcast(result, self._size)
        return self


def _broadcast(x: Any, size: int) -> Any:
    return x.unsqueeze(0).expand((size,) + tuple(x.shape))


def _dispatch_batched(op: Any, operands: tuple, attrs: dict) -> Any:
    """An op with a Batched operand: the rule of the innermost level present runs on the
    underlying values (operands batched at other levels pass as ordinary operands)."""
    level = max(o._level for o in operands if isinstance(o, Batched))
    size = next(o._size for o in operands if isinstance(o, Batched) and o._level == level)
    args, batched = [], []
    for o in operands:
        if isinstance(o, Batched) and o._level == level:
            args.append(o._value)
            batched.append(True)
        else:
            args.append(o)
            batched.append(False)
    rule = rule_for(op)
    result = NotImplemented if rule is None else rule(args, batched, attrs, size)
    if result is NotImplemented:
        which = ", ".join(str(k) for k, b in enumerate(batched) if b)
        raise RuntimeError(f"vmap: {op.name} has no batching rule{'' if rule is None else ' for these operands'} "
                           f"(batched operand(s): {which}; shapes "
                           f"{[tuple(getattr(o, 'shape', ())) for o in operands]}). Compute it outside vmap, or "
                           f"loop over the batch in Python for this step.")
    if isinstance(result, tuple):
        return tuple(Batched(r, level, size) for r in result)
    return Batched(result, level, size)


def rule_for(op: Any) -> Any:
    """The op's batching rule (ops declared after the registry filled get theirs here)."""
    rule = op.batch_rule
    if rule is None and not getattr(op, "_batch_rule_checked", False):
        from gmops import _batching  # noqa: PLC0415

        make = _batching.HAND.get(op.name)
        rule = op.batch_rule = make(op) if make is not None else _batching.derive(op)
        op._batch_rule_checked = True
    return rule


# -- the transform -----------------------------------------------------------------------------
def _is_tensor(x: Any) -> bool:
    return isinstance(x, (Tensor, Batched)) or (hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "_state"))


def _flatten(x: Any) -> tuple[list, Any]:
    if isinstance(x, dict):
        parts = [_flatten(v) for v in x.values()]
        return [leaf for p in parts for leaf in p[0]], ("dict", list(x.keys()), [p[1] for p in parts])
    if isinstance(x, (list, tuple)):
        parts = [_flatten(v) for v in x]
        return [leaf for p in parts for leaf in p[0]], (type(x), [p[1] for p in parts])
    return [x], "leaf"


def _unflatten(tree: Any, leaves: list) -> Any:
    it = iter(leaves)

    def build(t: Any) -> Any:
        if t == "leaf":
            return next(it)
        if t[0] == "dict":
            return {k: build(s) for k, s in zip(t[1], t[2])}
        kind, subs = t
        items = [build(s) for s in subs]
        if kind is tuple or kind is list:
            return kind(items)
        try:
            return kind(*items)  # a namedtuple
        except TypeError:
            return kind(items)
    return build(tree)


def _broadcast_dims(dims: Any, tree: Any, where: str) -> list:
    """in_dims / out_dims as one entry per leaf of `tree` (an int/None applies to a whole subtree)."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(_leaves_of(tree))
    if tree == "leaf":
        raise ValueError(f"{where} is not compatible with the structure of the inputs: got {dims!r} for a tensor")
    if tree[0] == "dict":
        if not isinstance(dims, dict) or set(dims) != set(tree[1]):
            raise ValueError(f"{where} is not compatible with the structure of the inputs: {dims!r}")
        return [d for k, s in zip(tree[1], tree[2]) for d in _broadcast_dims(dims[k], s, where)]
    subs = tree[1]
    if not isinstance(dims, (tuple, list)) or len(dims) != len(subs):
        raise ValueError(f"{where} is not compatible with the structure of `inputs`. {where} has structure "
                         f"{dims!r} but inputs have {len(subs)} element(s)")
    return [d for di, s in zip(dims, subs) for d in _broadcast_dims(di, s, where)]


def _leaves_of(tree: Any) -> list:
    if tree == "leaf":
        return [None]
    if tree[0] == "dict":
        return [x for s in tree[2] for x in _leaves_of(s)]
    return [x for s in tree[1] for x in _leaves_of(s)]


def _name(fn: Callable) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """torch.func.vmap: `func` mapped over dimension `in_dims` of its inputs (an int, None for
    an input that is not mapped, or a structure matching the arguments), its outputs stacked
    along `out_dims`. `randomness`: "error" (drawing random numbers inside raises), "same"
    (one draw shared by the batch) or "different" (each example its own draws: one draw of the
    batch's numbers, `_random_rule`; only a draw no factory answers, an in-place fill, makes
    the batch run example by example). `chunk_size` maps that many examples at a time."""
    if randomness not in ("error", "same", "different"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        where = f"vmap({_name(func)}, in_dims={in_dims!r}, ...)(<inputs>)"
        if not args:
            raise ValueError(f"{where}: got no inputs. Maybe you forgot to add inputs, or you are trying to vmap "
                             "over a function with no inputs. The latter is unsupported.")
        if isinstance(in_dims, (tuple, list)) and len(in_dims) != len(args):
            raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims has "
                             f"structure {in_dims!r} but inputs has {len(args)} positional argument(s)")
        leaves, tree = _flatten(tuple(args))
        dims = _broadcast_dims(tuple(in_dims) if isinstance(in_dims, list) else in_dims, tree, "in_dims")
        sizes = []
        for leaf, d in zip(leaves, dims):
            if d is None:
                continue
            if isinstance(d, bool) or not isinstance(d, int):
                raise ValueError(f"{where}: in_dims must be int or None, got {d!r}")
            if not _is_tensor(leaf):
                raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type "
                                 f"{type(leaf).__name__}. We cannot vmap over non-Tensor arguments, please use None "
                                 "as the respective in_dim")
            nd = len(leaf.shape)
            if not -nd <= d < nd:
                raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a Tensor of "
                                 f"dimensionality {nd} so expected in_dim to satisfy -{nd} <= in_dim < {nd}.")
            sizes.append(int(leaf.shape[d]))
        if not sizes:
            raise ValueError(f"{where}: at least one input must be batched: every in_dim is None, or no input is "
                             "a tensor")
        if len(set(sizes)) != 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sizes} for the mapped dimension")
        size = sizes[0]
        try:
            return _mapped(func, leaves, tree, dims, size, out_dims, kwargs, randomness, chunk_size)
        except _StrayDraw:  # a draw no factory rule saw (an in-place fill): each example draws its own
            return _by_example(func, leaves, tree, dims, size, out_dims, kwargs)

    wrapped.__name__ = f"vmap_{_name(func)}"
    wrapped.__doc__ = func.__doc__
    return wrapped


def _mapped(func: Callable, leaves: list, tree: Any, dims: list, size: int, out_dims: Any, kwargs: dict,
            randomness: str, chunk_size: int | None) -> Any:
    """The vmapped call, in chunks of `chunk_size` examples when asked."""
    if chunk_size is not None and chunk_size < size:
        parts = [_chunk(func, leaves, tree, dims, start, min(start + chunk_size, size), out_dims, kwargs,
                        randomness) for start in range(0, size, chunk_size)]
        return _concat(parts, out_dims)
    return _run(func, leaves, tree, dims, size, out_dims, kwargs, randomness)


_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                 "'different' randomness flags on vmap or perform the randomness operation out of vmap")


class _Randomness(threading.local):
    def __init__(self) -> None:
        self.stack: list = []  # (randomness, level, size) of each running vmap, innermost last


_RANDOM = _Randomness()


class _StrayDraw(Exception):
    """A draw under randomness="different" that no factory rule saw (an in-place fill): the
    batch runs example by example instead."""


def check_unbatched_fill() -> None:
    """An in-place random fill of a tensor that is not batched, inside vmap (torch.func's rule):
    under randomness="error" it raises vmap's error; under "different" it raises too (every
    example would see the one fill: it would look like "same"), so no per-example rerun is
    needed to give it a meaning; under "same" the one draw is every example's."""
    modes = {mode for mode, _, _ in _RANDOM.stack}
    if "error" in modes:
        raise RuntimeError(_RANDOM_ERROR)
    if "different" in modes:
        raise RuntimeError("vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will appear "
                           "like same randomness. If this is necessary for your usage, please file an issue with "
                           "functorch.")


def _random_rule(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """A random factory called inside vmap (torch.func's randomness semantics): "error"
    raises, "same" draws once for the whole batch (the logical shape, broadcast), "different"
    draws the whole batch's numbers at once (the batch's shape in front) as a batched value:
    one draw, no loop over the examples."""
    if any(mode == "error" for mode, _, _ in _RANDOM.stack):  # (every level's randomness holds, as torch's)
        raise RuntimeError(_RANDOM_ERROR)
    draws = _factories.random.VMAP_DRAWS
    saved, draws.rule = draws.rule, None
    try:
        return _draw(fn, args, kwargs)
    finally:
        draws.rule = saved


def _draw(fn: Callable, args: tuple, kwargs: dict) -> Any:
    import inspect  # noqa: PLC0415

    from . import _factories as fac  # noqa: PLC0415

    # every enclosing level that wants different numbers gets its own axis (outermost first); a
    # "same" level shares the draw along its own
    levels = [(lvl, n) for mode, lvl, n in _RANDOM.stack if mode == "different"]
    lead = tuple(n for _, n in levels)
    draws = fac.random.VMAP_DRAWS

    def batch_of(make: Callable[[], Any]) -> Any:
        if not levels:
            return make()
        draws.lead = lead
        try:
            return rewrap(levels, make())
        finally:
            draws.lead = ()

    a = inspect.signature(fn).bind(*args, **kwargs)
    a.apply_defaults()
    p = a.arguments
    name = fn.__name__
    if name == "normal" and (hasattr(p["mean"], "shape") or hasattr(p["std"], "shape")):
        mean, std = p["mean"], p["std"]  # (a batched mean or std: the draw has their logical shape)
        like = mean if hasattr(mean, "shape") else std
        shape = _broadcast_shapes(tuple(getattr(mean, "shape", ())), tuple(getattr(std, "shape", ())))
        z = batch_of(lambda: fac.randn(shape, dtype=like.dtype, device=like.device, generator=p["generator"]))
        return z * std + mean
    if name in ("rand_like", "randn_like"):  # (the logical shape: "same" draws it once, unbatched)
        inp = p["input"]
        base = fac.rand if name == "rand_like" else fac.randn
        return batch_of(lambda: base(tuple(inp.shape), dtype=p["dtype"] or inp.dtype, device=p["device"] or inp.device,
                                     requires_grad=p["requires_grad"]))
    if not levels:
        return fn(*args, **kwargs)
    if name == "bernoulli":
        inp = p["input"]
        u = batch_of(lambda: fac.rand(tuple(inp.shape), dtype=inp.dtype, device=inp.device, generator=p["generator"]))
        return (u < (inp.detach() if p["p"] is None else p["p"])).to(inp.dtype)
    if name in ("randperm", "multinomial"):  # no batched form of the draw: one per example
        from ._functional import stack  # noqa: PLC0415

        count = 1
        for n in lead:
            count *= n
        rows = [fn(*args, **kwargs) for _ in range(count)]
        stacked = stack(rows)
        return rewrap(levels, stacked.reshape(lead + tuple(rows[0].shape)))
    return batch_of(lambda: fn(*args, **kwargs))


def _broadcast_shapes(a: tuple, b: tuple) -> tuple:
    import numpy as np  # noqa: PLC0415

    return tuple(np.broadcast_shapes(a, b))


def _run(func: Callable, leaves: list, tree: Any, dims: list, size: int, out_dims: Any, kwargs: dict,
         randomness: str) -> Any:
    _LEVELS.depth += 1
    level = _LEVELS.depth
    draws = _factories.random.VMAP_DRAWS
    _RANDOM.stack.append((randomness, level, size))
    saved = draws.rule
    draws.rule = _random_rule
    try:
        wrapped = [Batched(_move(leaf, d), level, size) if d is not None else leaf for leaf, d in zip(leaves, dims)]
        count, stray = _factories.draws_on_this_thread(), draws.stray
        out = func(*_unflatten(tree, wrapped), **kwargs)
        if randomness == "error" and (_factories.draws_on_this_thread() != count or draws.stray != stray):
            raise RuntimeError(_RANDOM_ERROR)
        if randomness == "different" and draws.stray != stray:
            raise _StrayDraw
    finally:
        draws.rule = saved
        _RANDOM.stack.pop()
        _LEVELS.depth -= 1
    o_leaves, o_tree = _flatten(out)
    o_dims = _broadcast_dims(out_dims, o_tree, "out_dims")
    results = []
    for leaf, d in zip(o_leaves, o_dims):
        if isinstance(leaf, Batched) and leaf._level == level:
            value = leaf._value
        elif _is_tensor(leaf) or isinstance(leaf, (int, float, bool)):
            if isinstance(leaf, (int, float, bool)):
                from ._factories import tensor  # noqa: PLC0415

                leaf = tensor(leaf)
            value = _broadcast(leaf, size) if d is not None else leaf
        else:
            raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, got type "
                             f"{type(leaf)}. Did you mean to set out_dims= to None for output?")
        if d is None:
            if isinstance(leaf, Batched) and leaf._level == level:
                raise ValueError(f"vmap({_name(func)}, ..., out_dims=None): the output is batched, so it cannot be "
                                 "returned with out_dims=None")
            results.append(leaf)
            continue
        nd = len(value.shape)
        if not -nd <= d < nd:
            raise ValueError(f"vmap: out_dim={d} is out of range for an output of dimensionality {nd - 1}")
        results.append(value.movedim(0, d) if d % nd != 0 else value)
    return _unflatten(o_tree, results)


def _move(x: Any, d: int) -> Any:
    return x if d % len(x.shape) == 0 else x.movedim(d, 0)


def _chunk(func: Callable, leaves: list, tree: Any, dims: list, start: int, stop: int, out_dims: Any,
           kwargs: dict, randomness: str) -> Any:
    part = [leaf if d is None else leaf.narrow(d, start, stop - start) for leaf, d in zip(leaves, dims)]
    return _run(func, part, tree, dims, stop - start, out_dims, kwargs, randomness)


def _concat(parts: list, out_dims: Any) -> Any:
    from ._functional import cat  # noqa: PLC0415

    flat = [_flatten(p) for p in parts]
    tree = flat[0][1]
    dims = _broadcast_dims(out_dims, tree, "out_dims")
    merged = [leaves[0] if d is None else cat([f[0][k] for f in flat], dim=d)
              for k, (leaves, d) in enumerate(zip(zip(*[f[0] for f in flat]), dims))]
    return _unflatten(tree, merged)


def _by_example(func: Callable, leaves: list, tree: Any, dims: list, size: int, out_dims: Any, kwargs: dict) -> Any:
    """randomness='different': example by example, each drawing its own numbers."""
    from ._functional import stack  # noqa: PLC0415

    outs = [func(*_unflatten(tree, [leaf if d is None else leaf.select(d, b) for leaf, d in zip(leaves, dims)]),
                 **kwargs) for b in range(size)]
    flat = [_flatten(o) for o in outs]
    o_tree = flat[0][1]
    o_dims = _broadcast_dims(out_dims, o_tree, "out_dims")
    merged = [outs_k[0] if d is None else stack(list(outs_k), dim=d)
              for outs_k, d in zip(zip(*[f[0] for f in flat]), o_dims)]
    return _unflatten(o_tree, merged)


# -- grad of a batched function (per-example gradients) ----------------------------------------
def innermost_level(leaves: list) -> int | None:
    levels = [leaf._level for leaf in leaves if isinstance(leaf, Batched)]
    return max(levels) if levels else None


def per_example(x: Any, level: int, size: int) -> Any:
    """x as a value batched at `level` (an unbatched tensor broadcast along the batch)."""
    if isinstance(x, Batched) and x._level == level:
        return x
    return Batched(_broadcast(x, size), level, size)


def level_size(leaves: list, level: int) -> int:
    return next(leaf._size for leaf in leaves if isinstance(leaf, Batched) and leaf._level == level)



# -- several vmap levels under grad ------------------------------------------------------------
def levels_in(leaves: list) -> list:
    """Every (level, size) batching some leaf (nested wrappers included), outermost first."""
    found: dict = {}
    for leaf in leaves:
        x = leaf
        while isinstance(x, Batched):
            found[x._level] = x._size
            x = x._value
    return sorted(found.items())


def lift_all(x: Any, levels: list) -> Any:
    """x batched at every level of `levels` (outermost first): Batched(innermost, ...
    Batched(outermost, raw tensor)), broadcast along the levels it lacks."""
    if not levels:
        return x
    level, size = levels[-1]
    inner = x._value if isinstance(x, Batched) and x._level == level else _broadcast(x, size)
    return Batched(lift_all(inner, levels[:-1]), level, size)


def raw(x: Any) -> Any:
    """The tensor under every wrapper of a lifted value."""
    while isinstance(x, Batched):
        x = x._value
    return x


def rewrap(levels: list, tensor: Any) -> Any:
    """`tensor` (with a leading axis per level, outermost first) wrapped again as lift_all does."""
    for level, size in levels:
        tensor = Batched(tensor, level, size)
    return tensor
