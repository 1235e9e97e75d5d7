"""Graph breaks: a compiled function that meets something a trace cannot go through (`.item()`,
`bool()` of a tensor, `.tolist()`, a boolean mask, `nonzero`, a function marked with
eager.compiler.disable, any other TraceError) keeps the rest compiled.

Design: split the function's source at the statement that broke. The trace of the whole
function fails at a line of the function's own body (the traceback says which); the body is
cut there into
- the statements before it: a function of the original parameters that returns the live
  local variables, compiled with the same options (its own signatures, guards, dynamic
  shapes, and a training step's backward and optimizer step inside it);
- the statement itself, run as plain Python on real tensors (so `.item()` is a number,
  `print` prints, a list grows): only that statement, not the function;
- the statements after it, a function of the live variables, compiled again (and split
  again where it breaks). An `if` whose test broke runs its test in Python and continues in
  one compiled function per side: the Python's decision chooses the piece, which is the
  guard on it. Gradients flow across the pieces through eager's autograd (each compiled
  piece is a CompiledFunction).

Why the source and not lazy values: a lazy-value design re-runs the whole Python function
on recording values at every call, which costs about what a trace costs (several ms for a
training step: more than the compiled step itself); the source split runs the function's
own Python only for the breaking statement, so a step that logs `loss.item()` keeps its
compiled graph and pays one extra compiled call (tens of microseconds, see
benchmarks/graph_break_bench.py). The pieces are made once per breaking line and reused
for every signature. What is not split runs eagerly as before, with the warning: a break
inside a generator, a function with `global`/`nonlocal` declarations or zero-argument
`super()`, a function whose source is not available, a `return` inside a breaking loop or
`with` block, keyword-only arguments, and a training step cut between `zero_grad()` (or a
`step()`/`backward()`) and a `backward()` after the break (the compiled piece's `.grad`
bookkeeping, static.training, assumes the backward is in its own trace).

`fullgraph=True` never splits: the TraceError is raised as before. Each break is logged on
`graphmode.graph_breaks` (GRAPHMODE_LOGS=graph_breaks) with its user line and reason, and
listed by explain()."""
from __future__ import annotations

import ast
import inspect
import logging
import sys
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import TraceError

log = logging.getLogger("graphmode.graph_breaks")


def break_graph(fn: Callable, args: tuple, kwargs: dict, reason: str) -> Any:
    """The trace cannot go through `fn(*args, **kwargs)` (a function marked with disable()):
    TraceError saying why; the compiled caller splits around the statement that called it."""
    raise TraceError(f"graph break: {reason}")


class _Sentinel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


UNBOUND = _Sentinel("<unbound>")  # a live variable the statements before did not assign
RETURNED = _Sentinel("<returned>")  # the breaking statement returned from the function


@dataclass
class Break:
    """One graph break: where (the user's file:line) and why."""

    where: str
    reason: str
    statement: str  # the source of the statement that runs in Python

    def __str__(self) -> str:
        return f"{self.where}: {self.reason} (runs in Python: {self.statement})"


@dataclass
class Breaks:
    """The graph breaks of one compiled function: its splits by breaking line."""

    splits: dict = field(default_factory=dict)  # line -> Split
    breaks: list = field(default_factory=list)
    refused: dict = field(default_factory=dict)  # line -> why no split

    @property
    def segments_seen(self) -> bool:
        return bool(self.splits)

    def segment_graphs(self) -> list:
        graphs = []
        for split in self.splits.values():
            graphs += split.graphs()
        return graphs

    def clear(self) -> None:
        self.splits.clear()
        self.breaks.clear()
        self.refused.clear()


def breaks_of(compiled: Any) -> Breaks:
    found = compiled.__dict__.get("_graph_breaks")
    if found is None:
        found = compiled.__dict__["_graph_breaks"] = Breaks()
    return found


# -- running -------------------------------------------------------------------------------------

def run_uncompiled(compiled: Any, key: Any, args: tuple) -> Any:
    """A call whose signature has no compiled entry: its split when it broke, else the
    function itself (eagerly)."""
    state = compiled.__dict__.get("_graph_breaks")
    if state is not None:
        split = state.splits.get(state_key(compiled, key))
        if split is not None:
            return split(args)
    return compiled._call_traceable(args)


def state_key(compiled: Any, key: Any) -> Any:
    keyed = compiled.__dict__.get("_graph_break_keys")
    return None if keyed is None else keyed.get(key)


@dataclass
class Split:
    """The pieces of a function split at one breaking statement."""

    prefix: Any  # compiled function of the parameters -> live values (None: nothing before)
    middle: Callable  # Python: live values -> (RETURNED, value) | (None, live values) | bool (an if)
    rest: Any  # compiled function of the live values (None: nothing after)
    branches: tuple | None  # an if: (compiled true side, compiled false side)
    prefix_out: tuple  # names the prefix returns
    middle_out: tuple  # names the middle returns (the rest's parameters)
    bind_self: Any = None  # a compiled module: its forward's self
    # a break at the first statement: Python binding the call's arguments (defaults, *args) to
    # the live values the middle takes, in its order (names sorted, unused parameters dropped)
    bind: Callable | None = None

    def __call__(self, args: tuple) -> Any:
        if self.bind_self is not None:
            args = (self.bind_self, *args)
        if self.prefix is not None:
            live = _run_piece(self.prefix, args)
        else:
            live = self.bind(*args) if self.bind is not None else args
        if self.branches is not None:
            side = self.branches[0] if self.middle(*live) else self.branches[1]
            return _run_piece(side, live)
        flag, out = self.middle(*live)
        if flag is RETURNED:
            return out
        return _run_piece(self.rest, out) if self.rest is not None else None

    def graphs(self) -> list:
        out = []
        for piece in (self.prefix, self.rest, *(self.branches or ())):
            if piece is None or not hasattr(piece, "entries"):
                continue
            for entry in piece.entries():
                graph = getattr(entry, "graph", None)
                if graph is not None:
                    out.append(graph)
        return out


def _run_piece(piece: Any, args: tuple) -> Any:
    """Call a compiled piece. A piece whose trace fails with an error that is not a graph
    break (a `loss.backward()` after the break, on a loss the piece before made: the trace
    cannot reach that history) runs its Python eagerly from then on, as the function would
    without compile; an error the Python itself raises is the function's own."""
    if piece.__dict__.get("_graph_break_eager"):
        return piece.__wrapped__(*args)
    try:
        return piece(*args)
    except TraceError:
        raise
    except Exception as exc:  # noqa: BLE001 - decided below: the Python's own error is raised again
        if piece.compile_seconds and piece.entries():
            raise  # it ran compiled before: the error is the call's
        piece.__dict__["_graph_break_eager"] = True
        log.debug("%s: runs eagerly (its trace failed: %s)", piece.__name__, exc)
        return piece.__wrapped__(*args)


# -- splitting -----------------------------------------------------------------------------------

def split_at_break(compiled: Any, key: Any, args: tuple, exc: TraceError) -> bool:
    """Split the compiled function at the statement where this trace broke (see the module
    docstring); True when calls with this key now run the split."""
    if compiled.fallback != "eager" or compiled.fullgraph or compiled._needs_binding:
        return False
    fn, bind_self = _function_of(compiled)
    if fn is None:
        return False
    state = breaks_of(compiled)
    line = _break_line(exc, fn.__code__)
    if line is None:
        return False
    split = state.splits.get(line)
    if split is None:
        if line in state.refused:
            return False
        try:
            split, statement = _make_split(compiled, fn, line)
        except _CannotSplit as why:
            state.refused[line] = str(why)
            log.debug("%s: cannot split at %s:%d (%s): runs eagerly", compiled.__name__, fn.__code__.co_filename,
                      line, why)
            return False
        split.bind_self = bind_self
        state.splits[line] = split
        reason = _short(str(exc))
        brk = Break(f"{fn.__code__.co_filename}:{line}", reason, statement)
        state.breaks.append(brk)
        log.debug("%s: graph break at %s", compiled.__name__, brk)
    compiled.__dict__.setdefault("_graph_break_keys", {})[key] = line
    return True


class _CannotSplit(Exception):
    pass


def _short(message: str) -> str:
    """The reason of a TraceError without its location (the break names it) and advice."""
    message = message.replace("graph break: ", "")
    head, sep, rest = message.partition(": ")
    if sep and ":" in head and head.rsplit(":", 1)[-1].isdigit():  # "file.py:12: reason"
        message = rest
    return message.split(". ")[0].rstrip(".")


def _function_of(compiled: Any) -> tuple:
    target = compiled._traceable
    module = compiled.__dict__.get("_module")
    if module is not None:
        forward = type(module).forward
        return (forward if inspect.isfunction(forward) else None), module
    return (target if inspect.isfunction(target) else None), None


def _break_line(exc: BaseException, code: types.CodeType) -> int | None:
    """The line of `code` (the compiled function's own body) active when the trace broke."""
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code is code:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _make_split(compiled: Any, fn: types.FunctionType, line: int) -> tuple:
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        raise _CannotSplit("a generator or coroutine")
    func = getattr(fn, "_graphmode_ast", None)  # a piece of an earlier split: its own statements
    if func is None:
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as exc:
            raise _CannotSplit(f"no source ({exc})") from None
        tree = ast.parse(textwrap.dedent("".join(lines)))
        ast.increment_lineno(tree, first - 1)
        func = tree.body[0]
    if not isinstance(func, (ast.FunctionDef,)):
        raise _CannotSplit("not a plain function definition")
    for node in ast.walk(func):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            raise _CannotSplit("global or nonlocal declarations")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super" \
                and not node.args:
            raise _CannotSplit("zero-argument super()")
    body = func.body
    index = next((i for i, s in enumerate(body) if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
    if index is None:
        raise _CannotSplit("the breaking line is not in the function's body")
    stmt: Any = body[index]
    before, after = body[:index], body[index + 1:]
    if _calls(before, _GRAD_STATE) and _calls([stmt, *after], _GRADIENTS):
        # a training step cut between zero_grad() and backward(): the compiled piece's .grad
        # bookkeeping (static.training) assumes the backward is in the same trace
        raise _CannotSplit("zero_grad() before the break and backward() after it")
    params = _param_names(func.args)
    assigned_before = set(params) | _stored(before)
    name = fn.__name__
    pieces: list = []  # (piece name, FunctionDef)

    def used(stmts: list) -> set:
        return _loaded(stmts)

    branch_test = isinstance(stmt, ast.If) and stmt.test.lineno <= line <= (stmt.test.end_lineno or line)
    if branch_test:
        live_in = tuple(sorted(assigned_before & (used([stmt]) | used(after))))
        sides = ([*stmt.body, *after], [*stmt.orelse, *after] or [ast.Pass()])
        middle_body: list[ast.stmt] = [ast.Return(value=_call("bool", [stmt.test]))]
        middle_out: tuple = live_in
    else:
        if _has_return(stmt) and not isinstance(stmt, ast.Return):
            raise _CannotSplit("a return inside the breaking statement")
        live_mid = tuple(sorted(assigned_before & (used([stmt]) | used(after))))
        middle_out = tuple(sorted((assigned_before | _stored([stmt])) & used(after)))
        live_in = live_mid
        if isinstance(stmt, ast.Return):
            value = stmt.value if stmt.value is not None else ast.Constant(value=None)
            middle_body = [ast.Return(value=ast.Tuple(elts=[ast.Name("__RETURNED", ast.Load()), value],
                                                      ctx=ast.Load()))]
        else:
            middle_body = [stmt, *_return_live(middle_out, flag=True)]
    prefix_def = bind_def = None
    if before:
        prefix_def = _def(f"{name}__before_line_{line}", func.args, [*before, *_return_live(live_in)])
        pieces.append(prefix_def)
    else:  # nothing to compile before the break: the arguments still bind as the function's do
        bind_def = _def(f"{name}__arguments", func.args, _return_live(live_in))
        pieces.append(bind_def)
    middle_def = _def(f"{name}__line_{line}", _args(live_in), middle_body)
    pieces.append(middle_def)
    rest_defs: list = []
    if branch_test:
        for side, stmts in zip(("true", "false"), sides):
            rest_defs.append(_def(f"{name}__after_line_{line}_{side}", _args(live_in), stmts))
    elif after and not isinstance(stmt, ast.Return):
        rest_defs.append(_def(f"{name}__after_line_{line}", _args(middle_out), after))
    pieces += rest_defs
    takes_parameters = prefix_def if prefix_def is not None else bind_def
    made = _build(fn, pieces, takes_parameters.name if takes_parameters is not None else None)
    options = _piece_options(compiled)
    import static  # noqa: PLC0415  (this module is part of static: compile at run time)

    def compiled_piece(f: Callable) -> Any:
        piece = static.compile(f, **options)
        mode = compiled.__dict__.get("_dynamic_policy")
        if mode is not None:
            from . import dynamic_shapes  # noqa: PLC0415

            dynamic_shapes.set_mode(piece, mode.mode)
        return piece

    prefix = compiled_piece(made[prefix_def.name]) if prefix_def is not None else None
    middle = made[middle_def.name]
    if branch_test:
        branches: tuple | None = tuple(compiled_piece(made[d.name]) for d in rest_defs)
        rest = None
    else:
        branches = None
        rest = compiled_piece(made[rest_defs[0].name]) if rest_defs else None
    split = Split(prefix, middle, rest, branches, live_in, middle_out,
                  bind=made[bind_def.name] if bind_def is not None else None)
    statement = ast.unparse(stmt.test if branch_test else stmt)
    return split, statement.splitlines()[0][:80]


def _piece_options(compiled: Any) -> dict:
    from .compiled import options_of  # noqa: PLC0415

    options = dict(options_of(compiled))
    options["fallback"] = "eager"
    options["fullgraph"] = False
    options["static_argnums"] = ()
    options["static_argnames"] = ()
    return {k: v for k, v in options.items() if k in inspect.signature(_compile_signature()).parameters}


def _compile_signature() -> Callable:
    from .compiled import compile as compile_  # noqa: PLC0415

    return compile_


# -- AST helpers -----------------------------------------------------------------------------------

def _param_names(args: ast.arguments) -> list:
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if args.vararg is not None:
        names.append(args.vararg.arg)
    if args.kwarg is not None:
        names.append(args.kwarg.arg)
    return names


def _stored(stmts: list) -> set:
    """Names these statements bind in the function's scope (not in nested functions)."""
    out: set = set()
    for s in stmts:
        for node in _walk_scope(s):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                out.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                out.add(node.name)
    return out


def _loaded(stmts: list) -> set:
    """Every name these statements (and functions nested in them) read."""
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name)}


def _walk_scope(node: ast.AST):
    """ast.walk that does not enter nested function or class bodies (their names are theirs)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) and n is not node:
            continue
        stack.extend(ast.iter_child_nodes(n))


_GRAD_STATE = {"zero_grad", "step", "backward"}  # calls that set the .grads a later backward() reads
_GRADIENTS = {"backward", "grad"}


def _calls(stmts: list, names: set) -> bool:
    """Whether the statements call a function or method of one of these names."""
    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
                if name in names:
                    return True
    return False


def _has_return(stmt: ast.AST) -> bool:
    return any(isinstance(n, ast.Return) for n in _walk_scope(stmt))


def _call(name: str, args: list) -> ast.Call:
    return ast.Call(func=ast.Name(name, ast.Load()), args=args, keywords=[])


def _return_live(names: tuple, flag: bool = False) -> list:
    """`__l = locals(); return tuple(__l.get(n, __UNBOUND) for n in names)` (with a leading
    None flag for the middle piece)."""
    get: list[ast.expr] = [ast.Call(func=ast.Attribute(ast.Name("__l", ast.Load()), "get", ast.Load()),
                    args=[ast.Constant(n), ast.Name("__UNBOUND", ast.Load())], keywords=[]) for n in names]
    values = ast.Tuple(elts=get, ctx=ast.Load())
    result = ast.Tuple(elts=[ast.Constant(None), values], ctx=ast.Load()) if flag else values
    return [ast.Assign(targets=[ast.Name("__l", ast.Store())], value=_call("locals", [])),
            ast.Return(value=result)]


def _args(names: tuple) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[])


def _def(name: str, args: ast.arguments, body: list) -> ast.FunctionDef:
    node = ast.FunctionDef(name=name, args=args, body=body or [ast.Pass()], decorator_list=[], returns=None,
                           type_comment=None)
    if sys.version_info >= (3, 12):
        node.type_params = []  # a field from Python 3.12
    return node


def _build(fn: types.FunctionType, defs: list, prefix_name: str | None) -> dict:
    """The piece functions, made in fn's globals with fn's closure cells: each is defined
    inside a maker whose parameters are fn's free variables (and the sentinels), and rebuilt
    with the original cells, so globals and closures read exactly what fn reads."""
    code = fn.__code__
    free = list(code.co_freevars)
    maker_params = [*free, "__UNBOUND", "__RETURNED"]
    names = ast.Tuple(elts=[ast.Name(d.name, ast.Load()) for d in defs], ctx=ast.Load())
    maker = _def("__make_pieces", _args(tuple(maker_params)), [*defs, ast.Return(names)])
    module = ast.Module(body=[maker], type_ignores=[])
    for node in ast.walk(module):  # the new nodes: at the breaking function's first line
        if "lineno" in getattr(node, "_attributes", ()) and not hasattr(node, "lineno"):
            node.lineno = node.end_lineno = code.co_firstlineno  # type: ignore[attr-defined]
            node.col_offset = node.end_col_offset = 0  # type: ignore[attr-defined]
    ast.fix_missing_locations(module)
    namespace: dict = {}
    exec(compile(module, code.co_filename, "exec"), namespace)  # noqa: S102  (the user's own source, re-cut)
    maker_code = namespace["__make_pieces"].__code__
    cells = dict(zip(free, fn.__closure__ or ()))
    cells["__UNBOUND"] = types.CellType(UNBOUND)
    cells["__RETURNED"] = types.CellType(RETURNED)
    made = {}
    for const in maker_code.co_consts:
        if isinstance(const, types.CodeType) and const.co_name in {d.name for d in defs}:
            closure = tuple(cells[n] for n in const.co_freevars)
            f = types.FunctionType(const, fn.__globals__, const.co_name, None, closure)
            f._graphmode_ast = next(d for d in defs if d.name == const.co_name)  # type: ignore[attr-defined]
            made[const.co_name] = f
    if prefix_name is not None:  # the statements before take the function's own parameters
        made[prefix_name].__defaults__ = fn.__defaults__
        made[prefix_name].__kwdefaults__ = fn.__kwdefaults__
    for f in made.values():
        f.__qualname__ = f"{fn.__qualname__}.<{f.__name__}>"
        f.__module__ = fn.__module__
    return made


def all_breaks(compiled: Any) -> tuple:
    """(breaks, refusals) of a compiled function and of its pieces (a piece after a break
    may break again), in the order they were found."""
    state = compiled.__dict__.get("_graph_breaks")
    if state is None:
        return [], []
    breaks, refused = list(state.breaks), [f"line {line}: {why}" for line, why in state.refused.items()]
    for split in state.splits.values():
        for piece in (split.prefix, split.rest, *(split.branches or ())):
            if piece is not None and hasattr(piece, "__dict__"):
                more, why = all_breaks(piece)
                breaks += more
                refused += why
    return breaks, refused


def describe(compiled: Any) -> str:
    """The explain() section: every graph break with its user line and reason."""
    breaks, refused = all_breaks(compiled)
    if not (breaks or refused):
        return ""
    lines = [f"{len(breaks)} graph break(s):"] + [f"  {b}" for b in breaks]
    lines += [f"  {why}; not split, runs eagerly" for why in refused]
    return "\n".join(lines)


def explain_split(compiled: Any, args: tuple, kwargs: dict) -> str | None:
    """explain() of a call that runs split at graph breaks: the breaks, then the graph of each
    compiled piece (None: the call has a graph of its own, or no split)."""
    from .signature import call_key  # noqa: PLC0415

    arranged = compiled._arguments(args, kwargs)
    _, key = call_key(arranged, compiled._static_positions(arranged),
                      compiled._modes() if compiled._module is not None else ())
    keyed = compiled.__dict__.get("_graph_break_keys") or {}
    if key not in keyed:
        if compiled._lookup(arranged, stacklevel=3)[2] is not None:  # traced whole (or was)
            return None
        keyed = compiled.__dict__.get("_graph_break_keys") or {}
        if key not in keyed:
            return None
    parts = [f"== graph breaks ==\n{describe(compiled)}"]
    state = compiled.__dict__["_graph_breaks"]
    for split in state.splits.values():
        for piece in (split.prefix, split.rest, *(split.branches or ())):
            if piece is None:
                continue
            for entry in piece.entries():
                parts.append(f"== compiled piece {piece.__name__} ==\n{entry.graph}")
    return "\n\n".join(parts)
