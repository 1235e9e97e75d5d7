"""Elementwise arithmetic and activations of eager's functional surface whose arguments need
handling of their own (lerp, addcmul, ...): each applies op records
from `gmops`.

The pointwise functions (exp, sin, mul, pow, maximum, ...), add/sub/rsub with alpha, div
with rounding_mode, clamp/clip, clamp_min/clamp_max, where, square, softplus and gelu are not written here: they
are generated from their records' `surface` (eager._surface)."""
from __future__ import annotations

from typing import Any

from gmbase import dtypes as _dtypes
from gmops import elementwise as E
from gmops.arithmetic import refuse_bool_sub

from ._common import _TA, _renamed


def _is_one(factor) -> bool:
    """A Python 1 (no scaling needed). A tensor factor always scales: comparing it would need
    its data, which a traced value (a learning rate fed per call) does not have."""
    return isinstance(factor, (int, float)) and factor == 1


# add, sub, rsub, div (divide, true_divide) and their alpha / rounding_mode are generated from
# their records' surface (gmops/arithmetic.py's argument mappings, eager._surface); the
# operators' bool check is the records' own
check_sub = refuse_bool_sub


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


def lerp(input, end, weight):
    """input + weight * (end - input)."""
    out = input + weight * (end - input)
    return _renamed(out, "LerpBackward0" if not hasattr(weight, "shape") else "LerpBackward1")


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2, broadcast. Mirrors torch.addcmul."""
    product = E.MUL(tensor1, tensor2)
    return _renamed(E.ADD(input, product if _is_one(value) else product * value), "AddcmulBackward0")


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
    quotient = E.DIV(tensor1, tensor2)
    return _renamed(E.ADD(input, quotient if _is_one(value) else quotient * value), "AddcdivBackward0")
