"""A fused region of the NumPy module as a block function (BlockedRegion): per row block its
pointwise ops write with `out=` into per-thread scratch buffers or the outputs, reductions
return partials that the driver combines, and `_rt.run_blocks` spreads the blocks over the
cores; values invariant along the block axis are computed once, before the blocks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from static.ir import Node, Value

from .lowering import accumulate_dtype, lowering_for, small_power
from .memory import BufferPlanner
from .numpy_emit import Emitter, _combiner_ufunc, _divides_by_count
from .regions import Region
from .render import Names, node_line, np_dtype, py_literal

if TYPE_CHECKING:
    from .numpy_gen import NumpyModule



@dataclass
class _BlockLoop:
    """A `_rt.run_blocks` call already written (at `line` of the entry body) that the next
    region may join: its block functions, their argument tuples, and its rows."""

    regions: list  # the BlockedRegions, in order
    groups: list  # each one's argument tuple, as source
    row_elems: int
    line: int
    chain: dict | None = None  # the function calling them one after the other (two or more)

    def joins(self, nxt: "BlockedRegion") -> bool:
        """Whether nxt can run in the same row blocks, right after the last region on each
        block: same iteration space and blocking, and every value it reads from the last
        region read at the rows it was written (so one block never waits for another)."""
        last = self.regions[-1]
        if last.partials or last.epilogue_after or last.r.space != nxt.r.space or last.r.k != nxt.r.k:
            return False
        made = set(last.r.node.outputs)
        return all(p in nxt.r.sliced for p, outer in nxt.r.binding.items() if outer in made)


class BlockedRegion:
    """One fused region as a block function plus the statements that drive it."""

    def __init__(self, module: NumpyModule, region: Region, top: Emitter, planner: BufferPlanner, index: int):
        self.m, self.r, self.top, self.planner, self.i = module, region, top, planner, index
        self.rid = module.n_regions
        module.n_regions += 1
        self.fn = f"_region{self.rid}"
        self.block = Emitter(module, Names(taken={"lo", "hi"}))
        self.params: list = []  # block function parameters
        self.args: list = []  # what the driver passes for them
        self.slots: list = []  # (row shape, dtype) per scratch buffer
        self.partials: list = []  # (reduction node, index in the returned tuple)
        self.block_epilogue = False  # the epilogue runs in the blocks (see emit)
        self.epilogue_after = False  # the epilogue runs after the blocks, on the whole results

    # -- helpers ---------------------------------------------------------------------------
    def _block_view(self, outer: str, v: Value) -> str:
        """The driver's argument for sliced v: the array with its leading k axes collapsed."""
        r = self.r
        shape = (r.nrows,) + r.block_shape(v)
        if r.k == 1 and len(v.type.shape) == len(r.space):
            return outer
        return f"{outer}.reshape({py_literal(shape)})"

    def _invariant_view(self, outer: str, v: Value) -> str:
        shape = self.r.block_shape(v)
        if tuple(v.type.shape) == shape:
            return outer
        return f"np.reshape({outer}, {py_literal(shape)})"

    def _param(self, v: Value, outer: str, sliced: bool) -> str:
        name = self.block.names(v)
        self.params.append(name)
        self.args.append(self._block_view(outer, v) if sliced else self._invariant_view(outer, v))
        if sliced:
            self.block.lines.append(f"{name} = {name}[lo:hi]")
        return name

    # -- emission --------------------------------------------------------------------------
    def emit(self) -> dict:
        r, top, body = self.r, self.top, self.r.body
        owned: dict = {}
        yielded: dict = {}
        for o, y in zip(r.node.outputs, body.outputs):
            yielded.setdefault(y, []).append(o)
        readers: dict = {}
        for n in body.nodes:
            for v in n.input_values():
                readers.setdefault(v, []).append(n)
        for n in r.prologue:  # a constant read by in-block pointwise ops is just its literal (out= broadcasts)
            v = n.outputs[0]
            if n.op in ("full", "full_like") and v not in yielded and v in r.sliced and all(
                    m in r.prologue and m.outputs[0] in r.sliced for m in readers.get(v, [])):
                self.block.env[n.outputs[0]] = top.env[n.outputs[0]] = py_literal(n.attrs["value"])
        in_block = [n for n in r.prologue if n.outputs[0] in r.sliced and n.outputs[0] not in self.block.env]
        hoisted_skip = set(self.block.env)
        hoisted = [n for n in r.prologue if n.outputs[0] not in r.sliced and n.outputs[0] not in hoisted_skip]
        # an epilogue on whole rows (every reduction keeps its dims and leaves the block axis
        # alone) runs in the blocks too: its inputs are complete once a block's rows are reduced
        self.block_epilogue = bool(r.epilogue) and all(
            not r.reduces_block_axis(red) and red.attrs.get("keepdim") for red in r.reductions)
        self.epilogue_after = bool(r.epilogue) and not self.block_epilogue
        in_block_epilogue = r.epilogue if self.block_epilogue else []
        used_in_block = {v for n in in_block + r.reductions + in_block_epilogue for v in n.input_values()}
        # values computed once, before the blocks
        for n in hoisted:
            top.comment(n)
            top.op(n)
        # the region's inputs as block parameters
        for p in body.inputs:
            if p in used_in_block and isinstance(r.binding[p], Value):
                # (an input only the epilogue reads is not in r.sliced: ask its shape)
                self._param(p, top.src(p), p in r.sliced or r.padded(p)[:r.k] == r.space[:r.k])
            elif p in used_in_block:
                self.block.env[p] = py_literal(r.binding[p])
        for n in hoisted:
            v = n.outputs[0]
            if v in used_in_block:
                self._param(v, top.src(v), False)
        # outputs written by the blocks
        dest: dict = {}
        for n in in_block:
            v = n.outputs[0]
            if v in yielded:
                outer = yielded[v][0]
                name = self.m.names(outer)
                reuse = self.planner.choose(self.i, r.node, outer, "region", in_place_ok=False)
                alloc = self.m.names(reuse) if reuse is not None else \
                    f"np.empty({py_literal(tuple(outer.type.shape))}, {np_dtype(outer.type.dtype)})"
                top.lines.append(f"{name} = {alloc}  # %{outer.name}, written block by block")
                owned[outer] = "region"
                dest[v] = self._out_param(v, name, sliced=True)
        rowwise = [red for red in r.reductions if not r.reduces_block_axis(red)]
        for red in rowwise:
            v = red.outputs[0]
            outer = yielded.get(v, [None])[0]
            name = self.m.names(outer) if outer is not None else top.names.fresh(f"r{self.rid}_{v.name}")
            top.env[v] = name
            top.lines.append(f"{name} = np.empty({py_literal(tuple(v.type.shape))}, {np_dtype(v.type.dtype)})")
            if outer is not None:
                owned[outer] = "array"
            dest[v] = self._out_param(v, name, sliced=False)
        for n in in_block_epilogue:
            v = n.outputs[0]
            if v in yielded:  # written block by block, as the reductions' results
                outer = yielded[v][0]
                name = top.env[v] = self.m.names(outer)
                top.lines.append(f"{name} = np.empty({py_literal(tuple(v.type.shape))}, {np_dtype(v.type.dtype)})")
                owned[outer] = "array"
                dest[v] = self._out_param(v, name, sliced=False)
        self._block_body(in_block + in_block_epilogue, dest)
        # the driver
        n_elems = r.nrows
        row_elems = 1
        for s in r.rest:
            row_elems *= s
        for name in self.m.symbols:  # symbolic sizes (static.dynamic_shapes): arguments, not globals
            self.params.append(name)   # (calls of one function at two sizes from two threads)
            self.args.append(name)
        args = ", ".join(self.args) + ("," if len(self.args) == 1 else "")
        call = self._call(n_elems, row_elems, args)
        if self.partials:
            parts = top.names.fresh(f"parts{self.rid}")
            top.lines.append(f"{parts} = {call}")
            for red, j in self.partials:
                v = red.outputs[0]
                outer = yielded.get(v, [None])[0]  # a result the region yields: combined into its name
                name = self.m.names(outer) if outer is not None else top.names.fresh(f"r{self.rid}_{v.name}")
                top.env[v] = name
                count = ""
                if _divides_by_count(red):
                    total = 1
                    for a in r.reduce_axes(red):
                        total *= r.space[a]
                    count = f", count={total}"
                acc = accumulate_dtype(red)
                if acc is not None and acc != v.type.dtype:  # partials in the accumulator: rounded once
                    count += f", dtype={np_dtype(v.type.dtype)}"
                top.lines.append(f"{name} = _rt.combine({parts}, {j}, {_combiner_ufunc(red)}, "
                                 f"{py_literal(tuple(v.type.shape))}{count})  # {node_line(red)}")
        else:
            top.lines.append(call)
        for n in r.epilogue if self.epilogue_after else ():
            y = n.outputs[0]
            if y in yielded and y not in top.env and y not in top.names.of:
                top.names.of[y] = self.m.names(yielded[y][0])  # computed straight into the region's result
            top.comment(n)
            top.op(n)
        for o, y in zip(r.node.outputs, body.outputs):
            if y in dest and (o in owned or o in yielded.get(y, [])[1:]):
                continue
            if self.m.names(o) != top.src(y):
                top.lines.append(f"{self.m.names(o)} = {top.src(y)}")
        for o in r.node.outputs:
            for b, outs in yielded.items():
                if o in outs[1:] and b in dest:
                    top.lines.append(f"{self.m.names(o)} = {self.m.names(outs[0])}")
        self.m.regions.insert(self._at, self._function())
        if self.partials or self.epilogue_after:
            self.m.pending = None  # its results are complete only after the loop: nothing joins it
        return owned

    def _call(self, nrows: int, row_elems: int, args: str) -> str:
        """The driver's run_blocks call. A region that directly follows one whose loop may be
        joined (see _BlockLoop.joins) runs in that loop instead: one pass over the row blocks
        computes both, each block's rows staying in cache from one region to the next (a
        softmax's max, exp-sum and division; a layer norm's mean, variance and scaling)."""
        m, lines = self.m, self.top.lines
        self._at = len(m.regions)
        prev = m.pending
        if prev is None or not prev.joins(self):
            m.pending = _BlockLoop([self], [args], row_elems, len(lines))
            return f"_rt.run_blocks({self.fn}, {nrows}, {row_elems}, ({args}))"
        loop = _BlockLoop(prev.regions + [self], prev.groups + [args], max(prev.row_elems, row_elems), len(lines))
        fns = [r.fn for r in loop.regions]
        if prev.chain is not None:  # a longer chain replaces the shorter one
            m.regions.remove(prev.chain)
            name = prev.chain["name"]
        else:
            name = f"_chain{m.n_chains}"
            m.n_chains += 1
        lines[prev.line] = f"# ({fns[-2]} runs in the block loop of {name} below)"
        params = [f"args{j}" for j in range(len(fns))]
        body = [f"{fn}(lo, hi, *{p})" for fn, p in zip(fns[:-1], params)] + [f"return {fns[-1]}(lo, hi, *{params[-1]})"]
        loop.chain = {"name": name, "title": f"one block loop for {', '.join(fns)}",
                      "doc": f"Rows [lo, hi) of {', '.join(fns)}, one after the other: each reads the rows "
                             "the one before wrote.",
                      "params": params, "lines": body, "scratch_name": "", "scratch_specs": ""}
        self._at = len(m.regions)
        m.regions.append(loop.chain)
        m.pending = loop
        groups = ", ".join(f"({g})" for g in loop.groups)
        return f"_rt.run_blocks({name}, {nrows}, {loop.row_elems}, ({groups},))"

    def _out_param(self, v: Value, outer: str, sliced: bool) -> str:
        name = self.block.names.fresh(f"out_{v.name}")
        self.params.append(name)
        self.args.append(self._block_view(outer, v) if sliced else outer)
        self.block.lines.append(f"{name} = {name}[lo:hi]")
        return name

    def _block_body(self, in_block: list, dest: dict) -> None:
        r, em = self.r, self.block
        order = in_block + [red for red in r.reductions]
        order.sort(key=lambda n: r.body.nodes.index(n))
        last: dict = {}
        for j, n in enumerate(order):
            for v in n.input_values():
                last[v] = j
        slot_of: dict = {}
        free: dict = {}
        slot_lines_at = len(em.lines)
        for j, n in enumerate(order):
            em.comment(n)
            if n in r.reductions:
                self._reduction(n, dest)
            else:
                v = n.outputs[0]
                low = lowering_for(n.op).numpy
                spec = (r.block_shape(v), v.type.dtype.np.str)
                target = dest.get(v)
                if target is None:
                    slot = None
                    if low.ufunc is not None and small_power(n) != 3:
                        for u in n.input_values():
                            if u in slot_of and last.get(u) == j and self.slots[slot_of[u]] == spec \
                                    and tuple(u.type.shape) == tuple(v.type.shape):
                                slot = slot_of.pop(u)
                                break
                    if slot is None:
                        pool = free.get(spec, [])
                        slot = pool.pop() if pool else self._new_slot(spec)
                    slot_of[v] = slot
                    target = f"sc{slot}"  # (not s0: the name of a symbolic size)
                em.op(n, dest=target, scalar=False)
                if v not in last and v in slot_of:
                    free.setdefault(spec, []).append(slot_of.pop(v))
            for u in dict.fromkeys(n.input_values()):  # in operand order: the same code every build
                if last.get(u) == j and u in slot_of:
                    free.setdefault(self.slots[slot_of[u]], []).append(slot_of.pop(u))
        if self.slots:
            names = ", ".join(f"sc{k}" for k in range(len(self.slots))) + ("," if len(self.slots) == 1 else "")
            # specs with a symbolic size (static.dynamic_shapes) are made in the block, where it is bound
            specs = py_literal(tuple(self.slots)) if self._symbolic_slots() else f"_R{self.rid}_SCRATCH"
            em.lines.insert(slot_lines_at, f"{names} = _rt.scratch({specs}, hi - lo)")
        if self.partials:
            em.lines.append("return (" + ", ".join(f"p{j}" for _, j in self.partials)
                            + ("," if len(self.partials) == 1 else "") + ")")

    def _new_slot(self, spec) -> int:
        self.slots.append(spec)
        return len(self.slots) - 1

    def _reduction(self, red: Node, dest: dict) -> None:
        r, em = self.r, self.block
        x = em.src(red.inputs[0])
        ufunc = _combiner_ufunc(red)
        acc = accumulate_dtype(red)  # partials in the accumulator dtype, rounded once at the end
        acc_kw = f", dtype={np_dtype(acc)}" if acc is not None else ""
        if r.reduces_block_axis(red):
            j = len(self.partials)
            axis = None if r.is_full_reduction(red) else r.reduce_axes(red)
            em.lines.append(f"p{j} = {ufunc}.reduce({x}, axis={py_literal(axis)}, keepdims=True{acc_kw})")
            self.partials.append((red, j))
            return
        out = dest[red.outputs[0]]
        em.env[red.outputs[0]] = out  # an epilogue in the blocks reads this block's rows of it
        reduce = (f"{ufunc}.reduce({x}, axis={py_literal(r.reduce_axes(red))}, "
                  f"keepdims={red.attrs.get('keepdim', False)!r}{acc_kw}")
        count = 1
        for a in r.reduce_axes(red):
            count *= r.space[a]
        if acc is not None and acc != red.outputs[0].type.dtype:  # e.g. float16 summed in float32
            total = f"{reduce})"
            if _divides_by_count(red):
                total = f"np.true_divide({total}, {count})"
            em.lines.append(f"np.copyto({out}, {total}, casting='unsafe')  # rounded once, to {out}'s dtype")
            return
        em.lines.append(f"{reduce}, out={out})")
        if _divides_by_count(red):
            em.lines.append(f"np.true_divide({out}, {count}, out={out})  # mean = sum / count, as np.mean")

    def _symbolic_slots(self) -> bool:
        return any(type(d) is not int and isinstance(d, int) for shape, _ in self.slots for d in shape)

    def _function(self) -> dict:
        r = self.r
        specs = py_literal(tuple((shape, dt) for shape, dt in self.slots))
        ops = len(r.prologue) + len(r.reductions) + (len(r.epilogue) if self.block_epilogue else 0)
        return {
            "name": self.fn,
            "title": f"L{self.m.lines.get(id(r.node), '?')}: {node_line(r.node)}",
            "doc": (f"Rows [lo, hi) of the fused region at L{self.m.lines.get(id(r.node), '?')}: {ops} op(s) over "
                    f"{list(r.space)} as {r.nrows} row(s) of {list(r.rest)}."),
            "params": self.params,
            "lines": self.block.lines,
            "scratch_name": "" if self._symbolic_slots() else f"_R{self.rid}_SCRATCH",
            "scratch_specs": specs,
        }


def _elements(space: tuple) -> int:
    """How many elements a region's iteration space has, for choosing how it runs. A symbolic
    size (static.dynamic_shapes) counts as the size the symbolic entry was made at (its
    decision_value): the choice is the same in both builds of the entry, and either choice
    computes every size right."""
    total = 1
    for d in space:
        total *= d.decision_value() if hasattr(d, "decision_value") else int(d)
    return total
