"""The lowering table's library calls: linear algebra (BLAS and LAPACK through the op's forward),
device moves and fills, the index, scan and sort ops (NumPy calls, or the op's forward where
NumPy and CuPy spell them differently), and structured control flow (the op's forward loops
in Python around the body's generated code).
"""
from __future__ import annotations

import numpy as np

from static.ir import Node, Value

from ..lowering import CupyLowering, NumpyLowering, _add
from ..render import c_literal, np_dtype, py_literal

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



# -- index, scan and sort ops ---------------------------------------------------------------------
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
_add("check_index_range", NumpyLowering(call="_rt.check_index_range({args}, **{attrs})", alias=True),
     CupyLowering(call="_rt.forward('check_index_range', cp, {args}, **{attrs})"),
     note="the op's forward: one min/max pass over the index, raising eager's exception and message")
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
                    ("cumprod_backward", "cumprod's gradient from two scans per slice, exact with zeros"),
                    ("max_pool2d", "each window of the image read once for its maximum (eager's NCHW kernel)"),
                    ("max_pool2d_backward", "each window's gradient written at its maximum (eager's NCHW kernel)"),
                    ("batch_norm", "per-channel statistics, normalization and affine part (eager's NCHW kernel)"),
                    ("batch_norm_backward", "the input, weight and bias gradients per channel (eager's NCHW kernel)")):
    _add(_name, NumpyLowering(call=f"_rt.forward({_name!r}, np, {{args}}, **{{attrs}})"),
         CupyLowering(call=f"_rt.forward({_name!r}, cp, {{args}}, **{{attrs}})"),
         note=f"the op's forward, a whole-array kernel: {_why}")
def _nan_to_num_c(node: Node, operands: list, ctx: dict) -> dict:
    """nan, posinf and neginf as C literals of the compute type: posinf/neginf default to the
    result dtype's largest finite values (float16's 65504 where the kernel computes in float)."""
    T, dt = ctx.get("T", "double"), node.outputs[0].type.dtype
    if not dt.is_floating_point:  # integers and bools are their own value
        return {"nan_c": "0", "posinf_c": "0", "neginf_c": "0"}
    top = float(np.finfo(dt.np).max)
    a = node.attrs
    return {"nan_c": c_literal(float(a.get("nan") or 0.0), T),
            "posinf_c": c_literal(top if a.get("posinf") is None else float(a["posinf"]), T),
            "neginf_c": c_literal(-top if a.get("neginf") is None else float(a["neginf"]), T)}


_add("nan_to_num", NumpyLowering(call="np.nan_to_num({0}, copy=True, nan={nan}, posinf={posinf}, neginf={neginf})",
                                 into="np.copyto({out}, np.nan_to_num({0}, copy=True, nan={nan}, posinf={posinf}, "
                                      "neginf={neginf}))"),
     CupyLowering(call="cp.nan_to_num({0}, copy=True, nan={nan}, posinf={posinf}, neginf={neginf})"),
     fields=_nan_to_num_c,
     note="posinf/neginf default to the dtype's largest values; C: the record's expression (gm_nan_to_num)")
for _name in ("floor_divide", "fmod"):
    _add(_name, NumpyLowering(call=f"_rt.forward({_name!r}, np, {{args}}, **{{attrs}})"),
         CupyLowering(call=f"_rt.forward({_name!r}, cp, {{args}}, **{{attrs}})"),
         note="the op's own forward: integer division by zero raises as eager's and PyTorch's "
              "(np.floor_divide gives 0), and integer and float semantics differ")
_add("remainder", NumpyLowering(call="_rt.forward('remainder', np, {args}, **{attrs})"),
     CupyLowering(call="_rt.forward('remainder', cp, {args}, **{attrs})"),
     note="the op's own forward: NumPy's remainder with PyTorch's sign of a zero (the dividend's)")
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor", "logical_or", "logical_xor"):  # C: the record's expression
    _add(_name, NumpyLowering(call=f"np.{_name}({{0}}, {{1}})", ufunc=f"np.{_name}"),
         CupyLowering(call=f"cp.{_name}({{0}}, {{1}})"))
for _name in ("floor", "ceil", "trunc", "round"):  # (log2 ... atan2: their records' ufunc and C expression)
    _add(_name, NumpyLowering(call=f"_rt.forward({_name!r}, np, {{args}}, **{{attrs}})",
                              into=f"np.copyto({{out}}, _rt.forward({_name!r}, np, {{args}}, **{{attrs}}))"),
         CupyLowering(call=f"_rt.forward({_name!r}, cp, {{args}}, **{{attrs}})"),
         fields=lambda node, operands, ctx: {"decimals_c": str(int(node.attrs.get("decimals") or 0))},
         note="NumPy: the op's own forward (integer inputs and decimals handled there); C: the record's expression")
for _name in ("div_floor", "div_trunc"):  # div's rounding modes: NumPy's floor_divide / trunc(a / b), C's int division
    _add(_name, NumpyLowering(call=f"_rt.forward({_name!r}, np, {{args}}, **{{attrs}})"),
         CupyLowering(call=f"_rt.forward({_name!r}, cp, {{args}}, **{{attrs}})"),
         note="the op's own forward (integer and float rounding differ): a library call")
for _name in ("isnan", "isinf", "isfinite"):  # a bool from any dtype; C: the record's expression
    _add(_name, NumpyLowering(call=f"np.{_name}({{0}})", ufunc=f"np.{_name}"), CupyLowering(call=f"cp.{_name}({{0}})"))


# -- structured control flow (eager/ops/control_flow.py) ------------------------------------------
# The op's forward runs the loop (or the chosen branch) in Python around the body's own
# generated code, compiled once per body text (static.control_flow.runner); the body is an
# attribute, so the call passes it along with the others. The native driver writes scan and
# while_loop as C loops around the body's kernels instead (native_gen/loops.py), calling the
# forward only where the body holds an op with no C form there.
for _name in ("scan", "while_loop", "cond"):
    _add(_name, NumpyLowering(call=f"_rt.forward('{_name}', np, {{args}}, **{{attrs}})"),
         CupyLowering(call=f"_rt.forward('{_name}', cp, {{args}}, **{{attrs}})"),
         note="structured control flow: the op's forward loops in Python around the body's generated code "
              "(native: a C loop around the body's kernels where they all have a C form, native_gen/loops.py)")
