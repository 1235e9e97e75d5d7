"""Ops that matter most to graphs: `full_like` (a constant of another value's shape,
how zeros and seeds enter a traced backward) and `stop_gradient` (what `detach()` traces to)."""
from __future__ import annotations

from typing import Any

from gmbase import dtypes as _dtypes

from ._checks import fit_scalar
from ._layout import empty_like
from ._registry import TensorSpec, defop


def _full_like(xp: Any, x: Any, value: Any, dtype: Any = None) -> Any:
    out = empty_like(xp, x, dtype.np if dtype else x.dtype)  # x's memory order, as PyTorch's full_like
    out[...] = fit_scalar("full_like", value, dtype or _dtypes.from_numpy(x.dtype))
    return out


def _full_like_abstract(x: TensorSpec, value: Any, dtype: Any = None) -> TensorSpec:
    fit_scalar("full_like", value, dtype or x.dtype)  # a value the dtype cannot hold raises at trace time
    return TensorSpec(x.shape, dtype or x.dtype)


def _full_abstract(*, shape: Any, value: Any, dtype: Any) -> TensorSpec:
    fit_scalar("full", value, dtype)
    return TensorSpec(tuple(shape), dtype)


FULL_LIKE = defop(
    "full_like", forward=_full_like,
    abstract=_full_like_abstract, kind="elementwise",
    samples=lambda rng: [((rng.standard_normal((3, 2)),), {"value": 1.5, "dtype": None})],
    doc="a tensor of x's shape filled with value; x's data is not read",
)
STOP_GRADIENT = defop(
    "stop_gradient", forward=lambda xp, x: x, abstract=lambda x: x, kind="elementwise",
    samples=lambda rng: [((rng.standard_normal((3, 2)),), {})],
    doc="identity whose result carries no gradient (detach)",
    fusible=False, aliases_operand=True, c_expr="{0}",
)
FULL = defop(
    "full", forward=lambda xp, *, shape, value, dtype: xp.full(tuple(shape), fit_scalar("full", value, dtype),
                                                               dtype=dtype.np),
    abstract=_full_abstract, kind="elementwise",
    samples=lambda rng: [((), {"shape": (2, 3), "value": 0.5, "dtype": _dtypes.float64})],
    doc="a constant: every element is value (what constant folding produces)",
    arity=0,
)

STOP_GRADIENT.quiet_fp = False  # the identity: no floating-point events (see elementwise.py's note)
