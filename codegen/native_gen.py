"""Generate the native CPU backend's code for a graph: one C++ translation unit (every fused
region one C function) and the Python driver module that calls them.

The C expressions of the ops are the CuPy backend's (`CupyLowering.expr`, emitted by the
same `c_kernel.KernelBody`), over the target-neutral helpers of c_helpers.py: one lowering
for both targets; the driver's library calls and op-by-op regions are `c_kernel.Driver`'s.
A fused region that `regions.analyze` splits into phases becomes:
- one OpenMP loop per shape of the prologue values it yields, over that shape; the loop over
  the whole iteration space also accumulates every full reduction, per thread in double,
  the per-thread partials then added in thread order (the same result for the same thread
  count);
- for each reduction over some axes: a loop over its outputs (in parallel), each summing
  its reduced elements in double, recomputing the prologue values it needs; over leading
  axes (column sums) the outputs go in blocks of 64, a contiguous SIMD loop per row;
- one loop per shape of the epilogue values it yields, reading the reduced values.
A row region (`regions.analyze_rows`: reductions along the last axis whose results are read
back over the whole space, as in a softmax) becomes one loop over the rows, each row walked
in passes (_row_passes): the reductions' results stay in registers and the row's values in
the L1 cache, where the blocked kinds would take a function call and a pass over memory per
reduction.
Operands of other shapes (broadcasts) are read by index arithmetic on the flat index, with
the static shapes folded into constants. Loops of at least GM_PARALLEL_MIN elements get
`#pragma omp parallel for simd`, smaller ones `#pragma omp simd` alone (decided here, from
the static shapes: no parallel region to outline, so a graph of small loops compiles twice
as fast and without libgomp). Consecutive parallel loops of one function share one team
(one_team): an outlined region was the largest part of gcc's time on a kernel. A region
whose C code is that of an earlier one (a model's next layer) calls the earlier function
(same_code): W5's training step compiles 35 functions for its 82 regions. A 0-d region is
straight-line code.

Everything else (matmul, shape ops, regions that do not fit) runs as the NumPy backend's
library calls in the driver, so the module runs every graph.
"""
from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from eager.ops import REGISTRY
from eager.ops.shape_ops import is_basic_key
from gmnative import build as native_build
from gmnative.c_helpers import PREAMBLE, host_prelude
from static.ir import Graph, Node, Value

from .c_kernel import Driver, KernelBody, closure, reduction_lowering, yielded_by
from .lowering import ReductionLowering, lowering_for
from .regions import Region, analyze, analyze_rows, bind_symbols
from .render import C_TYPES, Names, c_literal, c_type, fields, line_numbers, node_line, np_dtype, py_literal
from .templates import render

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


def supported(region: Region) -> str | None:
    """Why the region cannot be one C function (None: it can)."""
    if region.kind not in ("blocked", "rows"):
        return region.reason or "not a fusable region"
    allowed = set(region.body.inputs) | {o for n in region.reductions + region.epilogue for o in n.outputs}
    if not all(v in allowed for n in region.epilogue for v in n.input_values()):
        return "an epilogue reads a value computed before the reductions"
    if region.kind == "rows" and any(_extreme(red) is None and red.op not in _SIMD_REDUCTIONS
                                     for red in region.reductions):
        return "a row region's reduction has no OpenMP combiner"
    values = list(region.body.inputs) + [o for n in region.body.nodes for o in n.outputs]
    for v in values:
        if v.type.dtype.np.name not in C_TYPES:
            return f"%{v.name} has dtype {v.type.dtype.name}, which has no C type"
    for n in region.prologue + region.epilogue:
        if lowering_for(n.op).cupy.expr is None:
            return f"{n.op} has no C expression"
    return None


class CFunction:
    """One C function `void name(void* const* gm_args, int gm_nt)`: its array parameters
    (inputs, then outputs) and its statements."""

    def __init__(self, module: "NativeModule", name: str, node: Node | None = None) -> None:
        self.m, self.node, self.name = module, node, name  # node: the IR node it runs (none: the whole graph)
        self.reused = False  # _call() found an identical function: this one calls it
        self.params: list = []  # (C declaration, Python source of the buffer, byte size, writable)
        self.arrays: dict = {}  # value -> C array name
        self.dtypes: list = []  # NumPy dtype name of each parameter
        self.lines: list = []
        self.fused_multiply_add = False  # compiled with fused multiply-adds (the small products)

    def _param(self, v: Value, source: str, writable: bool, sized_by: Value | None = None) -> str:
        """A kernel parameter for v's array (`sized_by`: the value whose array is passed, when
        v is a view read through it)."""
        k = len(self.params)
        ctype = storage_c_type(v.type.dtype)
        cname = f"{'out' if writable else 'in'}{k}"
        const = "" if writable else "const "
        decl = f"{const}{ctype}* __restrict__ {cname} = ({const}{ctype}*)gm_args[{k}];"
        nbytes = _prod((sized_by or v).type.shape) * v.type.dtype.np.itemsize
        self.params.append((decl, source, nbytes, writable))
        self.dtypes.append(v.type.dtype.np.name)
        self.arrays[v] = cname
        return cname

    def _symbol_param(self) -> None:
        """The sizes of the call as the first parameter, when the graph has symbolic sizes
        (static.dynamic_shapes): `const long long s0 = gm_syms[0];`, read by the loops."""
        names = self.m.symbols
        ix = getattr(self, "ix", "long long")  # a region's index type: int where its sizes fit
        decl = "const long long* __restrict__ gm_syms = (const long long*)gm_args[0];" + "".join(
            f" const {ix} {s} = ({ix})gm_syms[{i}];" for i, s in enumerate(names))
        self.params.append((decl, "_syms", 8 * len(names), False))
        self.dtypes.append("int64")

    def _call(self) -> None:
        """The driver's call of this function; a function whose code an earlier one has (a
        model's next layer) is not emitted again: the call runs the earlier one (reused)."""
        code = same_code([d for d, _, _, _ in self.params] + self.lines)
        self.reused = code in self.m.by_code
        self.name = self.m.by_code.setdefault(code, self.name)
        self.m.kernel_call(self.name, self.params, self.dtypes)

    def function(self) -> dict:
        """The function as the template renders it, titled with its node's IR line."""
        assert self.node is not None, "a function of the whole graph is rendered by _graph_function"
        title = f"L{self.m.lines.get(id(self.node), '?')}: {node_line(self.node)}"
        return {"name": self.name, "title": title, "head": title, "also": [],
                "decls": [d for d, _, _, _ in self.params], "lines": self.lines,
                "fused_multiply_add": self.fused_multiply_add}

    def _store(self, body: KernelBody, y: Value, i: str = "i") -> str:
        expr, ctype = body.env[y]
        want = c_type(y.type.dtype)
        value = expr if ctype == want else f"({want})({expr})"
        return f"{self.arrays[y]}[{i}] = {value};"


class CRegion(CFunction):
    """One fused region as one C function."""

    node: Node

    def __init__(self, module: "NativeModule", node: Node, region: Region, name: str) -> None:
        super().__init__(module, name, node)
        self.r = region
        self.ix, self.sfx = index_type(_prod(region.space))
        self.env: dict = {}  # body value -> a literal (C expr, C type)
        self.arrays_out: dict = {}  # stored body value -> Python name of its array
        self.yielded = yielded_by(node)
        self.strides: dict = {}  # region input -> (element strides, offset), when it reads a view's base

    def _body(self, space: tuple, i: str = "i") -> KernelBody:
        """A KernelBody whose region inputs and stored values are loads at flat index i of space."""
        env = {}
        for v, (expr, ctype) in self.env.items():
            env[v] = (expr, ctype)
        for v, cname in self.arrays.items():
            shape = tuple(v.type.shape)
            if v in self.strides:
                strides, offset = self.strides[v]
                idx = strided_index(shape, strides, space, i, self.sfx)
                if offset:
                    idx = f"{offset}{self.sfx} + {idx}"
            else:
                idx = index_expr(shape, space, i, self.sfx)
            env[v] = load(cname, idx, v)
        return KernelBody(self.m.lines, env)

    # -- emission ------------------------------------------------------------------------
    def emit(self) -> None:
        """Parameters, then the loops; the driver lines go to the module."""
        r, m = self.r, self.m
        if m.symbols:
            self._symbol_param()
        for p in r.body.inputs:
            outer = r.binding[p]
            if isinstance(outer, Value):
                view = strided_source(outer)
                if view is not None:
                    self._param(p, m.names(view[0]), writable=False, sized_by=view[0])  # its memory, not a copy
                    self.strides[p] = (view[1], view[2])
                else:
                    self._param(p, m.contiguous(outer), writable=False)
            else:
                ctype = c_type(p.type.dtype)
                self.env[p] = (c_literal(outer, ctype), ctype)
        stored = []  # body values the C function writes
        for y in self.yielded:
            if isinstance(y, Value) and y.producer is not None and y not in self.arrays:
                stored.append(y)
        for red in (r.reductions if r.kind == "blocked" else []):  # a row region keeps its own in registers
            y = red.outputs[0]
            if y not in stored:
                stored.append(y)
        for y in stored:
            outs = self.yielded.get(y)
            name = m.names(outs[0]) if outs else m.names.fresh(f"red_{y.name}")
            alloc = m.allocate(tuple(y.type.shape), y.type.dtype)
            if alloc is None:
                m.made_by_call[name] = tuple(s if isinstance(s, int) else int(s) for s in y.type.shape)
            else:
                m.body.append(f"{name} = {alloc}")
            m.fresh.add(name)
            self.arrays_out[y] = name
        # output parameters after the inputs; those the call path makes last
        for y in sorted(stored, key=lambda y: self.arrays_out[y] in m.made_by_call):
            self._param(y, self.arrays_out[y], writable=True)
        if r.kind == "rows":
            self._row_passes(stored)
        else:
            self._phases(stored)
        self.lines = one_team(self.lines)
        self._call()
        m.bind_yielded(self.yielded, self._source_of)  # the names of what the region yields

    def _phases(self, stored: list) -> None:
        """A blocked region's loops: prologue loops (full reductions accumulated in the one
        over the whole space), the partial reductions, the epilogue loops."""
        r = self.r
        space = tuple(r.space)
        pro_out = [y for y in stored if y.producer in r.prologue]
        full = [red for red in r.reductions if r.is_full_reduction(red)]
        partial = [red for red in r.reductions if not r.is_full_reduction(red)]
        by_shape: dict = {}
        for y in pro_out:
            by_shape.setdefault(self._padded(y, space), []).append(y)
        if full and space not in by_shape:
            by_shape[space] = []
        for shape, values in by_shape.items():
            self._pointwise_loop(r.prologue, shape, values, full if shape == space else [])
        for red in partial:
            self._partial_reduction(red)
        epi_out = [y for y in stored if y.producer in r.epilogue]
        by_shape = {}
        for y in epi_out:
            by_shape.setdefault(_ints(y.type.shape), []).append(y)
        for shape, values in by_shape.items():
            self._pointwise_loop(r.epilogue, shape, values, [])

    # -- a row region: one loop over the rows, passes over each row (regions.analyze_rows) ----
    def _row_passes(self, stored: list) -> None:
        """Each row (the last axis) in passes: pass p computes the values of level p, writes
        those a later pass reads into a row buffer (or reads them back from the output array
        they are stored in) and accumulates the reductions of its values; between passes,
        the reductions' results and the values per row computed from them are locals. Every
        value is computed once, so a max and the elements compared with it (amax's gradient)
        are the same bits."""
        r = self.r
        space = _ints(r.space)
        width, n = space[-1], _prod(space)
        per_row = space[:-1] + (1,)
        levels = r.levels
        nodes = [nd for nd in r.body.nodes if nd in r.prologue or nd in r.reductions]
        chain, _ = closure(nodes, stored)
        reductions = [nd for nd in chain if nd in r.reductions]
        row_nodes = [nd for nd in chain if nd not in r.reductions and levels[nd.outputs[0]] > 0
                     and _ints(nd.outputs[0].type.shape) == per_row]
        loop_nodes = [nd for nd in chain if nd not in r.reductions and nd not in row_nodes]
        last_pass = max([levels[nd.outputs[0]] for nd in loop_nodes] + [levels[red.inputs[0]] for red in reductions])
        # a loop value read in a later pass than its own: a row buffer, or its output array
        read_later: set = set()
        for nd in loop_nodes + reductions:
            at = levels[nd.inputs[0]] if nd in reductions else levels[nd.outputs[0]]
            for v in nd.input_values():
                if v.producer is not None and v.producer in loop_nodes and levels[v] < at:
                    read_later.add(v)
        ix, sfx = self.ix, self.sfx
        row_env = dict(self.env)
        for v, cname in self.arrays.items():
            if v in r.body.inputs:
                row_env[v] = load(cname, self._row_index(v, space), v)
        self.lines.append(f"{{  // by rows of {width}: {len(reductions)} reduction(s) along the row in "
                          f"{last_pass + 1} pass(es) over it, {len(chain)} op(s)")
        self.lines.append(f"    const {ix} rows = {n // width}{sfx}, width = {width}{sfx};")
        self.lines.append("    #pragma omp parallel for num_threads(gm_nt) schedule(static)" if _parallel(n)
                          else "    // below GM_PARALLEL_MIN elements: the calling thread")
        self.lines.append(f"    for ({ix} o = 0; o < rows; ++o) {{")
        inner = "        "
        buffered = {}
        for v in sorted(read_later, key=lambda v: v.name):
            if v in self.arrays_out and _ints(v.type.shape) == space:
                continue  # read back from the array it is stored in
            buffered[v] = "buf_" + re.sub(r"\W", "_", v.name)
            self.lines.append(f"{inner}{c_type(v.type.dtype)} {buffered[v]}[{width}];  // %{v.name}, for a later pass")
        done: set = set()  # loop values of earlier passes
        for p in range(last_pass + 1):
            env = dict(row_env)
            for v in done:
                if v in buffered:
                    env[v] = (f"{buffered[v]}[j]", c_type(v.type.dtype))
                elif v in self.arrays_out:
                    env[v] = load(self.arrays[v], "i", v)
            body = KernelBody(self.m.lines, env)
            here = [nd for nd in loop_nodes if levels[nd.outputs[0]] == p]
            for nd in here:
                body.emit(nd)
            values = [nd.outputs[0] for nd in here]
            stmts = [f"const {ix} i = o * width + j;", *body.lines]
            stmts += [self._store(body, y) for y in values if y in self.arrays_out]
            stmts += [f"{buffered[y]}[j] = {body.env[y][0]};" for y in values if y in buffered]
            reds = [red for red in reductions if levels[red.inputs[0]] == p]
            self.lines.append(f"{inner}// pass {p}: {len(here)} op(s)" + (
                f", then {', '.join(f'%{red.outputs[0].name} ({red.op})' for red in reds)}" if reds else ""))
            if reds:
                accs, staged = [], []
                for k, red in enumerate(reds):
                    x = red.inputs[0]
                    stage_type = c_type(x.type.dtype)
                    acc = f"acc{p}_{k}"
                    accs.append((red, acc, reduction_lowering(red)))
                    staged.append((stage_type, body.operand(x, stage_type)))
                    self.lines += [f"{inner}{line}" for line in _acc_init(red, acc, accs[-1][2])]
                stmts.append(f"// L{self.m.lines.get(id(reds[0]), '?')}: {node_line(reds[0])}")
                self._staged_loops(stmts, accs, staged, inner, "0", "width", "j")
                for red, acc, low in accs:
                    self.lines += [f"{inner}{line}" for line in _acc_nan(red, acc)]
                    y = red.outputs[0]
                    name = "r_" + re.sub(r"\W", "_", y.name)
                    self.lines.append(f"{inner}const {c_type(y.type.dtype)} {name} = "
                                      f"({c_type(y.type.dtype)})({_post_expr(low, acc, width)});")
                    row_env[y] = (name, c_type(y.type.dtype))
                    if y in self.arrays_out:
                        self.lines.append(f"{inner}{self.arrays[y]}[o] = {name};")
                scalars = KernelBody(self.m.lines, dict(row_env))
                for nd in row_nodes:
                    if levels[nd.outputs[0]] == p + 1:
                        scalars.emit(nd)
                        y = nd.outputs[0]
                        row_env[y] = scalars.env[y]
                self.lines += [f"{inner}{line}" for line in scalars.lines]
                for nd in row_nodes:
                    y = nd.outputs[0]
                    if levels[y] == p + 1 and y in self.arrays_out:
                        self.lines.append(f"{inner}{self._store(scalars, y, 'o')}")
            elif stmts:
                self.lines.append(f"{inner}#pragma omp simd")
                self.lines.append(f"{inner}for ({ix} j = 0; j < width; ++j) {{")
                self.lines += [f"{inner}    {line}" for line in stmts]
                self.lines.append(f"{inner}}}")
            done.update(values)
        self.lines += ["    }", "}"]

    def _source_of(self, y: Value) -> str:
        """The driver's source of a yielded body value: the array the function wrote, or the
        outer operand a yielded region input is bound to."""
        if y in self.arrays_out:
            return self.arrays_out[y]
        return self.m.src(self.r.binding[y]) if y in self.r.binding else self.m.src(y)

    @staticmethod
    def _padded(y: Value, space: tuple) -> tuple:
        shape = _ints(y.type.shape)
        padded = (1,) * (len(space) - len(shape)) + shape
        return space if padded == space else shape

    def _pointwise_loop(self, phase: list, shape: tuple, values: list, reductions: list) -> None:
        """One loop over `shape` computing `values` (stored) and full `reductions`."""
        wanted = list(values) + [red.inputs[0] for red in reductions]
        chain, _ = closure(phase, [v for v in wanted if isinstance(v, Value)])
        n = _prod(shape)
        body = self._body(shape)
        for node in chain:
            body.emit(node)
        stmts = list(body.lines) + [self._store(body, y) for y in values]
        accs = []
        staged = []  # (C type, expression) of each reduction's element
        for j, red in enumerate(reductions):
            low = reduction_lowering(red)
            x = red.inputs[0]
            stage_type = c_type(x.type.dtype) if isinstance(x, Value) else _ACC
            xe = body.operand(x, stage_type) if isinstance(x, Value) else c_literal(x, _ACC)
            acc = f"acc{j}"
            stmts.append(f"// L{self.m.lines.get(id(red), '?')}: {node_line(red)}")
            accs.append((red, acc, low))
            staged.append((stage_type, xe))
        title = ", ".join(f"%{v.name}" for v in values + [red.outputs[0] for red in reductions])
        self.lines.append(f"{{  // {title} over {list(shape)}: {len(chain)} op(s)")
        if n == 1 and not shape:
            self.lines.append(f"    const {self.ix} i = 0;")
            for red, acc, low in accs:
                self.lines += [f"    {s}" for s in _acc_init(red, acc, low)]
            self.lines += [f"    {s}" for s in stmts]
            for (red, acc, low), (_, xe) in zip(accs, staged):
                self.lines += [f"    {s}" for s in _acc_update(red, acc, low, f"({_ACC})({xe})")]
            for red, acc, low in accs:
                self.lines += [f"    {s}" for s in _acc_nan(red, acc)]
                self._finish_full(red, acc, low, "    ")
            self.lines.append("}")
            return
        if not accs and self._rows_of(shape):
            self._row_loops(chain, shape, values)
            return
        if not accs:
            self.lines.append(f"    const {self.ix} n = {n}{self.sfx};")
            self.lines.append("    #pragma omp parallel for simd num_threads(gm_nt) schedule(static)" if _parallel(n)
                              else "    #pragma omp simd  // below GM_PARALLEL_MIN elements: the calling thread")
            self.lines.append(f"    for ({self.ix} i = 0; i < n; ++i) {{")
            self.lines += [f"        {s}" for s in stmts]
            self.lines += ["    }", "}"]
            return
        self.lines.append(f"    const {self.ix} n = {n}{self.sfx};")
        if not _parallel(n):  # one thread: one accumulator each, no partials
            self._accumulating_loop(stmts, accs, staged, "    ", "0", "n",
                                    "  // below GM_PARALLEL_MIN elements: the calling thread")
            for red, acc, low in accs:
                self.lines += [f"    {s}" for s in _acc_nan(red, acc)]
                self._finish_full(red, acc, low, "    ")
            self.lines.append("}")
            return
        self.lines.append("    int used = 1;")
        for _, acc, _ in accs:
            self.lines.append(f"    double part_{acc}[GM_MAX_THREADS];")
        self.lines.append("    #pragma omp parallel num_threads(gm_nt)")
        self.lines.append("    {")
        self.lines.append("        const int t = omp_get_thread_num(), nth = omp_get_num_threads();")
        self.lines.append("        if (t == 0) used = nth;")
        self.lines.append(f"        const {self.ix} lo = ({self.ix})((long long)n * t / nth), "
                          f"hi = ({self.ix})((long long)n * (t + 1) / nth);")
        self._accumulating_loop(stmts, accs, staged, "        ", "lo", "hi")
        for red, acc, _ in accs:
            self.lines += [f"        {s}" for s in _acc_nan(red, acc)]
            self.lines.append(f"        part_{acc}[t] = {acc};")
        self.lines.append("    }")
        for red, acc, low in accs:
            self.lines.append(f"    double {acc} = {low.identity.format(T=_ACC)};  // partials in thread order")
            step = _reduce_step(low.reduce, acc, f"part_{acc}[t]")
            self.lines.append(f"    for (int t = 0; t < used; ++t) {acc} = {step};")
            self._finish_full(red, acc, low, "    ")
        self.lines.append("}")

    # -- rows: a pointwise loop whose operands broadcast along the last axis or across rows ----
    def _row_index(self, v: Value, space: tuple) -> str:
        """The index of a region input at column j of row o of `space` (rows of its last
        axis), without a division: the row's start plus j where the operand spans the last
        axis, its row alone where it is broadcast along it. A view read through its base
        (self.strides) steps by its own strides."""
        shape = _ints(v.type.shape)
        width = space[-1]
        if v in self.strides:
            strides, offset = self.strides[v]
            if not shape:
                return f"{offset}{self.sfx}" if offset else "0"
            row = strided_index(shape[:-1], strides[:-1], space[:-1], "o", self.sfx)
            terms = [f"{offset}{self.sfx}"] if offset else []
            terms += [] if row == "0" else [row]
            if shape[-1] != 1 and strides[-1] != 0:
                terms.append("j" if strides[-1] == 1 else f"j * {strides[-1]}{self.sfx}")
            return " + ".join(terms) if terms else "0"
        padded = (1,) * (len(space) - len(shape)) + shape
        row = index_expr(padded[:-1], space[:-1], "o", self.sfx)
        if padded[-1] == 1:
            return row
        return "j" if row == "0" else f"{row} * {width}{self.sfx} + j"

    def _rows_of(self, shape: tuple) -> bool:
        """Whether to loop over rows, then columns (_row_loops): some operand broadcasts (its
        flat index would need a division or a remainder per element, which makes the
        vectorizer gather: a row-broadcast add ran at half the speed of a full one), over rows
        of at least ROW_MIN elements."""
        if len(shape) < 2 or int(shape[-1]) < ROW_MIN:
            return False
        space = _ints(shape)
        flat = [self._flat_index(v, space) for v in self.arrays]
        return any(("/" in f or "%" in f) for f in flat)

    def _flat_index(self, v: Value, space: tuple) -> str:
        """The index _body reads v at (flat position i of space)."""
        if v in self.strides:
            strides, _ = self.strides[v]
            return strided_index(tuple(v.type.shape), strides, space, "i", self.sfx)
        return index_expr(tuple(v.type.shape), space, "i", self.sfx)

    def _row_loops(self, chain: list, shape: tuple, values: list) -> None:
        """The loop of _pointwise_loop (inside the block it opened) as rows, split among the
        threads, of vector loops over the columns; `i` is still the flat position, for the
        stores."""
        space = _ints(shape)
        n, width = _prod(space), space[-1]
        env = dict(self.env)
        for v, cname in self.arrays.items():
            env[v] = load(cname, self._row_index(v, space), v)
        body = KernelBody(self.m.lines, env)
        for node in chain:
            body.emit(node)
        stmts = list(body.lines) + [self._store(body, y) for y in values]
        self.lines.append(f"    // by rows of {width}: every operand indexed without a division")
        self.lines.append(f"    const {self.ix} rows = {n // width}{self.sfx}, width = {width}{self.sfx};")
        self.lines.append("    #pragma omp parallel for num_threads(gm_nt) schedule(static)" if _parallel(n)
                          else "    // below GM_PARALLEL_MIN elements: the calling thread")
        self.lines.append(f"    for ({self.ix} o = 0; o < rows; ++o) {{")
        self.lines.append("        #pragma omp simd")
        self.lines.append(f"        for ({self.ix} j = 0; j < width; ++j) {{")
        self.lines.append(f"            const {self.ix} i = o * width + j;")
        self.lines += [f"            {s}" for s in stmts]
        self.lines += ["        }", "    }", "}"]

    def _accumulating_loop(self, stmts: list, accs: list, staged: list, indent: str, lo: str, hi: str,
                           note: str = "") -> None:
        """The accumulators (from their identities), then [lo, hi) in chunks of GM_STAGE: a SIMD
        loop running `stmts` and writing each reduction's element into a small buffer, and a
        SIMD loop adding the buffer into the double accumulators (see _staged_loops)."""
        for red, acc, low in accs:
            self.lines += [f"{indent}{s}" for s in _acc_init(red, acc, low)]
        self._staged_loops(stmts, accs, staged, indent, lo, hi, "i", note)

    def _staged_loops(self, stmts: list, accs: list, staged: list, indent: str, lo: str, hi: str, i: str,
                      note: str = "") -> None:
        """Elements [lo, hi) of index `i` in chunks of GM_STAGE. One loop that both computed a
        float element with a comparison in it (relu, where, a max) and added it to a double
        accumulator stayed scalar (mixed lane widths under a mask): 20-60x slower than NumPy.
        Split, the element loop runs in float lanes and the adding loop in double lanes, and
        the buffer stays in L1."""
        ix = self.ix
        self.lines.append(f"{indent}for ({ix} c0 = {lo}; c0 < {hi}; c0 += GM_STAGE) {{")
        self.lines.append(f"{indent}    const {ix} c1 = c0 + GM_STAGE < {hi} ? c0 + GM_STAGE : {hi};")
        for j, (stage_type, _) in enumerate(staged):
            self.lines.append(f"{indent}    {stage_type} stage{j}[GM_STAGE];")
        self.lines.append(f"{indent}    #pragma omp simd{note}")
        self.lines.append(f"{indent}    for ({ix} {i} = c0; {i} < c1; ++{i}) {{")
        self.lines += [f"{indent}        {s}" for s in stmts]
        self.lines += [f"{indent}        stage{j}[{i} - c0] = {xe};" for j, (_, xe) in enumerate(staged)]
        self.lines.append(f"{indent}    }}")
        simd = _simd_clause(accs)
        if simd is not None:
            self.lines.append(f"{indent}    #pragma omp simd{simd}")
        self.lines.append(f"{indent}    for ({ix} j = 0; j < c1 - c0; ++j) {{")
        for k, (red, acc, low) in enumerate(accs):
            self.lines += [f"{indent}        {s}" for s in _acc_update(red, acc, low, f"({_ACC})stage{k}[j]")]
        self.lines.append(f"{indent}    }}")
        self.lines.append(f"{indent}}}")

    def _finish_full(self, red: Node, acc: str, low, indent: str) -> None:
        y = red.outputs[0]
        post = _post_expr(low, acc, self._count(red))
        self.lines.append(f"{indent}{self.arrays[y]}[0] = ({c_type(y.type.dtype)})({post});")

    def _count(self, red: Node) -> int:
        count = 1
        for a in self.r.reduce_axes(red):
            d = self.r.space[a]
            count *= d if isinstance(d, int) else int(d)  # a symbolic size stays one
        return count

    def _partial_reduction(self, red: Node) -> None:
        r = self.r
        space = _ints(r.space)
        axes = tuple(sorted(int(a) % len(space) for a in r.reduce_axes(red)))
        kept = tuple(a for a in range(len(space)) if a not in axes)
        n_out = _prod(space[a] for a in kept)
        n_red = _prod(space[a] for a in axes)
        x = red.inputs[0]
        # prologue values the pointwise loops stored are read back rather than recomputed:
        # the same bits (a vectorized exp in the stored loop and a scalar one in a max
        # reduction's loop may round differently, and an amax gradient compares the two)
        chain, _ = closure(r.prologue, [x] if isinstance(x, Value) else [], known=self.arrays)
        reads = {v for n in chain for v in n.input_values()} | {x}
        body = self._body(space)
        for node in chain:
            body.emit(node)
        low = reduction_lowering(red)
        xe = body.operand(x, _ACC) if isinstance(x, Value) else c_literal(x, _ACC)
        y = red.outputs[0]
        if axes == tuple(range(len(axes))) and n_out > 1:
            self._leading_axes_reduction(red, low, body, xe, n_out, n_red, space, axes, len(chain))
            return
        loaded = [v for v in self.arrays if v in reads or v is x]
        inner = self._inner_run(space, axes, loaded)
        if inner is not None:
            self._segmented_reduction(red, low, chain, space, kept, axes, inner, loaded)
            return
        self._open_reduction(red, f"over axes {list(axes)} of {list(space)}, {len(chain)} prologue op(s)",
                             n_out, n_red)
        ix, sfx = self.ix, self.sfx
        stage_type = c_type(x.type.dtype) if isinstance(x, Value) else _ACC
        element = body.operand(x, stage_type) if isinstance(x, Value) else xe
        self.lines.append(f"    for ({ix} o = 0; o < n_out; ++o) {{")
        self.lines += [f"        {s}" for s in _acc_init(red, "acc", low)]
        stmts = [f"const {ix} i = {compose_index(space, kept, tuple(axes), suffix=sfx)};", *body.lines,
                 f"// L{self.m.lines.get(id(red), '?')}: {node_line(red)}"]
        self._staged_loops(stmts, [(red, "acc", low)], [(stage_type, element)], "        ", "0", "n_red", "r")
        self.lines += [f"        {s}" for s in _acc_nan(red, "acc")]
        post = _post_expr(low, "acc", n_red)
        self.lines.append(f"        {self.arrays[y]}[o] = ({c_type(y.type.dtype)})({post});")
        self.lines.append("    }")
        self.lines.append("}")

    def _inner_run(self, space: tuple, axes: tuple, loaded: list) -> int | None:
        """The first of the trailing axes that are all reduced, when every array the reduction
        loads either spans all of them or is broadcast along all of them (None otherwise): the
        reduction then walks contiguous runs (see _segmented_reduction)."""
        k = len(space)
        while k > 0 and (k - 1) in axes:
            k -= 1
        if k == len(space) or k == 0 or any(v in self.strides for v in loaded):
            return None
        for v in loaded:
            shape = _ints(v.type.shape)
            padded = (1,) * (len(space) - len(shape)) + shape
            if padded[k:] != space[k:] and any(d != 1 for d in padded[k:]):
                return None
        return k

    def _segmented_reduction(self, red: Node, low, chain: list, space: tuple, kept: tuple, axes: tuple,
                             k: int, loaded: list) -> None:
        """A reduction whose reduced axes include the trailing axes k.. (a batch norm's sum over
        N, H, W of N, C, H, W): per output, one loop over the runs of the outer reduced axes and
        a SIMD loop along each contiguous run. An operand's index is worked out once per run
        (a division per element kept the loop scalar, several times slower than NumPy); the
        elements are added in the same order as one flat loop would add them."""
        y = red.outputs[0]
        outer = tuple(a for a in axes if a < k)
        run = _prod(space[k:])
        n_out = _prod(space[a] for a in kept)
        n_seg = _prod(space[a] for a in outer)
        ix, sfx = self.ix, self.sfx
        env = dict(self.env)
        bases = []
        for v in loaded:
            cname = self.arrays[v]
            shape = _ints(v.type.shape)
            padded = (1,) * (len(space) - len(shape)) + shape
            spans = padded[k:] == space[k:] and run > 1
            bases.append(f"const {ix} b_{cname} = {index_expr(shape, space, 'base', sfx)};")
            env[v] = load(cname, f"b_{cname} + r" if spans else f"b_{cname}", v)
        body = KernelBody(self.m.lines, env)
        for node in chain:
            body.emit(node)
        x = red.inputs[0]
        stage_type = c_type(x.type.dtype) if isinstance(x, Value) else _ACC
        xe = body.operand(x, stage_type) if isinstance(x, Value) else c_literal(x, _ACC)
        self._open_reduction(red, f"over axes {list(axes)} of {list(space)}, {len(chain)} prologue op(s), "
                             f"in runs of {run}", n_out, n_seg * run)
        self.lines.append(f"    for ({ix} o = 0; o < n_out; ++o) {{")
        self.lines += [f"        {s}" for s in _acc_init(red, "acc", low)]
        self.lines.append(f"        for ({ix} s = 0; s < {n_seg}{sfx}; ++s) {{")
        self.lines.append(f"            const {ix} base = {compose_index(space, kept, outer, r='s', suffix=sfx)};")
        self.lines += [f"            {b}" for b in bases]
        stmts = list(body.lines) + [f"// L{self.m.lines.get(id(red), '?')}: {node_line(red)}"]
        self._staged_loops(stmts, [(red, "acc", low)], [(stage_type, xe)], "            ", "0",
                           f"{run}{sfx}", "r")
        self.lines.append("        }")
        self.lines += [f"        {s}" for s in _acc_nan(red, "acc")]
        post = _post_expr(low, "acc", n_seg * run)
        self.lines.append(f"        {self.arrays[y]}[o] = ({c_type(y.type.dtype)})({post});")
        self.lines.append("    }")
        self.lines.append("}")

    def _open_reduction(self, red: Node, what: str, n_out: int, n_red: int) -> None:
        """The block a reduction's loops stand in: a comment naming the reduction, the number
        of outputs and of elements each reduces, and the OpenMP split of that work."""
        self.lines.append(f"{{  // %{red.outputs[0].name}: {red.op} {what}")
        self.lines.append(f"    const {self.ix} n_out = {n_out}{self.sfx}, n_red = {n_red}{self.sfx};")
        self.lines.append(_parallel_for(n_out * n_red))

    def _reduced_element(self, body: KernelBody, red: Node, indent: str) -> None:
        """The prologue computing one reduced element, then the IR line of the reduction."""
        self.lines += [f"{indent}{s}" for s in body.lines]
        self.lines.append(f"{indent}// L{self.m.lines.get(id(red), '?')}: {node_line(red)}")

    def _leading_axes_reduction(self, red: Node, low, body: KernelBody, xe: str, n_out: int, n_red: int,
                                space: tuple, axes: tuple, n_chain: int) -> None:
        """A reduction over the leading axes (a column sum, as in a bias gradient): each thread
        takes blocks of GM_COLUMNS outputs and walks the reduced rows once, the block of
        accumulators updated by a contiguous SIMD loop. Each output still adds its elements in
        row order: the result does not depend on the thread count."""
        y = red.outputs[0]
        self._open_reduction(red, f"over the leading axes {list(axes)} of {list(space)}, {n_chain} prologue op(s), "
                             "in column blocks", n_out, n_red)
        ix = self.ix
        self.lines.append(f"    for ({ix} ob = 0; ob < n_out; ob += GM_COLUMNS) {{")
        self.lines.append(f"        const {ix} oe = ob + GM_COLUMNS < n_out ? ob + GM_COLUMNS : n_out;")
        x = red.inputs[0]
        stage_type = c_type(x.type.dtype) if isinstance(x, Value) else _ACC
        element = body.operand(x, stage_type) if isinstance(x, Value) else xe
        self.lines.append("        double acc[GM_COLUMNS];")
        self.lines.append(f"        {stage_type} stage[GM_COLUMNS];  // one row's elements (see _staged_loops)")
        self.lines.append(f"        for ({ix} o = ob; o < oe; ++o) acc[o - ob] = {low.identity.format(T=_ACC)};")
        self.lines.append(f"        for ({ix} r = 0; r < n_red; ++r) {{")
        self.lines.append("            #pragma omp simd")
        self.lines.append(f"            for ({ix} o = ob; o < oe; ++o) {{")
        self.lines.append(f"                const {ix} i = r * n_out + o;")
        self._reduced_element(body, red, "                ")
        self.lines.append(f"                stage[o - ob] = {element};")
        self.lines.append("            }")
        self.lines.append("            #pragma omp simd")
        self.lines.append(f"            for ({ix} o = ob; o < oe; ++o) "
                          f"acc[o - ob] = {_reduce_step(low.reduce, 'acc[o - ob]', f'({_ACC})stage[o - ob]')};")
        self.lines.append("        }")
        post = _post_expr(low, "acc[o - ob]", n_red)
        self.lines.append(f"        for ({ix} o = ob; o < oe; ++o) {self.arrays[y]}[o] = "
                          f"({c_type(y.type.dtype)})({post});")
        self.lines.append("    }")
        self.lines.append("}")



_PARALLEL_LOOPS = {  # a loop's own parallel region -> the same loop shared by an enclosing team
    "    #pragma omp parallel for num_threads(gm_nt) schedule(static)": "    #pragma omp for schedule(static)",
    "    #pragma omp parallel for simd num_threads(gm_nt) schedule(static)": "    #pragma omp for simd schedule(static)",
}


def _blocks(lines: list) -> list | None:
    """A function's lines as its top-level blocks (`{` ... `}`); None when anything stands
    between them."""
    blocks: list = []
    for line in lines:
        if line.startswith("{"):
            blocks.append([line])
        elif not blocks or blocks[-1][-1] == "}":
            return None
        else:
            blocks[-1].append(line)
    return blocks if blocks and blocks[-1][-1] == "}" else None


def _one_loop(block: list) -> bool:
    """Whether a block is constants, then one parallel loop, and nothing after it: every
    thread of a team can run it (the constants are its own, the loop shared out)."""
    inner = block[1:-1]
    at = [k for k, line in enumerate(inner) if line in _PARALLEL_LOOPS]
    if len(at) != 1 or sum("omp parallel" in line for line in inner) != 1:
        return False
    head, loop = inner[:at[0]], inner[at[0] + 1:]
    return (all(line.startswith("    const ") or line.startswith("    //") for line in head)
            and len(loop) >= 2 and loop[0].startswith("    for (") and loop[0].endswith("{") and loop[-1] == "    }"
            and all(line.startswith("        ") or not line.strip() for line in loop[1:-1]))


_TEMPORARY = re.compile(r"\b(?:t|r|buf)_\w+")  # locals named after IR values: KernelBody's t_, a row region's r_ and buf_
_COMMENT = re.compile(r"\s*//.*$")


def same_code(lines: list) -> str:
    """A C function's text as far as the compiler sees it: comments dropped and the locals
    named after IR values renamed in order of appearance. Two regions with the same text
    compute the same thing from their arguments (shapes are constants in the text, and each
    call checks its own arrays' sizes and types), so the second calls the first's function: a
    transformer's layers then compile once, not once per layer (W5's step: 35 functions for
    82 regions, 44% less compile time)."""
    names: dict = {}
    code = [_COMMENT.sub("", line) for line in lines]
    return "\n".join(_TEMPORARY.sub(lambda m: names.setdefault(m.group(0), f"t_{len(names)}"), line)
                     for line in code if line.strip())


def one_team(lines: list) -> list:
    """A function whose loops each opened their own parallel region (`omp parallel for`),
    rewritten so that consecutive such loops share one (`omp parallel` around `omp for`
    loops): the same iterations on the same threads (a static schedule over a team of the
    same size), in the same order (each `omp for` ends with a barrier), with one outlined
    function and one fork and join instead of one per loop. Each outlined region cost gcc
    about 10 ms, the largest part of a kernel's compile time (native_build.compile_weight)."""
    blocks = _blocks(lines)
    if blocks is None:
        return lines
    out: list = []
    k = 0
    while k < len(blocks):
        run = k
        while run < len(blocks) and _one_loop(blocks[run]):
            run += 1
        if run - k < 2:
            out += blocks[k]
            k += 1
            continue
        out.append(f"#pragma omp parallel num_threads(gm_nt)  // one team for the {run - k} loops below")
        out.append("{")
        for block in blocks[k:run]:
            out += [_PARALLEL_LOOPS.get(line, line) for line in block]
        out.append("}")
        k = run
    return out


def _parallel(work: int) -> bool:
    """Whether a loop over `work` elements runs on the OpenMP threads. Shapes are static, so
    this is decided here: a small loop gets no parallel region at all, and a translation unit
    without one compiles without OpenMP's outlining (about half the compile time) and links
    without libgomp (native_build.uses_threads)."""
    # a symbolic size: decided at the size the symbolic entry was made at (static.dynamic_shapes)
    work = work.decision_value() if hasattr(work, "decision_value") else work
    return work >= native_build.PARALLEL_MIN_ELEMS


def _parallel_for(work: int) -> str:
    if _parallel(work):
        return "    #pragma omp parallel for num_threads(gm_nt) schedule(static)"
    return "    // below GM_PARALLEL_MIN elements: the calling thread"


def _reduce_step(template: str, acc: str, x: str) -> str:
    """The lowering's `reduce` expression (in a and b) combining accumulator acc with x."""
    return re.sub(r"\bb\b", x, re.sub(r"\ba\b", acc, template))


def _post_expr(low, acc: str, count: int) -> str:
    return re.sub(r"\ba\b", acc, low.post.format(T=_ACC, count=count))


def _simd_clause(accs: list) -> str | None:
    """The `omp simd` clause for a loop updating these accumulators (None: no simd pragma,
    for a combine that is no OpenMP reduction operator). A max/min reduction is OpenMP's
    max/min over the values that are not NaN plus an or-reduced flag of whether a NaN was
    seen (see _acc_update)."""
    clauses = []
    for red, acc, _ in accs:
        extreme = _extreme(red)
        if extreme is not None:
            clauses.append(f" reduction({extreme[0]}:{acc}) reduction(|:{acc}_nan)")
            continue
        op = _SIMD_REDUCTIONS.get(red.op)
        if op is None:
            return None
        clauses.append(f" reduction({op}:{acc})")
    return "".join(clauses)


_EXTREMES = {"maximum": ("max", ">"), "minimum": ("min", "<")}  # combiner -> (OpenMP operator, C comparison)


def _extreme(red: Node) -> tuple[str, str] | None:
    """(OpenMP reduction operator, comparison) of a max/min reduction (amax, amin); None else."""
    facts = REGISTRY[red.op].reduction
    return _EXTREMES.get(facts.combiner) if facts is not None else None


def _acc_init(red: Node, acc: str, low: ReductionLowering) -> list[str]:
    """Declarations of accumulator `acc` (and, for max/min, its NaN flag)."""
    lines = [f"double {acc} = {low.identity.format(T=_ACC)};"]
    if _extreme(red) is not None:
        lines.append(f"int {acc}_nan = 0;  // a NaN was seen: the result is NaN")
    return lines


def _acc_update(red: Node, acc: str, low: ReductionLowering, x: str) -> list[str]:
    """Statements adding element `x` to accumulator `acc`. The NaN-propagating max/min
    helpers (gm_max, gm_min) are no reduction the vectorizer knows, which left every loop
    with an amax scalar (5x slower than a vector max): a max/min keeps the larger of the
    values that are not NaN (a comparison that is false for a NaN keeps acc), which OpenMP's
    max/min reduction vectorizes, and a flag records a NaN (_acc_nan turns it into the
    result). Tied values of either sign of zero may give either zero."""
    extreme = _extreme(red)
    if extreme is None:
        return [f"{acc} = {_reduce_step(low.reduce, acc, x)};"]
    return [f"const double {acc}_x = {x};", f"{acc} = {acc}_x {extreme[1]} {acc} ? {acc}_x : {acc};",
            f"{acc}_nan |= {acc}_x != {acc}_x;"]


def _acc_nan(red: Node, acc: str) -> list[str]:
    """After a max/min loop: NaN when one was seen."""
    return [f"if ({acc}_nan) {acc} = gm_nan<double>();"] if _extreme(red) is not None else []


# A batch of small products (attention's scores and weighted values: 64 products of 32x16 by
# 16x32 in W5) as one C loop nest, not one BLAS call per product: each product costs BLAS
# about a microsecond of calling and packing whatever its size, which was 70-110 us per batch
# in W5's step, four times the arithmetic. Products of at most this many multiply-adds:
SMALL_PRODUCT_MAX = 1 << 16
SMALL_PRODUCT_N_MAX = 256  # the widest product row kept in registers and L1
SMALL_TILE_MAX = 1 << 14  # elements of the packed B tile (on each thread's stack)


def small_batched_matmul(node: Node) -> str | None:
    """Why a matmul is not a batch of small products this module computes itself (None: it is)."""
    if node.op != "matmul" or node.body is not None:
        return "not a matmul"
    a, b = node.inputs
    out = node.outputs[0]
    if not (isinstance(a, Value) and isinstance(b, Value)) or len(a.type.shape) < 2 or len(b.type.shape) < 2:
        return "a vector operand"
    if len(out.type.shape) < 3 or _prod(out.type.shape[:-2]) < 2:
        return "not a batch of products"
    if not (a.type.dtype == b.type.dtype == out.type.dtype) or out.type.dtype.np.name not in ("float32", "float64"):
        return "not one float dtype"
    if any(_symbolic(d) for v in (a, b, out) for d in v.type.shape):
        return "a symbolic size (its tiles are sized at compile time)"  # BLAS takes it per call
    m, k = (int(d) for d in a.type.shape[-2:])
    n = int(b.type.shape[-1])
    if m * n * k > SMALL_PRODUCT_MAX or n > SMALL_PRODUCT_N_MAX or k * n > SMALL_TILE_MAX or 0 in (m, n, k):
        return "products large enough for BLAS"
    return None


def _swapped_for_reader(y: Value) -> tuple[int, int] | None:
    """(d0, d1) when y's one reader transposes axes d0 and d1 of it, neither its last: y is
    then best written in that order (the transpose of the written array is C-contiguous)."""
    users = {id(n): n for n in y.users}
    if len(users) != 1:
        return None
    (user,) = users.values()
    if user.op != "transpose" or user.body is not None:
        return None
    n = len(y.type.shape)
    d0, d1 = sorted((int(user.attrs["dim0"]) % n, int(user.attrs["dim1"]) % n))
    return (d0, d1) if d1 < n - 1 and d0 != d1 else None


# Rows of C computed together by _product_rows: the accumulators of R rows by V vectors of a
# row stay in registers through the k loop, one broadcast of a's element and V loads of B's
# row a step. R * V at most PRODUCT_REGISTERS (of AVX2's 16 vector registers: B's row and the
# broadcast need the rest). Measured on W5's products (64 of 32x16 by 16x32 and of 32x32 by
# 32x16, 2 threads): 31 and 35 us, against 45 and 51 for accumulator arrays the compiler kept
# partly in memory, with the multiply-add fused (below).
PRODUCT_REGISTERS = 8
PRODUCT_VECTOR_BYTES = 32


def _product_rows(T: str, rows: int, depth: int, cols: int, a_row: str, a_k: str, c_row: str) -> list[str]:
    """The loops computing c = a @ tile for one product: register-blocked vector code where a
    row of C is whole vectors, else a vector loop along the row over a few rows at once. Each
    element of C accumulates over k in order; the multiply-adds are fused (one rounding each,
    as BLAS computes: the products' bits are not NumPy's either way)."""
    size = 4 if T == "float" else 8
    lanes = PRODUCT_VECTOR_BYTES // size
    if cols % lanes == 0 and cols // lanes <= PRODUCT_REGISTERS:
        v = cols // lanes
        r = 1
        while r * 2 * v <= PRODUCT_REGISTERS and rows % (r * 2) == 0:
            r *= 2
        acc = [[f"c{q}_{k}" for k in range(v)] for q in range(r)]
        lines = [f"typedef {T} gm_vec __attribute__((vector_size({PRODUCT_VECTOR_BYTES})));",
                 f"for (int i0 = 0; i0 < {rows}; i0 += {r}) {{  // {r} row(s) of C by {v} vector(s), in registers",
                 "    gm_vec " + ", ".join(f"{name} = {{}}" for row in acc for name in row) + ";",
                 f"    for (int k = 0; k < {depth}; ++k) {{",
                 *(f"        gm_vec b{k}; __builtin_memcpy(&b{k}, &tile[k][{k * lanes}], sizeof b{k});" for k in range(v))]
        for q in range(r):
            lines.append(f"        {{ const gm_vec s = (gm_vec){{}} + a[(i0 + {q}) * {a_row} + k * {a_k}];  // broadcast")
            lines += [f"          {acc[q][k]} += s * b{k};" for k in range(v)]
            lines.append("        }")
        lines.append("    }")
        lines += [f"    __builtin_memcpy(&c[(i0 + {q}) * {c_row} + {k * lanes}], &{acc[q][k]}, sizeof {acc[q][k]});"
                  for q in range(r) for k in range(v)]
        return lines + ["}"]
    block = 1  # rows of C accumulated together: each k step has `block` independent vector chains
    while block < 8 and rows % (block * 2) == 0 and block * 2 * cols <= 16 * lanes:
        block *= 2
    return [
        f"for (int i0 = 0; i0 < {rows}; i0 += {block}) {{  // {block} row(s) of C at once",
        f"    {T} acc[{block}][{cols}];",
        f"    for (int q = 0; q < {block}; ++q)",
        "        #pragma omp simd",
        f"        for (int j = 0; j < {cols}; ++j) acc[q][j] = ({T})0;",
        f"    for (int k = 0; k < {depth}; ++k) {{",
        f"        for (int q = 0; q < {block}; ++q) {{",
        f"            const {T} aik = a[(i0 + q) * {a_row} + k * {a_k}];",
        "            #pragma omp simd",
        f"            for (int j = 0; j < {cols}; ++j) acc[q][j] = acc[q][j] + aik * tile[k][j];",
        "        }",
        "    }",
        f"    for (int q = 0; q < {block}; ++q)",
        "        #pragma omp simd",
        f"        for (int j = 0; j < {cols}; ++j) c[(i0 + q) * {c_row} + j] = acc[q][j];",
        "}",
    ]


class CBatchedMatmul(CFunction):
    """A batch of small products C[t] = A[t] @ B[t] as one C function: the batch shared out
    among the threads; per product, B packed into a row-major tile (any layout: a view's
    strides are read in place) and each element of C accumulated over k in the operands'
    precision, k in order (a vector loop along a row, a few rows at once)."""

    node: Node

    def __init__(self, module: "NativeModule", node: Node, name: str) -> None:
        super().__init__(module, name, node)
        self.fused_multiply_add = True

    def _operand(self, v: Value) -> tuple[str, tuple, int]:
        """(C array name, v's element strides in it, offset) of operand v: the base of a view
        read in place, else v itself (C-contiguous, as the call checks)."""
        view = strided_source(v)
        if view is not None:
            base, strides, offset = view
            return self._param(v, self.m.names(base), writable=False, sized_by=base), strides, offset
        strides = contiguous_strides(_ints(v.type.shape))
        return self._param(v, self.m.contiguous(v), writable=False), strides, 0

    def emit(self) -> None:
        m, node = self.m, self.node
        a, b = node.inputs
        y = node.outputs[0]
        ca, sa, oa = self._operand(a)
        cb, sb, ob = self._operand(b)
        shape = _ints(y.type.shape)
        swap = _swapped_for_reader(y)
        # the product is written in the layout its reader wants: attention's heads, transposed
        # back beside each other and reshaped to rows of the model's width, were a NumPy copy
        # each (8 a step in W5); written so, the transpose is C-contiguous, the reshape a view
        layout = list(range(len(shape)))
        if swap is not None:
            layout[swap[0]], layout[swap[1]] = layout[swap[1]], layout[swap[0]]
        stored = tuple(shape[d] for d in layout)
        name = m.names(y) if swap is None else m.names.fresh(f"{m.names(y)}_t")
        alloc = m.allocate(stored, y.type.dtype)
        if alloc is None:
            m.made_by_call[name] = stored
        else:
            m.body.append(f"{name} = {alloc}")
        m.fresh.add(name)
        cy = self._param(y, name, writable=True)
        contiguous = contiguous_strides(stored)
        strides = [0] * len(shape)
        for j, d in enumerate(layout):
            strides[d] = contiguous[j]
        batch, (rows, cols) = shape[:-2], shape[-2:]
        depth = int(a.type.shape[-1])
        T = c_type(y.type.dtype)
        count = _prod(batch)
        sfx = "LL"

        def at(v: Value, strides: tuple, offset: int) -> str:
            vb = _ints(v.type.shape[:-2])
            index = strided_index(vb, strides[:-2], batch, "t", sfx) if vb else "0"
            return f"{offset}{sfx} + {index}" if offset else index

        par = "#pragma omp parallel for num_threads(gm_nt) schedule(static)" \
            if _parallel(count * rows * cols * depth // 16) else "// little work: the calling thread"
        a_row, a_k, b_k, b_j, c_row = (f"{x}{sfx}" for x in (sa[-2], sa[-1], sb[-2], sb[-1], strides[-2]))
        self.lines += [
            f"{{  // %{y.name} = matmul: {count} products of {rows}x{depth} by {depth}x{cols}",
            f"    {par}",
            f"    for (long long t = 0; t < {count}{sfx}; ++t) {{",
            f"        const {T}* a = {ca} + ({at(a, sa, oa)});",
            f"        const {T}* b = {cb} + ({at(b, sb, ob)});",
            f"        {T}* c = {cy} + ({strided_index(batch, tuple(strides[:-2]), batch, 't', sfx) if batch else '0'});",
            f"        {T} tile[{depth}][{cols}] __attribute__((aligned(32)));  // B, row-major",
            f"        for (int k = 0; k < {depth}; ++k)",
            "            #pragma omp simd",
            f"            for (int j = 0; j < {cols}; ++j) tile[k][j] = b[k * {b_k} + j * {b_j}];",
            *("        " + line for line in _product_rows(T, rows, depth, cols, a_row, a_k, c_row)),
            "    }",
            "}",
        ]
        self._call()
        if swap is not None:  # the product itself: a view of what was written
            m.body.append(f"{m.names(y)} = np.swapaxes({name}, {swap[0]}, {swap[1]})")



def _converting_call(head: str, plain: list, converted: list) -> list[str]:
    """The driver's lines of a kernel call `head` + arguments: with the arguments as they are,
    and where some would be converted (`_c(x, dtype)`), again with the converted ones when the
    call path refuses one (not C-contiguous, another dtype): the common case converts nothing."""
    if plain == converted:
        return [head + ", ".join(plain) + ")"]
    return ["try:", "    " + head + ", ".join(plain) + ")",
            "except (BufferError, ValueError, TypeError):  # not C-contiguous or not of the IR's dtype",
            "    " + head + ", ".join(converted) + ")"]


# View ops the driver writes as the array's method (the arguments of each from the node)
_VIEW_METHODS: dict[str, tuple[str, Callable[[Node], list]]] = {
    "reshape": ("reshape", lambda node: [py_literal(_ints(node.outputs[0].type.shape))]),
    "transpose": ("swapaxes", lambda node: [int(node.attrs["dim0"]), int(node.attrs["dim1"])]),
}


# Ops whose eager kernel (gmnative.kernels) the driver calls straight, not through the
# op's forward: layer_norm and its gradient. The call runs the very machine code eager's op
# runs, on the same operands, so compiled values are eager's to the bit (the reason these ops
# are not decomposed, static/passes/decompose.py), without the forward's Python: the op
# lookup, the reshape to rows, the checks and the small arrays a call makes (about 15 us a
# call, 0.15 ms of W5's step). Where eager's kernels are off or cannot be built the address is
# None and the op's forward runs, as before.
EAGER_KERNEL_OPS = ("layer_norm", "layer_norm_backward")


def eager_kernel_call(node: Node) -> str | None:
    """Why node does not run as a straight call of eager's kernel (None: it does): one float
    dtype (float32 or float64) for every operand and result, no empty operand."""
    if node.op not in EAGER_KERNEL_OPS or node.body is not None:
        return "not an op with an eager kernel"
    values = list(node.inputs) + list(node.outputs)
    if not all(isinstance(v, Value) for v in values):
        return "a literal operand"
    dtypes = {v.type.dtype.np.name for v in values}
    if len(dtypes) != 1 or dtypes.pop() not in ("float32", "float64"):
        return "not one float32/float64 dtype"
    if any(0 in tuple(v.type.shape) for v in values):
        return "an empty operand"
    if any(_symbolic(d) for v in values for d in v.type.shape):
        return "a symbolic size (the call's dims are constants of the module)"  # the op's library call takes it
    ndim = int(node.attrs["ndim"])
    if not 0 < ndim <= len(node.inputs[0].type.shape):
        return "normalizes over more dims than the input has"
    return None


class NativeModule(Driver):
    """The driver module (Python) and translation unit (C++) for one graph."""

    def __init__(self, graph: Graph, fast_math: bool = False) -> None:
        self.graph = graph
        self.fast_math = fast_math
        self.lines = line_numbers(graph)
        self.names = Names(taken={"np", "_rt", "_nb", "_call", "_call_new", "_nt", "_c", "LIBRARY", "C_SOURCE"})
        self.body: list = []
        self.functions: list = []
        self.by_code: dict = {}  # a C function's code (same_code) -> its name, to call it again
        self.kernels: list = []  # (constant name, C function name, sizes literal)
        self.eager_kernels: list = []  # eager's kernels the driver calls straight (EAGER_KERNEL_OPS)
        self.slots: list = []  # names of the module-level buffer lists of allocate()
        self.fp_calls = 0  # library calls that need NumPy's floating-point error state set
        self.made_by_call: dict = {}  # output name -> shape, for arrays the call path allocates
        self.symbols = _symbols_of(graph)  # symbolic sizes (static.dynamic_shapes): C functions take them
        self.per_call: list = []  # (constant, sizes, shapes) of kernel calls whose byte sizes have a symbol
        self.fresh: set = set()  # Python names bound to arrays this module allocated (C-contiguous)
        self.stats = {"native": 0, "library": 0, "eager": 0}
        self.notes: list = []

    def _native_function(self, c, at: str) -> None:
        """Emit C function `c` (a region, a batch of products) and its call; a function whose
        code an earlier one has is not emitted again, the earlier one says it also runs `at`."""
        c.emit()
        if not c.reused:
            self.functions.append(c.function())
        else:  # say so above the function the region calls
            shared = next(f for f in self.functions if f["name"] == c.name)
            shared["also"].append(at)
            shared["title"] = f"{shared['head']}  (also runs {', '.join(shared['also'])})"
        self.stats["native"] += 1

    def allocate(self, shape: tuple, dtype) -> str | None:
        """The source of an uninitialized output array: above REUSE_MIN_BYTES, a buffer of the
        previous calls that nothing references any more (native_build.reuse, one slot list
        per allocation site); below, None: the call path makes it (call_new: in C, a
        fraction of np.empty's cost from Python)."""
        if any(_symbolic(s) for s in shape):
            return None  # a size per call: the call path makes it
        shape = _ints(shape)
        dt = np_dtype(dtype)
        if _prod(shape) * dtype.np.itemsize < native_build.REUSE_MIN_BYTES:
            return None
        slots = f"_B{len(self.slots)}"
        self.slots.append(slots)
        return f"_nb.reuse({slots}, {py_literal(shape)}, {dt})"

    def contiguous(self, v: Value) -> str:
        """The source of v as a kernel argument (see kernel_call for other layouts)."""
        return self.names(v)

    def kernel_call(self, fn: str, params: list, dtypes: list) -> None:
        """The call of C function fn. The call path checks every array (C-contiguous, type,
        byte size) before the kernel runs; an input that fails (a strided view, a NumPy
        scalar, another dtype) is converted and the call made again, so the common case pays
        for no conversion. Small outputs (made_by_call, the last parameters) are allocated
        by the call path and returned by it."""
        const = f"_K{len(self.kernels)}"
        sizes = py_literal(tuple(-nb if w else nb for _, _, nb, w in params))
        made = [src for _, src, _, w in params if w and src in self.made_by_call]
        shapes = py_literal(tuple(self.made_by_call[name] for name in made))
        # sizes with a symbol (static.dynamic_shapes) are worked out at each call, in the driver
        per_call = bool(self.symbols) and any(_symbolic(nb) for _, _, nb, _ in params) or any(
            _symbolic(d) for name in made for d in self.made_by_call[name])
        self.kernels.append({"const": const, "fn": fn, "sizes": "None" if per_call else sizes,
                             "dtypes": py_literal(tuple(dtypes)),
                             "shapes": ("None" if per_call else shapes) if made else None})
        if per_call:  # worked out once per new size, at the top of the driver (see source)
            self.per_call.append((const, sizes, shapes if made else None))
        sizes_at, shapes_at = f"{const}_SIZES", f"{const}_SHAPES"
        given = [p for p in params if not (p[3] and p[1] in self.made_by_call)]
        plain = [src for _, src, _, _ in given]
        converted = [src if (w or src in self.fresh) else f"_c({src}, np.{dt})"
                     for (_, src, _, w), dt in zip(given, dtypes)]
        if made:
            head = f"{', '.join(made)}{',' if len(made) == 1 else ''} = _call_new({const}, _nt, {sizes_at}, " \
                   f"{const}_FORMATS, {shapes_at}, "
        else:
            head = f"_call({const}, _nt, {sizes_at}, {const}_FORMATS, "
        self.body += _converting_call(head, plain, converted)

    def eager_kernel(self, node: Node) -> None:
        """node (EAGER_KERNEL_OPS, eager_kernel_call) as a straight call of eager's kernel for
        its dtype, the op's forward (a library call) where that kernel is not available."""
        x = node.inputs[0]
        dt = x.type.dtype.np.name
        suffix = "f32" if dt == "float32" else "f64"
        shape = _ints(x.type.shape)
        ndim = int(node.attrs["ndim"])
        n = _prod(shape[len(shape) - ndim:])
        groups = _prod(shape) // n
        itemsize = x.type.dtype.np.itemsize
        rows_bytes, vec_bytes = groups * n * itemsize, n * itemsize
        if node.op == "layer_norm":  # (x, weight, bias) -> y
            fn = f"gm_eager_layer_norm_{suffix}"
            sizes = f"({rows_bytes}, {vec_bytes}, {vec_bytes}, {-rows_bytes}, 16, 8)"
            dtypes: tuple[str, ...] = (dt,) * 4 + ("int64", "float64")
            scratch = None
        else:  # (g, x, weight) -> (grad_input, grad_weight, grad_bias), with per-thread sums
            fn = f"gm_eager_layer_norm_backward_{suffix}"
            sizes = f"({rows_bytes}, {rows_bytes}, {vec_bytes}, {-rows_bytes}, {-vec_bytes}, {-vec_bytes}, " \
                    f"{-2 * n * 8} * _nt, 16, 8)"
            dtypes = (dt,) * 6 + ("float64", "int64", "float64")
            scratch = f"np.empty((_nt, 2, {n}), np.float64)  # per-thread column sums"
        constants = {"fn": fn, "dtypes": py_literal(dtypes), "dims": f"np.array([{groups}, {n}], np.int64)",
                     "eps": f"np.array([{float(node.attrs['eps'])!r}], np.float64)"}
        const = next((k["const"] for k in self.eager_kernels if k == {"const": k["const"], **constants}), None)
        if const is None:  # one set of constants per kernel, shape and eps (W5's five layer norms share one)
            const = f"_E{len(self.eager_kernels)}"
            self.eager_kernels.append({"const": const, **constants})
        outs = [self.names(o) for o in node.outputs]
        made = []
        for o, name in zip(node.outputs, outs):
            alloc = self.allocate(tuple(o.type.shape), o.type.dtype)
            made.append(f"{name} = {alloc or f'np.empty({py_literal(_ints(o.type.shape))}, np.{dt})'}")
            self.fresh.add(name)
        if scratch:
            made.append(f"{const}_part = {scratch}")
        ins = [self.src(v) for v in node.inputs]
        tail = [*outs] + ([f"{const}_part"] if scratch else []) + [f"{const}_DIMS", f"{const}_EPS"]
        head = f"_call({const}, _nt, {sizes}, {const}_FORMATS, "
        converted = [a if a in self.fresh else f"_c({a}, np.{dt})" for a in ins]
        fallback = self.call_line(node, ins, outs)
        fallback = fallback if isinstance(fallback, list) else [fallback]
        # looked up at each call: eager's kernels can be switched off while the process runs
        # (GRAPHMODE_EAGER_NATIVE=0 and eager_kernels.reset()), and both modes then run NumPy
        self.body += [f"{const} = _ek.address({fn!r})",
                      f"if {const} is None:  # eager's kernels are off or could not be built: the op's forward",
                      *("    " + line for line in fallback), "else:",
                      *("    " + line for line in made),
                      *("    " + line for line in _converting_call(head, ins + tail, converted + tail))]
        self.stats["eager"] += 1

    def call_line(self, node: Node, operands: list, outs: list) -> list[str]:
        """A NumPy library call (the NumPy backend's `call` or `body` template)."""
        if node.op == "reshape" and operands[0] in self.fresh:
            # an array this module made: the method is a fifth of np.reshape's cost, and a
            # reshape raises no floating-point error (no error state needed for it)
            self.fresh.add(outs[0])
            return [f"{outs[0]} = {operands[0]}.reshape({py_literal(tuple(node.outputs[0].type.shape))})"]
        view = _VIEW_METHODS.get(node.op)
        x = node.inputs[0] if node.inputs else None
        if view is not None and isinstance(x, Value) and len(x.type.shape) > 0:
            # an operand of one or more dims is an array (never a Python number), whose method
            # is np.<function>'s work without its Python wrapper (W5's step has 90 of these
            # views); a view raises no floating-point error either
            method, arguments = view
            return [f"{outs[0]} = {operands[0]}.{method}({', '.join(str(a) for a in arguments(node))})"]
        self.fp_calls += 1
        return lowering_for(node.op).numpy.statements(self.targets(node, outs), operands, fields(node, operands))

    def _straight_line(self) -> bool:
        """Whether the whole graph is 0-d pointwise arithmetic: one straight-line C function."""
        g = self.graph
        if not g.nodes:
            return False
        for node in g.nodes:
            nodes = node.body.nodes if node.body is not None else [node]
            for n in nodes:
                low = lowering_for(n.op)
                if not low.pointwise or low.cupy.expr is None or len(n.outputs) != 1:
                    return False
                if any(len(v.type.shape) != 0 or v.type.dtype.np.name not in C_TYPES
                       for v in n.input_values() + n.outputs):
                    return False
        return all(len(v.type.shape) == 0 for v in g.inputs)

    def _graph_function(self) -> None:
        """The whole 0-d graph as one C function: every op one statement, no loop."""
        g = self.graph
        fn = CFunction(self, "gm_graph")
        for v in g.inputs:
            fn._param(v, self.contiguous(v), writable=False)
        env = {v: load(fn.arrays[v], "0", v) for v in g.inputs}
        body = KernelBody(self.lines, env)
        for node in g.nodes:
            if node.body is None:
                body.emit(node)
                continue
            body.lines.append(f"// L{self.lines.get(id(node), '?')}: {node_line(node)}")
            for p, outer in zip(node.body.inputs, node.inputs):
                body.env[p] = body.env[outer] if isinstance(outer, Value) else (
                    c_literal(outer, c_type(p.type.dtype)), c_type(p.type.dtype))
            for n in node.body.nodes:
                body.emit(n)
            for o, y in zip(node.outputs, node.body.outputs):
                body.env[o] = body.env[y] if isinstance(y, Value) else (c_literal(y, c_type(o.type.dtype)),
                                                                        c_type(o.type.dtype))
        stores = []
        for v in dict.fromkeys(v for v in g.outputs if isinstance(v, Value) and v not in g.inputs):
            name = self.names(v)
            self.made_by_call[name] = ()
            self.fresh.add(name)
            fn._param(v, name, writable=True)
            stores.append(fn._store(body, v, "0"))
        fn.lines = body.lines + stores
        self.kernel_call(fn.name, fn.params, fn.dtypes)
        title = f"@{g.name}: {sum(len(n.body.nodes) if n.body is not None else 1 for n in g.nodes)} 0-d op(s)"
        self.functions.append({"name": fn.name, "title": title + ", straight-line",
                               "decls": [d for d, _, _, _ in fn.params], "lines": fn.lines, "fused_multiply_add": False})
        self.stats["native"] += len(g.nodes)

    def source(self) -> tuple[str, str]:
        """(Python driver, C++ translation unit)."""
        g = self.graph
        params = [self.names(v) for v in g.inputs]
        if self.symbols:  # the sizes of this call, bound from the inputs, for the C functions
            self.body += bind_symbols(g, self.names)
        sizes_at = len(self.body)
        if self._straight_line():
            self.body.append("# the whole graph is 0-d arithmetic: one straight-line C function")
            self._graph_function()
        for node in (g.nodes if not self.functions else []):
            self.comment(node)
            at = f"L{self.lines.get(id(node), '?')}"  # its IR line (a lone op's region is a copy)
            if node.body is None and eager_kernel_call(node) is None:
                self.eager_kernel(node)
                continue
            if node.body is None and small_batched_matmul(node) is None:
                self._native_function(CBatchedMatmul(self, node, f"gm_matmul{len(self.functions)}"), at)
                continue
            if node.body is None:
                lone = lone_region(node)
                if lone is None:
                    self.stats["library"] += 1
                    self.call(node)
                    continue
                node = lone
            region = analyze(node, scalar_code=False)
            if region.kind == "unfused":
                region = analyze_rows(node) or region
            why = supported(region)
            if why is None:
                self._native_function(CRegion(self, node, region, f"gm_region{len(self.functions)}"), at)
            else:
                self.stats["library"] += 1
                self.notes.append(f"%{node.outputs[0].name}: {why}")
                self.op_by_op(node, f"# not native: {why}; its ops run one by one as NumPy calls")
        if self.symbols:
            self.body[sizes_at:sizes_at] = self._per_size_lines()
        returns = []
        for v in g.outputs:
            s = self.src(v)
            returns.append(f"np.asarray({s})" if isinstance(v, Value) and len(v.type.shape) == 0
                           and s not in self.fresh else s)
        tc = native_build.toolchain()
        c_source = render("native_module.cpp.j2", graph_name=g.name, ir_text=str(g),
                          prelude=host_prelude(tc.vector_math), preamble=PREAMBLE, functions=self.functions,
                          parallel_min=native_build.PARALLEL_MIN_ELEMS)
        py_source = render("native_module.py.j2", graph_name=g.name, description=self.describe(), ir_text=str(g),
                           c_source=c_source, stem="gm_native_" + re.sub(r"\W", "_", g.name),
                           kernels=self.kernels, params=params, body=self.body, returns=returns,
                           library_calls=self.fp_calls > 0, fast_math=self.fast_math,
                           slots=self.slots, eager_kernels=self.eager_kernels)
        return py_source, c_source

    def _per_size_lines(self) -> list:
        """The driver's lines that work out, once per size, what the kernel calls check and
        make (byte sizes, output shapes) and the int64 array of sizes the C functions read,
        kept per size in a module-level table and read into locals (two threads calling at two
        sizes each get their own)."""
        key = f"({', '.join(self.symbols)},)"
        names = ["_syms"] + [n for const, _, shapes in self.per_call
                             for n in (f"{const}_SIZES",) + ((f"{const}_SHAPES",) if shapes else ())]
        values = [f"np.array({key}, np.int64)"]
        for _, sizes, shapes in self.per_call:
            values.append(sizes)
            if shapes:
                values.append(shapes)
        self.slots.append("_SIZES_AT")  # a module-level list holding the table
        return ["if not _SIZES_AT:",
                "    _SIZES_AT.append({})  # the sizes of the calls -> what their kernel calls check",
                f"_per_size = _SIZES_AT[0].get({key})",
                "if _per_size is None:  # a new size: worked out once",
                f"    _per_size = _SIZES_AT[0][{key}] = ({', '.join(values)},)",
                f"{', '.join(names)}, = _per_size"]

    def describe(self) -> str:
        s = self.stats
        text = (f"Runs {s['native']} fused region(s) as native C++ functions (OpenMP loops, one translation unit) "
                f"and {s['library']} op(s) or region(s) as NumPy library calls (matmul through BLAS).")
        if s["eager"]:
            text += f" {s['eager']} op(s) call eager's own native kernels straight (the same bits as eager)."
        if self.notes:
            text += " Not native: " + "; ".join(self.notes) + "."
        return text


def generate(graph: Graph) -> tuple[str, str]:
    """(driver module source, one-paragraph description)."""
    module = NativeModule(graph)
    py_source, _ = module.source()
    return py_source, module.describe()


def generate_c(graph: Graph) -> str:
    """The C++ translation unit alone."""
    return NativeModule(graph).source()[1]


__all__ = ["generate", "generate_c", "index_expr", "compose_index", "supported", "NativeModule", "one_team", "same_code"]
