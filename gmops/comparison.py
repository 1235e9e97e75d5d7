"""Comparison and logic records: eq, ne, lt, le, gt, ge, logical_and, logical_not. Bool
results, no gradient."""
from __future__ import annotations

from gmbase import dtypes as _dtypes

from ._pointwise import _ALL, _any, _elementwise
from ._registry import OpDef, TensorSpec, defop

# -- comparisons and logic: bool results, no gradient ----------------------------------------
_C_COMPARISON = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _compare(name, ufunc) -> OpDef:
    return defop(
        name, forward=lambda xp, a, b: getattr(xp, ufunc)(a, b),
        abstract=_elementwise(name, result_dtype=_dtypes.bool_), promote="same",
        samples=_any((3, 4), (4,)),
        arity=2, commutative=name in ("eq", "ne"), c_expr=f"({{0}} {_C_COMPARISON[name]} {{1}})",
        # PyTorch's long names are NumPy's (torch.greater ...), but for eq: torch.equal is another function
        surface=(*_ALL, *(() if name == "eq" else (f"alias {ufunc}",))),
        doc=f"input {_C_COMPARISON[name]} other, elementwise, as a bool tensor",
        # the in-place form (x.lt_(y)) stays on the graph with a zero gradient, as PyTorch's
        # LtBackward0 (other a number) / LtBackward1 (a tensor): eager._surface reads this
        extra={"inplace_grad": name.capitalize() + "Backward"},
    )


EQ = _compare("eq", "equal")
NE = _compare("ne", "not_equal")
LT = _compare("lt", "less")
LE = _compare("le", "less_equal")
GT: OpDef = _compare("gt", "greater")
GE = _compare("ge", "greater_equal")
LOGICAL_AND = defop(
    "logical_and", forward=lambda xp, a, b: xp.logical_and(a, b),
    abstract=_elementwise("logical_and", result_dtype=_dtypes.bool_),
    samples=lambda rng: [((rng.standard_normal((3, 4)) > 0, rng.standard_normal((4,)) > 0), {})],
    arity=2, commutative=True, c_expr="({0} && {1})",
    surface=_ALL, doc="elementwise logical AND of the truth values, as a bool tensor",
)
LOGICAL_NOT = defop(
    "logical_not", forward=lambda xp, a: xp.logical_not(a),
    abstract=lambda a: TensorSpec(a.shape, _dtypes.bool_),
    samples=lambda rng: [((rng.standard_normal((3, 4)) > 0,), {})], c_expr="(!{0})",
    surface=_ALL, doc="elementwise logical NOT of the truth values, as a bool tensor",
)


# never meets a floating-point event: eager runs it without switching NumPy's error reports
# off, a per-call cost on the hot path (OpDef.quiet_fp, as the unary ops in gmops/unary.py)
LOGICAL_NOT.quiet_fp = False
