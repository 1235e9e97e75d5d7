"""Writing one op of the NumPy module as a statement (Emitter): a ufunc with `out=` into a
reused buffer, a Python expression on NumPy scalars for 0-d values (library calls aliased to
module globals), or a batch of independent 0-d calls as one array call; and the reduction
facts the generators read (combiner ufunc, division by the count).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gmops import REGISTRY
from gmops._registry import Reduction
from static.ir import Node, Value

from . import batching
from .lowering import NumpyLowering, half_in_float32, lowering_for, small_power
from .render import Names, cite, compute_dtype, fields, fill, node_line, np_dtype, py_literal

if TYPE_CHECKING:
    from .numpy_gen import NumpyModule


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
# views written as the array's method where the operand has a dim (the lowering table's fields)
_VIEW_METHOD_CALLS = {"reshape": "{0}.reshape({shape})", "squeeze": "{0}.reshape({shape})",
                      "transpose": "{0}.swapaxes({dim0}, {dim1})"}


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
        method = _VIEW_METHOD_CALLS.get(node.op)
        if method is not None and isinstance(node.inputs[0], Value) and len(node.inputs[0].type.shape) > 0:
            # an operand of one or more dims is an array (never a Python number): its method is
            # np.<function>'s work without the Python wrapper (~0.2 us against ~1 us a call; W3
            # small's step has five such views), as the native driver's library calls do
            self.lines.append(f"{outs[0]} = {fill(method, operands, f)}")
            return False
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


def _dtype(name: str):
    from gmbase import dtypes as _dtypes  # noqa: PLC0415

    return _dtypes.from_name(name)
