"""Turning IR pieces into source text: identifiers for values, literals in Python and C,
the fields a lowering template is filled with, and the IR line a statement comes from."""
from __future__ import annotations

import keyword
import re

import numpy as np

from gmbase import dtypes as _dtypes
from static.ir import Graph, Node, Value
from static.ir.core import format_node, spell_float

# -- identifiers --------------------------------------------------------------------------------
_RESERVED = {"np", "cp", "_rt", "forward", "lo", "hi", "parts", "self"}


class Names:
    """Python identifiers for IR values: %0 -> v0, %x -> x, %grad.0 -> grad_0; unique
    within one scope, never a keyword or a name the generated module uses itself."""

    def __init__(self, prefix: str = "", taken: set | None = None) -> None:
        self.prefix = prefix
        self.of: dict = {}
        self.taken: set = set(taken or ())

    def __call__(self, v: Value) -> str:
        name = self.of.get(v)
        if name is None:
            name = self.fresh(v.name)
            self.of[v] = name
        return name

    def fresh(self, hint: str) -> str:
        base = re.sub(r"[^0-9A-Za-z_]", "_", hint)
        if not base or base[0].isdigit() or base.startswith("_"):
            base = "v" + base
        base = self.prefix + base
        if keyword.iskeyword(base) or base in _RESERVED:
            base = base + "_"
        name, k = base, 1
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name


# -- literals -----------------------------------------------------------------------------------
def py_literal(v) -> str:
    """A Python expression for an attribute or operand literal."""
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        return spell_float(v, nan="float('nan')", inf="float('inf')", neg_inf="float('-inf')")
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, _dtypes.dtype):
        return f"_rt.dtype({v.name!r})"
    if isinstance(v, (tuple, list)):
        items = [py_literal(x) for x in v]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    raise TypeError(f"codegen cannot write the literal {v!r} ({type(v).__name__}) as Python")


def np_dtype(dt, module: str = "np") -> str:
    """`np.float32` for eager's float32 (or `cp.float32`)."""
    return f"{module}.{'bool_' if dt.np == np.bool_ else dt.np.name}"


C_TYPES = {
    "bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short", "int32": "int",
    "int64": "long long", "float16": "float16", "float32": "float", "float64": "double",
}
CUPY_PARAM_TYPES = {
    "bool": "bool", "uint8": "uint8", "int8": "int8", "int16": "int16", "int32": "int32",
    "int64": "int64", "float16": "float16", "float32": "float32", "float64": "float64",
}


def c_type(dt) -> str:
    return C_TYPES[dt.np.name]


def compute_c_type(dt) -> str:
    """The C type arithmetic happens in: float16 computes in float (as CuPy's half does)."""
    return "float" if dt.np.name == "float16" else c_type(dt)


def c_number(v) -> str:
    """A C literal of a Python number (double for floats), cast by the caller."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v}LL" if abs(v) > 2**31 - 1 else str(v)
    return spell_float(v, nan="gm_nan<double>()", inf="gm_inf<double>()", neg_inf="(-gm_inf<double>())")


def c_literal(v, ctype: str) -> str:
    """A literal operand with the explicit cast to the type the op computes in: a Python
    float becomes a double and then `ctype`, exactly as NumPy converts it."""
    return f"(({ctype}){c_number(v)})"


# -- template fields ------------------------------------------------------------------------------
def index_parts(key, tensors: list, as_call: bool = False) -> list[str]:
    """The entries of a key of `index` as Python source: subscript syntax (`1`, `1::2`, `...`)
    or, with `as_call`, the objects themselves (`slice(1, None, 2)`, `Ellipsis`) for a tuple
    literal; tensor entries name `tensors[i]`."""
    parts = []
    for entry in key:
        tag = entry[0]
        if tag == "int":
            parts.append(str(entry[1]))
        elif tag == "slice" and as_call:
            parts.append(f"slice({py_literal(entry[1])}, {py_literal(entry[2])}, {py_literal(entry[3])})")
        elif tag == "slice":
            start, stop, step = ("" if x is None else str(x) for x in entry[1:4])
            parts.append(f"{start}:{stop}" + (f":{step}" if step else ""))
        elif tag == "none":
            parts.append("None")
        elif tag == "ellipsis":
            parts.append("Ellipsis" if as_call else "...")
        else:
            parts.append(tensors[entry[1]])
    return parts


def index_source(key, operands: list) -> str:
    """A key of `index` as Python subscript syntax: (("int", 1), ("slice", 1, None, 2)) -> 1, 1::2."""
    parts = index_parts(key, operands[1:])
    return ", ".join(parts) if parts else "()"


def fields(node: Node, operands: list, module: str = "np", **extra) -> dict:
    """Everything a lowering template may name, for `node` with operand sources `operands`."""
    out = node.outputs[0].type if node.outputs else None
    f: dict = {k: py_literal(v) for k, v in node.attrs.items()}
    f["attrs"] = "{" + ", ".join(f"{k!r}: {py_literal(v)}" for k, v in sorted(node.attrs.items())) + "}"
    f["args"] = ", ".join(operands)
    if out is not None:
        f["shape"] = py_literal(tuple(out.shape))
        f["dtype"] = np_dtype(out.dtype, module)
    from .lowering import lowering_for  # noqa: PLC0415  (lowering imports this module)

    extra_fields = lowering_for(node.op).fields
    if extra_fields is not None:
        f.update(extra_fields(node, operands, {"module": module, **extra}))
    f.update({k: v for k, v in extra.items() if k != "const"})
    return f


def fill(template: str, operands: list, f: dict) -> str:
    return template.format(*operands, **f)


# -- where a statement comes from -------------------------------------------------------------------
def node_line(node: Node) -> str:
    """The node's IR text on one line (a fused node without its body)."""
    return format_node(node, body=False)


def cite(node: Node) -> str:
    """Where the node came from in the user's code, for a comment: "  (model.py:12)"."""
    if not node.loc:
        return ""
    return "  (" + " ".join(str(node.loc).split()) + ")"  # one line, whatever the location holds


def entry_name(graph: Graph) -> str:
    """The generated module's entry function: `backward` for the backward half of a split
    training step (remat names it <fn>_backward), `forward` otherwise."""
    return "backward" if graph.name.endswith("_backward") else "forward"


def line_numbers(graph: Graph) -> dict:
    """id(node) -> its line in str(graph), for nodes and the nodes of fused bodies."""
    lines: dict = {}
    counter = [1]  # the func header

    def walk(g: Graph) -> None:
        for node in g.nodes:
            counter[0] += 1
            lines[id(node)] = counter[0]
            if node.body is not None:
                counter[0] += 1  # ^body(...)
                walk(node.body)
                counter[0] += 2  # yield, closing brace

    walk(graph)
    return lines


def compute_dtype(node):
    """The dtype an op computes in: its data operands' (what a literal is converted to)."""
    from gmops import REGISTRY  # noqa: PLC0415
    from static.ir import Value  # noqa: PLC0415

    masks = REGISTRY[node.op].mask_operands if node.op in REGISTRY else ()
    for i, v in enumerate(node.inputs):
        if i in masks:
            continue  # a condition, not data: where computes in its branches' type
        if isinstance(v, Value):
            return v.type.dtype
    return node.outputs[0].type.dtype
