"""`parse_ir(text) -> Graph`: the inverse of `str(graph)`, verified on the way out.

The grammar lives beside this file (grammar.lark). The contract: whatever the text, parsing
raises only IRParseError or IRVerifyError (both ValueError) carrying a line and column,
never evaluates the text as Python, never recurses without bound (nesting is limited), and
never allocates by the sizes it reads (shapes are numbers; abstract rules work on specs)."""
from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable
from importlib import resources
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from gmbase import dtypes as _dtypes
from gmops import TensorSpec

from ..errors import IRParseError, IRVerifyError
from .core import Graph, Node, Value, format_literal, format_type
from .verify import verify

_DTYPES = {_dtypes.short_name(d): d for d in _dtypes.ALL}

# A node of lark's parse tree (a Tree or a Token): the grammar fixes which one each position
# holds, which lark's own types (children: list[Tree | Token]) cannot say.
ParseNode = Any

MAX_NESTING = 64  # list literals inside list literals, fused bodies inside fused bodies
MAX_INT_DIGITS = 100  # an integer literal or dimension longer than this is refused
MAX_ELEMENTS = 2**63 - 1  # a declared type with more elements than an int64 can count is refused


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("static.ir").joinpath("grammar.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def _at(item: ParseNode) -> tuple[int | None, int | None]:
    """(line, column) of a token or tree, (None, None) when lark recorded none."""
    if isinstance(item, Token):
        return item.line, item.column
    if isinstance(item, Tree) and not item.meta.empty:
        return item.meta.line, item.meta.column
    return None, None


def _error(item: ParseNode, message: str) -> IRParseError:
    line, column = _at(item)
    where = f"line {line}:{column}: " if line is not None else ""
    return IRParseError(where + message, line, column)


def _int(tok: Token) -> int:
    digits = str(tok).lstrip("-")
    if len(digits) > MAX_INT_DIGITS:
        raise _error(tok, f"integer literal of {len(digits)} digits; at most {MAX_INT_DIGITS} are allowed")
    return int(tok)


def _string(tok: Token) -> str:
    try:
        value = json.loads(str(tok))
    except ValueError as exc:  # a bad escape (\q), a raw control character, a lone backslash
        raise _error(tok, f"bad string literal {str(tok)[:40]!r}: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    if not isinstance(value, str):
        raise _error(tok, f"bad string literal {str(tok)[:40]!r}")
    return value


_CONSTANTS = {"inf_lit": float("inf"), "ninf_lit": float("-inf"), "nan_lit": float("nan"),
              "true_lit": True, "false_lit": False, "none_lit": None}


def _literal(item: ParseNode, depth: int = 0) -> Any:
    """A literal from its parse tree: numbers, strings, dtypes and (nested) lists as tuples."""
    if depth > MAX_NESTING:
        raise _error(item, f"list literal nested more than {MAX_NESTING} deep")
    kind = item.data
    if kind in _CONSTANTS:
        return _CONSTANTS[kind]
    if kind == "list_lit":
        return tuple(_literal(c, depth + 1) for c in item.children if c is not None)
    (tok,) = item.children
    if kind == "int_lit":
        return _int(tok)
    if kind == "float_lit":
        return float(tok)  # a float token never fails: out of range gives inf, as Python reads it
    if kind == "str_lit":
        return _string(tok)
    if kind == "dtype_lit":
        return _DTYPES[str(tok)]
    if kind == "sym_lit":
        return _symbolic(tok)
    raise _error(item, f"unknown literal {kind}")  # grammar and parser out of step


_SYMBOL_HINTS: dict[str, int] = {}  # per parse: symbol name -> the size it stands for while verifying
_HINTS = (101, 103, 107, 109, 113, 127, 131, 137, 139, 149, 151, 157)


def _symbolic(tok: Token) -> Any:
    """A symbolic size (`s0`, `2*s0+4`, `s0*s1`: static.dynamic_shapes' polynomial text) as a
    SymInt. Each symbol stands for a distinct prime while the graph is verified, so that two
    symbols never look equal by accident."""
    from ..tracing.symbolic import SymInt  # noqa: PLC0415  (a leaf module: no import cycle)

    text = str(tok)
    total: Any = 0
    for sign, term in _terms(text):
        value: Any = sign
        for factor in term.split("*"):
            if factor.isdigit() and len(factor) <= MAX_INT_DIGITS:
                value = value * int(factor)
            elif factor.isidentifier():
                hint = _SYMBOL_HINTS.setdefault(factor, _HINTS[len(_SYMBOL_HINTS) % len(_HINTS)]
                                                + 1000 * (len(_SYMBOL_HINTS) // len(_HINTS)))
                value = value * SymInt.symbol(factor, hint)
            else:
                raise _error(tok, f"bad symbolic size {text!r}: write a polynomial such as 2*s0+4")
        total = total + value
    return total


def _terms(text: str) -> list[tuple[int, str]]:
    """'2*s0-s1+4' -> [(1, '2*s0'), (-1, 's1'), (1, '4')]."""
    out, sign, start = [], 1, 0
    for i, ch in enumerate(text):
        if ch in "+-" and i > start:
            out.append((sign, text[start:i]))
            sign, start = (1 if ch == "+" else -1), i + 1
        elif ch in "+-":
            sign, start = (1 if ch == "+" else -1) * sign, i + 1
    out.append((sign, text[start:]))
    return [(s, t) for s, t in out if t]


class _Builder:
    """Walks the parse tree, binding names to Values in SSA scope."""

    def __init__(self) -> None:
        self.columns: dict[int, int] = {}  # id(node) -> column of its op name, for verify errors

    def build(self, tree: ParseNode) -> Graph:
        func = tree.children[0]
        name_tok, params, results, *rest = func.children
        *node_trees, ret = rest
        g = Graph(name=str(name_tok)[1:])
        scope: dict[str, Value] = {}
        g.inputs = self._params(params, scope)
        for nt in node_trees:
            g.nodes.append(self._node(nt, scope, 0))
        g.outputs = self._operands(ret, scope)
        self.declared = self._results(results)
        self.return_at = _at(ret) if ret is not None else (None, None)
        for item, v in zip(ret.children if ret is not None else (), g.outputs):
            if not isinstance(v, Value):
                line, column = _at(item)
                exc = IRVerifyError(f"line {line}: the function returns the literal {format_literal(v)}; "
                                    "a function returns tensor values (make a tensor with full)")
                exc.line, exc.column = line, column
                raise exc
        return g

    def check_results(self, g: Graph) -> None:
        """The signature's declared result types against what `return` returns (after the
        nodes are verified, so a wrong node type is reported at its own line)."""
        actual = [tuple(v.type) if isinstance(v, Value) else None for v in g.outputs]
        if [tuple(t) for t in self.declared] != actual:
            line, column = self.return_at
            where = f"line {line}: " if line else ""
            declared = ", ".join(format_type(t) for t in self.declared)
            returned = ", ".join(f"%{v.name}: {format_type(v.type)}" if isinstance(v, Value)
                                 else f"literal {format_literal(v)}" for v in g.outputs)
            exc = IRVerifyError(f"{where}the function declares results ({declared}) but returns ({returned})")
            exc.line, exc.column = line, column
            raise exc

    def _type(self, tree: ParseNode) -> TensorSpec:
        dtype_tok, *dims = tree.children
        shape = tuple(_symbolic(d) if d.type == "SYMDIM" else _int(d) for d in dims if d is not None)
        if math.prod(shape) > MAX_ELEMENTS:
            raise _error(tree, f"type {str(dtype_tok)}{list(shape)} has more elements than an int64 can count")
        return TensorSpec(shape, _DTYPES[str(dtype_tok)])

    def _results(self, tree: ParseNode) -> list[TensorSpec]:
        return [self._type(t) for t in tree.children if t is not None]

    def _params(self, tree: ParseNode, scope: dict[str, Value]) -> list[Value]:
        if tree is None:
            return []
        values = []
        for p in tree.children:
            tok, ty = p.children
            name = str(tok)[1:]
            if name in scope:
                exc = IRVerifyError(f"line {tok.line}: value %{name} is defined twice")
                exc.line, exc.column = tok.line, tok.column
                raise exc
            v = Value(name, self._type(ty))
            scope[name] = v
            values.append(v)
        return values

    def _operands(self, tree: ParseNode, scope: dict[str, Value]) -> list[Any]:
        if tree is None:
            return []
        out = []
        for item in tree.children:
            if isinstance(item, Tree) and item.data == "value_ref":
                tok = item.children[0]
                assert isinstance(tok, Token)  # the grammar's value_ref is one VALUE token
                name = str(tok)[1:]
                if name not in scope:
                    exc = IRVerifyError(f"line {tok.line}: value %{name} is used but never defined before this line")
                    exc.line, exc.column = tok.line, tok.column
                    raise exc
                out.append(scope[name])
            else:
                out.append(_literal(item))
        return out

    def _node(self, tree: ParseNode, scope: dict[str, Value], depth: int) -> Node:
        lhs, op_tok, operands, attrs, types, body = tree.children
        node = Node(op=str(op_tok), inputs=self._operands(operands, scope), attrs={}, line=op_tok.line)
        self.columns[id(node)] = op_tok.column
        if attrs is not None:
            for a in attrs.children:
                if a is None:
                    continue
                key, value = a.children
                if str(key) in node.attrs:
                    raise _error(key, f"attribute {key} is given twice")
                node.attrs[str(key)] = _literal(value)
        if body is not None:
            if depth >= MAX_NESTING:
                raise _error(body, f"bodies nested more than {MAX_NESTING} deep")
            node.body = self._body(body, scope, depth + 1)
        out_types = [self._type(t) for t in types.children]
        names = [str(t)[1:] for t in lhs.children]
        if len(names) != len(out_types):
            exc = IRVerifyError(f"line {op_tok.line}: {len(names)} results named but {len(out_types)} types given")
            exc.line, exc.column = op_tok.line, op_tok.column
            raise exc
        for i, (name, ty) in enumerate(zip(names, out_types)):
            if name in scope:
                exc = IRVerifyError(f"line {op_tok.line}: value %{name} is defined twice (SSA)")
                exc.line, exc.column = op_tok.line, op_tok.column
                raise exc
            v = Value(name, ty, node, i)
            scope[name] = v
            node.outputs.append(v)
        return node

    def _body(self, tree: ParseNode, outer_scope: dict[str, Value], depth: int) -> Graph:
        params, *rest = tree.children
        *node_trees, yielded = rest
        scope = dict(outer_scope)
        g = Graph(name="body")
        g.inputs = self._params(params, scope)
        for nt in node_trees:
            g.nodes.append(self._node(nt, scope, depth))
        g.outputs = self._operands(yielded, scope)
        return g


_TERMINAL_WORDS = {"DTYPE": "a dtype (f32, i64, ...)", "FUNCNAME": "a function name (@name)", "VALUE": "a value (%name)",
                   "OPNAME": "an op name", "ATTRNAME": "an attribute name", "SIGNED_INT": "an integer",
                   "SIGNED_FLOAT": "a float", "INT": "an integer", "ESCAPED_STRING": "a string", "$END": "end of input"}


def _readable(names: Iterable[str]) -> str:
    """Lark's terminal names as a reader would say them: `'{'` rather than LBRACE."""
    terminals = {t.name: t for t in _parser().terminals}
    words = set()
    for name in names:
        t = terminals.get(name)
        if name in _TERMINAL_WORDS:
            words.add(_TERMINAL_WORDS[name])
        elif t is not None and t.pattern.type == "str":
            words.add(repr(t.pattern.value))
        else:
            words.add(name)
    return ", ".join(sorted(words))


def _describe(exc: UnexpectedInput, text: str) -> str:
    line, col = exc.line, exc.column
    lines = text.splitlines()
    src = lines[line - 1] if 0 < line <= len(lines) else ""
    pointer = " " * max(col - 1, 0) + "^"
    if isinstance(exc, UnexpectedToken):
        found = "end of input" if exc.token.type == "$END" else repr(str(exc.token)[:40])
        what = f"unexpected {found}; expected {_readable(exc.accepts or exc.expected)}"
    elif isinstance(exc, UnexpectedCharacters):
        allowed = f"; expected {_readable(exc.allowed)}" if exc.allowed else ""
        what = f"unexpected character {exc.char!r}{allowed}"
    else:
        what = "unexpected end of input"
    return f"line {line}:{col}: {what}\n  {src[:200]}\n  {pointer[:201]}"


def parse_ir(text: str) -> Graph:
    """Parse IR text into a verified Graph. Bad syntax -> IRParseError (a ValueError) with
    line:column; a well-formed but invalid graph -> IRVerifyError (a ValueError) naming the
    line; both carry `.line` and `.column`."""
    if not isinstance(text, str):
        raise TypeError(f"parse_ir: expected IR text (str), got {type(text).__name__}")
    try:
        tree = _parser().parse(text)
    except UnexpectedEOF as exc:
        lines = text.splitlines() or [""]
        raise IRParseError(f"line {len(lines)}:{len(lines[-1]) + 1}: unexpected end of input; "
                           f"expected {_readable(exc.expected)}", len(lines), len(lines[-1]) + 1) from None
    except UnexpectedInput as exc:
        raise IRParseError(_describe(exc, text), exc.line, exc.column) from None
    builder = _Builder()
    _SYMBOL_HINTS.clear()
    graph = builder.build(tree)
    try:
        verify(graph)
    except IRVerifyError as exc:
        node = getattr(exc, "node", None)
        if node is not None and getattr(exc, "column", None) is None:
            exc.line, exc.column = node.line, builder.columns.get(id(node))
        raise
    builder.check_results(graph)
    return graph
