"""Structured control flow as C loops: a `scan` or `while_loop` node of the native module
becomes one C function that loops over its body's kernels (emit_loop).

Why: the op's forward (eager/ops/control_flow.py) loops in Python around the body's own
compiled module, which costs each step a Python iteration, a driver call with its argument
checks, an allocation per result and a copy per carry: for a GRU step of a few microseconds
of arithmetic that overhead is most of the step. Here the body's optimized graph
(optimized_body: the graph the Python-driven loop runs) is written by the
native generator itself (_BodyModule, a NativeModule whose kernel calls become C calls), and
the loop around it is C:

- consts are read in place; xs are sliced and ys written by pointer offsets (t * slice bytes);
- carries are double-buffered: the kernel computing carry k's new value writes the buffer
  the step does not read, then the two pointers swap (no allocation, no copy per step);
  a y that is a value no carry took is written straight into its slot of the stacked ys;
- every other value of the body has its own slot in one scratch buffer made per call;
- matrix products call NumPy's own BLAS (cblas_?gemm, ?gemv, ?dot: the routine and the
  arguments NumPy's matmul picks for those shapes and strides; a large one split by rows
  across the threads where the Python-driven body splits it), so a step's products have
  NumPy's bits; batches of small products are the generator's own loop nests (matmul.py);
  views are read in place by the kernels (strided_source), or copied by a strided loop where
  a product reads them; concatenations are copies; sums and means left unfused add as
  np.add.reduce does (in order over leading axes, pairwise over trailing ones);
- a pointwise op the fusion pass left alone (a bias add after a product) is a one-op kernel:
  NumPy's bits for IEEE arithmetic (add, mul, ...), the C helpers' for a transcendental, as
  in every fused region of the native backend;
- a while_loop's condition is its own kernels, its bool result read in C; a loop in a loop's
  body is its own C function, called from the enclosing loop; a cond or switch in a body is a
  C if over its branches' kernels; integer % and // are NumPy's floor semantics.

The values are those of the Python-driven loop to the bit (tests/codegen/test_native_loops.py):
the same kernels (a body region's code is the same C function either way) on the same
operands. Where the body holds an op with no C form here (another library call, eager's own
kernels, symbolic sizes) emit_loop says which, with the body's IR line, and the
driver calls the op's forward, which loops in Python: explain() lists those nodes.
GRAPHMODE_NATIVE_LOOPS=0 turns the C loops off (the comparison the tests and benchmarks make).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from gmbase import settings
from gmnative import build as native_build
from static.ir import Graph, Node, Value

from ..lowering import lowering_for
from ..regions import analyze, analyze_rows
from ..render import Names, node_line, py_literal
from .function import supported
from .indexing import (
    _ints,
    _prod,
    _symbolic,
    contiguous_strides,
    one_op_region,
    storage_c_type,
    strided_index,
    strided_source,
)
from .loop_library import TABLE_LEN, NoCForm, _bytes, cat, divmod_op, matmul, reduce_sum
from .matmul import CBatchedMatmul, small_batched_matmul
from .region import CRegion

if TYPE_CHECKING:
    from .driver import NativeModule

_ALIGN = 64  # bytes: each scratch slot starts on a cache line


def enabled() -> bool:
    """Whether scan and while_loop nodes become C loops (GRAPHMODE_NATIVE_LOOPS, on unless 0):
    part of the native module's cache key (fingerprint), since the generated code differs."""
    return settings.switch("GRAPHMODE_NATIVE_LOOPS")


def fingerprint() -> str:
    return "" if enabled() else ";native_loops=0"


@functools.lru_cache(maxsize=256)
def optimized_body(text: str) -> Graph:
    """A body's IR text optimized as the Python-driven loop's body module is (the native
    backend's pipeline: simplify, fusion with row regions, memory plan), once per text."""
    from gmops.control_flow import parsed  # noqa: PLC0415
    from static.jit.executable import row_regions  # noqa: PLC0415  (codegen builds on static)
    from static.passes import run_pipeline  # noqa: PLC0415

    rows = row_regions("native")
    return run_pipeline(parsed(text), [], row_regions=rows, backend="native")


_LOOP_COUNT = "#loop functions"  # a key of the module's by_code table (code -> name) that no code is


_NoCForm = NoCForm


def _static_shape(v: Value) -> bool:
    return not any(_symbolic(d) for d in v.type.shape)


class _BodyModule:
    """One body graph as C statements of one step: its kernels are written into the outer
    module's translation unit (shared function list), their calls become C calls on pointers
    (`ptr`: Python name of a value -> C expression of its address, a `char*`)."""

    def __init__(self, outer: "NativeModule", graph: Graph, tag: str, inputs: list[str], scratch: list) -> None:
        from .driver import NativeModule  # noqa: PLC0415

        loop = self

        class _Module(NativeModule):  # the native generator, with its calls redirected here
            def allocate(self, shape: tuple, dtype) -> str | None:
                return None  # every result is a scratch slot (the call path would make it)

            def kernel_call(self, fn: str, params: list, dtypes: list) -> None:
                loop._kernel_call(fn, params)

            def bind_yielded(self, yielded: dict, source_of: Callable) -> None:
                for y, outs in yielded.items():
                    if not isinstance(y, Value):
                        raise _NoCForm("a region yields a literal")
                    first = source_of(y)
                    for o in outs:
                        if self.names(o) != first:
                            loop.alias[self.names(o)] = first

            def call(self, node: Node, env: dict | None = None) -> None:
                loop._library(node)

            def op_by_op(self, node: Node, note: str) -> None:
                raise _NoCForm(f"a region with no C function ({note.split(';')[0].lstrip('# ')})")

            def eager_kernel(self, node: Node) -> None:
                raise _NoCForm(f"{node.op} runs eager's kernel through its forward")

        self.m = _Module(graph, outer.fast_math)
        self.m.functions, self.m.by_code = outer.functions, outer.by_code  # one translation unit
        self.m.owner = self  # type: ignore[attr-defined]  # (a nested loop's call reads it)
        self.m.names = Names(prefix=f"{tag}_", taken=set())
        self.graph = graph
        self.ptr: dict[str, str] = {}
        self.alias: dict[str, str] = {}
        self.views: dict[str, Value] = {}
        self.steps: list[str] = []
        self.scratch = scratch  # shared with the loop: (C name, bytes), one slot each
        self.slot_of: dict[str, str] = {}  # Python name -> its scratch slot's C name
        self.gemm = False
        for v, p in zip(graph.inputs, inputs):
            self.ptr[self.m.names(v)] = p

    # -- what a value's address is ---------------------------------------------------------------
    def name(self, v: Value) -> str:
        return self.m.names(v)

    def pointer(self, name: str) -> str:
        """The C address of the value named `name` (a view that no kernel reads in place is
        copied into a slot by a strided loop)."""
        seen = set()
        while name in self.alias and name not in self.ptr:
            if name in seen:
                break
            seen.add(name)
            name = self.alias[name]
        if name in self.ptr:
            return self.ptr[name]
        v = self.views.get(name)
        if v is None:
            raise _NoCForm(f"the value {name} has no C address")
        view = strided_source(v)
        if view is None:
            raise _NoCForm(f"%{v.name} is a view of a layout not read in place")
        base, strides, offset = view
        bp = self.pointer(self.name(base))
        shape = _ints(v.type.shape)
        size = v.type.dtype.np.itemsize
        if _prod(shape) == 0 or all(strides[j] == contiguous_strides(shape)[j] for j in range(len(shape))
                                    if shape[j] != 1):
            self.ptr[name] = f"({bp} + {offset * size}LL)"  # a contiguous window of its base
            return self.ptr[name]
        slot = self._slot(name, _bytes(v))
        ctype = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}[size]
        idx = strided_index(shape, strides, shape, "gm_i", "LL")
        self.steps += [f"{{  // %{v.name}: a strided view, copied for a product",
                       f"    const {ctype}* gm_src = (const {ctype}*)({bp}) + {offset}LL;",
                       f"    {ctype}* gm_dst = ({ctype}*)({slot});",
                       f"    for (long long gm_i = 0; gm_i < {_prod(shape)}LL; ++gm_i) gm_dst[gm_i] = gm_src[{idx}];",
                       "}"]
        return slot

    def _slot(self, name: str, nbytes: int) -> str:
        c = f"gm_s{len(self.scratch)}"
        self.scratch.append((c, nbytes))
        self.ptr[name] = c
        self.slot_of[name] = c
        return c

    # -- the calls -------------------------------------------------------------------------------
    def _kernel_call(self, fn: str, params: list) -> None:
        args = []
        for _, src, nbytes, writable in params:
            if src == "_syms":
                raise _NoCForm("symbolic sizes")
            if writable:
                if src in self.ptr:
                    raise _NoCForm(f"{src} is written twice")
                args.append(self._slot(src, abs(int(nbytes))))
            else:
                args.append(self.pointer(src))
        self.steps.append(f"{{ void* gm_a[] = {{{', '.join(f'(void*)({a})' for a in args)}}}; {fn}(gm_a, gm_nt); }}")

    def _library(self, node: Node) -> None:
        """A node the generator would run as a NumPy call: a view (its address, resolved when
        read), a product (BLAS), a lone pointwise op (a one-op kernel); else no C form."""
        out = node.outputs[0] if node.outputs else None
        if out is not None and len(node.outputs) == 1 and strided_source(out) is not None:
            self.views[self.name(out)] = out
            return
        if node.op == "matmul":
            matmul(self, node)
            return
        if node.op == "cat":
            cat(self, node)
            return
        if node.op in ("sum", "mean") and reduce_sum(self, node):
            return
        if node.op in ("remainder", "floor_divide") and divmod_op(self, node):
            return
        low = lowering_for(node.op)
        if (low.pointwise and low.cupy.expr is not None and len(node.outputs) == 1
                and all(isinstance(v, Value) or isinstance(v, (int, float, bool)) for v in node.inputs)):
            fused = one_op_region(node)
            try:
                region = analyze(fused, scalar_code=False)
                if region.kind == "unfused":
                    region = analyze_rows(fused) or region
                why = supported(region)
                if why is None:
                    self.m._native_function(CRegion(self.m, fused, region, f"gm_region{len(self.m.functions)}"),
                                            "loop")
                    return
            finally:
                fused.drop()  # (the body's values stay as the cached graph had them)
            raise _NoCForm(f"{node.op} ({why})")
        raise _NoCForm(f"{node.op} has no C form (a library call): the body's `{node_line(node)}`")

    def emit(self) -> None:
        """Run the native generator over the body: the steps' C calls, or _NoCForm."""
        m = self.m
        if m.symbols:
            raise _NoCForm("symbolic sizes")
        m.body = []
        if m._straight_line():
            m._graph_function()
            return
        reasons: list[str] = []  # every node with no C form, for explain()
        for node in m.graph.nodes:
            try:
                self._node(node)
            except _NoCForm as exc:
                reasons.append(str(exc))
                for o in node.outputs:  # (a stand-in address: the later nodes are still checked)
                    self.ptr.setdefault(self.name(o), "((char*)0)")
        if reasons:
            raise _NoCForm("; ".join(dict.fromkeys(reasons)))

    def _node(self, node: Node) -> None:
        """One node of the body as C calls (or _NoCForm)."""
        m = self.m
        from .driver import eager_kernel_call  # noqa: PLC0415

        if node.body is None and node.op == "cond":  # a choice: an if over the branches' kernels
            self._cond(node)
            return
        if node.body is None and node.op in ("scan", "while_loop"):  # a nested loop: its own C loop
            inner = _Loop(m, node)
            fn = inner.function(f"L{m.lines.get(id(node), '?')} of an enclosing loop's body")
            m.functions.append(fn)
            inner.call(fn["name"])
            return
        if node.body is None and eager_kernel_call(node) is None:
            raise _NoCForm(f"{node.op} runs eager's kernel through its forward")
        if node.body is None and small_batched_matmul(node) is None:
            m._native_function(CBatchedMatmul(m, node, f"gm_matmul{len(m.functions)}"), "loop")
            return
        if node.body is None:
            self._library(node)
            return
        region = analyze(node, scalar_code=False)
        if region.kind == "unfused":
            region = analyze_rows(node) or region
        if supported(region) is not None:  # no one C function: its ops one by one, each in C
            self._op_by_op(node)
            return
        m._native_function(CRegion(m, node, region, f"gm_region{len(m.functions)}"), "loop")

    def _op_by_op(self, node: Node) -> None:
        """A fused region the generator cannot write as one function (a reduction of integers:
        a batched while_loop's "any example left"): its ops one by one, as the driver runs
        them, each in C (one-op kernels, reductions as np.add.reduce)."""
        body = node.body
        assert body is not None
        literals = {}
        for p, outer in zip(body.inputs, node.inputs):
            if isinstance(outer, Value):
                self.alias[self.name(p)] = self.name(outer)
            else:
                literals[p] = outer
        for n in body.nodes:
            if any(v in literals for v in n.inputs):
                copy = _with_literals(n, literals)
                try:
                    self._library(copy)
                finally:
                    copy.drop()  # (the body's values stay as the cached graph had them)
            else:
                self._library(n)
        for o, y in zip(node.outputs, body.outputs):
            if not isinstance(y, Value):
                raise _NoCForm("a region yields a literal")
            self.alias[self.name(o)] = self.name(y)

    def _cond(self, node: Node) -> None:
        """A cond (lax.cond / lax.switch) in a loop's body: each branch's kernels in its own
        arm of a C if, the taken arm copying its results into the cond's slots. A bool picks
        branch 1 when true; an integer index is clamped into range, as the op's forward does."""
        index, operands = node.inputs[0], list(node.inputs[1:])
        if not isinstance(index, Value) or not all(isinstance(v, Value) for v in operands):
            raise _NoCForm("a cond with a literal operand")
        branches = node.attrs["branches"]
        ctype = storage_c_type(index.type.dtype)
        read = f"*(const {ctype}*)({self.pointer(self.name(index))})"
        pick = (f"({read} != 0 ? 1LL : 0LL)" if index.type.dtype.np.kind == "b"
                else f"({read} < 0 ? 0LL : (long long){read} > {len(branches) - 1}LL ? {len(branches) - 1}LL : "
                     f"(long long){read})")
        ins = [self.pointer(self.name(v)) for v in operands]
        slots = [self._slot(self.name(o), _bytes(o)) for o in node.outputs]
        lines = [f"{{  // %{node.outputs[0].name} = cond: the taken branch's kernels",
                 f"    const long long gm_b = {pick};"]
        for k, text in enumerate(branches):
            arm = _BodyModule(self.m, optimized_body(text), f"{self.m.names.prefix}c{len(self.scratch)}_{k}", ins,
                              self.scratch)
            arm.emit()
            copies = []
            for o, y, slot in zip(node.outputs, arm.graph.outputs, slots):
                addr, _ = arm.output(y)
                copies.append(f"__builtin_memcpy({slot}, {addr}, {_bytes(o)});")
            self.gemm = self.gemm or arm.gemm
            lines.append(f"    {'if' if k == 0 else 'else if'} (gm_b == {k}) {{")
            lines += ["        " + line for line in arm.steps + copies]
            lines.append("    }")
        self.steps += lines + ["}"]

    def output(self, y) -> tuple[str, str | None]:
        """(C address of a body result, the scratch slot's name when the body wrote it)."""
        if not isinstance(y, Value):
            raise _NoCForm("a literal result")
        name = self.name(y)
        while name in self.alias and name not in self.ptr:
            name = self.alias[name]
        return self.pointer(name), self.slot_of.get(name)


def _with_literals(node: Node, literals: dict) -> Node:
    """A copy of node reading the literals its region was given where it read their parameters."""
    copy = Node(op=node.op, inputs=[literals.get(v, v) if isinstance(v, Value) else v for v in node.inputs],
                attrs=dict(node.attrs), loc=node.loc)
    copy.outputs = list(node.outputs)  # the same values: their readers find them by name
    return copy


# -- the loop function ---------------------------------------------------------------------------------
def emit_loop(m: "NativeModule", node: Node, at: str) -> str | None:
    """Write `node` (scan or while_loop) as one C function and its call into module m; None
    when done, else why not (m is left as it was: the op's forward runs the loop)."""
    if not enabled():
        return "native loops are off (GRAPHMODE_NATIVE_LOOPS=0)"
    values = list(node.inputs) + list(node.outputs)
    if not all(isinstance(v, Value) for v in node.inputs):
        return "a literal operand"
    if not all(_static_shape(v) for v in values):
        return "symbolic sizes"
    saved = (len(m.functions), dict(m.by_code), dict(m.stats))
    try:
        loop = _Loop(m, node)
        fn = loop.function(at)
    except _NoCForm as exc:
        del m.functions[saved[0]:]
        m.by_code.clear()
        m.by_code.update(saved[1])
        m.stats.clear()
        m.stats.update(saved[2])
        return str(exc)
    m.functions.append(fn)
    loop.call(fn["name"])
    return None


class _Loop:
    """The C function of one loop node: its arguments (consts, initial carries, xs, then the
    results, then the scratch buffer and BLAS's addresses) and its statements."""

    def __init__(self, m: "NativeModule", node: Node) -> None:
        self.m, self.node = m, node
        a = node.attrs
        self.scratch: list = []
        n_c = a["n_consts"]
        ins = list(node.inputs)
        self.consts = ins[:n_c]
        if node.op == "scan":
            n_k = a["n_carry"]
            self.carries = ins[n_c:n_c + n_k]
            self.xs = ins[n_c + n_k:]
            self.body = optimized_body(a["body"])
            self.cond = None
        else:
            self.carries = ins[n_c:]
            self.xs = []
            self.body = optimized_body(a["body"])
            self.cond = optimized_body(a["cond"])
        count = m.by_code.get(_LOOP_COUNT, 0)  # loops of this translation unit, nested ones included
        m.by_code[_LOOP_COUNT] = count + 1
        self.tag = f"gm_loop{count}"

    def _inputs(self) -> list[str]:
        return ([f"gm_c{i}" for i in range(len(self.consts))] + [f"gm_cur{k}" for k in range(len(self.carries))]
                + [f"gm_x{j}" for j in range(len(self.xs))])

    def function(self, at: str) -> dict:
        node, a = self.node, self.node.attrs
        n_k = len(self.carries)
        outs = list(node.outputs)
        body = _BodyModule(self.m, self.body, f"{self.tag}b", self._inputs(), self.scratch)
        body.emit()
        cond = None
        if self.cond is not None:
            cond = _BodyModule(self.m, self.cond, f"{self.tag}c", self._inputs(), self.scratch)
            cond.emit()
        # the arguments: consts, initial carries, xs, then the results
        decls = []
        k = 0
        for i, _ in enumerate(self.consts):
            decls.append(f"char* const gm_c{i} = (char*)gm_args[{k}];")
            k += 1
        for i, _ in enumerate(self.carries):
            decls.append(f"const char* const gm_init{i} = (const char*)gm_args[{k}];")
            k += 1
        for j, _ in enumerate(self.xs):
            decls.append(f"char* const gm_xs{j} = (char*)gm_args[{k}];")
            k += 1
        lines: list[str] = []
        # the carries' second buffers, then the body's slots, in the scratch buffer
        spare = []
        for i, c in enumerate(self.carries):
            spare.append(f"gm_spare{i}")
            self.scratch.insert(i, (f"gm_spare{i}", _bytes(c)))
        offsets, total = [], 0
        for _, nb in self.scratch:
            offsets.append(total)
            total += -(-max(nb, 1) // _ALIGN) * _ALIGN
        self.scratch_bytes = total
        decls.append(f"char* const gm_scratch = (char*)gm_args[{k}];")
        k += 1
        self.blas = body.gemm or (cond is not None and cond.gemm)
        if self.blas:
            decls.append(f"const long long* const gm_blas = (const long long*)gm_args[{k}];")
            k += 1
        for i, _ in enumerate(outs):  # the results last: the call path makes them
            decls.append(f"char* const gm_out{i} = (char*)gm_args[{k}];")
            k += 1
        # where each body result goes: carry k's new value into its spare buffer (nxt), a y into
        # its slot of the stacked ys, when the body wrote the value itself and nothing else took it
        redirect: dict[str, str] = {}
        results = list(self.body.outputs)
        after: list[str] = []
        length = int(a["length"]) if node.op == "scan" else None
        for i, y in enumerate(results[:n_k]):
            addr, slot = body.output(y)
            if slot is not None and slot not in redirect:
                redirect[slot] = f"gm_nxt{i}"
            else:
                after.append(f"__builtin_memcpy(gm_nxt{i}, {addr}, {_bytes(self.carries[i])});")
        for j, y in enumerate(results[n_k:]):
            o = outs[n_k + j]
            size = _bytes(o) // max(length or 1, 1)
            dest = f"(gm_out{n_k + j} + gm_t * {size}LL)"
            addr, slot = body.output(y)
            if slot is not None and slot not in redirect:
                redirect[slot] = dest
            else:
                after.append(f"__builtin_memcpy({dest}, {addr}, {size});")
        for (name, _), off in zip(self.scratch, offsets):
            if name not in redirect:
                lines.append(f"char* const {name} = gm_scratch + {off}LL;")
        # the carries: cur (read by the step) and nxt (written by it), swapped after each step;
        # for a scan the first buffer is picked so that the last step leaves the result in place
        for i, c in enumerate(self.carries):
            first, second = f"gm_out{i}", spare[i]
            if length is not None and length % 2 == 1:
                first, second = second, first
            lines += [f"char* gm_cur{i} = {first};", f"char* gm_nxt{i} = {second};",
                      f"__builtin_memcpy(gm_cur{i}, gm_init{i}, {_bytes(c)});"]
        step: list[str] = []
        for slot, dest in redirect.items():
            step.append(f"char* const {slot} = {dest};")
        if node.op == "scan":
            n_y = len(results) - n_k
            for i, c in enumerate(self.carries):
                if a.get("save"):
                    step.append(f"__builtin_memcpy(gm_out{n_k + n_y + i} + gm_t * {_bytes(c)}LL, gm_cur{i}, "
                                f"{_bytes(c)});")
            for j, x in enumerate(self.xs):
                step.append(f"char* const gm_x{j} = gm_xs{j} + gm_t * {_bytes(x) // max(length or 1, 1)}LL;")
        step += body.steps + after
        for i, _ in enumerate(self.carries):
            step.append(f"{{ char* gm_tmp = gm_cur{i}; gm_cur{i} = gm_nxt{i}; gm_nxt{i} = gm_tmp; }}")
        if length is not None:
            t = f"{length - 1}LL - gm_step" if a["reverse"] else "gm_step"
            lines.append(f"for (long long gm_step = 0; gm_step < {length}LL; ++gm_step) {{")
            lines.append(f"    const long long gm_t = {t};")
            lines.append("    (void)gm_t;")
        else:
            assert cond is not None and self.cond is not None
            test, _ = cond.output(self.cond.outputs[0])
            lines.append("for (;;) {")
            lines += ["    " + s for s in cond.steps]
            lines.append(f"    if (!*(const unsigned char*)({test})) break;")
        lines += ["    " + s for s in step]
        lines.append("}")
        for i, c in enumerate(self.carries):
            lines.append(f"if (gm_cur{i} != gm_out{i}) __builtin_memcpy(gm_out{i}, gm_cur{i}, {_bytes(c)});")
        title = f"{at}: {node.op} as a C loop around its body's kernels"
        return {"name": self.tag, "title": title, "head": title, "also": [], "decls": decls, "lines": lines,
                "fused_multiply_add": False}

    def call(self, fn: str) -> None:
        """The driver's call: operands, the scratch buffer (made here, once per call) and
        BLAS's addresses, then the results, which the call path makes."""
        m, node = self.m, self.node
        params, dtypes = [], []
        for v in list(node.inputs):
            params.append(("", m.contiguous(v), _bytes(v), False))
            dtypes.append(v.type.dtype.np.name)
        scratch = m.names.fresh(f"{self.tag}_scratch")
        if self.scratch_bytes >= native_build.REUSE_MIN_BYTES:  # a large one: the previous call's, no page faults
            slots = f"_B{len(m.slots)}"
            m.slots.append(slots)
            m.body.append(f"{scratch} = _nb.reuse({slots}, ({self.scratch_bytes},), np.uint8)  # the loop's buffers")
        else:
            m.body.append(f"{scratch} = np.empty({py_literal(self.scratch_bytes)}, np.uint8)  # the loop's buffers")
        m.fresh.add(scratch)
        params.append(("", scratch, self.scratch_bytes, True))
        dtypes.append("uint8")
        owner = getattr(m, "owner", None)
        if self.blas and owner is not None:  # a loop inside a loop's body: the enclosing loop's table
            table = m.names.fresh(f"{self.tag}_blas")
            owner.ptr[table] = "(char*)gm_blas"
            owner.gemm = True
            params.append(("", table, 8 * TABLE_LEN, False))
            dtypes.append("int64")
        elif self.blas:
            table = m.names.fresh(f"{self.tag}_blas")
            m.body.append(f"from codegen.native_gen.loop_library import blas_table as {table}")
            m.body.append(f"{table} = {table}()  # NumPy's BLAS: _ROUTINES")
            m.fresh.add(table)
            params.append(("", table, 8 * TABLE_LEN, False))
            dtypes.append("int64")
        for o in node.outputs:
            name = m.names(o)
            m.made_by_call[name] = _ints(o.type.shape)
            m.fresh.add(name)
            params.append(("", name, _bytes(o), True))
            dtypes.append(o.type.dtype.np.name)
        m.kernel_call(fn, params, dtypes)
