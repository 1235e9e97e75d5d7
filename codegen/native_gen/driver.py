"""The native module: the Python driver that calls each region's C function (NativeModule),
eager's own kernels called straight (EAGER_KERNEL_OPS), library calls for the rest, and
generate/generate_c, the backend's entry points.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from gmnative import build as native_build
from gmnative.c_helpers import PREAMBLE, host_prelude
from static.ir import Graph, Node, Value

from ..c_kernel import Driver, KernelBody
from ..lowering import lowering_for
from ..regions import analyze, analyze_rows, bind_symbols
from ..render import C_TYPES, Names, c_literal, c_type, fields, line_numbers, node_line, np_dtype, py_literal
from ..templates import render
from .combine import combinable, combine_calls
from .conv import window_op
from .driver_lines import drop_unread_views
from .function import CFunction, supported
from .indexing import _ints, _prod, _symbolic, _symbols_of, load, lone_region
from .matmul import CBatchedMatmul, small_batched_matmul
from .pair_index import emit_pair_index
from .range_check import emit_check
from .region import CRegion


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

# Structured control flow the driver runs as one C loop where its body has a C form (loops.py)
LOOP_OPS = ("scan", "while_loop")


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
        self._last_call: dict | None = None  # the kernel record of the last kernel_call
        self.reshape_of: dict = {}  # name of a reshape's result -> name of its operand (kernel_call passes that)

    def _native_function(self, c, at: str) -> None:
        """Emit C function `c` (a region, a batch of products) and its call; a function whose
        code an earlier one has is not emitted again, the earlier one says it also runs `at`."""
        before = self._last_call
        c.emit()
        call = self._last_call
        if isinstance(c, CRegion) and call is not before and call is not None and "at" in call and combinable(c.lines):
            call["combinable"] = True  # (combine.py: small calls that meet run as one)
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
        # a reshape of an array made here or of a graph input, read by the kernel, is its
        # operand's memory in the same order: the operand is passed (it passes the call path's
        # checks where the reshape would, and converts to the same bytes where not), and the
        # reshape's line is dropped when nothing else reads it (driver_lines)
        params = [(d, src if w else self._reshape_base(src), nb, w) for d, src, nb, w in params]
        sizes = py_literal(tuple(-nb if w else nb for _, _, nb, w in params))
        made = [src for _, src, _, w in params if w and src in self.made_by_call]
        shapes = py_literal(tuple(self.made_by_call[name] for name in made))
        # sizes with a symbol (static.dynamic_shapes) are worked out at each call, in the driver
        per_call = bool(self.symbols) and any(_symbolic(nb) for _, _, nb, _ in params) or any(
            _symbolic(d) for name in made for d in self.made_by_call[name])
        record: dict = {"const": const, "fn": fn, "sizes": "None" if per_call else sizes,
                        "dtypes": py_literal(tuple(dtypes)),
                        "shapes": ("None" if per_call else shapes) if made else None}
        self.kernels.append(record)
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
        start = len(self.body)
        self.body += _converting_call(head, plain, converted)
        if not per_call:  # what combine.py reads to move the call and run it with others
            converted_of = dict(zip(plain, converted))
            record.update(at=(start, len(self.body)), params=params, dtypes_of=list(dtypes), made=made,
                          converted_of=[converted_of.get(src, src) for _, src, _, _ in params])
        self._last_call = record

    def _reshape_base(self, src: str) -> str:
        while src in self.reshape_of:
            src = self.reshape_of[src]
        return src

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
            self.reshape_of[outs[0]] = operands[0]
            return [f"{outs[0]} = {operands[0]}.reshape({py_literal(tuple(node.outputs[0].type.shape))})"]
        view = _VIEW_METHODS.get(node.op)
        x = node.inputs[0] if node.inputs else None
        if view is not None and isinstance(x, Value) and len(x.type.shape) > 0:
            # an operand of one or more dims is an array (never a Python number), whose method
            # is np.<function>'s work without its Python wrapper (W5's step has 90 of these
            # views); a view raises no floating-point error either
            method, arguments = view
            if node.op == "reshape" and x in self.graph.inputs:  # (a view made here may not be contiguous)
                self.reshape_of[outs[0]] = operands[0]
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
            if node.body is None and node.op in LOOP_OPS and self.native_loop(node, at):
                continue
            if node.body is None and node.op == "check_index_range" and emit_check(self, node, at):
                continue  # one C pass writing a flag (range_check.py)
            if node.body is None and node.op in ("index", "index_grad") and emit_pair_index(self, node, at):
                continue  # x[rows, cols] and its gradient, one C pass writing a flag (pair_index.py)
            if (node.body is None or node.op == "fused") and window_op(self, node, at):  # windows, batch norm (conv.py)
                continue
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
        combine_calls(self)
        if self.symbols:
            self.body[sizes_at:sizes_at] = self._per_size_lines()
        returns = []
        for v in g.outputs:
            s = self.src(v)
            returns.append(f"np.asarray({s})" if isinstance(v, Value) and len(v.type.shape) == 0
                           and s not in self.fresh else s)
        self.body = drop_unread_views(self.body, returns)
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

    def native_loop(self, node: Node, at: str) -> bool:
        """A scan or while_loop as one C function looping around its body's kernels
        (native_gen.loops); False, with the reason among the notes, where the body holds an
        op with no C form (the op's forward then loops in Python around the body's code)."""
        from .loops import emit_loop  # noqa: PLC0415  (loops builds on this module)

        why = emit_loop(self, node, at)
        if why is None:
            self.stats["loops"] = self.stats.get("loops", 0) + 1
            return True
        self.notes.append(f"%{node.outputs[0].name} ({node.op}) loops in Python: {why}")
        return False

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
        if s.get("loops"):
            text += (f" {s['loops']} loop(s) (scan, while_loop) run as C loops around their bodies' kernels "
                     "(no Python per step).")
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
