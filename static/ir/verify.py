"""The verifier: SSA form, known ops, and every result type equal to what the op's
abstract rule computes from its operands. It runs after tracing, parsing and every pass."""
from __future__ import annotations

from eager.ops import REGISTRY, TensorSpec

from ..errors import IRVerifyError
from .core import Graph, Node, Value, format_type

REGION_OPS = {"fused"}  # ops whose meaning is their body


def _where(node: Node) -> str:
    if node.line is not None:
        return f"line {node.line}: "
    if node.loc:
        return f"{node.loc}: "
    return ""


def _expected_types(node: Node) -> list:
    op = REGISTRY[node.op]
    operands = [v.type if isinstance(v, Value) else v for v in node.inputs]
    result = op.abstract(*operands, **node.attrs)
    return [result] if isinstance(result, TensorSpec) else list(result)


def verify(graph: Graph, outer: set | None = None) -> Graph:
    """Raise IRVerifyError naming the value and line of the first problem; return graph."""
    defined: set = set(outer or ())
    names: set = set()
    for v in graph.inputs:
        if v.name in names:
            raise IRVerifyError(f"value %{v.name} is defined twice (SSA)")
        names.add(v.name)
        defined.add(v)
    for node in graph.nodes:
        where = _where(node)
        for v in node.input_values():
            if v not in defined:
                raise IRVerifyError(f"{where}value %{v.name} is used by {node.op} before it is defined")
        if node.op in REGION_OPS:
            if node.body is None:
                raise IRVerifyError(f"{where}{node.op} needs a body")
            if len(node.body.inputs) != len(node.inputs):
                raise IRVerifyError(f"{where}{node.op} passes {len(node.inputs)} operands to a body of "
                                    f"{len(node.body.inputs)} parameters")
            for arg, param in zip(node.inputs, node.body.inputs):
                arg_type = arg.type if isinstance(arg, Value) else None
                if arg_type is not None and tuple(arg_type) != tuple(param.type):
                    raise IRVerifyError(f"{where}operand %{arg.name} of type {format_type(arg_type)} is bound "
                                        f"to body parameter %{param.name} of type {format_type(param.type)}")
            verify(node.body, outer=None)
            expected = [v.type for v in node.body.outputs]
        else:
            if node.op not in REGISTRY:
                raise IRVerifyError(f"{where}unknown op '{node.op}' (result %{node.outputs[0].name if node.outputs else '?'})")
            try:
                expected = _expected_types(node)
            except (TypeError, ValueError, RuntimeError, IndexError, KeyError) as exc:
                raise IRVerifyError(f"{where}{node.op} producing %{node.outputs[0].name if node.outputs else '?'}: "
                                    f"{exc}") from None
        if len(expected) != len(node.outputs):
            raise IRVerifyError(f"{where}{node.op} produces {len(expected)} results, but "
                                f"{len(node.outputs)} are named")
        for out, exp in zip(node.outputs, expected):
            if tuple(out.type.shape) != tuple(exp.shape) or out.type.dtype != exp.dtype:
                raise IRVerifyError(f"{where}%{out.name} is declared {format_type(out.type)} but {node.op} "
                                    f"gives {format_type(TensorSpec(tuple(exp.shape), exp.dtype))}")
            if out.name in names:
                raise IRVerifyError(f"{where}value %{out.name} is defined twice (SSA)")
            names.add(out.name)
            defined.add(out)
    for v in graph.outputs:
        if isinstance(v, Value) and v not in defined:
            raise IRVerifyError(f"returned value %{v.name} is not defined")
    return graph
