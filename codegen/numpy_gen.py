"""Generate the NumPy module for a graph: straight-line Python, one statement per op,
each under a comment with its IR line.

- A fused region that `regions.analyze` can block becomes a block function: per row
  block it evaluates the region's pointwise ops with `out=` into per-thread scratch
  buffers (or straight into the region's output arrays) and returns the partials of its
  reductions; `_rt.run_blocks` spreads the blocks over the cores. Values that do not vary
  along the block axis are computed once, before the blocks; the epilogue after them.
- 0-d arithmetic runs on NumPy scalars (same IEEE float32/float64 operations as on 0-d
  arrays, a fraction of the overhead), with literals as typed module constants; many
  independent 0-d calls of one ufunc become one array call (batching.py).
- Results that a ufunc can write into an existing buffer reuse dead buffers (memory.py).
"""
from __future__ import annotations

import math

import re
from dataclasses import dataclass


from eager.ops import REGISTRY
from eager.ops._registry import Reduction
from static.ir import Graph, Node, Value

from . import batching, settings
from .lowering import NumpyLowering, accumulate_dtype, half_in_float32, lowering_for, small_power
from .memory import BufferPlanner
from .regions import Region, analyze, bind_symbols, body_of, with_block_axes
from .render import Names, cite, entry_name, compute_dtype, fields, fill, line_numbers, node_line, np_dtype, py_literal
from .templates import render



def _facts(red: Node) -> Reduction:
    facts = REGISTRY[red.op].reduction
    assert facts is not None, f"{red.op} is not a reduction with Reduction facts"
    return facts


def _combiner_ufunc(red: Node) -> str:
    """The NumPy ufunc whose `reduce` computes a reduction (block partials too): its record's
    combiner, spelled as the lowering table spells that op (np.add for sum and mean...)."""
    ufunc = lowering_for(_facts(red).combiner).numpy.ufunc
    assert ufunc is not None, f"{_facts(red).combiner}, a reduction's combiner, needs a NumPy ufunc"
    return ufunc


def _divides_by_count(red: Node) -> bool:
    return _facts(red).divide_by_count


_CALL = re.compile(r"\b((?:np|_rt)\.[A-Za-z_][A-Za-z0-9_]*)\(")  # a library call in a 0-d statement


def _is_scalar_node(node: Node) -> bool:
    return all(len(v.type.shape) == 0 for v in node.input_values() + node.outputs)


class Emitter:
    """Statements for ops, shared by the entry function and the block functions."""

    def __init__(self, module: "NumpyModule", names: Names, local_globals: bool = False) -> None:
        self.module = module
        self.names = names
        self.env: dict = {}  # Value -> source expression (bindings of body inputs)
        self.lines: list = []
        # 0-d statements read module constants and library functions through local
        # aliases (the entry function binds them once): a local read is cheaper than a
        # global one, and a 100-step scalar loop does ~900 of them
        self.local_globals = local_globals
        self.aliases: dict = {}  # global expression -> local name

    def alias(self, expr: str) -> str:
        if not self.local_globals:
            return expr
        name = self.aliases.get(expr)
        if name is None:
            name = self.aliases[expr] = self.names.fresh(expr.lstrip("_").replace(".", "_"))
        return name

    def _alias_calls(self, expr: str) -> str:
        return _CALL.sub(lambda m: self.alias(m.group(1)) + "(", expr)

    def src(self, v) -> str:
        if isinstance(v, Value):
            return self.env[v] if v in self.env else self.names(v)
        return py_literal(v)

    def comment(self, node: Node) -> None:
        self.lines.append(f"# L{self.module.lines.get(id(node), '?')}: {node_line(node)}{cite(node)}")

    def op(self, node: Node, dest: str | None = None, scalar: bool | None = None) -> bool:
        """Emit node; with dest, write the (single) result into that buffer. Returns
        whether the result is a fresh array of our own (not a possible view)."""
        low: NumpyLowering = lowering_for(node.op).numpy
        batch = self.module.batches.get(node)
        if batch is not None:
            self.lines.append(f"# (computed in the batch of {len(batch.members)} `{node.op}` ops above)")
            return False
        outs = [self.names(o) for o in node.outputs]
        pointwise = lowering_for(node.op).pointwise
        if scalar is None:
            scalar = pointwise and _is_scalar_node(node)
        half = half_in_float32(node)  # float16 with a number: computed in float32, rounded once
        if scalar and pointwise:
            dt = _dtype("float32") if half else compute_dtype(node)  # float16 op float32 gives float32
            operands = [self.src(v) if isinstance(v, Value) else self.alias(self.module.const(v, dt))
                        for v in node.inputs]
            f = fields(node, operands, const=lambda value, dt: self.alias(self.module.const(value, dt)))
            expr = self._alias_calls(fill(low.scalar or low.call, operands, f))
            self.lines.append(f"{outs[0]} = {expr}.astype(np.float16)" if half else f"{outs[0]} = {expr}")
            return False
        operands = [self.src(v) for v in node.inputs]
        f = fields(node, operands)
        if half and low.ufunc is not None:
            args = fill(low.ufunc_args, operands, f) if low.ufunc_args else ", ".join(operands)
            into = f", out={dest}" if dest is not None else ""
            self.lines.append(f"{outs[0]} = {low.ufunc}({args}{into}, dtype=np.float32)"
                              + ("" if dest is not None else ".astype(np.float16)") + "  # in float32, as eager")
            return True
        power = small_power(node)
        if power is not None:
            x = operands[0]
            if power == 2:
                self.lines.append(f"{outs[0]} = np.square({x}{f', out={dest}' if dest else ''})  # x**2, as NumPy does")
            else:
                self.lines.append(f"{outs[0]} = np.multiply({x}, {x}{f', out={dest}' if dest else ''})  # x**3 as x*x*x")
                self.lines.append(f"{outs[0]} = np.multiply({outs[0]}, {x}, out={outs[0]})")
            return True
        if dest is not None and low.ufunc is not None:
            args = fill(low.ufunc_args, operands, f) if low.ufunc_args else ", ".join(operands)
            self.lines.append(f"{outs[0]} = {low.ufunc}({args}, out={dest})")
            return True
        if dest is not None and low.into is not None:
            self.lines.append(f"{outs[0]} = {dest}")
            self.lines.extend(fill(low.into, operands, {**f, "out": outs[0]}).split("\n"))
            return True
        target = ", ".join(outs) + ("," if len(outs) == 1 and REGISTRY[node.op].multi_output else "")
        self.lines.extend(low.statements(target, operands, f))
        return not low.alias

    def batches_after(self, node: Node | None) -> None:
        """The batches planned right after node's statement(s) (None: before the first)."""
        for batch in self.module.batches_after.get(node, ()):
            self.batch(batch, lowering_for(batch.op).numpy)

    def batch(self, batch: batching.Batch, low: NumpyLowering) -> None:
        """One array call for a batch of independent 0-d ops, unpacked into their names."""
        first = batch.first
        lines = [self.module.lines.get(id(n), "?") for n in batch.members]
        self.lines.append(f"# batch: {len(batch.members)} independent 0-d `{first.op}` ops as one array call "
                          f"(IR lines {', '.join(f'L{k}' for k in lines)})")
        dt = np_dtype(batch.operands[0].type.dtype)
        packed = f"np.array([{', '.join(self.src(v) for v in batch.operands)}], dtype={dt})"
        call = fill(low.call, [packed], fields(first, [packed]))
        targets = ", ".join(self.names(n.outputs[0]) for n in batch.members)
        self.lines.append(f"{targets}, = {call}")


class NumpyModule:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.lines = line_numbers(graph)
        self.names = Names()
        self.constants: dict = {}
        self.regions: list = []
        self.kinds = {"blocked": 0, "small": 0, "scalar": 0, "unfused": 0}
        self.symbols: list = []  # symbolic sizes bound in the entry (static.dynamic_shapes)
        self.notes: list = []
        self.analyzed = {n: analyze(n) for n in graph.nodes if n.body is not None}
        # the block loop the last region's call runs, while the next node may still join it
        self.pending: _BlockLoop | None = None
        self.n_chains = 0
        self.n_regions = 0
        plan = batching.plan(graph, {n: not self._blocked(r) for n, r in self.analyzed.items()})
        self.batches, self.batches_after = plan.of, plan.after

    def const(self, value, dt) -> str:
        """A module constant holding `value` as a NumPy scalar of dtype dt (a symbolic size,
        known only at run time: the conversion inline, where the entry has bound it)."""
        if type(value) is not int and isinstance(value, int) and not isinstance(value, bool):
            return f"{np_dtype(_dtype(dt.name))}({value})"
        key = (py_literal(value), dt.name)
        name = self.constants.get(key)
        if name is None:
            spelled = re.sub(r"\W+", "_", key[0].replace("float(", "").replace("-", "neg").replace(".", "_"))
            name = base = f"_{dt.name.upper()}_{spelled.strip('_')}"  # _FLOAT32_0_5 holds float32(0.5)
            k = 1
            while name in self.constants.values():
                k += 1
                name = f"{base}_{k}"
            self.constants[key] = name
        return name

    # -- the module ------------------------------------------------------------------------
    def source(self) -> str:
        g = self.graph
        params = [self.names(v) for v in g.inputs]
        entry = [f"{self.names(v)} = {self.names(v)}[()]  # 0-d: computed on NumPy scalars"
                 for v in g.inputs if len(v.type.shape) == 0]
        binds = bind_symbols(g, self.names)
        entry += binds
        self.symbols = [line.split(" = ")[0] for line in binds]  # block functions take them as arguments
        top = Emitter(self, self.names, local_globals=True)
        planner = BufferPlanner(g)
        top.batches_after(None)
        for i, node in enumerate(g.nodes):
            top.comment(node)
            if node.body is not None:
                owned = self.region(i, node, top, planner)
            else:
                self.pending = None
                owned = self._top_op(i, node, top, planner)
            planner.produced(i, node, owned)
            if self.batches_after.get(node):
                self.pending = None
            top.batches_after(node)
        if top.aliases:
            entry.append("# module constants and library functions of the 0-d statements, as locals")
            entry.append(f"{', '.join(top.aliases.values())} = {', '.join(top.aliases)}")
        returns = []
        for v in g.outputs:
            s = top.src(v)
            returns.append(f"np.asarray({s})" if isinstance(v, Value) and len(v.type.shape) == 0 else s)
        constants = [{"name": name, "expr": f"{np_dtype(_dtype(dt))}({lit})"}
                     for (lit, dt), name in self.constants.items()]
        return render("numpy_module.py.j2", entry_fn=entry_name(g), graph_name=g.name, description=self.describe(), ir_text=str(g),
                      constants=constants, regions=self.regions, params=params, entry=entry,
                      body=top.lines, returns=returns)

    def describe(self) -> str:
        k = self.kinds
        n_ops = sum(1 for n in self.graph.nodes if n.body is None)
        parts = [f"{n_ops} top-level op statement(s)",
                 f"{k['blocked']} fused region(s) as blocked kernels (row blocks of "
                 "_rt.CONFIG.block_elems elements, spread over _rt.CONFIG.threads threads)"]
        if k["small"]:
            parts.append(f"{k['small']} small region(s) (at most {settings.INLINE_MAX_ELEMS} elements) op by op")
        if k["scalar"]:
            parts.append(f"{k['scalar']} 0-d region(s) as NumPy-scalar arithmetic")
        if k["unfused"]:
            parts.append(f"{k['unfused']} region(s) op by op ({'; '.join(self.notes)})")
        return "Runs " + ", ".join(parts) + "."

    def _top_op(self, i: int, node: Node, em: Emitter, planner: BufferPlanner) -> dict:
        low = lowering_for(node.op)
        dest = None
        if low.pointwise and len(node.outputs) == 1 and not _is_scalar_node(node) and (
                low.numpy.ufunc or low.numpy.into):
            reuse = planner.choose(i, node, node.outputs[0], "array",
                                   in_place_ok=low.numpy.ufunc is not None and small_power(node) != 3)
            if reuse is not None:
                dest = self.names(reuse)
        fresh = em.op(node, dest=dest)
        return {o: "array" for o in node.outputs} if fresh else {}

    # -- fused regions ---------------------------------------------------------------------
    @staticmethod
    def _blocked(region: Region) -> bool:
        """Whether the region runs as a block function (else its ops run inline, in order)."""
        return region.kind == "blocked" and _elements(region.space) > settings.INLINE_MAX_ELEMS

    def region(self, i: int, node: Node, top: Emitter, planner: BufferPlanner) -> dict:
        region = self.analyzed[node]
        small = region.kind == "blocked" and not self._blocked(region)
        if small or region.kind != "blocked":
            self.pending = None
        self.kinds["small" if small else region.kind] += 1  # each region counted once
        for p, outer in region.binding.items():
            top.env[p] = top.src(outer)
        if small:
            top.lines.append(f"# small region ({math.prod(region.space)} elements): its ops run "
                             "one by one, cheaper than blocking at this size")
            self._inline_body(node, top)
            return {}
        if region.kind != "blocked":
            if region.kind == "unfused":
                self.notes.append(f"%{node.outputs[0].name}: {region.reason}")
                top.lines.append(f"# not blocked: {region.reason}; its ops run one by one")
            self._inline_body(node, top)
            return {}
        if self.pending is not None:
            last = self.pending.regions[-1].r
            if last.space == region.space and last.k < region.k:
                region = with_block_axes(region, last.k)  # so that it can join that block loop
        return BlockedRegion(self, region, top, planner, i).emit()

    def _inline_body(self, node: Node, top: Emitter) -> None:
        # a value the body computes and yields once is computed straight into the region's
        # output name: no `out = inner` alias lines
        body = body_of(node)
        yielded = [y for y in body.outputs if isinstance(y, Value)]
        for o, y in zip(node.outputs, body.outputs):
            if isinstance(y, Value) and y.producer is not None and yielded.count(y) == 1 and y not in top.names.of \
                    and y not in top.env:
                top.names.of[y] = self.names(o)
        for n in body.nodes:
            top.comment(n)
            top.op(n)
            top.batches_after(n)
        self._bind_outputs(node, top)

    def _bind_outputs(self, node: Node, em: Emitter) -> None:
        for o, y in zip(node.outputs, body_of(node).outputs):
            if em.src(y) != self.names(o):
                em.lines.append(f"{self.names(o)} = {em.src(y)}")


def _dtype(name: str):
    from eager import _dtypes  # noqa: PLC0415

    return _dtypes.from_name(name)


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


def generate(graph: Graph) -> tuple[str, str]:
    """(module source, one-paragraph description of how it runs)."""
    module = NumpyModule(graph)
    src = module.source()
    return src, module.describe()
