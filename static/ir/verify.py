"""The verifier: SSA form, known ops, and every result type equal to what the op's
abstract rule computes from its operands. It runs after tracing, parsing and every pass."""
from __future__ import annotations

import inspect
import numbers

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import REGISTRY, TensorSpec

from ..errors import IRVerifyError
from .core import Graph, Node, Value, format_literal, format_type

REGION_OPS = {"fused"}  # ops whose meaning is their body


def _where(node: Node) -> str:
    if node.line is not None:
        return f"line {node.line}: "
    if node.loc:
        return f"{node.loc}: "
    return ""


def _fail(node: Node | None, message: str) -> IRVerifyError:
    """The error, carrying the node's text line (and the node, for the parser to add a column)."""
    exc = IRVerifyError(message)
    exc.node = node
    exc.line = node.line if node is not None else None
    exc.column = None
    return exc


_MEMO: dict = {}


def _show(v) -> str:
    """A literal as the IR text writes it (repr for what the text cannot hold)."""
    try:
        return format_literal(v)
    except TypeError:
        return repr(v)


def _is_number(v) -> bool:
    return isinstance(v, (bool, np.bool_, numbers.Real)) and not isinstance(v, _dtypes.dtype)


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _ints(v) -> bool:
    return isinstance(v, (tuple, list)) and all(_is_int(d) for d in v)


# What an attribute of a given name may hold, whatever the op (an op's abstract rule checks
# the values further). Names not listed here are left to the abstract rule.
_ATTR_KINDS = {
    "value": ("a number", _is_number),
    "min": ("a number or none", lambda v: v is None or _is_number(v)),
    "max": ("a number or none", lambda v: v is None or _is_number(v)),
    "beta": ("a number", _is_number),
    "threshold": ("a number", _is_number),
    "correction": ("a number", _is_number),
    "keepdim": ("true or false", lambda v: isinstance(v, bool)),
    "dim": ("an integer", lambda v: v is None or _is_int(v)),
    "dim0": ("an integer", _is_int),
    "dim1": ("an integer", _is_int),
    "size": ("an integer or a list of integers", lambda v: _is_int(v) or _ints(v)),
    "n_index": ("a non-negative integer", lambda v: _is_int(v) and v >= 0),
    "dims": ("none, an integer or a list of integers", lambda v: v is None or _is_int(v) or _ints(v)),
    "shape": ("a list of integers", _ints),
    "sizes": ("a list of integers", _ints),
    "dtype": ("a dtype (f32, i64, ...)", lambda v: v is None or isinstance(v, _dtypes.dtype)),
    "approximate": ("a string", lambda v: isinstance(v, str)),
    "key": ("a list of index entries", lambda v: isinstance(v, (tuple, list))
            and all(isinstance(e, (tuple, list)) and e and isinstance(e[0], str) for e in v)),
}


def _check_literals(node: Node, where: str) -> None:
    """Literal operands are numbers standing for 0-d tensors, and an op reads at least one
    tensor (a graph of constants alone is built with `full`); attributes hold their kind."""
    result = node.outputs[0].name if node.outputs else "?"
    for i, v in enumerate(node.inputs):
        if not isinstance(v, Value) and not _is_number(v):
            raise _fail(node, f"{where}{node.op} producing %{result}: operand {i} is the literal {_show(v)}; "
                        "a literal operand must be a number (bool, integer or float), else pass a tensor value")
    if node.inputs and not node.input_values():
        raise _fail(node, f"{where}{node.op} producing %{result}: every operand is a literal; "
                    f"{node.op} needs a tensor value operand")
    if node.inputs and not isinstance(node.inputs[0], Value) and REGISTRY[node.op].kind != "elementwise":
        raise _fail(node, f"{where}{node.op} producing %{result}: operand 0 is the literal {_show(node.inputs[0])}; "
                    f"{node.op} reads a tensor value there")
    for name, value in node.attrs.items():
        kind = _ATTR_KINDS.get(name)
        if kind is not None and not kind[1](value):
            raise _fail(node, f"{where}{node.op} producing %{result}: attribute {name} = {_show(value)} "
                        f"must be {kind[0]}")


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
        raise _fail(node, f"{where}{node.op} producing %{result}: {exc}; {node.op} takes operands "
                    f"({', '.join(operands)}) and attributes {{{', '.join(attrs)}}}") from None
    _ARITY_OK.add(key)


def _is_symbol(d) -> bool:
    return type(d) is not int and isinstance(d, int) and not isinstance(d, bool)


def _symbolic_mismatch(declared: tuple, computed: tuple) -> bool:
    """Sizes equal in value but not as symbols (static.dynamic_shapes): a type that says 32
    where the op gives s0 (or s0 where it gives s1) would hold only for the traced size."""
    return any((_is_symbol(a) or _is_symbol(b)) and str(a) != str(b) for a, b in zip(declared, computed))


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
    _check_literals(node, _where(node))
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
            raise _fail(None, f"value %{v.name} is defined twice (SSA)")
        names.add(v.name)
        defined.add(v)
    for node in graph.nodes:
        where = _where(node)
        for v in node.input_values():
            if v not in defined:
                raise _fail(node, f"{where}value %{v.name} is used by {node.op} before it is defined")
        if node.op in REGION_OPS:
            if node.body is None:
                raise _fail(node, f"{where}{node.op} needs a body")
            if len(node.body.inputs) != len(node.inputs):
                raise _fail(node, f"{where}{node.op} passes {len(node.inputs)} operands to a body of "
                            f"{len(node.body.inputs)} parameters")
            for arg, param in zip(node.inputs, node.body.inputs):
                arg_type = arg.type if isinstance(arg, Value) else None
                if arg_type is not None and tuple(arg_type) != tuple(param.type):
                    raise _fail(node, f"{where}operand %{arg.name} of type {format_type(arg_type)} is bound "
                                f"to body parameter %{param.name} of type {format_type(param.type)}")
            for v in node.body.outputs:
                if not isinstance(v, Value):
                    raise _fail(node, f"{where}{node.op}'s body yields the literal {_show(v)}; "
                                "a body yields tensor values")
            verify(node.body, outer=None)
            expected = [v.type for v in node.body.outputs]
        else:
            if node.op not in REGISTRY:
                raise _fail(node, f"{where}unknown op '{node.op}' (result %{node.outputs[0].name if node.outputs else '?'})")
            _check_arity(node, where)
            try:
                expected = _expected_types(node)
            except IRVerifyError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure of the rule on these operands is the graph's
                raise _fail(node, f"{where}{node.op} producing %{node.outputs[0].name if node.outputs else '?'}: "
                            f"{exc}") from None
        if len(expected) != len(node.outputs):
            raise _fail(node, f"{where}{node.op} produces {len(expected)} results, but "
                        f"{len(node.outputs)} are named")
        for out, exp in zip(node.outputs, expected):
            if tuple(out.type.shape) != tuple(exp.shape) or out.type.dtype != exp.dtype \
                    or _symbolic_mismatch(out.type.shape, exp.shape):
                raise _fail(node, f"{where}%{out.name} is declared {format_type(out.type)} but {node.op} "
                            f"gives {format_type(TensorSpec(tuple(exp.shape), exp.dtype))}")
            if out.name in names:
                raise _fail(node, f"{where}value %{out.name} is defined twice (SSA)")
            names.add(out.name)
            defined.add(out)
    for v in graph.outputs:
        if not isinstance(v, Value):
            raise _fail(None, f"the graph returns the literal {_show(v)}; a graph returns tensor values")
        if v not in defined:
            raise _fail(None, f"returned value %{v.name} is not defined")
    return graph
