"""An op's forward run on IR values: the decomposition of a composite op is its own forward,
written once in its record (`gmops`) against the array namespace `xp`, run here with an `xp`
whose functions emit IR nodes instead of computing.

Why: the decompositions the `decompose` pass makes used to be written a second time by hand,
node by node (softplus's `log1p(exp(-|bx|)) + max(bx, 0)` in the record and again in the pass),
and the two could drift apart, so compiled values would stop being eager's. Run on the record's
own forward, the decomposition has the forward's steps in the forward's order by construction.

What a forward may use: the ufuncs and functions of NumPy that an op record declares (its
`ufunc` fact, or its own name: `xp.exp` is the op `exp`, `xp.where` the op `where`, `xp.erf`
the op `erf`), the arithmetic and comparison operators, `xp.asarray`, `.astype(dtype,
copy=False)`, `.dtype`, and in-place writes (`out += 1.0`, `xp.exp(e, out=e)`: the stand-in
then names the new value, as every name of a NumPy array sees it written). Anything else (an attribute
this module does not know, a library call without a record, branching on a value's data)
raises `NotDecomposable`, and the pass leaves the op as the library call it was.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import REGISTRY, OpDef

from ..ir import Value


class NotDecomposable(AttributeError):
    """The forward did something that has no IR spelling here (see the module docstring). An
    AttributeError: code that asks `getattr(x, "_data", None)` of a value (eager's helpers) reads
    that a stand-in has no such attribute and goes on."""


def _ops_by_array_name() -> dict[str, str]:
    """NumPy's name of an elementwise function -> the op computing it: each record's `ufunc`
    fact, then the record's own name (where, maximum, exp ...)."""
    names = {op.name: op.name for op in REGISTRY.values() if op.pointwise}
    names.update({op.ufunc: op.name for op in REGISTRY.values() if op.ufunc and op.pointwise})
    names["negative"] = "neg"  # (neg's record spells its forward with xp.negative but names no ufunc)
    return names


class IRArray:
    """Stands for an array while a forward runs on `IRNamespace`: operators emit IR nodes."""

    __slots__ = ("ns", "value")

    def __init__(self, ns: IRNamespace, value: Value) -> None:
        self.ns = ns
        self.value = value

    # what a forward reads of an array
    @property
    def dtype(self) -> np.dtype[Any]:
        return self.value.type.dtype.np

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.value.type.shape)

    @property
    def ndim(self) -> int:
        return len(self.value.type.shape)

    @property
    def size(self) -> int:
        return math.prod(self.value.type.shape)

    def astype(self, dtype: Any, copy: bool = True) -> IRArray:
        target = _dtypes.from_numpy(np.dtype(dtype))
        if target is self.value.type.dtype:
            return self
        return self.ns.emit("to_dtype", [self], {"dtype": target})

    def __getattr__(self, name: str) -> Any:
        raise NotDecomposable(f"an array's {name!r}")

    def __bool__(self) -> bool:
        raise NotDecomposable("a branch on an array's data")

    # operators: one op each, operands in the order written
    def __add__(self, other: Any) -> IRArray:
        return self.ns.emit("add", [self, other])

    def __radd__(self, other: Any) -> IRArray:
        return self.ns.emit("add", [other, self])

    def __sub__(self, other: Any) -> IRArray:
        return self.ns.emit("sub", [self, other])

    def __rsub__(self, other: Any) -> IRArray:
        return self.ns.emit("sub", [other, self])

    def __mul__(self, other: Any) -> IRArray:
        return self.ns.emit("mul", [self, other])

    def __rmul__(self, other: Any) -> IRArray:
        return self.ns.emit("mul", [other, self])

    def __truediv__(self, other: Any) -> IRArray:
        return self.ns.emit("div", [self, other])

    def __rtruediv__(self, other: Any) -> IRArray:
        return self.ns.emit("div", [other, self])

    def __neg__(self) -> IRArray:
        return self.ns.emit("neg", [self])

    def __gt__(self, other: Any) -> IRArray:
        return self.ns.emit("gt", [self, other])

    def __ge__(self, other: Any) -> IRArray:
        return self.ns.emit("ge", [self, other])

    def __lt__(self, other: Any) -> IRArray:
        return self.ns.emit("lt", [self, other])

    def __le__(self, other: Any) -> IRArray:
        return self.ns.emit("le", [self, other])

    @staticmethod
    def __graphmode_dispatch__(op: OpDef, operands: tuple[Any, ...], attrs: dict[str, Any]) -> IRArray:
        """An op record applied to stand-ins (eager's dispatcher hands it over, as to static's
        tracer values): one node. So an eager composite written in ops runs here too."""
        ns = next(o.ns for o in operands if isinstance(o, IRArray))
        return ns.emit(op.name, list(operands), attrs)

    # in-place operators: as NumPy's, they change the array every name of it sees (here: which
    # value this stand-in names), so `out = erf(...); out += 1.0` reads as the forward wrote it
    def _assign(self, result: IRArray) -> IRArray:
        self.value = result.value
        return self

    def __iadd__(self, other: Any) -> IRArray:
        return self._assign(self + other)

    def __isub__(self, other: Any) -> IRArray:
        return self._assign(self - other)

    def __imul__(self, other: Any) -> IRArray:
        return self._assign(self * other)

    def __itruediv__(self, other: Any) -> IRArray:
        return self._assign(self / other)

    # stand-ins are not keys
    __hash__ = None  # type: ignore[assignment]


class IRNamespace:
    """`xp` for a forward run on IR values: `emit(op, inputs, attrs)` appends a node through the
    rule context of the pass that asked (static.passes.rules.RuleContext), at `loc`."""

    def __init__(self, ctx: Any, loc: Any = None) -> None:
        self.ctx = ctx
        self.loc = loc
        self._names = _ops_by_array_name()

    def emit(self, op: str, inputs: list[Any], attrs: dict[str, Any] | None = None) -> IRArray:
        ins = [i.value if isinstance(i, IRArray) else i for i in inputs]
        for i in ins:
            if not isinstance(i, (Value, bool, int, float)):
                raise NotDecomposable(f"{op} of a {type(i).__name__}")
        return IRArray(self, self.ctx.emit(op, ins, dict(attrs or {}), self.loc))

    def asarray(self, a: Any) -> Any:
        return a

    # NumPy's reductions over `axis`, as the records' reductions with `dims` and `keepdim`
    def _dims(self, a: IRArray, axis: Any) -> tuple[int, ...]:
        if not isinstance(a, IRArray):
            raise NotDecomposable("a reduction of a number")
        n = a.ndim
        if axis is None:
            return tuple(range(n))
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        return tuple(sorted(d % max(n, 1) for d in axes))

    def amax(self, a: IRArray, axis: Any = None, keepdims: bool = False) -> IRArray:
        return self.emit("amax", [a], {"dims": self._dims(a, axis), "keepdim": bool(keepdims)})

    def sum(self, a: IRArray, axis: Any = None, keepdims: bool = False) -> IRArray:
        return self.emit("sum", [a], {"dims": self._dims(a, axis), "keepdim": bool(keepdims)})

    def squeeze(self, a: IRArray, axis: Any = None) -> IRArray:
        dims = self._dims(a, axis)
        shape = tuple(n for i, n in enumerate(a.shape) if i not in dims or n != 1)
        return self.emit("reshape", [a], {"shape": shape})

    def isfinite(self, a: IRArray) -> IRArray:
        """For floats, `a - a == 0`: 0 exactly where `a` is finite (inf - inf and NaN give NaN),
        in fusible ops (the isfinite op is a library call in every backend)."""
        if not (isinstance(a, IRArray) and a.value.type.dtype.is_floating_point):
            raise NotDecomposable("isfinite of a non-float")
        return self.emit("eq", [a - a, 0.0])

    def __getattr__(self, name: str) -> Any:
        op = self._names.get(name)
        if op is None:
            raise NotDecomposable(f"xp.{name} (no op record computes it)")

        def call(*args: Any, out: Any = None, **kwargs: Any) -> IRArray:
            if kwargs:
                raise NotDecomposable(f"xp.{name} with keywords {sorted(kwargs)}")
            result = self.emit(op, list(args))
            if out is None:
                return result
            if not isinstance(out, IRArray):
                raise NotDecomposable(f"xp.{name}(out=) into a {type(out).__name__}")
            return out._assign(result)  # written into `out`: that stand-in now names the result

        return call


def raw_forward(op: OpDef) -> Any:
    """The forward as its record wrote it (without the layout wrapper OpDef adds)."""
    forward = op.forward
    return getattr(forward, "__wrapped__", forward)


def decompose_by_forward(ctx: Any, node: Any) -> Value | None:
    """`node`'s op computed by its own forward on IR values (a rule's rewrite: None, leaving
    the node as it is, when the forward cannot run here)."""
    op = REGISTRY[node.op]
    ns = IRNamespace(ctx, node.loc)
    try:
        result = raw_forward(op)(ns, *(IRArray(ns, v) if isinstance(v, Value) else v for v in node.inputs),
                                 **node.attrs)
    except NotDecomposable:
        return None
    if not isinstance(result, IRArray) or result.value.type != node.outputs[0].type:
        return None
    return result.value


def run_composite(ctx: Any, loc: Any, composite: Any, *inputs: Any) -> Value | None:
    """`composite(*inputs)` (an eager function written in ops or operators) run on IR values: the
    nodes it applies, emitted through `ctx`, and its result; None when it does something the IR
    cannot spell here. A rewrite rule whose replacement is an eager composite uses it, so the
    composite's formula is written once, in eager."""
    ns = IRNamespace(ctx, loc)
    try:
        result = composite(*(IRArray(ns, v) if isinstance(v, Value) else v for v in inputs))
    except NotDecomposable:
        return None
    return result.value if isinstance(result, IRArray) else None


__all__ = ["IRArray", "IRNamespace", "NotDecomposable", "decompose_by_forward", "raw_forward", "run_composite"]
