"""The C expression of an op's forward, on one element: the record's own forward (written once,
against the array namespace `xp`) run on C text instead of arrays, each step spelled by the C
expression of the primitive record it calls (`xp.exp` is the op `exp`, `a * b` the op `mul`,
`xp.where` the op `where`...).

Why: a composite pointwise op with attributes (softplus's beta and threshold, gelu's
approximate) reaches the native and CUDA generators undecomposed where the `decompose` pass
leaves it (float16, computed in float32 and rounded once; empty shapes; opt_level below 2).
Its C spelling used to be a hand-written helper (gm_softplus) and a CUDA expression in the
lowering table, the formula written again beside the record's forward; derived here, the
kernel computes the forward's steps in the forward's order, and an edit of the forward reaches
both generators. The same idea as `static.passes.ir_namespace` (the forward run on IR values).

What a forward may use here: the arithmetic and comparison operators, Python numbers (literals
of the compute type, as NumPy's weak-scalar rule converts them), `xp.<f>` for each pointwise
record named `f` or whose ufunc is `f`, `xp.asarray`, `.astype(...)` (the kernel computes in
one type and stores the result's), `.dtype`. Anything else raises `NoCForm`."""
from __future__ import annotations

from typing import Any

from gmops import REGISTRY, OpDef

from .render import c_literal


class NoCForm(AttributeError):
    """The forward used something without a C spelling here (see the module docstring). An
    AttributeError, so that helpers probing an array with getattr(x, name, None) go on."""


def _ops_by_array_name() -> dict[str, OpDef]:
    names = {op.name: op for op in REGISTRY.values() if op.pointwise and op.c_expr}
    names.update({op.ufunc: op for op in REGISTRY.values() if op.pointwise and op.c_expr and op.ufunc})
    names["negative"] = REGISTRY["neg"]  # neg's forward is xp.negative; its record names no ufunc
    return names


class CValue:
    """Stands for one element while a forward runs on `CNamespace`: its C expression."""

    __slots__ = ("ns", "text")

    def __init__(self, ns: CNamespace, text: str) -> None:
        self.ns, self.text = ns, text

    @property
    def dtype(self) -> Any:
        return self.ns.dtype

    def astype(self, dtype: Any, copy: bool = True) -> CValue:
        return self  # computed in the compute type; the kernel stores the result's type

    def __getattr__(self, name: str) -> Any:
        raise NoCForm(f"an array's {name!r}")

    def _op(self, name: str, *operands: Any) -> CValue:
        return self.ns.apply(REGISTRY[name], operands)

    def __add__(self, o: Any) -> CValue:
        return self._op("add", self, o)

    def __radd__(self, o: Any) -> CValue:
        return self._op("add", o, self)

    def __sub__(self, o: Any) -> CValue:
        return self._op("sub", self, o)

    def __rsub__(self, o: Any) -> CValue:
        return self._op("sub", o, self)

    def __mul__(self, o: Any) -> CValue:
        return self._op("mul", self, o)

    def __rmul__(self, o: Any) -> CValue:
        return self._op("mul", o, self)

    def __truediv__(self, o: Any) -> CValue:
        return self._op("div", self, o)

    def __rtruediv__(self, o: Any) -> CValue:
        return self._op("div", o, self)

    def __neg__(self) -> CValue:
        return self._op("neg", self)

    def __gt__(self, o: Any) -> CValue:
        return self._op("gt", self, o)

    def __ge__(self, o: Any) -> CValue:
        return self._op("ge", self, o)

    def __lt__(self, o: Any) -> CValue:
        return self._op("lt", self, o)

    def __le__(self, o: Any) -> CValue:
        return self._op("le", self, o)

    def __bool__(self) -> bool:
        raise NoCForm("branching on an element's value")


class CNamespace:
    """The `xp` a forward runs on to give its C expression in compute type `T`."""

    def __init__(self, T: str, dtype: Any = None) -> None:
        self.T, self.dtype = T, dtype
        self._ops = _ops_by_array_name()

    def text(self, v: Any) -> str:
        if isinstance(v, CValue):
            return v.text
        if isinstance(v, (bool, int, float)):
            return c_literal(v, self.T)
        raise NoCForm(f"an operand of type {type(v).__name__}")

    def apply(self, op: OpDef, operands: tuple) -> CValue:
        assert op.c_expr is not None, op.name
        return CValue(self, op.c_expr.format(*(self.text(v) for v in operands), T=self.T, R=self.T))

    def asarray(self, v: Any, dtype: Any = None) -> Any:
        return v

    def __getattr__(self, name: str) -> Any:
        op = self.__dict__.get("_ops", {}).get(name)
        if op is None:
            raise NoCForm(f"xp.{name}")

        def call(*operands: Any, **kwargs: Any) -> CValue:
            if kwargs:
                raise NoCForm(f"xp.{name} with {sorted(kwargs)}")
            return self.apply(op, operands)
        return call


def forward_c_expr(op: OpDef, operands: list[str], attrs: dict, T: str) -> str:
    """The C expression computing `op`'s forward on one element of operand expressions
    `operands` (already of type T) with attributes `attrs`; NoCForm where the forward steps
    outside what a C expression can say."""
    ns = CNamespace(T)
    result = op.forward(ns, *(CValue(ns, o) for o in operands), **attrs)
    if not isinstance(result, CValue):
        raise NoCForm(f"{op.name}'s forward returned {type(result).__name__}")
    return result.text


def forward_fields(node: Any, operands: list, ctx: dict) -> dict:
    """The `c_forward` template field of a lowering whose C expression is its forward
    (`expr="{c_forward}"`); only the C generators ask for it (they pass the compute type T)."""
    if "T" not in ctx:
        return {}
    return {"c_forward": forward_c_expr(REGISTRY[node.op], list(operands), dict(node.attrs), ctx["T"])}


__all__ = ["CNamespace", "CValue", "NoCForm", "forward_c_expr", "forward_fields"]
