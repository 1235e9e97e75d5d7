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

This module is the module's driver (NumpyModule: constants, regions, the module's text);
one op's statement is written by `codegen.numpy_emit`, a blocked region's function by
`codegen.numpy_blocked`.
"""
from __future__ import annotations

import math

import re


from static.ir import Graph, Node, Value

from gmbase import settings
from . import batching
from .lowering import lowering_for, small_power
from .memory import BufferPlanner
from .regions import Region, analyze, bind_symbols, body_of, with_block_axes
from .render import Names, entry_name, line_numbers, np_dtype, py_literal
from .templates import render

from .numpy_blocked import BlockedRegion, _BlockLoop, _elements
from .numpy_emit import Emitter, _dtype, _is_scalar_node


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



def generate(graph: Graph) -> tuple[str, str]:
    """(module source, one-paragraph description of how it runs)."""
    module = NumpyModule(graph)
    src = module.source()
    return src, module.describe()
