"""The reductions of a fused region that are not one accumulator per thread (CRegion's
blocked kind): a reduction over some axes (`_partial_reduction`), walked as contiguous runs
(`_segmented_reduction`) or over leading axes with one row's elements staged
(`_leading_axes_reduction`). A mixin of CRegion, apart so each module stays readable.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from static.ir import Node, Value

from ..c_kernel import KernelBody, closure, reduction_lowering
from ..render import c_literal, c_type, node_line
from .function import CFunction, _acc_init, _acc_nan, _parallel_for, _post_expr, _reduce_step
from .indexing import _ACC, _ints, _prod, compose_index, index_expr, load, strided_index

if TYPE_CHECKING:
    from ..regions import Region


class RegionReductions(CFunction):
    """What CRegion's reductions over part of the space write; CRegion sets the attributes."""

    r: Region
    ix: str
    sfx: str
    env: dict
    strides: dict

    if TYPE_CHECKING:  # CRegion's, called from here
        def _body(self, space: tuple, i: str = "i") -> KernelBody: ...

        def _staged_loops(self, stmts: list, accs: list, staged: list, indent: str, lo: str, hi: str, i: str,
                          note: str = "") -> None: ...

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
        if k == len(space) or k == 0:
            return None
        for v in loaded:
            shape = _ints(v.type.shape)
            padded = (1,) * (len(space) - len(shape)) + shape
            if padded[k:] != space[k:] and any(d != 1 for d in padded[k:]):
                return None
            if v in self.strides and any(d != 1 for d in padded[k:]):
                return None  # a view read along the run: its own strides (a view broadcast along it is one load)
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
            if v in self.strides:  # a view (batch norm's weight reshaped to (1, C, 1, 1)): one element per run
                strides, offset = self.strides[v]
                start = strided_index(shape, strides, space, "base", sfx)
                bases.append(f"const {ix} b_{cname} = {f'{offset}{sfx} + ' if offset else ''}{start};")
            else:
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
