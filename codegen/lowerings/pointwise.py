"""The lowering table's pointwise entries: every op whose record spells itself (ufunc, scalar
form, C expression), then the few written here (rsqrt, sigmoid, erf, gelu's derivative, where
and clamp cast to PyTorch's result type, constants).
"""
from __future__ import annotations

import numpy as np

from gmops import REGISTRY
from gmops._registry import OpDef
from gmops.unary import _relu_form
from static.ir import Node

from ..c_forward import forward_fields
from ..lowering import TABLE, CupyLowering, NumpyLowering, _add, _helpers_of
from ..render import c_literal, c_number


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
# relu keeps a -0.0 operand as PyTorch does: NumPy's maximum returns one operand or the other on
# a tie of zeros, by its loop, so the generated code takes the operand order eager's forward found
# keeps it for float32 on this host (gmops.unary._relu_form; the disk cache keys on the text)
_ufunc("relu", "np.maximum", order="0, {0}" if _relu_form(np.dtype(np.float32)) == 0 else "{0}, 0")


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
    elif op.c_expr:  # fused in C; in fused NumPy code its forward's result is copied into the buffer
        _add(op.name, NumpyLowering(call=f"_rt.forward({op.name!r}, np, {{args}}, **{{attrs}})",
                                    into=f"np.copyto({{out}}, _rt.forward({op.name!r}, np, {{args}}, **{{attrs}}))"),
             CupyLowering(call=f"_rt.forward({op.name!r}, cp, {{args}}, **{{attrs}})", expr=op.c_expr,
                          helpers=helpers),
             note="NumPy: the op's forward (its record spells a C expression, fused in C, but no ufunc)")
    else:
        _add(op.name, NumpyLowering(call=f"_rt.forward({op.name!r}, np, {{args}}, **{{attrs}})"),
             CupyLowering(call=f"_rt.forward({op.name!r}, cp, {{args}}, **{{attrs}})", expr=op.c_expr,
                          helpers=helpers),
             note="" if op.c_expr else "the op's forward: its record spells no ufunc or C expression yet")


# every pointwise op from its record (a new pointwise op is its record: nothing to add here): the
# ufunc and C expression where it spells them, else its forward as the library call; before the
# entries below (which spell some ops by hand) and the reductions, whose combiners these may be
for _record in list(REGISTRY.values()):
    if (_record.ufunc or _record.c_expr or _record.pointwise) and _record not in TABLE:
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
     CupyLowering(call="_rt.forward('sigmoid', cp, {0})"))  # unfused on a GPU: the record's forward
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
# softplus and gelu in C: the record's forward run on C text (codegen/c_forward.py), so the
# formula is written once, in the record; used where `decompose` leaves them (float16, empty)
_add("softplus", NumpyLowering(call="_rt.softplus({0}, {beta}, {threshold})",
                               into="_rt.softplus({0}, {beta}, {threshold}, out={out})"),
     CupyLowering(call="_rt.forward('softplus', cp, {0}, beta={beta}, threshold={threshold})",  # (written in the record)
                  expr="{c_forward}"),
     fields=forward_fields,
     note="NumPy: the op's forward (four passes and a select); compiled graphs decompose it first")
_add("gelu", NumpyLowering(call="_rt.gelu({0}, {approximate})", into="_rt.gelu({0}, {approximate}, out={out})"),
     CupyLowering(call="_rt.forward('gelu', cp, {0}, approximate={approximate})", expr="{c_forward}"),
     fields=forward_fields,
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
