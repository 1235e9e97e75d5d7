"""Index arithmetic of the native generator's C loops: flat indices of broadcast operands,
strided views read in place (chains of pure view ops), composed kept/reduced indices, and the
storage and index C types a loop uses.
"""
from __future__ import annotations

import numpy as np

from gmops import REGISTRY
from gmops.shape_ops import is_basic_key
from static.ir import Graph, Node, Value

from ..lowering import lowering_for
from ..render import c_type

_ACC = "double"  # every reduction accumulates in double (a float accumulator loses 25-60x accuracy)
_SIMD_REDUCTIONS = {"sum": "+", "mean": "+", "prod": "*"}  # OpenMP simd reduction operators


# the shortest last axis looped over as rows of a vector loop (_row_loops): eight float
# lanes of AVX2, twice
ROW_MIN = 16


def _prod(shape) -> int:
    out = 1
    for s in shape:
        out *= s if isinstance(s, int) else int(s)  # a symbolic size (static.dynamic_shapes) stays one
    return out


def _ints(shape) -> tuple:
    """A shape as a tuple of ints, a symbolic size (static.dynamic_shapes) kept as it is."""
    return tuple(d if isinstance(d, int) else int(d) for d in shape)


def _symbolic(n) -> bool:
    return type(n) is not int and isinstance(n, int) and not isinstance(n, bool)


def _symbols_of(graph: Graph) -> list:
    """The symbols of the graph's symbolic sizes (static.dynamic_shapes), in a fixed order:
    each C function reads them from one int64 argument (the sizes of the call)."""
    names: set = set()
    stack = [graph]
    while stack:
        g = stack.pop()
        values = list(g.inputs) + [o for n in g.nodes for o in n.outputs]
        for v in values:
            for d in v.type.shape:
                if _symbolic(d):
                    names.update(s for m in (getattr(d, "poly", None) or {}) for s in m)
        for n in g.nodes:
            names.update(s for x in n.inputs if _symbolic(x) for m in (getattr(x, "poly", None) or {}) for s in m)
            if n.body is not None:
                stack.append(n.body)
    return sorted(names)


def index_expr(shape: tuple, space: tuple, i: str = "i", suffix: str = "LL") -> str:
    """The flat index into a C-contiguous operand of `shape` (broadcast, right-aligned, to
    `space`) at flat position `i` of `space`: runs of axes the operand spans become one
    div/mod each, broadcast axes drop out. Shapes are static: the divisors are constants."""
    shape = _ints(shape)
    space = _ints(space)
    padded = (1,) * (len(space) - len(shape)) + shape
    if padded == space:
        return i
    if _prod(shape) == 1:
        return "0"
    terms = []
    a = len(space) - 1
    while a >= 0:
        if padded[a] == 1 or space[a] == 1:
            a -= 1
            continue
        hi = a  # a run of spanned axes [lo, hi]
        while a - 1 >= 0 and padded[a - 1] == space[a - 1] and space[a - 1] != 1:
            a -= 1
        lo = a
        a -= 1
        below = _prod(space[hi + 1:])  # elements of space per step along axis hi
        block = _prod(space[lo:hi + 1])
        stride = _prod(padded[hi + 1:])  # the operand's elements per step along axis hi
        expr = i if below == 1 else f"({i} / {below}{suffix})"
        if _prod(space[:lo]) != 1:
            expr = f"({expr} % {block}{suffix})"
        if stride != 1:
            expr = f"{expr} * {stride}{suffix}"
        terms.append(expr)
    return " + ".join(reversed(terms)) if terms else "0"


def contiguous_strides(shape: tuple) -> tuple:
    """The element strides of a C-contiguous array of `shape`."""
    return tuple(_prod(shape[j + 1:]) for j in range(len(shape)))


def strided_index(shape: tuple, strides: tuple, space: tuple, i: str = "i", suffix: str = "LL") -> str:
    """The index into an operand of `shape` laid out with element `strides` (a view of a
    C-contiguous array: permuted, sliced with steps, expanded with stride 0), broadcast
    right-aligned to `space`, at flat position `i` of `space`: one div/mod per run of axes
    whose strides chain as in a contiguous array."""
    shape = _ints(shape)
    space = _ints(space)
    pad = len(space) - len(shape)
    terms = []
    a = len(space) - 1
    while a >= 0:
        j = a - pad
        if j < 0 or shape[j] == 1 or space[a] == 1 or strides[j] == 0:  # broadcast: no term
            a -= 1
            continue
        hi = a  # grow the run [lo, hi] while the next outer axis continues the layout
        while (a - 1 - pad >= 0 and space[a - 1] != 1 and shape[a - 1 - pad] == space[a - 1]
               and strides[a - 1 - pad] != 0 and strides[a - 1 - pad] == strides[a - pad] * space[a]):
            a -= 1
        lo = a
        a -= 1
        below = _prod(space[hi + 1:])
        expr = i if below == 1 else f"({i} / {below}{suffix})"
        if _prod(space[:lo]) != 1:
            expr = f"({expr} % {_prod(space[lo:hi + 1])}{suffix})"
        stride = strides[hi - pad]
        terms.append(expr if stride == 1 else f"{expr} * {stride}{suffix}")
    return " + ".join(reversed(terms)) if terms else "0"


# View ops whose NumPy forward never copies: a region input made by a chain of them reads
# the chain's first operand in place (reshape joins them where NumPy can make it a view).
_PURE_VIEWS = frozenset({"permute", "transpose", "index", "expand", "squeeze", "unsqueeze"})


def strided_source(v: Value) -> tuple[Value, tuple, int] | None:
    """(the value v is a view of, v's element strides into it, v's element offset), when v is
    made by a chain of views - permute, transpose, basic indexing (slices with any step,
    integers, None), expand, squeeze, unsqueeze, split, and reshapes that NumPy can do
    without a copy - of a value the kernel receives C-contiguous. A kernel then reads that value by
    index arithmetic instead of copying the view; None otherwise.

    The layout is NumPy's own: the chain's forwards run on a stand-in array of the base's
    shape with one-byte elements over a single byte of memory (strided, never read: only
    ops that make views run on it), whose strides and data offset are then v's."""
    chain = []
    base = v
    # (a producer may read no value at all: full, arange and random draws start a chain)
    while base.producer is not None and base.producer.inputs and isinstance(base.producer.inputs[0], Value):
        node = base.producer
        if node.op == "index":
            if len(node.inputs) != 1 or not is_basic_key(node.attrs["key"]):
                break
        elif node.op not in _PURE_VIEWS and node.op not in ("reshape", "split"):
            break
        chain.append((node, base.index))
        base = node.inputs[0]
    if not chain:
        return None
    shape = _ints(base.type.shape)
    if _prod(shape) == 0 or any(_symbolic(d) for d in shape):  # strides of a symbolic size: the view is copied
        return None
    memory = np.zeros(1, np.uint8)
    stand_in = np.lib.stride_tricks.as_strided(memory, shape, contiguous_strides(shape))
    a = stand_in
    for node, k in reversed(chain):
        if node.op == "reshape":
            a = a.view()
            try:
                a.shape = _ints(node.outputs[0].type.shape)  # raises rather than copies
            except AttributeError:
                return None
        elif node.op == "split":  # NumPy's split: views along the dim, this value the k-th
            a = REGISTRY[node.op].forward(np, a, **node.attrs)[k]
        else:
            a = REGISTRY[node.op].forward(np, a, **node.attrs)
        if not isinstance(a, np.ndarray) or a.base is None:
            return None
    if tuple(a.shape) != _ints(v.type.shape):
        return None
    offset = a.__array_interface__["data"][0] - memory.__array_interface__["data"][0]
    return base, tuple(int(st) for st in a.strides), int(offset)


def lone_region(node: Node) -> Node | None:
    """A one-op region for a pointwise op the fusion pass left alone whose operand is a view
    (a bias add after a convolution's permuted matmul output): as a NumPy ufunc it would keep
    the view's layout, and every kernel after it would copy its result to read it; as a C
    loop it reads the view in place (strided_source) and writes a C-contiguous result.
    None for every other node (those stay library calls)."""
    low = lowering_for(node.op)
    if (not low.pointwise or len(node.outputs) != 1 or not node.outputs[0].type.shape
            or node.outputs[0].type.dtype.np.kind != "f"
            or not any(isinstance(v, Value) and strided_source(v) is not None for v in node.inputs)):
        return None
    return one_op_region(node)


def one_op_region(node: Node) -> Node:
    """A fused node whose body is node alone, reading each distinct operand once: the form
    a lone pointwise op takes to be emitted as a C loop (lone_region here, loops.py's lone
    regions for every operand layout), so both build it the same way."""
    body = Graph(name="body")
    remap: dict = {}
    inputs: list = []
    for v in node.input_values():
        if v not in remap:
            remap[v] = Value(f"{v.name}_in", v.type)
            body.inputs.append(remap[v])
            inputs.append(v)
    copy = Node(op=node.op, inputs=[remap.get(v, v) if isinstance(v, Value) else v for v in node.inputs],
                attrs=dict(node.attrs), loc=node.loc)
    copy.outputs = [Value(f"{node.outputs[0].name}_out", node.outputs[0].type, copy, 0)]
    body.nodes.append(copy)
    body.outputs = list(copy.outputs)
    fused = Node(op="fused", inputs=inputs, attrs={}, body=body, loc=node.loc)
    fused.outputs = list(node.outputs)  # the graph's own value: its readers find it by name
    return fused


def compose_index(space: tuple, kept: tuple, reduced: tuple, o: str = "o", r: str = "r", suffix: str = "LL") -> str:
    """The flat index into `space` of output element `o` (over the kept axes, in order) and
    reduced element `r` (over the reduced axes, in order)."""
    terms = []
    for axes, var in ((kept, o), (reduced, r)):
        sizes = [int(space[a]) for a in axes]
        for j, a in enumerate(axes):
            if sizes[j] == 1:
                continue
            below = _prod(sizes[j + 1:])
            expr = var if below == 1 else f"({var} / {below}{suffix})"
            if j > 0 and _prod(sizes[:j]) != 1:
                expr = f"({expr} % {sizes[j]}{suffix})"
            stride = _prod(space[a + 1:])
            terms.append(expr if stride == 1 else f"{expr} * {stride}{suffix}")
    return " + ".join(terms) if terms else "0"


INT_INDEX_MAX = 2**31 - 1  # iteration spaces below this use int loop indices


def storage_c_type(dt) -> str:
    """The C type of an array's elements as a kernel declares them: bool arrays as unsigned
    char (NumPy stores a bool as one byte, 0 or 1). gcc cannot vectorize a load of C++ bool,
    so a loop reading a relu mask, a where condition or a dropout mask as bool ran scalar."""
    return "unsigned char" if dt.np.name == "bool" else c_type(dt)


def load(cname: str, idx: str, v: Value) -> tuple[str, str]:
    """(C expression, C type) of element idx of v's array: a bool is read back as `!= 0`."""
    if v.type.dtype.np.name == "bool":
        return f"({cname}[{idx}] != 0)", "bool"
    return f"{cname}[{idx}]", c_type(v.type.dtype)


def index_type(elements: int) -> tuple[str, str]:
    """(C type of loop indices, suffix of index constants) for a loop nest over `elements`:
    int where it fits. The vectorizer turns a division or remainder by a constant (a
    broadcast operand's index) into a multiply-high, which AVX2 has for 32-bit lanes but not
    for 64-bit ones: with a `long long` index a softmax's row-broadcast load kept the whole
    loop scalar (exp called once an element)."""
    if _symbolic(elements):
        # a size known per call: chosen at the size the symbolic entry was made at (the entry's
        # guard keeps every size of it within int's range, static.dynamic_shapes.INDEX_GUARD),
        # and no suffix on constants (`(5*s0)LL` is no C): they promote to the index's type
        made_at = elements.decision_value() if hasattr(elements, "decision_value") else int(elements)
        return ("int", "") if made_at <= INT_INDEX_MAX else ("long long", "")
    return ("int", "") if elements <= INT_INDEX_MAX else ("long long", "LL")
