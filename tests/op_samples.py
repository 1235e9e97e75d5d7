"""Programs made of one registry op, from the samples its declaration carries: the registry-wide
tests of static (tests/static/test_registry_ops.py) and of the NumPy code generator
(tests/codegen/test_codegen_ops.py) run every op through the same ones."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import eager
from eager.ops import REGISTRY

OPS = sorted(REGISTRY)


def sample_cases(name: str, dtype: Any = None) -> list:
    """The op's (arrays, attrs) samples; with `dtype`, its floating arrays cast to it."""
    cases = REGISTRY[name].samples(np.random.default_rng(0))
    if dtype is None:
        return list(cases)
    return [(tuple(a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in arrays),
             retyped_attrs(attrs, dtype)) for arrays, attrs in cases]


def retyped_attrs(attrs: dict, dtype: Any) -> dict:
    """A sample's attributes for its arrays cast to `dtype` (see `_retyped_body`)."""
    return {k: _retyped_body(v, dtype) for k, v in attrs.items()}


def _retyped_body(value: Any, dtype: Any) -> Any:
    """A control-flow op's body (IR text, eager/ops/control_flow.py) is typed: casting the
    sample's floating arrays casts its f64 values too."""
    if isinstance(value, list):
        return [_retyped_body(v, dtype) for v in value]
    if isinstance(value, str) and value.startswith("func @"):
        return value.replace("f64[", {np.dtype(np.float32): "f32[", np.dtype(np.float16): "f16["}.get(
            np.dtype(dtype), "f64["))
    return value


def sample_program(op: Any, arrays: tuple, attrs: dict) -> tuple[Callable[..., Any], list]:
    """fn(*tensors) applying `op`, and the arrays to call it with; the sample's non-array
    operands stay fixed (attributes)."""
    positions = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray)]

    def fn(*xs: Any) -> Any:
        operands = list(arrays)
        for i, x in zip(positions, xs):
            operands[i] = x
        return op(*operands, **attrs)

    fn.__name__ = op.name
    return fn, [arrays[i] for i in positions]


def sample_programs(name: str, dtype: Any = None) -> Iterator[tuple[Callable[..., Any], list, dict]]:
    """(fn, inputs, attrs) for each sample of the op."""
    for arrays, attrs in sample_cases(name, dtype):
        fn, inputs = sample_program(REGISTRY[name], arrays, attrs)
        yield fn, inputs, attrs


def sample_at(name: str, k: int, dtype: Any = None) -> tuple[Callable[..., Any], list]:
    """(fn, inputs) of the op's k-th sample."""
    return sample_program(REGISTRY[name], *sample_cases(name, dtype)[k])


def outputs(x: Any) -> tuple:
    """An op's result as a tuple of its outputs."""
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def weighted_sum(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A scalar of every floating output, each weighted differently so that the gradient of
    every output element is checked, not only of their sum."""

    def loss(*xs: Any) -> Any:
        total = 0.0
        for k, o in enumerate(outputs(fn(*xs))):
            if o.is_floating_point():
                w = np.cos(np.arange(o.numel()) * 0.7 + k).reshape(tuple(o.shape))
                total = total + (o * eager.tensor(w, dtype=o.dtype, device=o.device)).sum()
        return total

    loss.__name__ = "loss_" + fn.__name__
    return loss


def differentiable_cases(dtype: Any = None) -> Iterator[Any]:
    """pytest params (name, sample index) of the samples with a gradient to check: the op
    has a VJP, and the sample a floating input and a floating output."""
    for name in OPS:
        op = REGISTRY[name]
        if op.vjp is None or op.differentiable_order == 0:
            continue
        for k, (fn, inputs, _) in enumerate(sample_programs(name, dtype)):
            out = fn(*[eager.tensor(a) for a in inputs])
            if any(a.dtype.kind == "f" for a in inputs) and any(o.is_floating_point() for o in outputs(out)):
                yield pytest.param(name, k, id=f"{name}-{k}")


def eager_grads(loss: Callable[..., Any], inputs: list, wrt: Any) -> list:
    """The gradients eager's backward gives the inputs at positions `wrt`, as arrays."""
    tensors = [eager.tensor(a, requires_grad=(i in wrt)) for i, a in enumerate(inputs)]
    loss(*tensors).backward()
    return [tensors[i].grad.numpy() for i in wrt]
