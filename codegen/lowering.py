"""The lowering table: for every op of the registry, how each backend spells it.

Two spellings per backend, because generated code uses ops in two ways:
- *pointwise* inside a fused region: NumPy writes each result into a buffer (`ufunc`
  with `out=`, or an `into` statement), and for 0-d values evaluates a Python expression
  on NumPy scalars (`scalar`); CuPy inlines a C expression (`expr`) into one kernel;
- a *library call* on whole arrays (`call`), for everything else.

Templates are `str.format` strings: `{0}`, `{1}`... are the operands (already rendered
as source), `{args}` all of them, `{out}` the destination buffer, `{shape}`/`{dtype}`
the result's static type, and every attribute by its name, rendered as a Python literal.
In C expressions `{T}` is the compute type (the operands' type) and `{R}` the result's.

What an op *is* (its arity, whether it is pointwise, how a reduction combines partials)
comes from its record in the registry; this table says only how each backend spells it.
Fields a template needs beyond the attributes (C literals, index keys...) come from the
entry's own `fields` function, so generators hold no per-op cases.

An op missing here still runs (see `lowering_for`: it calls the op's own forward), but
the registry-wide test fails, so a new op gets a real lowering before it lands.

This module holds the table's types, the table and the questions asked of it; its entries
are written by family in `codegen.lowerings` (pointwise, shapes, reductions, library),
imported below in that order (a reduction's combiner is a pointwise entry first).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import REGISTRY
from gmops._registry import OpDef
from static.ir import Node, Value, half_in_float32

from .render import fill


@dataclass(frozen=True)
class NumpyLowering:
    call: str  # expression on whole arrays ("" where `body` spells the op)
    ufunc: str | None = None  # one NumPy ufunc over the operands (in `ufunc_args` order): supports out=
    ufunc_args: str | None = None
    into: str | None = None  # statement(s), one a line, writing the result into the buffer {out}
    scalar: str | None = None  # Python expression on NumPy scalars (0-d values)
    alias: bool = False  # the result may share memory with operand 0 (views, identities)
    # statements that leave the result in {out}, for ops that are a fresh array updated in
    # place (a copy, then `np.add.at` or a subscript assignment): no expression spells them
    body: tuple[str, ...] = ()

    def statements(self, target: str, operands: list, f: dict) -> list[str]:
        """The source lines computing the op into the name `target`."""
        if self.body:
            return [fill(line, operands, {**f, "out": target}) for line in self.body]
        return [f"{target} = {fill(self.call, operands, f)}"]


@dataclass(frozen=True)
class CupyLowering:
    call: str  # expression on whole CuPy arrays
    expr: str | None = None  # C expression for a fused elementwise kernel
    helpers: tuple = ()  # device helper functions (see cuda_helpers.py) the expression uses


@dataclass(frozen=True)
class OpLowering:
    numpy: NumpyLowering
    cupy: CupyLowering
    pointwise: bool = False  # evaluable element by element inside a fused kernel (the record's fact)
    reduction: "ReductionLowering | None" = None
    note: str = ""
    # extra template fields: (node, operands, ctx) -> dict; ctx has "module" ("np"/"cp") and, in
    # C expressions, "T" (the compute type); see codegen/render.fields
    fields: Callable | None = None


@dataclass(frozen=True)
class ReductionLowering:
    """A reduction as a CuPy ReductionKernel (identity, reduce expression, post-map), all
    derived from the op record's `Reduction` facts by `reduction_lowering`."""

    identity: str  # C: the identity, with {T}
    reduce: str  # C: combine a and b
    post: str = "a"  # C: the final value from the accumulator a ({count} = elements per output)


class LoweringTable(dict):
    """The lowerings keyed by the op record, as JAX keys its rules by the primitive object:
    an entry can only exist for an op that has a record, and `missing_ops` compares records.
    Lookups also take the op's name (what IR nodes hold), resolved through the registry."""

    @staticmethod
    def _record(op: "str | OpDef") -> OpDef:
        return op if isinstance(op, OpDef) else REGISTRY[op]  # KeyError: a name with no record

    def __getitem__(self, op: "str | OpDef") -> OpLowering:
        return super().__getitem__(self._record(op))

    def __setitem__(self, op: OpDef, low: OpLowering) -> None:
        if not isinstance(op, OpDef):
            raise TypeError(f"the lowering table is keyed by op records, got {op!r}")
        super().__setitem__(op, low)

    def __contains__(self, op: object) -> bool:
        try:
            return super().__contains__(self._record(op))  # type: ignore[arg-type]
        except KeyError:
            return False

    def get(self, op: "str | OpDef", default: "OpLowering | None" = None) -> "OpLowering | None":  # type: ignore[override]
        return self[op] if op in self else default


TABLE = LoweringTable()


def reduction_lowering(op: OpDef) -> ReductionLowering | None:
    """The C spelling of a reduction's facts: the identity, the combiner's C expression on
    accumulators a and b, and the division by the count for a mean."""
    facts = op.reduction
    if facts is None:
        return None
    if facts.identity == -math.inf:
        identity = "gm_lowest<{T}>()"
    elif facts.identity == math.inf:
        identity = "gm_highest<{T}>()"
    else:
        identity = f"({{T}}){facts.identity!r}"
    combine = TABLE[facts.combiner].cupy.expr
    assert combine is not None, f"{facts.combiner}, a reduction's combiner, needs a C expression"
    reduce = combine.format("a", "b")
    return ReductionLowering(identity=identity, reduce=reduce, post="a / ({T}){count}" if facts.divide_by_count else "a")


def _helpers_of(c_expr: str | None) -> tuple:
    """The `gm_` helper functions (gmnative.c_helpers) a C expression calls."""
    return tuple(sorted(set(re.findall(r"\bgm_\w+", c_expr or ""))))


def _add(name: str, numpy: NumpyLowering, cupy: CupyLowering, pointwise: bool | None = None,
         reduction: ReductionLowering | None = None, note: str = "", fields: Callable | None = None) -> None:
    """Register the spellings of a registry op. `pointwise` and `reduction` default to what
    the op record says (pass them only to override, which no op does today); the C
    expression is the record's (OpDef.c_expr) where the entry spells none."""
    op = REGISTRY[name]
    if cupy.expr is None and op.c_expr is not None:
        cupy = CupyLowering(call=cupy.call, expr=op.c_expr, helpers=cupy.helpers or _helpers_of(op.c_expr))
    if pointwise is None:  # the op's fact, where an element-wise spelling exists (a library call is not inlined)
        pointwise = op.pointwise and bool(op.fusible) and bool(numpy.ufunc or numpy.into or cupy.expr)
    if reduction is None and op.reduction is not None:
        reduction = reduction_lowering(op)
    TABLE[op] = OpLowering(numpy, cupy, pointwise, reduction, note, fields)


_ACCUMULATING = ("add", "mul")  # combiners whose running value can leave the operand's range


def accumulate_dtype(node: Node):
    """The eager dtype a sum, prod or mean accumulates in where that differs from its
    operand's, as eager's forwards (and PyTorch's CPU kernels) compute them: int64 for bool
    and integers (PyTorch's integer reduction dtype; NumPy would give uint64 for uint8),
    float32 for float16 (rounded once at the end: a float16 running sum stalls at 2048 and
    overflows at 65504). None where the operand's dtype is the accumulator (max, min...)."""
    facts = REGISTRY[node.op].reduction if node.op in REGISTRY else None
    x = node.inputs[0] if node.inputs else None
    if facts is None or facts.combiner not in _ACCUMULATING or not isinstance(x, Value):
        return None
    dt = x.type.dtype
    if dt.np == np.float16:
        return _dtypes.float32
    if dt.np.kind in "biu" and dt.np != np.int64:
        return _dtypes.int64
    return None


def _fallback(name: str) -> OpLowering:
    """For an op the table does not know yet: call its registry forward (correct, unfused)."""
    call = f"_rt.forward({name!r}, {{xp}}, {{args}}, **{{attrs}})"
    return OpLowering(NumpyLowering(call=call.replace("{xp}", "np"), alias=True),
                      CupyLowering(call=call.replace("{xp}", "cp")), note="generic: the op's own forward")


def lowering_for(op: "str | OpDef") -> OpLowering:
    """The lowering of `op` (a record or its name); a generic call of the op's forward if
    the table lacks it."""
    found = TABLE.get(op)
    return found if found is not None else _fallback(op if isinstance(op, str) else op.name)


def small_power(node: Node) -> int | None:
    """2 or 3 when node is x ** 2 or x ** 3 with a literal exponent: multiplied out (one or
    two roundings instead of powf's slow general path; NumPy squares `x ** 2` itself)."""
    if node.op != "pow" or not isinstance(node.inputs[0], Value) or isinstance(node.inputs[1], (Value, bool)):
        return None
    if not node.inputs[0].type.dtype.is_floating_point:
        return None
    return int(node.inputs[1]) if node.inputs[1] in (2, 3) else None


def inlinable(op: OpDef) -> bool:
    """The NumPy backend's inline capability (static.executable.Capabilities): a fusible
    pointwise op with an element-wise spelling here joins fused regions."""
    low = TABLE.get(op)
    return low is not None and low.pointwise


def c_inlinable(op: OpDef) -> bool:
    """The native and CuPy backends' inline capability: inlinable with a C expression (the
    record's c_expr or the table's). A fusible op without one stays out of their regions."""
    low = TABLE.get(op)
    return low is not None and low.pointwise and low.cupy.expr is not None


def missing_ops() -> list[str]:
    """Names of registry ops without an entry in the table (the registry-wide test wants none)."""
    return sorted(op.name for op in REGISTRY.values() if op not in TABLE)


__all__ = ["TABLE", "LoweringTable", "OpLowering", "NumpyLowering", "CupyLowering", "ReductionLowering", "lowering_for",
           "missing_ops", "small_power", "accumulate_dtype", "half_in_float32", "inlinable", "c_inlinable"]


# the entries, by family: pointwise first (a reduction's combiner is a pointwise entry)
from .lowerings import pointwise as _pointwise  # noqa: E402,F401,I001  (each fills TABLE when imported)
from .lowerings import shapes as _shapes  # noqa: E402,F401
from .lowerings import reductions as _reductions  # noqa: E402,F401
from .lowerings import library as _library  # noqa: E402,F401
