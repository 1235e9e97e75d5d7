"""An op's forward run on IR values: the decomposition of a composite op is its own forward,
written once in its record (`gmops`) against the array namespace `xp`, run here with an `xp`
whose functions emit IR nodes instead of computing.

Why: the decompositions the `decompose` pass makes used to be written a second time by hand,
node by node (softplus's `log1p(exp(-|bx|)) + max(bx, 0)` in the record and again in the pass),
and the two could drift apart, so compiled values would stop being eager's. Run on the record's
own forward, the decomposition has the forward's steps in the forward's order by construction.

What a forward may use: the ufuncs and functions of NumPy that an op record declares (its
`ufunc` fact, or its own name: `xp.exp` is the op `exp`, `xp.where` the op `where`), the
arithmetic and comparison operators, `xp.asarray`, `.astype(dtype, copy=False)`, `.dtype` and
in-place operators (`out += 1.0`, which here name a new value). Anything else (an attribute
this module does not know, a library call without a record, branching on a value's data)
raises `NotDecomposable`, and the pass leaves the op as the library call it was.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import REGISTRY, OpDef

from ..ir import Value


class NotDecomposable(Exception):
    """The forward did something that has no IR spelling here (see the module docstring)."""


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

    __hash__ = None  # type: ignore[assignment]  (stand-ins are not keys)


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

    def __getattr__(self, name: str) -> Any:
        op = self._names.get(name)
        if op is None:
            raise NotDecomposable(f"xp.{name} (no op record computes it)")

        def call(*args: Any, **kwargs: Any) -> IRArray:
            if kwargs:
                raise NotDecomposable(f"xp.{name} with keywords {sorted(kwargs)}")
            return self.emit(op, list(args))

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


__all__ = ["IRArray", "IRNamespace", "NotDecomposable", "decompose_by_forward", "raw_forward"]
