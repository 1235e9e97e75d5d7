"""One fused region as one C function (CRegion): the blocked kinds (prologue loops, one loop
per reduction, epilogue loops) and row regions walked in passes over each row.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from static.ir import Node, Value

from ..c_kernel import KernelBody, closure, reduction_lowering, yielded_by
from ..regions import Region
from ..render import c_literal, c_type, node_line
from .function import _acc_init, _acc_nan, _acc_update, _parallel, _post_expr, _reduce_step, _simd_clause, one_team
from .indexing import _ACC, ROW_MIN, _ints, _prod, index_expr, index_type, load, strided_index, strided_source
from .region_reductions import RegionReductions

if TYPE_CHECKING:
    from .driver import NativeModule


class CRegion(RegionReductions):
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
