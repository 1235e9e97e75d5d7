"""Cast and copy records: to_dtype (its gradient is cast back by fit_grad) and clone."""
from __future__ import annotations

from gmbase import dtypes as _dtypes

from ._layout import copy_as
from ._pointwise import _any
from ._registry import TensorSpec, defop

# -- casts and copies ------------------------------------------------------------------------
TO_DTYPE = defop(
    "to_dtype", forward=lambda xp, x, dtype: x.astype(dtype.np),
    abstract=lambda x, dtype: TensorSpec(x.shape, dtype),
    vjp=lambda ctx, g: (g,),  # fit_grad casts back to the operand's dtype
    grad_name="ToCopyBackward0",
    samples=lambda rng: [((rng.standard_normal((3, 4)),), {"dtype": _dtypes.float32})],
    c_expr="gm_cast<{R}>({0})",  # {R}: the result's C type
)
CLONE = defop(
    "clone", forward=copy_as, abstract=lambda x, memory_format=None: x,  # preserve_format unless asked
    vjp=lambda ctx, g: (g,), grad_name="CloneBackward0", samples=_any((3, 4)), c_expr="{0}",
)


# never meets a floating-point event: eager runs it without switching NumPy's error reports
# off, a per-call cost on the hot path (OpDef.quiet_fp, as the unary ops in gmops/unary.py)
CLONE.quiet_fp = False
