"""The lowering table's reductions: sums, products, extremes and arg-reductions with their
combiners and accumulators, var/std and batch statistics, and the softmax family as library
calls (decomposed into fusible ops at opt_level 2).
"""
from __future__ import annotations

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import REGISTRY
from static.ir import Node, Value

from ..lowering import TABLE, CupyLowering, NumpyLowering, _add, accumulate_dtype
from ..render import np_dtype


# -- reductions -------------------------------------------------------------------------------
def _axes_of_0d(node: Node, operands: list, ctx: dict) -> dict:
    """A reduction of a 0-d tensor along dim 0 (or -1) reduces nothing: NumPy wants axis=None."""
    x = node.inputs[0]
    if isinstance(x, Value) and len(x.type.shape) == 0:
        return {k: "None" for k in ("dims", "dim") if k in node.attrs}
    return {}


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
