"""Elementwise conveniences PyTorch programs call: fmax/fmin (NaN-ignoring extremes),
isposinf/isneginf/isreal, gcd/lcm, and the complex no-ops of real tensors (conj,
resolve_conj, resolve_neg, conj_physical, real; imag raises as PyTorch's does).

Written in the op set (where, comparisons), so they differentiate and trace like user code;
gcd and lcm have no op record and no derivative: eager tensors use NumPy's gcd on their
values, a traced value records a fixed count of Euclid's steps."""
from __future__ import annotations

from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from .. import _functional as _F
from .._compositions._helpers import _device_of, _is_tensor, _result_dtype


def _check_tensor(name: str, arg: str, value: Any) -> None:
    if not _is_tensor(value):
        raise TypeError(f"{name}(): argument '{arg}' (position {1 if arg == 'input' else 2}) must be Tensor, "
                        f"not {type(value).__name__}")


def _extreme(name: str, input: Any, other: Any, larger: bool) -> Any:  # noqa: A002
    _check_tensor(name, "input", input)
    _check_tensor(name, "other", other)
    d = _result_dtype(input, other)
    a, b = _F.to_dtype(input, d), _F.to_dtype(other, d)
    picks_a = _F.ge(a, b) if larger else _F.le(a, b)
    if d.is_floating_point:  # a NaN is ignored: the other operand wins (both NaN: NaN)
        picks_a = _F.logical_or(picks_a, _F.isnan(b))
    return _F.where(picks_a, a, b)


def fmax(input: Any, other: Any) -> Any:  # noqa: A002  (PyTorch's parameter names)
    """The elementwise maximum where a NaN loses to a number (NaN only where both are NaN),
    broadcast and promoted; the gradient goes to input on ties, as PyTorch's. Mirrors torch.fmax."""
    return _extreme("fmax", input, other, larger=True)


def fmin(input: Any, other: Any) -> Any:  # noqa: A002
    """The elementwise minimum where a NaN loses to a number (NaN only where both are NaN).
    Mirrors torch.fmin."""
    return _extreme("fmin", input, other, larger=False)


def isposinf(input: Any) -> Any:  # noqa: A002
    """Whether each element is +inf (never, for integers and bools). Mirrors torch.isposinf."""
    _check_tensor("isposinf", "input", input)
    return _F.logical_and(_F.isinf(input), _F.gt(input, 0))


def isneginf(input: Any) -> Any:  # noqa: A002
    """Whether each element is -inf (never, for integers and bools). Mirrors torch.isneginf."""
    _check_tensor("isneginf", "input", input)
    return _F.logical_and(_F.isinf(input), _F.lt(input, 0))


def isreal(input: Any) -> Any:  # noqa: A002
    """Whether each element has a zero imaginary part: every element of a real tensor (NaN
    included). Mirrors torch.isreal."""
    _check_tensor("isreal", "input", input)
    nan = _F.isnan(input)
    return _F.eq(nan, nan)


def _integer_dtype(name: str, input: Any, other: Any) -> _dtypes.dtype:  # noqa: A002
    _check_tensor(name, "input", input)
    _check_tensor(name, "other", other)
    d = _result_dtype(input, other)
    if d.is_floating_point or d is _dtypes.bool_:
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtypes.scalar_type_name(d)}\': {name} is '
                                  f"defined for integer tensors only; convert with .long()")
    return d


def _on_host(*tensors: Any) -> bool:
    """Eager tensors (their values at hand: NumPy's gcd runs); a traced value takes the
    composition of ops instead."""
    from .._tensor import Tensor  # noqa: PLC0415

    return all(isinstance(t, Tensor) for t in tensors)


# Euclid's steps enough for any pair of the dtype: the worst case is consecutive Fibonacci
# numbers, about 1.44 * bits steps
_EUCLID_STEPS = {1: 13, 2: 25, 4: 48, 8: 94}


def _euclid(a: Any, b: Any, d: _dtypes.dtype) -> Any:
    """gcd(|a|, |b|) in ops a trace can record: a fixed number of Euclid's steps, each a
    remainder where the divisor is not yet 0."""
    a, b = _F.abs(_F.to_dtype(a, d)), _F.abs(_F.to_dtype(b, d))
    for _ in range(_EUCLID_STEPS[d.itemsize]):
        going = _F.ne(b, 0)
        rest = _F.remainder(a, _F.where(going, b, 1))
        a, b = _F.where(going, b, a), _F.where(going, rest, 0)
    return a


def _integer_result(values: Any, d: _dtypes.dtype, like: Any) -> Any:
    from .._factories import tensor  # noqa: PLC0415

    return tensor(np.asarray(values).astype(d.np), dtype=d, device=_device_of(like))


def gcd(input: Any, other: Any) -> Any:  # noqa: A002
    """The greatest common divisor of each pair (non-negative; gcd(0, 0) = 0), broadcast, for
    integer tensors; not differentiable. Eager tensors use NumPy's gcd on their values; a
    traced value records Euclid's steps. Mirrors torch.gcd."""
    d = _integer_dtype("gcd", input, other)
    if _on_host(input, other):
        return _integer_result(np.gcd(_F._host(input), _F._host(other)), d, input)
    return _euclid(input, other, d)


def lcm(input: Any, other: Any) -> Any:  # noqa: A002
    """The least common multiple of each pair (non-negative; 0 when either is 0), broadcast, for
    integer tensors. Mirrors torch.lcm."""
    d = _integer_dtype("lcm", input, other)
    if _on_host(input, other):
        return _integer_result(np.lcm(_F._host(input), _F._host(other)), d, input)
    g = _F.to_dtype(_euclid(input, other, d), _dtypes.int64)
    a, b = _F.to_dtype(input, _dtypes.int64), _F.to_dtype(other, _dtypes.int64)
    # |a / g * b| formed wide and then narrowed, as PyTorch's kernel (an overflow wraps alike)
    return _F.to_dtype(_F.abs(_F.mul(_F.floor_divide(a, _F.where(_F.eq(g, 0), 1, g)), b)), d)


def _real_only(name: str, input: Any) -> Any:  # noqa: A002
    _check_tensor(name, "input", input)
    return input


def conj(input: Any) -> Any:  # noqa: A002
    """The complex conjugate: a real tensor is its own (PyTorch returns the tensor itself).
    Mirrors torch.conj."""
    return _real_only("conj", input)


def conj_physical(input: Any) -> Any:  # noqa: A002
    """The conjugate materialized: a real tensor's is itself. Mirrors torch.conj_physical."""
    return _real_only("conj_physical", input)


def resolve_conj(input: Any) -> Any:  # noqa: A002
    """Materializes a lazy conjugation; a real tensor has none, so it is returned as it is.
    Mirrors torch.resolve_conj."""
    return _real_only("resolve_conj", input)


def resolve_neg(input: Any) -> Any:  # noqa: A002
    """Materializes a lazy negation; a real tensor has none, so it is returned as it is.
    Mirrors torch.resolve_neg."""
    return _real_only("resolve_neg", input)


def real(input: Any) -> Any:  # noqa: A002
    """The real part: a real tensor itself (eager has no complex dtypes). Mirrors torch.real."""
    return _real_only("real", input)


def imag(input: Any) -> Any:  # noqa: A002
    """The imaginary part, defined for complex tensors only: a real tensor raises PyTorch's
    RuntimeError (eager has no complex dtypes). Mirrors torch.imag."""
    _check_tensor("imag", "input", input)
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
