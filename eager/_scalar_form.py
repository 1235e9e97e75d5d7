"""How eager computes an op on NumPy scalars rather than 0-d arrays (`_scalar_form`), and the
cache of 0-d arrays for Python floats beside float tensors (`_scalar_array`): both serve the
fast path's one-element case (eager._fast_path), where a ufunc's wrapping of a 0-d array costs
as much as the arithmetic. Each form is derived once per op by running its forward on
stand-ins, so no op is listed here by name.
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from gmops._registry import OpDef

_F32 = np.dtype(np.float32)

class _NotScalarForm(Exception):
    """A forward used an operand, or a name of its namespace, beyond one ufunc call."""


class _Operand:
    """Stands for an operand while `_scalar_form` runs a forward: any use of it other than
    passing it on (an attribute, an operator, a conversion) raises."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        raise _NotScalarForm(name)


class _Call:
    """What `_Probe` returns for a ufunc call: the ufunc and its arguments."""

    __slots__ = ("ufunc", "args", "kwargs")

    def __init__(self, ufunc: np.ufunc, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.ufunc, self.args, self.kwargs = ufunc, args, kwargs


class _Probe:
    """A stand-in for the NumPy namespace that offers NumPy's ufuncs only, and records calls."""

    def __init__(self) -> None:
        self.calls: list[_Call] = []

    def __getattr__(self, name: str) -> Any:
        ufunc = getattr(np, name, None)
        if type(ufunc) is not np.ufunc:
            raise _NotScalarForm(name)

        def call(*args: Any, **kwargs: Any) -> _Call:
            record = _Call(ufunc, args, kwargs)
            self.calls.append(record)
            return record
        return call


# NumPy's scalar operators for its correctly rounded arithmetic ufuncs
_SCALAR_OPERATORS: dict[Any, Callable[[Any, Any], Any]] = {
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul, np.true_divide: operator.truediv,
}


def _scalar_form(op: OpDef) -> Callable[..., Any] | bool:
    """How `dispatch` may compute `op` on NumPy scalars (its operands' elements, in order),
    or False: derived once per op by running its forward on stand-ins (`_Operand`) with a
    namespace that records ufunc calls (`_Probe`). Only a forward that is exactly one ufunc of
    all its operands, with no keywords, has a form:
    - one operand: the ufunc itself on NumPy's scalar. A ufunc call on a 0-d array costs about
      twice one on a scalar (the array's result is wrapped and unwrapped), and both run the
      same loop on the same one element, so they give the same bits;
    - two operands: for add, subtract, multiply and true_divide, NumPy's scalar operator (a
      tenth of the ufunc's dispatch cost). Both are IEEE arithmetic in the operands' own
      precision (NumPy's scalar math computes float32 in float32), so the result is the same
      number, bit for bit; only a NaN's payload could depend on the operand order the machine
      code uses, so `dispatch` computes a NaN result again by the ufunc. Other binary ufuncs
      are slower on two scalars than on 0-d arrays, so they have no form.
    Random and stateful ops have none either (their forward is not run for a probe)."""
    n = op.arity
    if op.kind != "elementwise" or op.random or op.stateful or n not in (1, 2):
        return False
    stand_ins = tuple(_Operand() for _ in range(n))
    probe = _Probe()
    try:
        result = op.forward(probe, *stand_ins)
    except Exception:  # noqa: BLE001  (more than one ufunc call: the forward runs as written)
        return False
    if len(probe.calls) != 1 or result is not probe.calls[0]:
        return False
    call = result
    ufunc = call.ufunc
    if call.kwargs or ufunc.nin != n or ufunc.nout != 1 or len(call.args) != n:
        return False
    order = []
    for arg in call.args:
        pos = next((i for i, s in enumerate(stand_ins) if s is arg), None)
        if pos is None or pos in order:
            return False
        order.append(pos)
    if n == 1:
        # (a float result for a float operand: isnan's bool would only be computed twice)
        return ufunc if "f->f" in ufunc.types and "d->d" in ufunc.types else False
    fn = _SCALAR_OPERATORS.get(ufunc)
    if fn is None:
        return False
    if order == [0, 1]:
        return fn
    return lambda a, b: fn(b, a)


# 0-d read-only arrays of Python floats, per dtype of the fast path (see OpDef.scalar_as_array):
# NumPy resolves `multiply(x, 1.0001)` about a third of a microsecond slower than the same
# with a 0-d float32 array, and the numbers of a program (0.5, 1e-3) recur op after op.
_F32_SCALARS: dict[float, np.ndarray] = {}
_F64_SCALARS: dict[float, np.ndarray] = {}
_SCALAR_CACHE_SIZE = 256


def _scalar_array(v: float, dt: np.dtype[Any]) -> Any:
    """`v` as a 0-d array of the float dtype `dt` (float32 or float64), or `v` itself for a
    NaN (never equal to a cached key) and for zeros (0.0 == -0.0 would mix their signs)."""
    cache = _F32_SCALARS if dt is _F32 else _F64_SCALARS
    a = cache.get(v)
    if a is None:
        if v != v or v == 0.0:
            return v
        if len(cache) >= _SCALAR_CACHE_SIZE:
            cache.clear()
        a = np.array(v, dtype=dt)  # (an out-of-range float becomes inf, as the weak-scalar rule has it)
        a.flags.writeable = False
        cache[v] = a
    return a
