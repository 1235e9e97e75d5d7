"""The Python surface of ops whose record declares one (`OpDef.surface`): the function
`eager.<name>`, the method `Tensor.<name>` and the in-place form `Tensor.<name>_`, generated
from the record instead of written by hand in three files.

Why: a pointwise op used to be spelled in the record, in `_functional`, in `_api` (method and
in-place form) and in `__init__`'s export list. Generated here, adding one is its record.

A record's `surface` is a tuple of entries:

- the kinds it has: "function" (`eager.<name>`, exported), "method" (`Tensor.<name>`, and on
  static's tracer values, which share `TensorAPI`), "inplace" (`Tensor.<name>_`, which keeps a
  copy of the old value exactly when the op's backward reads operand 0: `0 in op.save`);
- optionally its signature as PyTorch's documentation writes it, `"pow(input, exponent, *,
  out=None)"`: the first `op.arity` parameters are the operands, any other (`decimals=0`) is an
  attribute of the op passed by keyword, and `out=None` gives the function PyTorch's `out=`.
  Without one it is `name(input, *, out=None)` (unary) or `name(input, other, *, out=None)`;
- optionally `"alias NAME"` entries: the same function, method and in-place form under another
  of PyTorch's names (`arcsin` for `asin`);
- optionally an argument mapping, a callable `fn(apply, *parameters)`, where PyTorch's extra
  arguments are not attributes of the op (add's `alpha`, div's `rounding_mode`, clamp's tensor
  bounds, where's condition, the bitwise ops' bool rule): the generated function calls it with
  the dispatcher as `apply(op, operands, attrs)` and every parameter but `out` positionally,
  the method with the tensor's `_apply_op` (so tracer values trace it), and it returns the
  result. With one, `"alias NAME(parameters)"` gives an alias a signature of its own
  (`true_divide(input, other, *, out=None)`), `"self NAME"` names the parameter the method
  binds to self (`Tensor.where(condition, other)`: self is `input`), and a pair
  `("alias NAME(parameters)", fn)` is a form with its own mapping (`square` on pow's record:
  `pow(input, 2)`; pow's own call does not pay for it);
- a record's `extra["inplace_grad"]` (the comparisons): its in-place form keeps the tensor on
  the graph with a zero gradient named as PyTorch's (`LtBackward0` for a number, `...1` for a
  tensor), where the bool op alone would drop the history.

The functions are compiled from source with exactly those parameters, so `inspect.signature`,
keyword calls and error messages for a wrong argument are PyTorch's, and each is one call into
the dispatcher (no wrapper in between: `eager.sin(x)` is eager's per-op hot path). A name
written by hand elsewhere wins at install time; `tests/eager/test_surface_generated.py` fails
when a record's generated name is also written by hand, so the duplicate cannot come back.
"""
from __future__ import annotations

import ast
import linecache
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from gmops import REGISTRY, OpDef
from gmops._registry import _DISPATCH

KINDS = ("function", "method", "inplace")
_ALIAS = "alias "
_SELF = "self "


class Param(NamedTuple):
    """One parameter of a generated signature."""

    name: str
    default: Any  # _REQUIRED when there is none
    keyword_only: bool


class _Required:
    def __repr__(self) -> str:
        return "<required>"


_REQUIRED = _Required()


class Signature(NamedTuple):
    """What a record's surface says of its Python names."""

    kinds: tuple[str, ...]
    names: tuple[str, ...]  # the op's own name first, then its aliases
    params: tuple[Param, ...]  # PyTorch's parameters of the function, `out` included when it has one
    operands: tuple[str, ...]  # the parameters that are the op's operands, in order
    has_out: bool
    # the record's argument mapping (a callable surface entry), when PyTorch's extra arguments
    # are not attributes of the op: `arguments(apply, *params)` gets `apply(op, operands, attrs)`
    # (the dispatcher for the function, the tensor's `_apply_op` for the method) and every
    # parameter but `out`, positionally, and returns the result (add's alpha scales `other`,
    # div's rounding_mode picks the record, ...)
    arguments: Callable[..., Any] | None = None
    self_param: str | None = None  # the parameter the method binds to self ("self NAME"; first one by default)
    alias_params: tuple[tuple[str, tuple[Param, ...]], ...] = ()  # aliases with signatures of their own
    # aliases with an argument mapping of their own (`("alias square(input, *, out=None)", fn)`:
    # square is pow(input, 2), a form of the pow record that pow's own call does not pay for)
    alias_arguments: tuple[tuple[str, Callable[..., Any]], ...] = ()

    def params_of(self, name: str) -> tuple[Param, ...]:
        """The parameters of the function `name` (the op's own or an alias's)."""
        return dict(self.alias_params).get(name, self.params)

    def arguments_of(self, name: str) -> Callable[..., Any] | None:
        """The argument mapping of the function `name` (None: its parameters are the op's operands and attributes)."""
        return dict(self.alias_arguments).get(name, self.arguments)


def _parse_params(op: OpDef, text: str, name: str | None = None) -> tuple[Param, ...]:
    """The parameters of `name(params)` as PyTorch's docs spell them (defaults are literals)."""
    name = name or op.name
    head, _, rest = text.partition("(")
    if head.strip() != name or not rest.rstrip().endswith(")"):
        raise ValueError(f"op {op.name!r}: surface signature {text!r} must be written {name}(parameters)")
    try:
        tree = ast.parse(f"def f({rest.rstrip()[:-1]}): pass")
    except SyntaxError as exc:
        raise ValueError(f"op {op.name!r}: surface signature {text!r} is not a parameter list: {exc.msg}") from None
    args = tree.body[0].args  # type: ignore[attr-defined]
    positional = list(args.args)
    defaults = [_REQUIRED] * (len(positional) - len(args.defaults)) + [ast.literal_eval(d) for d in args.defaults]
    params = [Param(a.arg, d, False) for a, d in zip(positional, defaults)]
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        params.append(Param(a.arg, _REQUIRED if d is None else ast.literal_eval(d), True))
    if args.vararg or args.kwarg or args.posonlyargs:
        raise ValueError(f"op {op.name!r}: surface signature {text!r}: *args, **kwargs and / are not supported")
    return tuple(params)


def signature(op: OpDef) -> Signature:
    """The surface of `op` read from its record (raises ValueError naming the op on a bad entry)."""
    kinds: list[str] = []
    aliases: list[str] = []
    alias_texts: dict[str, str] = {}
    text = None
    arguments = None
    self_param = None
    alias_arguments: dict[str, Callable[..., Any]] = {}
    for entry in op.surface:
        if callable(entry) and arguments is None:
            arguments = entry
        elif (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str)
              and entry[0].startswith(_ALIAS) and "(" in entry[0] and callable(entry[1])):
            alias = entry[0][len(_ALIAS):].partition("(")[0].strip()
            aliases.append(alias)
            alias_texts[alias] = entry[0][len(_ALIAS):]
            alias_arguments[alias] = entry[1]
        elif not isinstance(entry, str):
            raise ValueError(f"op {op.name!r}: surface entry {entry!r}: only one argument mapping (a callable) "
                             "is allowed, the other entries are strings")
        elif entry in KINDS:
            kinds.append(entry)
        elif entry.startswith(_ALIAS) and entry[len(_ALIAS):].isidentifier():
            aliases.append(entry[len(_ALIAS):])
        elif entry.startswith(_ALIAS) and entry[len(_ALIAS):].partition("(")[0].strip().isidentifier() \
                and "(" in entry:
            alias = entry[len(_ALIAS):].partition("(")[0].strip()
            aliases.append(alias)
            alias_texts[alias] = entry[len(_ALIAS):]
        elif entry.startswith(_SELF) and entry[len(_SELF):].isidentifier():
            self_param = entry[len(_SELF):]
        elif "(" in entry and text is None:
            text = entry
        else:
            raise ValueError(f"op {op.name!r}: surface entry {entry!r} is not one of {KINDS}, "
                             "'alias NAME', 'alias NAME(parameters)', 'self NAME', one signature "
                             "'name(parameters)' or one argument mapping (a callable)")
    if (set(alias_texts) - set(alias_arguments) or self_param) and arguments is None:
        raise ValueError(f"op {op.name!r}: surface entries 'alias NAME(parameters)' and 'self NAME' need the "
                         "record's argument mapping (a callable entry) to say how their parameters reach the op")
    arity = op.arity or 1
    if text is None:
        if arity > 2:
            raise ValueError(f"op {op.name!r}: a surface of {arity} operands needs its signature, "
                             f"'{op.name}(parameters)' as PyTorch's docs write it")
        text = f"{op.name}({', '.join(('input', 'other')[:arity])}, *, out=None)"
    params = _parse_params(op, text)
    out = [p for p in params if p.name == "out"]
    if out and not (out[0].keyword_only and out[0].default is None):
        raise ValueError(f"op {op.name!r}: surface signature {text!r}: out must be keyword-only with default None")
    leading = [p for p in params if not p.keyword_only]
    # (with an argument mapping the mapping says what reaches the op: where(condition) alone is nonzero)
    if arguments is None and (len(leading) < arity or any(p.default is not _REQUIRED for p in leading[:arity])):
        raise ValueError(f"op {op.name!r}: surface signature {text!r} must begin with the op's {arity} operand(s)")
    if self_param is not None and self_param not in {p.name for p in params}:
        raise ValueError(f"op {op.name!r}: surface entry 'self {self_param}' names no parameter of {text!r}")
    alias_params = []
    for alias, alias_text in alias_texts.items():
        own = _parse_params(op, alias_text, alias)
        if [p.name for p in own if p.name == "out"] != [p.name for p in params if p.name == "out"]:
            raise ValueError(f"op {op.name!r}: surface signature {alias_text!r} must take out= exactly when "
                             f"{text!r} does")
        alias_params.append((alias, own))
    return Signature(tuple(kinds), (op.name, *aliases), params, tuple(p.name for p in leading[:arity]),
                     bool(out), arguments, self_param, tuple(alias_params), tuple(alias_arguments.items()))


# -- making the callables ------------------------------------------------------------------------------
def _params_joined(params: tuple[Param, ...], spell: Callable[[Param], str]) -> str:
    """A parameter list's text: each parameter as spell(p), with the bare "*" before the first
    keyword-only one (the generated callables' and their docs' signatures alike)."""
    parts: list[str] = []
    star = False
    for p in params:
        if p.keyword_only and not star:
            parts.append("*")
            star = True
        parts.append(spell(p))
    return ", ".join(parts)


def _param_text(params: tuple[Param, ...], defaults: dict[str, Any]) -> str:
    def spell(p: Param) -> str:
        if p.default is _REQUIRED:
            return p.name
        if p.default is None or type(p.default) in (bool, int, str) or (
                type(p.default) is float and p.default == p.default and abs(p.default) != float("inf")):
            return f"{p.name}={p.default!r}"  # a literal the source can spell
        key = f"_d_{p.name}"
        defaults[key] = p.default
        return f"{p.name}={key}"
    return _params_joined(params, spell)


def _attrs_text(sig: Signature) -> str:
    attrs = [p.name for p in sig.params if p.name != "out" and p.name not in sig.operands]
    return "{" + ", ".join(f"{a!r}: {a}" for a in attrs) + "}"


def _doc_params(params: tuple[Param, ...]) -> str:
    return _params_joined(params, lambda p: p.name if p.default is _REQUIRED else f"{p.name}={p.default!r}")


GENERATED_FILE = __file__ + ":<generated {}>"


def _compile(source: str, name: str, namespace: dict[str, Any], label: str | None = None) -> Callable[..., Any]:
    """Compile one generated function. Its file name starts with this module's path, so
    whatever looks for the user's frame (static's trace locations, warnings) sees library
    code, and its text is in linecache, so tracebacks show the generated lines."""
    filename = GENERATED_FILE.format(label or name)  # one file name per callable: `Tensor.sin` is not `sin`
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = compile(source, filename, "exec")
    exec(code, namespace)  # noqa: S102  (our own template, filled with a record's checked names)
    fn: Callable[..., Any] = namespace[name]
    return fn


def _describe(op: OpDef) -> str:
    return op.doc[:1].upper() + op.doc[1:] if op.doc else f"{op.name}, elementwise"


def _as_eager_function(fn: Callable[..., Any], op: OpDef, name: str,
                       params: tuple[Param, ...]) -> Callable[..., Any]:
    """fn named and documented as the function eager.<name> (its signature, whether it is an
    alias, the record's description, the torch function it mirrors)."""
    fn.__module__ = "eager"
    fn.__qualname__ = name
    alias = f"Alias for eager.{op.name}. " if name != op.name else ""
    fn.__doc__ = (f"{name}({_doc_params(params)}) -> Tensor\n\n{alias}{_describe(op)}. "
                  f"Mirrors torch.{name} (generated from the op record's surface, eager._surface).")
    return fn


def _make_function(op: OpDef, sig: Signature, name: str) -> Callable[..., Any]:
    """`eager.<name>(input, ...)`: one call of the dispatcher (eager tensors, tracer values and
    batched values alike: it hands the op to the operands' type), or with `out=` the result
    written into `out` as PyTorch's out= functions do (eager._out)."""
    if sig.arguments_of(name) is not None:
        return _make_mapped_function(op, sig, name)
    namespace: dict[str, Any] = {"_D": _DISPATCH, "_op": op, "_with_out": _with_out, "_name": name}
    params = _param_text(sig.params, namespace)
    operands = "(" + "".join(f"{o}, " for o in sig.operands) + ")"
    attrs = _attrs_text(sig)
    if sig.has_out:
        body = (f"    if out is None:\n        return _D['dispatch'](_op, {operands}, {attrs})\n"
                f"    return _with_out(_name, _op, {operands}, {attrs}, out)\n")
    else:
        body = f"    return _D['dispatch'](_op, {operands}, {attrs})\n"
    fn = _compile(f"def {name}({params}):\n{body}", name, namespace)
    return _as_eager_function(fn, op, name, sig.params)


def _make_mapped_function(op: OpDef, sig: Signature, name: str) -> Callable[..., Any]:
    """`eager.<name>` of a record with an argument mapping: one call of the mapping with the
    dispatcher (no wrapper in between); with `out=`, its result written into `out`."""
    params = sig.params_of(name)
    namespace: dict[str, Any] = {"_D": _DISPATCH, "_map": sig.arguments_of(name), "_with_out": _with_out, "_name": name,
                                 "_IDENTITY": _IDENTITY}
    text = _param_text(params, namespace)
    call = f"_map(_D['dispatch'], {', '.join(p.name for p in params if p.name != 'out')})"
    if any(p.name == "out" for p in params):
        body = (f"    if out is None:\n        return {call}\n"
                f"    return _with_out(_name, _IDENTITY, ({call},), {{}}, out)\n")
    else:
        body = f"    return {call}\n"
    fn = _compile(f"def {name}({text}):\n{body}", name, namespace)
    return _as_eager_function(fn, op, name, params)


def _make_mapped_method(op: OpDef, sig: Signature, name: str) -> Callable[..., Any]:
    """`Tensor.<name>` of a record with an argument mapping: `self` takes the place of the
    parameter the record names ("self NAME", the first by default), the others follow in
    order, and the mapping applies ops through the type's `_apply_op` hook."""
    params = tuple(p for p in sig.params_of(name) if p.name != "out")
    bound = sig.self_param or params[0].name
    namespace: dict[str, Any] = {"_map": sig.arguments_of(name)}
    text = _param_text((Param("self", _REQUIRED, False), *(p for p in params if p.name != bound)), namespace)
    call = ", ".join("self" if p.name == bound else p.name for p in params)
    method = _compile(f"def {name}({text}):\n    return _map(self._apply_op, {call})\n",
                      name, namespace, label=f"Tensor.{name}")
    method.__module__ = "eager"
    method.__qualname__ = f"Tensor.{name}"
    shown = _doc_params(tuple(p for p in params if p.name != bound))
    method.__doc__ = f"{name}({shown}) -> Tensor\n\nSee eager.{name}. Mirrors torch.Tensor.{name}."
    return method


def _make_method(op: OpDef, sig: Signature, name: str) -> Callable[..., Any]:
    """`Tensor.<name>(self, ...)`: the function's parameters with `self` for the first operand
    and no `out`, applied through the type's `_apply_op` hook (as the operators are)."""
    if sig.arguments_of(name) is not None:
        return _make_mapped_method(op, sig, name)
    params = tuple(p for p in sig.params if p.name != "out")
    first = sig.operands[0]
    namespace: dict[str, Any] = {"_op": op}
    text = _param_text(tuple(Param("self", _REQUIRED, False) if p.name == first else p for p in params), namespace)
    operands = "(" + "".join(f"{'self' if o == first else o}, " for o in sig.operands) + ")"
    method = _compile(f"def {name}({text}):\n    return self._apply_op(_op, {operands}, {_attrs_text(sig)})\n",
                      name, namespace, label=f"Tensor.{name}")
    method.__module__ = "eager"
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = f"{name}({_method_params(sig)}) -> Tensor\n\nSee eager.{name}. Mirrors torch.Tensor.{name}."
    return method


_OUT_FORMS: dict[tuple[str, int], Callable[..., Any]] = {}


def _method_params(sig: Signature) -> str:
    """The method's parameters as PyTorch's docs write them (no self, no out)."""
    return _doc_params(tuple(p for p in sig.params if p.name not in ("out", sig.operands[0])))


def _with_out(name: str, op: OpDef, operands: tuple[Any, ...], attrs: dict[str, Any], out: Any) -> Any:
    """The op's result written into `out` (eager._out: resized, cast where safe, refused under
    autograd), the rare path of a generated function; its out= form is made once per op."""
    if op.extra.get("exact_result_dtype"):
        result = op(*operands, **attrs)
        _require_dtype(f"the output given to {name}", getattr(out, "dtype", None), result.dtype)
        operands, attrs = (result,), {}
        op = _IDENTITY
    form = _OUT_FORMS.get((name, id(op)))
    if form is None:
        from . import _out  # noqa: PLC0415  (_out imports this module)

        def apply(*args: Any, **kwargs: Any) -> Any:
            return op(*args, **kwargs)

        apply.__name__ = apply.__qualname__ = name
        form = _OUT_FORMS[(name, id(op))] = _out.with_out(apply)
    return form(*operands, out=out, **attrs)


# An op whose record says extra["exact_result_dtype"] (float_power) writes into a tensor of
# exactly its result's dtype, as PyTorch requires for its in-place and out= forms (no cast)
def _require_dtype(what: str, have: Any, result: Any) -> None:
    if have is not None and have != result:
        from gmbase import dtypes as _dtypes  # noqa: PLC0415

        raise RuntimeError(f"{what} has dtype {_dtypes.scalar_type_name(have)} but the operation's result requires "
                           f"dtype {_dtypes.scalar_type_name(result)}; convert it with .to({result}) first")


def _exact_inplace(method: Callable[..., Any], inplace: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {"_method": method, "_require_dtype": _require_dtype}
    checked = _compile(f"def {method.__name__}(self, *args, **kwargs):\n"
                       "    result = _method(self, *args, **kwargs)\n"
                       f"    _require_dtype('the base given to {inplace}', self.dtype, result.dtype)\n"
                       "    return result\n", method.__name__, namespace, label=f"Tensor.{inplace}")
    checked.__qualname__ = method.__qualname__
    checked.__doc__ = method.__doc__
    return checked


def _keep_on_graph(cmp: Any, self: Any, other: Any, grad_name: str) -> Any:
    """The in-place form of a comparison (`x.lt_(y)`): PyTorch writes the 0/1 result into x
    and keeps x on the graph with a zero gradient (LtBackward0 for a number, LtBackward1 for
    a tensor), where the bool op alone would drop x's history. The result is where(cmp, 1, 0)
    of fills of the operands (the fills' gradient is zero), renamed as PyTorch names it."""
    if not (getattr(self, "requires_grad", False) or getattr(other, "requires_grad", False)):
        return cmp
    # (made while eager's Tensor is being defined: these import it, so they load on first use)
    from gmops.elementwise import ADD, WHERE  # noqa: PLC0415

    from ._functional._common import _renamed  # noqa: PLC0415
    from ._inplace import FILL  # noqa: PLC0415

    zeros = FILL(self, value=0)
    if getattr(other, "requires_grad", False):
        zeros = ADD(zeros, FILL(other, value=0))
    return _renamed(WHERE(cmp, FILL(self, value=1), zeros), f"{grad_name}{1 if hasattr(other, 'shape') else 0}")


def _graph_kept(method: Callable[..., Any], inplace: str, grad_name: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {"_method": method, "_keep": _keep_on_graph}
    kept = _compile(f"def {method.__name__}(self, other, *args, **kwargs):\n"
                    f"    return _keep(_method(self, other, *args, **kwargs), self, other, {grad_name!r})\n",
                    method.__name__, namespace, label=f"Tensor.{inplace}")
    kept.__qualname__, kept.__doc__ = method.__qualname__, method.__doc__
    return kept


class _Identity:
    """The out= form of an already computed result (what _with_out writes after its check)."""

    name = "identity"
    extra: dict[str, Any] = {}

    def __call__(self, x: Any) -> Any:
        return x


_IDENTITY: Any = _Identity()


# -- what eager installs -----------------------------------------------------------------------------
_FUNCTIONS: dict[str, Callable[..., Any]] = {}


def _surfaced() -> Iterator[tuple[OpDef, Signature]]:
    for op in REGISTRY.values():
        if op.surface:
            yield op, signature(op)


def functions() -> dict[str, Callable[..., Any]]:
    """The generated functions by name (aliases included), for every op whose surface has
    "function"; made once, so `eager.sin is eager._functional.sin`."""
    out: dict[str, Callable[..., Any]] = {}
    for op, sig in _surfaced():
        if "function" in sig.kinds:
            for name in sig.names:
                fn = _FUNCTIONS.get(name)
                if fn is None or getattr(fn, "_op", None) is not op:
                    fn = _FUNCTIONS[name] = _make_function(op, sig, name)
                    fn._op = op  # type: ignore[attr-defined]
                out[name] = fn
    return out


def function_for(op: OpDef) -> Callable[..., Any]:
    """`eager.<op.name>` as generated from the record (made on demand for any op with a surface)."""
    return _make_function(op, signature(op), op.name)


def export_functions(namespace: dict[str, Any]) -> list[str]:
    """Put the generated functions into a module's namespace (eager's), leaving names it
    already has; returns the names added (for its `__all__`)."""
    added = []
    for name, fn in functions().items():
        if name not in namespace:
            namespace[name] = fn
            added.append(name)
    return added


def install_methods(cls: type, inplace_type: Callable[..., Any]) -> list[str]:
    """Add the generated methods and in-place forms to the Tensor API class; `inplace_type`
    is its in-place descriptor (`_api._InPlace(fn, saves_self)`). Names the class already
    has (written by hand) are left alone."""
    import inspect  # noqa: PLC0415

    added = []
    for op, sig in _surfaced():
        for name in sig.names:
            method = _make_method(op, sig, name)
            if "method" in sig.kinds and not hasattr(cls, name):
                setattr(cls, name, method)
                added.append(name)
            inplace = name + "_"
            if "inplace" in sig.kinds and not hasattr(cls, inplace):
                fn = _exact_inplace(method, inplace) if op.extra.get("exact_result_dtype") else method
                if op.extra.get("inplace_grad"):
                    fn = _graph_kept(fn, inplace, op.extra["inplace_grad"])
                descriptor = inplace_type(fn, saves_self=0 in op.save)
                setattr(cls, inplace, descriptor)
                descriptor.__set_name__(cls, inplace)
                descriptor.__signature__ = inspect.signature(method)
                shown = method.__doc__.partition("(")[2].partition(") -> Tensor")[0] if method.__doc__ else ""
                descriptor.__doc__ = (f"{inplace}({shown}) -> Tensor\n\n"
                                      f"In-place version of Tensor.{name}. Mirrors torch.Tensor.{inplace}.")
                added.append(inplace)
    return added


__all__ = ["KINDS", "Param", "Signature", "export_functions", "function_for", "functions", "install_methods",
           "signature"]
