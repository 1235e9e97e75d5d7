"""What the two C targets share when they emit a fused region: the CuPy backend's CUDA
kernels (cupy_gen.py) and the native backend's C++ functions (native_gen).

- `KernelBody`: one C statement per IR op of a pointwise chain, from the op's one C
  expression (`CupyLowering.expr`) over the target-neutral helpers of c_helpers.py. Each
  statement carries its IR line, and every literal and operand of another type is cast to
  the type the op computes in. The targets differ only in where a value comes from (a
  kernel parameter, a load at an index), which the caller puts in `env`.
- `closure`: the nodes of a phase that compute the wanted values.
- `Driver`: the Python side of a module around its kernels: library calls for ops without
  a kernel, a region run op by op when it cannot be one kernel, and the names a region
  yields bound to the arrays the kernels made. Each target supplies only its library
  call's spelling (`lowering` and `call_line`).

Keeping these in one place means an op's C arithmetic, and the driver's treatment of a
region, cannot drift between the GPU and the CPU backends; the CUDA bodies are checked on
the host through the native path (tests/codegen/test_cuda_on_host.py)."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from gmops import REGISTRY
from static.ir import Node, Value

from .lowering import ReductionLowering, lowering_for, small_power
from .render import Names, c_literal, c_type, cite, compute_c_type, compute_dtype, fields, fill, node_line, py_literal


class KernelBody:
    """C statements for a chain of pointwise body nodes; values become locals t_<name>.

    env maps a body Value to (C expression, C type): a parameter, a load, a literal, or
    (after emit) the local holding a computed value. `lines` maps id(node) to its IR line."""

    def __init__(self, lines: dict, env: dict) -> None:
        self.ir_lines = lines
        self.env = dict(env)
        self.lines: list = []

    def operand(self, v, want: str, keep_type: bool = False) -> str:
        if not isinstance(v, Value):
            return c_literal(v, want)
        expr, ctype = self.env[v]
        if keep_type or ctype == want:
            return expr
        return f"(({want}){expr})"

    def emit(self, n: Node) -> None:
        low = lowering_for(n.op).cupy
        if low.expr is None:
            raise ValueError(f"codegen: {n.op} has no C expression; it cannot be part of a C kernel")
        out = n.outputs[0]
        T = compute_c_type(compute_dtype(n))
        R = c_type(out.type.dtype)
        masks = REGISTRY[n.op].mask_operands
        # conditions keep their own type; a cast reads its operand as it is
        operands = [self.operand(v, T, keep_type=i in masks or n.op == "to_dtype") for i, v in enumerate(n.inputs)]
        f = fields(n, operands, module="cp", T=T, R=R)
        expr = fill(low.expr, operands, f)
        power = small_power(n)
        if power is not None:  # as the NumPy backend: x**2, x**3 multiplied out
            expr = "(" + " * ".join([operands[0]] * power) + ")"
        name = "t_" + re.sub(r"\W", "_", out.name)
        self.lines.append(f"// L{self.ir_lines.get(id(n), '?')}: {node_line(n)}{cite(n)}")
        self.lines.append(f"{R} {name} = ({R})({expr});")
        self.env[out] = (name, R)


def reduction_lowering(red: Node) -> ReductionLowering:
    """The combiner, identity and finishing expression of reduction node `red`."""
    low = lowering_for(red.op).reduction
    if low is None:
        raise ValueError(f"codegen: {red.op} is not a reduction with a C lowering")
    return low


def closure(nodes: list, wanted: Iterable, known: Iterable = ()) -> tuple[list, set]:
    """(the nodes computing `wanted`, in order; every value they and `wanted` read). Values
    in `known` (already in memory) are read, not recomputed."""
    known = set(known)
    need = {v for v in wanted if v not in known}
    chain = []
    for n in reversed(nodes):
        if any(o in need for o in n.outputs):
            chain.append(n)
            need.update(v for v in n.input_values() if v not in known)
    return list(reversed(chain)), need


def yielded_by(node: Node) -> dict:
    """A region's body outputs -> the region outputs each one becomes (a value may be yielded
    twice, a region input yielded as it is)."""
    yielded: dict = {}
    assert node.body is not None, "a region node"
    for o, y in zip(node.outputs, node.body.outputs):
        yielded.setdefault(y, []).append(o)
    return yielded


class Driver:
    """The Python driver lines of a generated module that are not kernel calls. Subclasses
    set `names`, `lines` (id(node) -> IR line) and `body`, and say how a library call is
    spelled (`call_line`)."""

    names: Names
    lines: dict
    body: list

    def src(self, v) -> str:
        return self.names(v) if isinstance(v, Value) else py_literal(v)

    def comment(self, node: Node) -> None:
        self.body.append(f"# L{self.lines.get(id(node), '?')}: {node_line(node)}{cite(node)}")

    def call(self, node: Node, env: dict | None = None) -> None:
        """A library call; env maps body values to the source of their outer value."""
        env = env or {}
        operands = [env.get(v, self.src(v)) if isinstance(v, Value) else py_literal(v) for v in node.inputs]
        outs = [self.names(o) for o in node.outputs]
        line = self.call_line(node, operands, outs)
        if isinstance(line, list):
            self.body.extend(line)
        elif line is not None:
            self.body.append(line)

    def call_line(self, node: Node, operands: list, outs: list) -> str | list[str] | None:
        """The statement(s) computing node's outputs `outs` from `operands` (sources)."""
        raise NotImplementedError

    @staticmethod
    def targets(node: Node, outs: list) -> str:
        """The left side of a call's assignment (a one-element tuple for multi-output ops)."""
        return ", ".join(outs) + ("," if len(outs) == 1 and REGISTRY[node.op].multi_output else "")

    def op_by_op(self, node: Node, note: str) -> None:
        """A region that cannot be one kernel: its body's ops as library calls, in order."""
        self.body.append(note)
        body = node.body
        assert body is not None, "a region node"
        env = {p: self.src(v) for p, v in zip(body.inputs, node.inputs)}
        for n in body.nodes:
            self.comment(n)
            self.call(n, env)
            for o in n.outputs:
                env[o] = self.names(o)
        for o, y in zip(node.outputs, body.outputs):
            self.body.append(f"{self.names(o)} = {env.get(y, self.src(y)) if isinstance(y, Value) else py_literal(y)}")

    def bind_yielded(self, yielded: dict, source_of: Callable) -> None:
        """Name every region output: the array of the value it yields (`source_of(y)`, a
        Python source), unless the output already has that name."""
        for y, outs in yielded.items():
            first = source_of(y) if isinstance(y, Value) else py_literal(y)
            for o in outs:
                name = self.names(o)
                if name != first:
                    self.body.append(f"{name} = {first}")


__all__ = ["Driver", "KernelBody", "closure", "reduction_lowering", "yielded_by"]
