"""What a fused region computes, in the terms kernels need (shared by both backends).

A body is split into phases:
- prologue: pointwise ops over the iteration space (broadcasting operands allowed);
- reductions (sum, mean, amax, amin, max, min, prod) of prologue values;
- epilogue: pointwise ops on reduced values, after the reductions.
A body that does not fit (an op that is not pointwise, an epilogue reading a value at the
full iteration shape, a reduction of an epilogue value...) is `unfused`: the backends then
run its ops one by one, which is always correct.

For NumPy the iteration space is cut into row blocks: the leading `k` axes are collapsed
into one block axis (as many as every operand either spans fully or broadcasts over), so a
block is `(rows,) + space[k:]`. Values spanning the block axis are *sliced* per block;
the others are *invariant* and computed once, before the blocks.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from static.ir import Graph, Node, Value

from .lowering import lowering_for

FLOAT_KINDS = "f"


@dataclass
class Region:
    node: Node
    kind: str  # "blocked" | "scalar" | "unfused" | "rows" (analyze_rows)
    reason: str = ""
    space: tuple = ()
    k: int = 0  # leading axes collapsed into the block axis
    prologue: list = field(default_factory=list)
    reductions: list = field(default_factory=list)
    epilogue: list = field(default_factory=list)
    sliced: set = field(default_factory=set)  # body values that vary along the block axis
    binding: dict = field(default_factory=dict)  # body input -> outer operand (Value or literal)
    levels: dict = field(default_factory=dict)  # rows: body value -> the pass over a row that has it

    @property
    def body(self) -> Graph:
        return body_of(self.node)

    @property
    def nrows(self) -> int:
        # math.prod keeps a symbolic size's polynomial (static.dynamic_shapes): `s0*8` rows
        return math.prod(self.space[: self.k])

    @property
    def rest(self) -> tuple:
        return tuple(self.space[self.k:])

    def padded(self, v: Value) -> tuple:
        shape = tuple(v.type.shape)
        return (1,) * (len(self.space) - len(shape)) + shape

    def block_shape(self, v: Value) -> tuple:
        """v's shape inside a block, after the leading k axes: (rows,) + tail or tail."""
        return self.padded(v)[self.k:]

    def reduce_axes(self, red: Node) -> tuple:
        dims = red.attrs.get("dims")
        if dims is None or not self.space:  # a 0-d reduction along dim 0 reduces nothing
            return tuple(range(len(self.space)))
        return tuple(dims)

    def is_full_reduction(self, red: Node) -> bool:
        return len(self.reduce_axes(red)) == len(self.space)

    def reduces_block_axis(self, red: Node) -> bool:
        return self.is_full_reduction(red) or 0 in self.reduce_axes(red)


def _sizes(shape) -> tuple:
    """A shape as a tuple of ints, a symbolic size (an int subclass: static.dynamic_shapes)
    kept as it is."""
    return tuple(d if isinstance(d, int) else int(d) for d in shape)


def broadcast_keeping_symbols(shapes: list) -> tuple:
    """np.broadcast_shapes, keeping a symbolic size (static.dynamic_shapes) where one of the
    shapes has it: the iteration space is spelled in generated code, which must read `s0`,
    not the traced call's number. ValueError when the shapes do not broadcast."""
    space = list(np.broadcast_shapes(*[_sizes(s) for s in shapes]))
    for shape in shapes:
        for i, d in enumerate(reversed(shape)):
            j = len(space) - 1 - i
            if type(d) is not int and isinstance(d, int) and int(d) == space[j] and type(space[j]) is int:
                space[j] = d
    return tuple(space)


def body_of(node: Node) -> Graph:
    """The body of a fused node (every node the region functions see has one)."""
    assert node.body is not None, f"%{node.outputs[0].name} ({node.op}) is not a fused region"
    return node.body


def _unfused(node: Node, reason: str) -> Region:
    return Region(node=node, kind="unfused", reason=reason, binding=dict(zip(body_of(node).inputs, node.inputs)))


def analyze(node: Node, scalar_code: bool = True) -> Region:
    """Split a fused node's body into phases and choose its blocking (or say why not).
    scalar_code: an all-0-d body is run as scalar statements (NumPy) rather than a kernel."""
    body = body_of(node)
    binding = dict(zip(body.inputs, node.inputs))
    values = list(body.inputs) + [o for n in body.nodes for o in n.outputs]
    if scalar_code and all(len(v.type.shape) == 0 for v in values):
        return Region(node=node, kind="scalar", binding=binding)
    reduced: set = set()  # values computed from a reduction's result
    prologue, reductions, epilogue = [], [], []
    for n in body.nodes:
        low = lowering_for(n.op)
        reads_reduced = any(v in reduced for v in n.input_values())
        if low.reduction is not None and set(n.attrs) <= {"dims", "keepdim"}:
            x = n.inputs[0]
            if reads_reduced:
                return _unfused(node, f"%{n.outputs[0].name}: a reduction of a reduced value")
            if not isinstance(x, Value) or x.type.dtype.np.kind not in FLOAT_KINDS:
                return _unfused(node, f"%{n.outputs[0].name}: only floating-point reductions are blocked")
            reductions.append(n)
            reduced.update(n.outputs)
        elif low.pointwise and len(n.outputs) == 1:
            if reads_reduced:
                epilogue.append(n)
                reduced.update(n.outputs)
            else:
                prologue.append(n)
        else:
            return _unfused(node, f"%{n.outputs[0].name if n.outputs else '?'}: {n.op} is not pointwise")
    prologue_values = [o for n in prologue for o in n.outputs]
    read = [v for n in prologue + reductions for v in n.input_values()]
    shapes = [tuple(v.type.shape) for v in read + prologue_values]
    if not shapes:
        return _unfused(node, "no values over an iteration space")
    try:
        space = broadcast_keeping_symbols(shapes)
    except ValueError:
        return _unfused(node, "operands do not broadcast to one iteration space")
    region = Region(node=node, kind="blocked", space=space, prologue=prologue, reductions=reductions,
                    epilogue=epilogue, binding=binding)
    if len(space) == 0:
        if scalar_code:
            return _unfused(node, "a 0-d iteration space with values of other shapes")
        return region  # one kernel over 0-d arrays
    for r in reductions:
        if tuple(r.inputs[0].type.shape) != space:
            return _unfused(node, f"%{r.outputs[0].name} reduces a value that is not of the iteration shape")
    region.k = _block_axes(region, read + prologue_values)
    region.sliced = {v for v in read + prologue_values if _spans(region, v)}
    for n in epilogue:
        for v in n.input_values():
            if v in region.sliced and v not in reduced and v not in body.inputs:
                return _unfused(node, f"%{n.outputs[0].name} reads %{v.name} at the full iteration shape "
                                      "after a reduction")
    return region


def analyze_rows(node: Node) -> Region | None:
    """A row region (None where the body is not one): every reduction reduces the last axis of
    one iteration space, keeping it, and the body reads results back over the full space
    (a softmax: max, exp(x - max), its sum, the division). A row is then walked in passes:
    pass 0 computes what needs no reduction and accumulates the reductions of those values;
    pass p what needs the results of pass p - 1. `levels` maps each body value to its pass:
    an input is 0, a reduction's result one more than its operand's, anything else the
    largest of its operands'. Values per row (a reduction's result and pointwise ops on such
    results alone) are computed once a row, between the passes; every value over the full
    space is computed once, in its own pass, and read back by later passes."""
    body = body_of(node)
    binding = dict(zip(body.inputs, node.inputs))
    reductions = [n for n in body.nodes if lowering_for(n.op).reduction is not None]
    if not reductions:
        return None
    space = _sizes(reductions[0].inputs[0].type.shape)
    if not space:
        return None
    last = len(space) - 1
    per_row = space[:-1] + (1,)
    levels: dict = {v: 0 for v in body.inputs}
    prologue = []
    for n in body.nodes:
        low = lowering_for(n.op)
        if len(n.outputs) != 1:
            return None
        out = n.outputs[0]
        shape = _sizes(out.type.shape)
        level = max((levels[v] for v in n.input_values()), default=0)
        if low.reduction is not None:
            x = n.inputs[0]
            dims = n.attrs.get("dims")
            if (set(n.attrs) - {"dims", "keepdim"} or not n.attrs.get("keepdim") or dims is None
                    or [int(d) % len(space) for d in dims] != [last] or not isinstance(x, Value)
                    or _sizes(x.type.shape) != space or x.type.dtype.np.kind not in FLOAT_KINDS):
                return None
            levels[out] = level + 1
            continue
        if not low.pointwise:
            return None
        padded = (1,) * (len(space) - len(shape)) + shape
        try:
            if broadcast_keeping_symbols([padded, space]) != space:
                return None
        except ValueError:
            return None
        if level > 0 and shape not in (space, per_row):
            return None  # a value of a later pass is one per element or one per row, nothing between
        if level == 0 and padded[-1] == 1 and any(v.producer is not None for v in n.input_values()):
            return None  # computed per row before any reduction: not a shape the passes know
        levels[out] = level
        prologue.append(n)
    if max(levels.values()) < 1 or not any(
            levels[v] > 0 and _sizes(v.type.shape) == space for v in levels):
        return None  # nothing reads a reduction back over the space: the blocked kinds fit it
    return Region(node=node, kind="rows", space=space, k=last, prologue=prologue, reductions=reductions,
                  binding=binding, levels=levels)


def with_block_axes(region: Region, k: int) -> Region:
    """The region blocked over its leading k axes instead (k at most the k it chose: every
    value spans the first k axes or none of them), so that it can run in the row blocks of
    a region before it with that blocking."""
    assert region.kind == "blocked" and 1 <= k <= region.k
    values = [v for n in region.prologue + region.reductions for v in n.input_values()]
    values += [o for n in region.prologue for o in n.outputs]
    out = replace(region, k=k)
    out.sliced = {v for v in values if _spans(out, v)}
    return out


def _spans(region: Region, v: Value) -> bool:
    """Whether v varies along the block axis (spans all k leading axes of the space)."""
    return region.padded(v)[: region.k] == region.space[: region.k]


def _block_axes(region: Region, values: list) -> int:
    """How many leading axes to collapse: each value must span all of them or none."""
    space = region.space
    if any(not region.is_full_reduction(r) for r in region.reductions):
        return 1
    best = 1
    for k in range(2, len(space) + 1):
        ok = True
        for v in values:
            p = region.padded(v)[:k]
            if p != space[:k] and any(s != 1 for s in p):
                ok = False
                break
        if not ok:
            break
        best = k
    return best


def bind_symbols(graph: Graph, names: Callable[[Value], str]) -> list:
    """Lines binding each symbolic size of the graph (`s0`) from the shape of an input that
    has it as a dimension (locals: a function that needs them takes them as arguments). A symbol
    that no input has as a whole dimension cannot be bound: ValueError (the caller compiles
    that graph for fixed sizes instead)."""
    bound: dict = {}
    wanted: set = set()
    for v in graph.inputs:
        for d, size in enumerate(v.type.shape):
            if type(size) is not int and isinstance(size, int):
                symbols = {s for m in (getattr(size, "poly", None) or {}) for s in m}
                wanted |= symbols
                text = str(size)
                if text.isidentifier() and text not in bound:
                    bound[text] = f"{names(v)}.shape[{d}]"
    for node in graph.nodes:
        for o in node.outputs:
            for size in o.type.shape:
                if type(size) is not int and isinstance(size, int):
                    wanted |= {s for m in (getattr(size, "poly", None) or {}) for s in m}
    missing = sorted(wanted - set(bound))
    if missing:
        raise ValueError(f"codegen: the symbolic size(s) {', '.join(missing)} are no input's dimension")
    if not bound:
        return []
    return [f"{s} = {where}  # a symbolic size, read from the input" for s, where in bound.items()]
