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
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from eager import _dtypes
from eager.ops import REGISTRY
from eager.ops._registry import OpDef
from static.ir import Node, Value, half_in_float32

from .render import c_literal, c_number, fill, index_parts, index_source, np_dtype, py_literal


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


# -- pointwise ops ----------------------------------------------------------------------------
def _ufunc(name: str, np_ufunc: str, scalar: str | None = None, cp_ufunc: str | None = None,
           order: str | None = None) -> None:
    """A pointwise op that is one ufunc (NumPy, CuPy) with a Python spelling on NumPy scalars
    (0-d code) or its operands in another order; its C expression is the record's."""
    arity = REGISTRY[name].arity
    assert arity is not None, f"{name}: a ufunc has a fixed number of operands"
    assert REGISTRY[name].c_expr, f"{name}: its record spells no C expression (OpDef.c_expr)"
    args = order or ", ".join(f"{{{i}}}" for i in range(arity))
    _add(name,
         NumpyLowering(call=f"{np_ufunc}({args})", ufunc=np_ufunc, ufunc_args=order, scalar=scalar),
         CupyLowering(call=f"{cp_ufunc or np_ufunc.replace('np.', 'cp.')}({args})"))


_ufunc("neg", "np.negative", scalar="(-{0})")
_ufunc("add", "np.add", scalar="({0} + {1})")
_ufunc("sub", "np.subtract", scalar="({0} - {1})")
_ufunc("rsub", "np.subtract", scalar="({1} - {0})", order="{1}, {0}")
_ufunc("mul", "np.multiply", scalar="({0} * {1})")
_ufunc("div", "np.true_divide", scalar="({0} / {1})")
for _name, _fn, _op in [("eq", "equal", "=="), ("ne", "not_equal", "!="), ("lt", "less", "<"),
                        ("le", "less_equal", "<="), ("gt", "greater", ">"), ("ge", "greater_equal", ">=")]:
    _ufunc(_name, f"np.{_fn}", scalar=f"({{0}} {_op} {{1}})")
_ufunc("logical_and", "np.logical_and", scalar="({0} & {1})")
_ufunc("logical_not", "np.logical_not", scalar="(~{0})")
_ufunc("relu", "np.maximum", order="{0}, 0")


def _from_record(op: OpDef) -> None:
    """The lowering of an op whose record carries its spellings (OpDef.ufunc, OpDef.c_expr):
    NumPy and CuPy call the ufunc (with out= in fused NumPy code), the native and CUDA kernels
    inline the record's C expression, and the `gm_` helpers it calls come from its text.
    Without a ufunc the op's own forward is the library call."""
    args = ", ".join(f"{{{i}}}" for i in range(op.arity or 1))
    helpers = _helpers_of(op.c_expr)
    if op.ufunc:
        _add(op.name, NumpyLowering(call=f"np.{op.ufunc}({args})", ufunc=f"np.{op.ufunc}"),
             CupyLowering(call=f"cp.{op.ufunc}({args})", expr=op.c_expr, helpers=helpers))
    else:
        _add(op.name, NumpyLowering(call=f"_rt.forward({op.name!r}, np, {{args}}, **{{attrs}})"),
             CupyLowering(call=f"_rt.forward({op.name!r}, cp, {{args}}, **{{attrs}})", expr=op.c_expr,
                          helpers=helpers))


# every op whose record spells itself (a new pointwise op is its record: nothing to add here);
# before the reductions below, whose combiners (add, maximum, ...) these may be
for _record in list(REGISTRY.values()):
    if (_record.ufunc or _record.c_expr) and _record not in TABLE:
        _from_record(_record)

# rsqrt is 1/sqrt(x) exactly as its forward computes it (not the hardware's rsqrt)
_add("rsqrt", NumpyLowering(call="np.true_divide(1.0, np.sqrt({0}))", into="_rt.rsqrt({0}, out={out})"),
     CupyLowering(call="1.0 / cp.sqrt({0})"))
# sigmoid as its forward: e = exp(-|x|) (no overflow), then 1/(1+e) where x >= 0, e/(1+e) elsewhere
# (the numerator picked first: the same quotient, one division)
_add("sigmoid", NumpyLowering(call="np.true_divide(np.where({0} >= 0, 1.0, np.exp(-np.abs({0}))), "
                                   "1.0 + np.exp(-np.abs({0})))",
                              into="np.exp(np.negative(np.abs({0})), out={out})\n"
                                   "np.true_divide(np.where({0} >= 0, 1.0, {out}), np.add({out}, 1.0), out={out})"),
     CupyLowering(call="cp.where({0} >= 0, 1.0 / (1.0 + cp.exp(-cp.abs({0}))), cp.exp(-cp.abs({0})) / "
                       "(1.0 + cp.exp(-cp.abs({0})))).astype({dtype}, copy=False)"))
# erf is the op's forward (a many-pass rational approximation without SciPy, cupyx.scipy.special
# on GPUs); compiled graphs run it once per value (remat saves it, see static/passes/remat.py)
_add("erf", NumpyLowering(call="_rt.erf({0})", into="_rt.erf({0}, out={out})"),
     CupyLowering(call="_rt.forward('erf', cp, {0})"),
     note="the op's forward: a many-pass approximation (no single NumPy function computes erf)")
# gelu's derivative: the op's forward in NumPy (its erf is eager's), one C expression in a
# fused kernel (erf from the C library)
_add("gelu_grad", NumpyLowering(call="_rt.gelu_grad({0})", into="_rt.gelu_grad({0}, out={out})"),
     CupyLowering(call="_rt.forward('gelu_grad', cp, {0})"),
     note="the op's forward: Phi(x) + x phi(x), with eager's erf")
_add("softplus", NumpyLowering(call="_rt.softplus({0}, {beta}, {threshold})",
                               into="_rt.softplus({0}, {beta}, {threshold}, out={out})"),
     CupyLowering(call="cp.where({0} * {beta} > {threshold}, {0}, (cp.log1p(cp.exp(-cp.abs({0} * {beta}))) + "
                       "cp.maximum({0} * {beta}, 0)) / {beta}).astype({dtype}, copy=False)",
                  expr="gm_softplus({0}, ({T}){beta_c}, ({T}){threshold_c})", helpers=("gm_softplus",)),
     fields=lambda node, operands, ctx: {"beta_c": c_number(node.attrs["beta"]),
                                         "threshold_c": c_number(node.attrs["threshold"])},
     note="NumPy: the op's forward (four passes and a select); compiled graphs decompose it first")
_add("gelu", NumpyLowering(call="_rt.gelu({0}, {approximate})", into="_rt.gelu({0}, {approximate}, out={out})"),
     CupyLowering(call="_rt.forward('gelu', cp, {0}, approximate={approximate})", expr="gm_gelu_{approximate_c}({0})",
                  helpers=("gm_gelu_none", "gm_gelu_tanh")),
     fields=lambda node, operands, ctx: {"approximate_c": node.attrs.get("approximate", "none")},
     note="the op's forward (exact gelu needs erf); compiled graphs decompose it into fusible ops first")
# a standalone where or clamp is cast to the result type (two Python-number branches, or an int
# tensor with float bounds, give PyTorch's dtype, not NumPy's)
_add("where", NumpyLowering(call="np.where({0}, {1}, {2}).astype({dtype}, copy=False)",
                            into="np.copyto({out}, {2}, casting='unsafe')\n"
                                 "np.copyto({out}, {1}, casting='unsafe', where={0})",
                            scalar="({1} if {0} else {2})"),
     CupyLowering(call="cp.where({0}, {1}, {2}).astype({dtype}, copy=False)"))


def _clamp_c(node: Node, operands: list, ctx: dict) -> dict:
    lo, hi, T = node.attrs.get("min"), node.attrs.get("max"), ctx.get("T", "double")
    return {"min_c": c_literal(lo if lo is not None else 0, T), "max_c": c_literal(hi if hi is not None else 0, T),
            "has_min": "true" if lo is not None else "false", "has_max": "true" if hi is not None else "false"}


_add("clamp", NumpyLowering(call="np.clip({0}, {min}, {max}).astype({dtype}, copy=False)",
                            into="np.clip({0}, {min}, {max}, out={out})"),
     CupyLowering(call="cp.clip({0}, {min}, {max}).astype({dtype}, copy=False)",
                  expr="gm_clamp({0}, {min_c}, {max_c}, {has_min}, {has_max})", helpers=("gm_clamp",)),
     fields=_clamp_c)
_add("to_dtype", NumpyLowering(call="{0}.astype({dtype})", into="np.copyto({out}, {0}, casting='unsafe')",
                               scalar="{0}.astype({dtype})"),
     CupyLowering(call="{0}.astype({dtype})"))
_add("clone", NumpyLowering(call="np.array({0}, copy=True)", into="np.copyto({out}, {0})", scalar="{0}"),
     CupyLowering(call="cp.array({0}, copy=True)"))
_add("stop_gradient", NumpyLowering(call="{0}", into="np.copyto({out}, {0})", scalar="{0}", alias=True),
     CupyLowering(call="{0}"), note="identity; its output aliases its operand")


def _constant_fields(node: Node, operands: list, ctx: dict) -> dict:
    """`value_c`: the value as a C literal; `const`: a typed module constant (0-d NumPy code)."""
    value = node.attrs["value"]
    f = {"value_c": c_number(value)}
    if "const" in ctx:
        f["const"] = ctx["const"](value, node.outputs[0].type.dtype)
    return f


_add("full_like", NumpyLowering(call="np.full({shape}, {value}, {dtype})", into="{out}.fill({value})",
                                scalar="{const}"),
     CupyLowering(call="cp.full({shape}, {value}, {dtype})", expr="(({R}){value_c})"),
     note="the operand's data is not read", fields=_constant_fields)
_add("full", NumpyLowering(call="np.full({shape}, {value}, {dtype})", into="{out}.fill({value})", scalar="{const}"),
     CupyLowering(call="cp.full({shape}, {value}, {dtype})", expr="(({R}){value_c})"), fields=_constant_fields)

# -- shape ops: views and copies, library calls ------------------------------------------------
_add("reshape", NumpyLowering(call="np.reshape({0}, {shape})", alias=True),
     CupyLowering(call="cp.reshape({0}, {shape})"))
_add("transpose", NumpyLowering(call="np.swapaxes({0}, {dim0}, {dim1})", alias=True),
     CupyLowering(call="cp.swapaxes({0}, {dim0}, {dim1})"))
_add("permute", NumpyLowering(call="np.transpose({0}, {dims})", alias=True),
     CupyLowering(call="cp.transpose({0}, {dims})"))
_add("expand", NumpyLowering(call="np.broadcast_to({0}, {shape})", alias=True),
     CupyLowering(call="cp.broadcast_to({0}, {shape})"))
_add("squeeze", NumpyLowering(call="np.reshape({0}, {shape})", alias=True),
     CupyLowering(call="cp.reshape({0}, {shape})"), note="a squeeze is a reshape to the static result shape")
_add("unsqueeze", NumpyLowering(call="np.expand_dims({0}, {dim})", alias=True),
     CupyLowering(call="cp.expand_dims({0}, {dim})"))
_add("cat", NumpyLowering(call="np.concatenate(({args},), axis={dim})"),
     CupyLowering(call="cp.concatenate(({args},), axis={dim})"))
_add("stack", NumpyLowering(call="np.stack(({args},), axis={dim})"),
     CupyLowering(call="cp.stack(({args},), axis={dim})"))
_add("split", NumpyLowering(call="np.split({0}, {cuts}, axis={dim})", alias=True),
     CupyLowering(call="cp.split({0}, {cuts}, axis={dim})"),
     fields=lambda node, operands, ctx: {"cuts": py_literal(
         [sum(node.attrs["sizes"][:i + 1]) for i in range(len(node.attrs["sizes"]) - 1)])})

_add("windows", NumpyLowering(call="_rt.forward('windows', np, {0}, **{attrs})", alias=True),
     CupyLowering(call="_rt.forward('windows', cp, {0}, **{attrs})"),
     note="Tensor.unfold's windows: a strided view of the operand")

# -- indexing ---------------------------------------------------------------------------------
_add("index", NumpyLowering(call="{0}[{key_src}]", alias=True), CupyLowering(call="{0}[{key_src}]"),
     fields=lambda node, operands, ctx: {"key_src": index_source(node.attrs["key"], operands)},
     note="the key is written as Python subscript syntax; basic keys give views")


def _key_tuple(key, tensors: list) -> str:
    """A key of `index` as a Python tuple literal (np.add.at takes a tuple, not subscript
    syntax): (("slice", 1, None, None), ("tensor", 0)) -> (slice(1, None, None), idx)."""
    parts = index_parts(key, tensors, as_call=True)
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _index_grad_fields(node: Node, operands: list, ctx: dict) -> dict:
    """`np.add.at(out, key, g)` where integer indices may repeat (they accumulate), else
    `out[key] = g`: a basic key addresses each element once. The statement is spelled
    around its two names: {before}{out}{between}{0}{after}."""
    key = node.attrs["key"]
    if node.attrs.get("n_index", 0):
        return {"before": "np.add.at(", "between": ", " + _key_tuple(key, operands[1:]) + ", ", "after": ")"}
    return {"before": "", "between": "[" + index_source(key, operands) + "] = ", "after": ""}


_add("index_grad", NumpyLowering(call="", body=("{out} = np.zeros({shape}, {dtype})",
                                                "{before}{out}{between}{0}{after}")),
     CupyLowering(call="_rt.forward('index_grad', cp, {args}, **{attrs})"), fields=_index_grad_fields,
     note="zeros with g added (or written) at the key; CuPy: the op's forward (cupyx.scatter_add)")
_add("index_put", NumpyLowering(call="", body=("{out} = np.array({0}, copy=True)", "{out}[{key_src}] = {1}")),
     CupyLowering(call="_rt.forward('index_put', cp, {args}, **{attrs})"),
     fields=lambda node, operands, ctx: {"key_src": index_source(node.attrs["key"], operands[1:])},
     note="a copy of x with v written at the key; CuPy: the op's forward")
_add("view_scatter", NumpyLowering(call="_rt.forward('view_scatter', np, {args}, steps={steps})"),
     CupyLowering(call="_rt.forward('view_scatter', cp, {args}, steps={steps})"),
     note="the op's forward: it replays a recorded chain of view ops (any of the registry's) on a copy "
          "of base and writes value through it; in-place updates of views are rare in compiled code")

def _take_along_fields(node: Node, operands: list, ctx: dict) -> dict:
    """x's values at index along dim; without keepdim the index gains the axis and loses it after."""
    m, dim = ctx["module"], node.attrs["dim"]
    if node.attrs.get("keepdim"):
        return {"take": f"{m}.take_along_axis({operands[0]}, {operands[1]}, axis={dim})"}
    return {"take": f"{m}.squeeze({m}.take_along_axis({operands[0]}, {m}.expand_dims({operands[1]}, {dim}), "
                    f"axis={dim}), axis={dim})"}


_add("take_along", NumpyLowering(call="_rt.forward('take_along', np, {0}, {1}, dim={dim}, keepdim={keepdim})"),
     CupyLowering(call="{take}"), fields=_take_along_fields,
     note="the op's forward on NumPy: max-pooling's values, a gather along a middle axis, in one native pass "
          "where eager has its kernels")
_add("index_mask", NumpyLowering(call="(np.expand_dims(np.arange({size}), {other_axes}) == {0})"),
     CupyLowering(call="(cp.expand_dims(cp.arange({size}), {other_axes}) == {0})"),
     fields=lambda node, operands, ctx: {"other_axes": py_literal(tuple(
         i for i in range(len(node.inputs[0].type.shape)) if i != node.attrs["dim"]))},
     note="compares positions along dim with an index: not pointwise in its operand")

# -- reductions -------------------------------------------------------------------------------
def _axes_of_0d(node: Node, operands: list, ctx: dict) -> dict:
    """A reduction of a 0-d tensor along dim 0 (or -1) reduces nothing: NumPy wants axis=None."""
    x = node.inputs[0]
    if isinstance(x, Value) and len(x.type.shape) == 0:
        return {k: "None" for k in ("dims", "dim") if k in node.attrs}
    return {}


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


def _reduction_fields(node: Node, operands: list, ctx: dict) -> dict:
    """axis=None for a 0-d operand, and `acc`/`cast`: the `dtype=` the reduce accumulates in
    and the rounding of its value to the result's dtype (both empty where not needed)."""
    f = _axes_of_0d(node, operands, ctx)
    acc, out, m = accumulate_dtype(node), node.outputs[0].type.dtype, ctx["module"]
    f["acc"] = f", dtype={np_dtype(acc, m)}" if acc is not None else ""
    f["cast"] = f".astype({np_dtype(out, m)})" if acc is not None and acc != out else ""
    return f


def _reduction(name: str, cp_fn: str) -> None:
    """A reduction with `Reduction` facts: NumPy calls the combiner ufunc's own reduce (np.sum
    & co. are Python wrappers around it, ~1 us a call), np.mean for a mean; both accumulate
    in `accumulate_dtype`."""
    facts = REGISTRY[name].reduction
    assert facts is not None, f"{name} has no Reduction facts"
    np_fn = "np.mean" if facts.divide_by_count else f"{TABLE[facts.combiner].numpy.ufunc}.reduce"
    _add(name, NumpyLowering(call=f"{np_fn}({{0}}, axis={{dims}}, keepdims={{keepdim}}{{acc}}){{cast}}"),
         CupyLowering(call=f"cp.{cp_fn}({{0}}, axis={{dims}}, keepdims={{keepdim}}{{acc}}){{cast}}"),
         fields=_reduction_fields)


for _name, _cp in [("sum", "sum"), ("mean", "mean"), ("amax", "amax"), ("amin", "amin"), ("max", "amax"),
                   ("min", "amin"), ("prod", "prod")]:
    _reduction(_name, _cp)
_add("prod_except_self", NumpyLowering(call="_rt.forward('prod_except_self', np, {0}, dims={dims})"),
     CupyLowering(call="_rt.forward('prod_except_self', cp, {0}, dims={dims})"))
# argmax(dim=None) of NumPy is over the flattened array, keepdims giving (1,)*ndim: PyTorch's shapes
_add("argmax", NumpyLowering(call="_rt.arg_reduce('argmax', {0}, {dim}, {keepdim}, {dtype})"),
     CupyLowering(call="cp.asarray(cp.argmax({0}, axis={dim}, keepdims={keepdim}), dtype={dtype})"), fields=_axes_of_0d)
_add("argmin", NumpyLowering(call="_rt.arg_reduce('argmin', {0}, {dim}, {keepdim}, {dtype})"),
     CupyLowering(call="cp.asarray(cp.argmin({0}, axis={dim}, keepdims={keepdim}), dtype={dtype})"), fields=_axes_of_0d)
_add("prod_except_self", NumpyLowering(call="_rt.forward('prod_except_self', np, {0}, dims={dims})"),
     CupyLowering(call="_rt.forward('prod_except_self', cp, {0}, dims={dims})"),
     note="the op's forward: prefix and suffix products over the flattened group (exact with zeros), a "
          "dozen whole-array steps; it only runs in second derivatives of prod")


def _var_fields(node: Node, operands: list, ctx: dict) -> dict:
    """cp.var/cp.std accumulating as the op's forward and PyTorch's CPU kernel do (float32 in
    float64, float16 in float32), rounded once to the result's dtype."""
    f = _axes_of_0d(node, operands, ctx)
    dt, m = node.inputs[0].type.dtype, ctx["module"]
    acc = _dtypes.float64 if dt.np == np.float32 else _dtypes.float32 if dt.np == np.float16 else None
    f["acc"] = f", dtype={np_dtype(acc, m)}" if acc is not None else ""
    f["cast"] = f".astype({np_dtype(dt, m)})" if acc is not None else ""
    return f


for _name in ("var", "std"):
    # NumPy: the op's own forward (one native pass per channel for batch norm's statistics
    # where eager has its kernels; NumPy's var over (0, 2, 3) took 0.5 ms of a CNN step)
    _add(_name, NumpyLowering(call=f"_rt.forward('{_name}', np, {{0}}, dims={{dims}}, correction={{correction}}, "
                                   "keepdim={keepdim})"),
         CupyLowering(call=f"cp.{_name}({{0}}, axis={{dims}}, ddof={{correction}}, keepdims={{keepdim}}{{acc}}){{cast}}"),
         fields=_var_fields,
         note="the op's forward on NumPy: batch norm's per-channel statistics in one native pass where eager "
              "has its kernels, else accumulated in float64 as PyTorch's CPU kernel does")
# as library calls (compiled graphs at opt_level 2 decompose them into fusible ops first,
# see static/passes/decompose.py); runtime.py spells them in NumPy
_add("logsumexp", NumpyLowering(call="_rt.logsumexp(np, {0}, {dims}, {keepdim})"),
     CupyLowering(call="_rt.logsumexp(cp, {0}, {dims}, {keepdim})"))
_add("softmax", NumpyLowering(call="_rt.softmax(np, {0}, {dim})"), CupyLowering(call="_rt.softmax(cp, {0}, {dim})"))
_add("log_softmax", NumpyLowering(call="_rt.log_softmax(np, {0}, {dim})"),
     CupyLowering(call="_rt.log_softmax(cp, {0}, {dim})"))

# -- linear algebra and the rest --------------------------------------------------------------
_add("matmul", NumpyLowering(call="_rt.matmul({0}, {1})"), CupyLowering(call="cp.matmul({0}, {1})"),
     note="BLAS through NumPy; cuBLAS through CuPy")
for _name, _args in (("inv", "{0}"), ("solve", "{0}, {1}"), ("det", "{0}")):
    # LAPACK through the op's forward: a singular matrix raises its RuntimeError on both
    # libraries (CuPy returns NaN unless asked to raise)
    _add(_name, NumpyLowering(call=f"_rt.forward('{_name}', np, {_args})"),
         CupyLowering(call=f"_rt.forward('{_name}', cp, {_args})"),
         note="LAPACK through the op's forward, which reports a singular matrix as PyTorch does")
_add("to_device", NumpyLowering(call="{move}", alias=True),
     CupyLowering(call="_rt.forward('to_device', cp, {0}, device={device}, source={source})"),
     fields=lambda node, operands, ctx: {"move": operands[0] if node.attrs["device"] == "cpu" else
                                         f"_rt.forward('to_device', np, {operands[0]}, device="
                                         f"{py_literal(node.attrs['device'])}, source={py_literal(node.attrs['source'])})"},
     note="NumPy arrays are on the CPU: to the CPU is the array itself; to a GPU (and every CuPy move) is "
          "the op's forward, which picks the device")
_add("fill", NumpyLowering(call="np.full({shape}, {value}, {dtype})"),
     CupyLowering(call="cp.full({shape}, {value}, {dtype})"), note="x's shape filled with value")


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


# -- ops added with the PyTorch-programs surface ----------------------------------------------
# Index, scan and sort ops are NumPy library calls (or a copy and an in-place update); CuPy
# calls the op's forward for the ones NumPy and CuPy spell differently (cupyx.scatter_add).
def _leading_cut(x: Value, index: Value, dim: int) -> str:
    """The subscript cutting x to index's shape on every dim but `dim` ('' where nothing is
    cut): PyTorch lets the index be smaller there, NumPy's *_along_axis do not."""
    xs, ns = tuple(x.type.shape), tuple(index.type.shape)
    if all(d == dim or a == b for d, (a, b) in enumerate(zip(xs, ns))):
        return ""
    return "[" + ", ".join(":" if d == dim else f":{n}" for d, n in enumerate(ns)) + "]"


def _along_fields(node: Node, operands: list, ctx: dict) -> dict:
    """`xcut` (x cut to the index) and, for scatters, `src` (src cut to the index, or the
    number) and `along` (the full key addressing index's positions along dim)."""
    x, index, dim = node.inputs[0], node.inputs[1], node.attrs["dim"]
    f = {"xcut": _leading_cut(x, index, dim)}
    if len(node.inputs) > 2:
        src = node.inputs[2]
        f["src"] = operands[2] + (_leading_cut(src, index, -1) if isinstance(src, Value) else "")
        key = []
        for d, n in enumerate(index.type.shape):
            shape = [1] * len(index.type.shape)
            shape[d] = n
            key.append(operands[1] if d == dim else f"np.arange({n}).reshape({py_literal(tuple(shape))})")
        f["along"] = "(" + ", ".join(key) + ("," if len(key) == 1 else "") + ")"
    return f


_add("gather", NumpyLowering(call="np.take_along_axis({0}{xcut}, {1}, axis={dim})"),
     CupyLowering(call="cp.take_along_axis({0}{xcut}, {1}, axis={dim})"), fields=_along_fields)
_add("scatter", NumpyLowering(call="", body=("{out} = np.array({0}, copy=True)",
                                             "np.put_along_axis({out}{xcut}, {1}, {src}, axis={dim})")),
     CupyLowering(call="_rt.forward('scatter', cp, {args}, **{attrs})"), fields=_along_fields,
     note="a copy of x with src written at index along dim (through a view cut to the index)")
_add("scatter_add", NumpyLowering(call="", body=("{out} = np.array({0}, copy=True)", "np.add.at({out}, {along}, {src})")),
     CupyLowering(call="_rt.forward('scatter_add', cp, {args}, **{attrs})"), fields=_along_fields,
     note="a copy of x with src added at index along dim (np.add.at: repeated positions accumulate)")


def _index_select_call(node: Node, operands: list, ctx: dict) -> dict:
    m, x, index = ctx["module"], operands[0], operands[1]
    if not node.inputs[0].type.shape:
        return {"select": f"{m}.reshape({x}, (1,))[{index}.reshape(-1)].reshape(())"}
    return {"select": f"{m}.take({x}, {index}.reshape(-1), axis={node.attrs['dim']})"}


_add("index_select", NumpyLowering(call="{select}"), CupyLowering(call="{select}"), fields=_index_select_call)
_add("index_add", NumpyLowering(call="", body=("{out} = np.array({0}, copy=True)",
                                               "np.add.at({out}, {slices}{1}.reshape(-1),), {2}{scale})")),
     CupyLowering(call="_rt.forward('index_add', cp, {args}, **{attrs})"),
     fields=lambda node, operands, ctx: {"slices": "(" + "slice(None), " * node.attrs["dim"],
                                         "scale": f" * {py_literal(node.attrs['alpha'])}" if node.attrs["alpha"] != 1
                                         else ""},
     note="a copy of x with src's slices added at index along dim (np.add.at: repeats accumulate)")
_add("embedding", NumpyLowering(call="np.take({0}, {1}, axis=0)"), CupyLowering(call="cp.take({0}, {1}, axis=0)"))
_add("embedding_backward", NumpyLowering(call="_rt.forward('embedding_backward', np, {args}, **{attrs})"),
     CupyLowering(call="_rt.forward('embedding_backward', cp, {args}, **{attrs})"),
     note="the op's forward: it picks between sorted segment sums (np.add.reduceat, many rows per weight) "
          "and np.add.at by the index count, a whole-array kernel")
for _name in ("tril", "triu"):
    _add(_name, NumpyLowering(call=f"np.{_name}({{0}}, {{diagonal}})"), CupyLowering(call=f"cp.{_name}({{0}}, {{diagonal}})"))
_add("flip", NumpyLowering(call="np.flip({0}, axis={dims}).copy()"), CupyLowering(call="cp.flip({0}, axis={dims}).copy()"),
     note="a copy, as PyTorch's flip")
_add("diagonal", NumpyLowering(call="np.diagonal({0}, {offset}, {dim1}, {dim2}).copy()"),
     CupyLowering(call="cp.diagonal({0}, {offset}, {dim1}, {dim2}).copy()"), note="a copy, as PyTorch's diagonal")


def _diagonal_grad_fields(node: Node, operands: list, ctx: dict) -> dict:
    n, offset = node.inputs[0].type.shape[-1], node.attrs["offset"]
    return {"rows": f"np.arange({n}) + {max(-offset, 0)}" if offset < 0 else f"np.arange({n})",
            "cols": f"np.arange({n}) + {offset}" if offset > 0 else f"np.arange({n})"}


_add("diagonal_grad", NumpyLowering(call="", body=(
    "{out} = np.zeros({shape}, {dtype})", "np.moveaxis({out}, ({dim1}, {dim2}), (-2, -1))[..., {rows}, {cols}] = {0}")),
     CupyLowering(call="_rt.forward('diagonal_grad', cp, {args}, **{attrs})"), fields=_diagonal_grad_fields,
     note="zeros with g written on the diagonal (a view of the result with the two dims last)")


def _scan_fields(node: Node, operands: list, ctx: dict) -> dict:
    """cumsum/cumprod accumulate integers and bools in int64 (the op's forward, PyTorch);
    a 0-d operand is its own scan."""
    m, x = ctx["module"], node.inputs[0]
    wide = f", dtype={m}.int64" if x.type.dtype.np.kind in "biu" else ""
    if not x.type.shape:
        return {"scan": f"{operands[0]}.astype({np_dtype(node.outputs[0].type.dtype, m)})"}
    return {"scan": f"{m}.{node.op}({operands[0]}, axis={node.attrs['dim']}{wide})"}


for _name in ("cumsum", "cumprod"):
    _add(_name, NumpyLowering(call="{scan}"), CupyLowering(call="{scan}"), fields=_scan_fields)


def _argsort_fields(node: Node, operands: list, ctx: dict) -> dict:
    """A stable sort; descending sorts the negated keys (bool and unsigned as int64 first,
    which keeps equal keys in order, as the op's forward)."""
    m, x = ctx["module"], node.inputs[0]
    if not x.type.shape:
        return {"sort": f"{m}.zeros((), dtype={m}.int64)"}
    key = operands[0]
    if node.attrs.get("descending"):
        key = f"-{key}.astype({m}.int64)" if x.type.dtype.np.kind in "bu" else f"-{key}"
    return {"sort": f"{m}.argsort({key}, axis={node.attrs['dim']}, kind='stable')"}


_add("argsort", NumpyLowering(call="{sort}"), CupyLowering(call="{sort}"), fields=_argsort_fields)
_add("einsum", NumpyLowering(call="np.einsum({equation}, {args}, optimize={optimize})"),
     CupyLowering(call="cp.einsum({equation}, {args})"),
     fields=lambda node, operands, ctx: {"optimize": py_literal(len(operands) > 2)})
for _name, _why in (("unfold", "one strided window view of the padded image and its contiguous copy "
                              "(no per-element form)"),
                    ("fold", "kh*kw strided adds of the columns into the padded image (no per-element form)"),
                    ("normalize", "statistics row by row with a dot-product variance (not decomposed: mean ops "
                                  "would round differently from eager)"),
                    ("scatter_reduce", "a reduction into positions picked by the index, with include_self"),
                    ("normalize_backward", "the whole gradient of normalize in a few row passes"),
                    ("layer_norm", "row statistics, scale and affine part in cache-sized row blocks"),
                    ("layer_norm_backward", "the input, weight and bias gradients in one pass over row blocks"),
                    ("cumprod_backward", "cumprod's gradient from two scans per slice, exact with zeros")):
    _add(_name, NumpyLowering(call=f"_rt.forward({_name!r}, np, {{args}}, **{{attrs}})"),
         CupyLowering(call=f"_rt.forward({_name!r}, cp, {{args}}, **{{attrs}})"),
         note=f"the op's forward, a whole-array kernel: {_why}")
_add("nan_to_num", NumpyLowering(call="np.nan_to_num({0}, copy=True, nan={nan}, posinf={posinf}, neginf={neginf})"),
     CupyLowering(call="cp.nan_to_num({0}, copy=True, nan={nan}, posinf={posinf}, neginf={neginf})"),
     note="a library call (the record keeps it unfused): posinf/neginf default to the dtype's largest values")
for _name in ("floor_divide", "remainder", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_or",
              "logical_xor"):
    _add(_name, NumpyLowering(call=f"np.{_name}({{0}}, {{1}})"), CupyLowering(call=f"cp.{_name}({{0}}, {{1}})"),
         note="integer and float semantics differ: a library call rather than one C expression")
for _name in ("floor", "ceil", "trunc", "round", "log2", "log10", "sinh", "cosh", "asin", "acos", "atan", "atan2"):
    _add(_name, NumpyLowering(call=f"_rt.forward({_name!r}, np, {{args}}, **{{attrs}})"),
         CupyLowering(call=f"_rt.forward({_name!r}, cp, {{args}}, **{{attrs}})"),
         note="the op's own forward (integer inputs and decimals handled there): a library call")
for _name in ("isnan", "isinf", "isfinite"):
    _add(_name, NumpyLowering(call=f"np.{_name}({{0}})"), CupyLowering(call=f"cp.{_name}({{0}})"),
         note="a bool result from any input dtype: a library call")


# -- structured control flow (eager/ops/control_flow.py) ------------------------------------------
# The op's forward runs the loop (or the chosen branch) in Python around the body's own
# generated code, compiled once per body text (static.control_flow.runner); the body is an
# attribute, so the call passes it along with the others.
for _name in ("scan", "while_loop", "cond"):
    _add(_name, NumpyLowering(call=f"_rt.forward('{_name}', np, {{args}}, **{{attrs}})"),
         CupyLowering(call=f"_rt.forward('{_name}', cp, {{args}}, **{{attrs}})"),
         note="structured control flow: the op's forward loops in Python around the body's generated code")
