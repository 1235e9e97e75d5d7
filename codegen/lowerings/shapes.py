"""The lowering table's shape and indexing entries: views and copies as library calls (a view
aliases its operand), basic and advanced indexing and their gradients, take_along_dim.
"""
from __future__ import annotations

from static.ir import Node

from ..lowering import CupyLowering, NumpyLowering, _add
from ..render import index_parts, index_source, py_literal

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
