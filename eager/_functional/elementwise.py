"""Elementwise arithmetic and activations of eager's functional surface whose arguments need
handling of their own (add and sub with `alpha`, div's rounding modes, neg and sub refusing
bools, clamp's tensor bounds, where, lerp, addcmul): each applies op records from `eager.ops`.

The simple pointwise functions (exp, sin, mul, pow, maximum, ...) are not written here: they
are generated from their records' `surface` (eager._surface)."""
from __future__ import annotations

from typing import Any

from gmbase import dtypes as _dtypes
from gmops import elementwise as E
from gmops import math_ops as M

from ._common import _TA, _category, _renamed


def _is_one(factor) -> bool:
    """A Python 1 (no scaling needed). A tensor factor always scales: comparing it would need
    its data, which a traced value (a learning rate fed per call) does not have."""
    return isinstance(factor, (int, float)) and factor == 1


def add(input, other, *, alpha=1):
    """input + alpha * other, broadcast. Mirrors torch.add."""
    return E.ADD(input, other if _is_one(alpha) else other * alpha)


_BOOL_SUB = ("Subtraction, the `-` operator, with two bool tensors is not supported. "
             "Use the `^` or `logical_xor()` operator instead.")
_BOOL_SUB_ONE = ("Subtraction, the `-` operator, with a bool tensor is not supported. "
                 "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _is_bool(v) -> bool:
    return type(v) is bool or getattr(v, "dtype", None) is _dtypes.bool_


def check_sub(a, b) -> None:
    """PyTorch refuses `-` with a bool operand (NumPy would compute it as integers)."""
    if _is_bool(a) or _is_bool(b):
        raise RuntimeError(_BOOL_SUB if _is_bool(a) and _is_bool(b) else _BOOL_SUB_ONE)



def sub(input, other, *, alpha=1):
    """input - alpha * other, broadcast (bool operands are refused, as in PyTorch). Mirrors torch.sub."""
    check_sub(input, other)
    return E.SUB(input, other if _is_one(alpha) else other * alpha)


def rsub(input, other, *, alpha=1):
    """other - alpha * input, broadcast. Mirrors torch.rsub."""
    check_sub(input, other)
    return E.RSUB(input if _is_one(alpha) else input * alpha, other)


def div(input, other, *, rounding_mode=None):
    """input / other, elementwise and broadcast; integers divide to a float result.

    `rounding_mode` 'trunc' or 'floor' rounds the quotient (keeping integer dtypes). Mirrors torch.div."""
    if rounding_mode is None:
        return E.DIV(input, other)
    if rounding_mode == "floor":
        return M.FLOOR_DIVIDE(input, other)
    if rounding_mode == "trunc":
        return _trunc_divide(input, other)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def true_divide(input, other):
    """input / other with true (float) division. Mirrors torch.true_divide."""
    return E.DIV(input, other)



def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + exp(beta * input)) / beta, linear where beta * input > threshold.

    Mirrors torch.nn.functional.softplus."""
    return E.SOFTPLUS(input, beta=float(beta), threshold=float(threshold))


def gelu(input, approximate: str = "none"):
    """The Gaussian error linear unit; approximate='tanh' uses the tanh formula. Mirrors torch.nn.functional.gelu."""
    return E.GELU(input, approximate=approximate)


def square(input):
    """input * input, elementwise. Mirrors torch.square."""
    return E.MUL(input, input)


def where(condition, input=None, other=None):
    """Elements of `input` where `condition` is true, else of `other` (all broadcast together).

    Unlike PyTorch, the one-argument form where(condition) is not supported (use nonzero(as_tuple=True)).
    Mirrors torch.where."""
    if input is None and other is None:
        raise NotImplementedError("where(condition) with one argument (nonzero) is not supported; "
                                  "pass where(condition, input, other)")
    dt = getattr(condition, "dtype", None)
    if isinstance(dt, _dtypes.dtype) and dt is not _dtypes.bool_:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_dtypes.scalar_type_name(dt)}")
    return E.WHERE(condition, input, other)


def _bound(b):
    """A clamp bound as a plain Python number; an int stays an int (it keeps int tensors int)."""
    if b is None or isinstance(b, bool):
        return b
    if hasattr(b, "item"):
        b = b.item()
    return b if isinstance(b, int) else float(b)


def clamp(input, min=None, max=None):
    """Limit every element to [min, max] (either bound may be None or a tensor); `clip` is the same.

    Mirrors torch.clamp."""
    if hasattr(min, "shape") or hasattr(max, "shape"):
        return _clamp_to_tensors(input, min, max)
    return E.CLAMP(input, min=_bound(min), max=_bound(max))


def _clamp_to_tensors(input, min, max):
    """clamp with tensor bounds (PyTorch's clamp.Tensor): bounds broadcast and promote like
    operands and get their own gradients, where they win; max wins where min > max, as in
    PyTorch. Composed of where, so it traces and differentiates like any other ops."""
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    out = input
    if min is not None:
        out = where(E.LT(out, min), min, out)
    if max is not None:
        out = where(E.GT(out, max), max, out)
    return _renamed(out, "ClampBackward0")


clip = clamp
divide, subtract = div, sub  # PyTorch's long names (the same functions)


def clone(input: _TA, *, memory_format: Any = None) -> _TA:
    """A copy of input with its own memory, differentiable; dense layouts keep their strides
    unless `memory_format` asks for another (eager.contiguous_format, channels_last). Mirrors torch.clone."""
    if memory_format is None or getattr(memory_format, "name", None) == "preserve_format":
        return E.CLONE(input)
    from .._memory_format import format_name  # noqa: PLC0415

    return E.CLONE(input, memory_format=format_name(memory_format))


def to_dtype(input, dtype):
    """input converted to `dtype` (input itself if it already has it); differentiable between float dtypes.

    Mirrors torch.Tensor.to."""
    dt = _dtypes.as_dtype(dtype)
    return input if input.dtype is dt else E.TO_DTYPE(input, dtype=dt)


def _trunc_divide(input, other):
    """a / b rounded toward zero: (a - fmod(a, b)) is an exact multiple of b."""
    rest = M.FMOD(input, other)
    if _category(input) < 2 and _category(other) < 2:
        return M.FLOOR_DIVIDE(input - rest, other)
    from gmops.special import STOP_GRADIENT  # noqa: PLC0415

    return STOP_GRADIENT(E.DIV(input - rest, other))  # rounded: no gradient, as PyTorch



def clamp_min(input, min):
    """max(input, min), elementwise. Mirrors torch.clamp_min."""
    return clamp(input, min=min)


def clamp_max(input, max):
    """min(input, max), elementwise. Mirrors torch.clamp_max."""
    return clamp(input, max=max)


def lerp(input, end, weight):
    """input + weight * (end - input)."""
    out = input + weight * (end - input)
    return _renamed(out, "LerpBackward0" if not hasattr(weight, "shape") else "LerpBackward1")


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2, broadcast. Mirrors torch.addcmul."""
    product = E.MUL(tensor1, tensor2)
    return _renamed(add(input, product if _is_one(value) else product * value), "AddcmulBackward0")


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2 (true division; integer operands are refused, as PyTorch).

    Mirrors torch.addcdiv."""
    for t in (tensor1, tensor2):
        if hasattr(t, "dtype") and not t.dtype.is_floating_point:
            raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release "
                               "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
                               "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
                               "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
                               "float inputs. The future addcdiv behavior is just the latter implementation: "
                               "(input + value * tensor1 / tensor2), for all dtypes.")
    quotient = div(tensor1, tensor2)
    return _renamed(add(input, quotient if _is_one(value) else quotient * value), "AddcdivBackward0")
