"""`parse_ir(text) -> Graph`: the inverse of `str(graph)`, verified on the way out.

The grammar lives beside this file (grammar.lark). Nothing in the text is ever evaluated
as Python: literals are built from tokens."""
from __future__ import annotations

import functools
import json
from importlib import resources

from lark import Lark, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from eager import _dtypes
from eager.ops import TensorSpec

from ..errors import IRParseError, IRVerifyError
from .core import Graph, Node, Value, format_type
from .verify import verify

_DTYPES = {_dtypes.short_name(d): d for d in _dtypes.ALL}


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("static.ir").joinpath("grammar.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


class _Literal:
    """Literals from tokens; lists become tuples, as attributes are stored."""


@v_args(inline=True)
class _ToPython(Transformer):
    def int_lit(self, tok):
        return int(tok)

    def float_lit(self, tok):
        return float(tok)

    def inf_lit(self):
        return float("inf")

    def ninf_lit(self):
        return float("-inf")

    def nan_lit(self):
        return float("nan")

    def true_lit(self):
        return True

    def false_lit(self):
        return False

    def none_lit(self):
        return None

    def str_lit(self, tok):
        return json.loads(tok)

    def dtype_lit(self, tok):
        return _DTYPES[str(tok)]

    def list_lit(self, *items):
        return tuple(i for i in items if i is not _NOTHING) if items != (None,) else ()


_NOTHING = object()


class _Builder:
    """Walks the parse tree, binding names to Values in SSA scope."""

    def __init__(self) -> None:
        self.lit = _ToPython()

    def build(self, tree) -> Graph:
        func = tree.children[0]
        name_tok, params, results, *rest = func.children
        *node_trees, ret = rest
        g = Graph(name=str(name_tok)[1:])
        scope: dict = {}
        g.inputs = self._params(params, scope)
        for nt in node_trees:
            g.nodes.append(self._node(nt, scope))
        g.outputs = self._operands(ret, scope, ret)
        self.declared = self._results(results)
        self.return_line = ret.meta.line if ret is not None and not ret.meta.empty else None
        return g

    def check_results(self, g: Graph) -> None:
        """The signature's declared result types against what `return` returns (after the
        nodes are verified, so a wrong node type is reported at its own line)."""
        actual = [v.type for v in g.outputs if isinstance(v, Value)]
        if [tuple(t) for t in self.declared] != [tuple(t) for t in actual]:
            where = f"line {self.return_line}: " if self.return_line else ""
            declared = ", ".join(format_type(t) for t in self.declared)
            returned = ", ".join(f"%{v.name}: {format_type(v.type)}" for v in g.outputs if isinstance(v, Value))
            raise IRVerifyError(f"{where}the function declares results ({declared}) but returns ({returned})")

    def _type(self, tree) -> TensorSpec:
        dtype_tok, *dims = tree.children
        return TensorSpec(tuple(int(d) for d in dims if d is not None), _DTYPES[str(dtype_tok)])

    def _results(self, tree):
        return [self._type(t) for t in tree.children if t is not None]

    def _params(self, tree, scope) -> list:
        if tree is None:
            return []
        values = []
        for p in tree.children:
            tok, ty = p.children
            name = str(tok)[1:]
            if name in scope:
                raise IRVerifyError(f"line {tok.line}: value %{name} is defined twice")
            v = Value(name, self._type(ty))
            scope[name] = v
            values.append(v)
        return values

    def _operands(self, tree, scope, where) -> list:
        if tree is None:
            return []
        out = []
        for item in tree.children:
            if hasattr(item, "data") and item.data == "value_ref":
                tok = item.children[0]
                name = str(tok)[1:]
                if name not in scope:
                    raise IRVerifyError(f"line {tok.line}: value %{name} is used but never defined before this line")
                out.append(scope[name])
            else:
                out.append(self.lit.transform(item) if hasattr(item, "data") else item)
        return out

    def _node(self, tree, scope) -> Node:
        lhs, op_tok, operands, attrs, types, body = tree.children
        node = Node(op=str(op_tok), inputs=self._operands(operands, scope, tree), attrs={}, line=op_tok.line)
        if attrs is not None:
            for a in attrs.children:
                if a is None:
                    continue
                key, value = a.children
                node.attrs[str(key)] = self.lit.transform(value) if hasattr(value, "data") else value
        if body is not None:
            node.body = self._body(body, scope)
        out_types = [self._type(t) for t in types.children]
        names = [str(t)[1:] for t in lhs.children]
        if len(names) != len(out_types):
            raise IRVerifyError(f"line {op_tok.line}: {len(names)} results named but {len(out_types)} types given")
        for i, (name, ty) in enumerate(zip(names, out_types)):
            if name in scope:
                raise IRVerifyError(f"line {op_tok.line}: value %{name} is defined twice (SSA)")
            v = Value(name, ty, node, i)
            scope[name] = v
            node.outputs.append(v)
        return node

    def _body(self, tree, outer_scope) -> Graph:
        params, *rest = tree.children
        *node_trees, yielded = rest
        scope = dict(outer_scope)
        g = Graph(name="body")
        g.inputs = self._params(params, scope)
        for nt in node_trees:
            g.nodes.append(self._node(nt, scope))
        g.outputs = self._operands(yielded, scope, yielded)
        return g


_TERMINAL_WORDS = {"DTYPE": "a dtype (f32, i64, ...)", "FUNCNAME": "a function name (@name)", "VALUE": "a value (%name)",
                   "OPNAME": "an op name", "ATTRNAME": "an attribute name", "SIGNED_INT": "an integer",
                   "SIGNED_FLOAT": "a float", "INT": "an integer", "ESCAPED_STRING": "a string", "$END": "end of input"}


def _readable(names) -> str:
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
    src = text.splitlines()[line - 1] if 0 < line <= len(text.splitlines()) else ""
    pointer = " " * max(col - 1, 0) + "^"
    if isinstance(exc, UnexpectedToken):
        found = "end of input" if exc.token.type == "$END" else repr(str(exc.token))
        what = f"unexpected {found}; expected {_readable(exc.accepts or exc.expected)}"
    elif isinstance(exc, UnexpectedCharacters):
        allowed = f"; expected {_readable(exc.allowed)}" if exc.allowed else ""
        what = f"unexpected character {text[exc.pos_in_stream]!r}{allowed}"
    else:
        what = "unexpected end of input"
    return f"line {line}:{col}: {what}\n  {src}\n  {pointer}"


def parse_ir(text: str) -> Graph:
    """Parse IR text into a verified Graph. Bad syntax -> IRParseError (a ValueError) with
    line:column; a well-formed but invalid graph -> IRVerifyError (a ValueError)."""
    try:
        tree = _parser().parse(text)
    except UnexpectedEOF as exc:
        lines = text.splitlines() or [""]
        raise IRParseError(f"line {len(lines)}:{len(lines[-1]) + 1}: unexpected end of input; "
                           f"expected {_readable(exc.expected)}", len(lines), len(lines[-1]) + 1) from None
    except UnexpectedInput as exc:
        raise IRParseError(_describe(exc, text), exc.line, exc.column) from None
    builder = _Builder()
    graph = builder.build(tree)
    verify(graph)
    builder.check_results(graph)
    return graph
