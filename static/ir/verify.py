"""The verifier: SSA form, known ops, and every result type equal to what the op's
abstract rule computes from its operands. It runs after tracing, parsing and every pass."""
from __future__ import annotations

import inspect

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


_MEMO: dict = {}


_ARITY_OK: set = set()  # (op, operand count, attribute names) already checked against the op's forward


def _check_arity(node: Node, where: str) -> None:
    """Operands and attributes must fit the op's forward signature (the interpreter calls
    `forward(xp, *operands, **attrs)`); an abstract rule written with **attrs would not notice
    `add %x` or a stray attribute, and the graph would only fail when run."""
    key = (node.op, len(node.inputs), tuple(sorted(node.attrs)))
    if key in _ARITY_OK:
        return
    sig = inspect.signature(REGISTRY[node.op].forward)
    try:
        sig.bind(None, *node.inputs, **node.attrs)
    except TypeError as exc:
        params = list(sig.parameters.values())[1:]
        operands = [("*" if p.kind is p.VAR_POSITIONAL else "") + p.name for p in params
                    if p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL)
                    or (p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty)]
        attrs = [p.name for p in params if p.kind is p.KEYWORD_ONLY
                 or (p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty)]
        result = node.outputs[0].name if node.outputs else "?"
        raise IRVerifyError(f"{where}{node.op} producing %{result}: {exc}; {node.op} takes operands "
                            f"({', '.join(operands)}) and attributes {{{', '.join(attrs)}}}") from None
    _ARITY_OK.add(key)


def _expected_types(node: Node) -> list:
    """The op's abstract rule on the node's operands, memoized: verification runs after
    every pass, and graphs repeat the same (op, operand types, attributes) a lot."""
    operands = tuple(v.type if isinstance(v, Value) else (type(v), v) for v in node.inputs)
    try:
        key = (node.op, operands, tuple(sorted(node.attrs.items())))
        hit = _MEMO.get(key)
    except TypeError:  # an unhashable attribute: no memo
        key, hit = None, None
    if hit is not None:
        return hit
    op = REGISTRY[node.op]
    result = op.abstract(*[v.type if isinstance(v, Value) else v for v in node.inputs], **node.attrs)
    types = [result] if isinstance(result, TensorSpec) else list(result)
    if key is not None and len(_MEMO) < 100_000:
        _MEMO[key] = types
    return types


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
            _check_arity(node, where)
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
