"""Symbolic sizes: `SymInt`, an int whose value is the traced call's size (its hint) and which
carries an integer polynomial over symbols (`2*s0+4`), printed as that polynomial; the
comparisons a trace makes on one, recorded as guards (Recorder, recording); and the tracer's
side: which input dimensions are symbols in the trace being made. A leaf module (it imports
nothing of graphmode), so the IR's parser can make a SymInt without an import cycle.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# A polynomial: {monomial: coefficient}, a monomial a sorted tuple of symbol names (repeats
# for powers), () the constant term.
Poly = dict


def _poly_add(a: Poly, b: Poly, sign: int = 1) -> Poly:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + sign * c
        if out[m] == 0:
            del out[m]
    return out


def _poly_mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(sorted(ma + mb))
            out[m] = out.get(m, 0) + ca * cb
            if out[m] == 0:
                del out[m]
    return out


def _poly_div_exact(a: Poly, b: Poly) -> Poly | None:
    """a / b when b is one monomial that divides every term of a exactly, else None."""
    if len(b) != 1:
        return None
    (mb, cb), = b.items()
    out: Poly = {}
    for ma, ca in a.items():
        rest = list(ma)
        for s in mb:
            if s not in rest:
                return None
            rest.remove(s)
        if ca % cb:
            return None
        out[tuple(rest)] = ca // cb
    return out


def _poly_text(p: Poly) -> str:
    if not p:
        return "0"
    terms = []
    for m in sorted(p, key=lambda m: (-len(m), m)):
        c = p[m]
        factors = ([str(c)] if (c != 1 or not m) else []) + list(m)
        terms.append("*".join(factors) if c >= 0 or not m else "-" + "*".join([str(-c)] + list(m)) if c != -1
                     else "-" + "*".join(m))
    text = terms[0]
    for t in terms[1:]:
        text += t if t.startswith("-") else "+" + t
    return text


class SymInt(int):
    """A size that is a symbol, or a polynomial over symbols: an int (the traced call's value)
    that remembers how it was computed. Arithmetic with ints and other SymInts keeps the
    polynomial; what cannot be written as one (a floor division that does not divide evenly)
    keeps its text. `str()` is the polynomial: what the IR and generated code spell."""

    poly: Poly | None
    text: str

    def __new__(cls, value: int, poly: Poly | None = None, text: str | None = None) -> "SymInt":
        self = super().__new__(cls, value)
        self.poly = poly
        self.text = text if text is not None else _poly_text(poly or {})
        return self

    @classmethod
    def symbol(cls, name: str, value: int) -> "SymInt":
        return cls(value, {(name,): 1})

    # -- spelling ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        # what generators write into expressions (f-strings): a compound size in parentheses,
        # so that `i % {n}` reads `i % (4*s0)`, not `(i % 4)*s0`; str() and repr() (the IR,
        # tuple literals) keep the bare polynomial
        if spec:
            return format(int(self), spec)
        return self.text if self.text.isidentifier() else f"({self.text})"

    def __hash__(self) -> int:
        # a symbolic size and the equal plain number are different keys of every cache
        # (a type's text, a generated source), though they compare equal to the passes
        return hash((int(self), self.text))

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, int):
            return _equal(self, other)
        return NotImplemented

    def __ne__(self, other: Any) -> bool:
        if isinstance(other, int):
            return not _equal(self, other)
        return NotImplemented

    def __lt__(self, other: Any) -> bool:
        return _compare(self, other, "<")

    def __le__(self, other: Any) -> bool:
        return _compare(self, other, "<=")

    def __gt__(self, other: Any) -> bool:
        return _compare(self, other, ">")

    def __ge__(self, other: Any) -> bool:
        return _compare(self, other, ">=")

    def __bool__(self) -> bool:
        _note_compare(self, "==", 0, int(self) == 0)
        return int(self) != 0

    # -- arithmetic ------------------------------------------------------------------------------
    def __add__(self, other: Any) -> Any:
        return _arith(self, other, "+")

    def __radd__(self, other: Any) -> Any:
        return _arith(other, self, "+")

    def __sub__(self, other: Any) -> Any:
        return _arith(self, other, "-")

    def __rsub__(self, other: Any) -> Any:
        return _arith(other, self, "-")

    def __mul__(self, other: Any) -> Any:
        return _arith(self, other, "*")

    def __rmul__(self, other: Any) -> Any:
        return _arith(other, self, "*")

    def __floordiv__(self, other: Any) -> Any:
        return _arith(self, other, "//")

    def __rfloordiv__(self, other: Any) -> Any:
        return _arith(other, self, "//")

    def __mod__(self, other: Any) -> Any:
        return _arith(self, other, "%")

    def __rmod__(self, other: Any) -> Any:
        return _arith(other, self, "%")

    def __neg__(self) -> Any:
        return _arith(0, self, "-")

    def __pos__(self) -> "SymInt":
        return self

    def __index__(self) -> int:
        return int(self)

    def decision_value(self) -> int:
        """The size to tune generated code for (how a region runs: blocked or op by op). Both
        builds of a symbolic entry (see `build`) decide with the sizes of the call that made it,
        so that they write the same code; the code is right for every size either way."""
        env = getattr(_LOCAL, "decisions", None)
        if env:
            try:
                return _eval(self, env)
            except (KeyError, NameError):
                pass
        return int(self)

    def __int__(self) -> int:
        return int.__int__(self)


def _as_poly(x: Any) -> Poly | None:
    if isinstance(x, SymInt):
        return x.poly
    if isinstance(x, int):
        return {(): int(x)} if int(x) else {}
    return None


def _text(x: Any) -> str:
    return x.text if isinstance(x, SymInt) else str(int(x))


def _wrap(x: Any) -> str:
    t = _text(x)
    return t if t.isidentifier() or t.lstrip("-").isdigit() else f"({t})"


def _arith(a: Any, b: Any, op: str) -> Any:
    if not isinstance(a, int) or not isinstance(b, int) or isinstance(a, bool) or isinstance(b, bool):
        return NotImplemented
    ia, ib = int(a), int(b)
    value = {"+": lambda: ia + ib, "-": lambda: ia - ib, "*": lambda: ia * ib, "//": lambda: ia // ib,
             "%": lambda: ia % ib}[op]()
    pa, pb = _as_poly(a), _as_poly(b)
    poly: Poly | None = None
    if pa is not None and pb is not None:
        if op == "+":
            poly = _poly_add(pa, pb)
        elif op == "-":
            poly = _poly_add(pa, pb, -1)
        elif op == "*":
            poly = _poly_mul(pa, pb)
        elif op == "//":
            poly = _poly_div_exact(pa, pb)  # exact for every size (256*s0 // 64): no guard needed
        elif op == "%":
            if _poly_div_exact(pa, pb) is not None:
                poly = {}  # 0 for every size; otherwise the remainder stays an expression, and a
                # comparison of it in the user's code is a guard (s0 % 4 == 0)
    if poly is not None and not any(m for m in poly):  # no symbol left: a plain number
        return value
    if poly is not None:
        return SymInt(value, poly)
    return SymInt(value, None, f"{_wrap(a)}{op}{_wrap(b)}")


def _eval(x: Any, env: dict) -> int:
    """The value of a size for the symbols' values in `env`."""
    if not isinstance(x, SymInt):
        return int(x)
    if x.poly is not None:
        total = 0
        for m, c in x.poly.items():
            term = c
            for s in m:
                term *= env[s]
            total += term
        return total
    return int(eval(x.text, {"__builtins__": {}}, dict(env)))  # noqa: S307  (our own polynomial text)


def evaluate(x: Any, env: dict) -> int:
    """Public form of `_eval`: a size's value for given symbol values."""
    return _eval(x, env)


# -- guards: the relations a trace relied on --------------------------------------------------------

@dataclass
class Recorder:
    """What one symbolic trace learned about its symbols."""

    guards: dict = field(default_factory=dict)  # text -> check(env) -> bool
    specialized: set = field(default_factory=set)  # symbols whose value the trace fixed
    closed: bool = False  # the trace ended: no more guards
    specialize: set = field(default_factory=set)  # symbols a shape rule compared equal to a number


_LOCAL = threading.local()


def _recorder() -> Recorder | None:
    return getattr(_LOCAL, "recorder", None)


@contextlib.contextmanager
def recording(rec: Recorder) -> Iterator[Recorder]:
    prev = _recorder()
    _LOCAL.recorder = rec
    try:
        yield rec
    finally:
        _LOCAL.recorder = prev


def trace_done() -> None:
    """The tracer finished a trace: what runs after it (passes, generators) compares sizes
    too, but the check at other sizes covers those; only the trace's comparisons are guards."""
    rec = _recorder()
    if rec is not None:
        rec.closed = True


def _note_compare(a: SymInt, op: str, b: Any, result: bool) -> None:
    rec = _recorder()
    if rec is None or rec.closed:
        return
    ta, tb = _text(a), _text(b)
    if ta == tb:
        return  # s0 == s0: holds for every size
    if op == "==" and not result:
        if _from_library():
            return  # the library's shape comparisons (s0 against a feature size) decide nothing
        text = f"{ta}!={tb}"
        rec.guards.setdefault(text, lambda env: _eval(a, env) != _eval(b, env))
        return
    if op == "==" and not isinstance(b, SymInt):
        if a.poly is not None and len(a.poly) == 1 and list(a.poly) == [(a.text,)]:
            rec.specialized.add(a.text)  # s0 == 32 held: the trace took the size as a number
    text = f"{ta}{op}{tb}" if result else f"not {ta}{op}{tb}"
    fns = {"==": lambda x, y: x == y, "<": lambda x, y: x < y, "<=": lambda x, y: x <= y,
           ">": lambda x, y: x > y, ">=": lambda x, y: x >= y}
    fn = fns[op]
    rec.guards.setdefault(text, lambda env: fn(_eval(a, env), _eval(b, env)) == result)


_LIBRARY = tuple(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep + name + os.sep
                 for name in ("eager", "static", "codegen", "gmops", "gmbase", "gmnative", "graphmode"))
# (static/tracing/symbolic.py; the IR's parser imports it, so it cannot read state.LIBRARY_PACKAGES: the same list)


def _from_library() -> bool:
    """Whether the comparison being noted was made by this library's code (an abstract rule
    or autodiff matching shapes), not by the user's function. A size that turns out unequal to
    a feature size there changes nothing the other sizes would not: the check at other sizes
    covers what it decided; an unequal comparison in the user's code may pick a branch, and
    is a guard."""
    frame: Any = sys._getframe(2)
    here = os.path.abspath(__file__)
    while frame is not None and os.path.abspath(frame.f_code.co_filename) == here:
        frame = frame.f_back
    return frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_LIBRARY)


def _equal(a: SymInt, b: int) -> bool:
    """`a == b`. The user's function compares values (the size of the call being traced),
    and the comparison is a guard. Everywhere else (the library's shape rules, the passes,
    the generators) sizes are equal when they are the same expression: `s0` is not `16` even
    when the traced call's s0 is 16, since the code made serves every size; a rule that
    needed them equal fails, and that size is traced as a number instead."""
    rec = _recorder()
    if rec is not None and not rec.closed and not _from_library():
        result = int(a) == int(b)
        _note_compare(a, "==", b, result)
        return result
    if isinstance(b, SymInt) and a.text == b.text:
        return True
    if rec is not None and int(a) == int(b) and a.text.isidentifier():
        rec.specialize.add(a.text)  # a rule wanted s1 to be 5 (a weight's size): the next try keeps it a number
    return False


def _compare(a: SymInt, b: Any, op: str) -> bool:
    if not isinstance(b, int):
        return NotImplemented
    ia, ib = int(a), int(b)
    result = {"<": ia < ib, "<=": ia <= ib, ">": ia > ib, ">=": ia >= ib}[op]
    _note_compare(a, op, b, result)
    return result


def is_symbolic(x: Any) -> bool:
    return isinstance(x, SymInt)


def shape_is_symbolic(shape: tuple) -> bool:
    return any(isinstance(d, SymInt) for d in shape)


def concrete(shape: tuple) -> tuple:
    """The shape with its sizes as plain ints (the traced call's values)."""
    return tuple(int(d) for d in shape)


# -- the tracer's side: which input dimensions are symbols in the trace being made --------------

def symbolic_shape(leaf: int, shape: tuple) -> tuple:
    """The shape the tracer gives argument leaf `leaf` (its dimensions that are symbols in
    the trace being made replaced by their SymInt); the shape itself when none are."""
    symbols = getattr(_LOCAL, "symbols", None)
    if not symbols:
        return shape
    dims = symbols.get(leaf)
    if not dims:
        return shape
    return tuple(dims.get(d, size) for d, size in enumerate(shape))


@contextlib.contextmanager
def symbols_for_trace(symbols: dict) -> Iterator[None]:
    """Make the tracer give the dimensions in `symbols` ({leaf: {dim: SymInt}}) as symbols."""
    prev = getattr(_LOCAL, "symbols", None), getattr(_LOCAL, "arrays", None)
    _LOCAL.symbols = symbols
    _LOCAL.arrays = {}
    try:
        yield
    finally:
        _LOCAL.symbols, _LOCAL.arrays = prev


def sources() -> dict:
    """Where each symbol of the trace being made comes from: name -> (argument leaf, dim)."""
    out: dict = {}
    for leaf, dims in (getattr(_LOCAL, "symbols", None) or {}).items():
        for d, sym in dims.items():
            out.setdefault(sym.text, (leaf, d))
    return out


def note_array(array: Any, shape: tuple) -> None:
    """An array the trace made for a value of symbolic shape (a random draw's placeholder):
    captured, its graph input gets that shape, not the traced call's numbers."""
    arrays = getattr(_LOCAL, "arrays", None)
    if arrays is not None and any(isinstance(d, SymInt) for d in shape):
        arrays[id(array)] = (array, tuple(shape))


def captured_shape(data: Any) -> tuple:
    """The shape of a captured array as the graph types it (see note_array)."""
    arrays = getattr(_LOCAL, "arrays", None)
    if arrays:
        found = arrays.get(id(data))
        if found is not None and found[0] is data:
            return found[1]
    return tuple(data.shape)


def env_of(where: dict, leaves: Any) -> dict:
    """The symbols' values for a call, from its argument leaves (see `sources`)."""
    env = {}
    for name, (leaf, d) in where.items():
        x = leaves[leaf]
        env[name] = int((x._data if hasattr(x, "_data") else x).shape[d])
    return env


def concrete_shape(shape: tuple, env: dict) -> tuple:
    """A shape with its symbolic sizes evaluated for a call's symbol values."""
    return tuple(_eval(d, env) if isinstance(d, SymInt) else d for d in shape)
